/**
 * Process-wide caches of what the pipeline derives from manifests, settings and request text: compiled route patterns,
 * parsed proxy routes, checked paths, credential forms. Each registers here so that all of them can be emptied at once.
 *
 * Nothing in the gateway empties them: a cache only remembers what would be computed again from the same input. The
 * mutation run's root hook (test/mutation/hooks.ts) calls `clearProcessCaches()` before each test, so that a mutant
 * in a compile step runs against every test that reaches it instead of meeting a cache that an earlier, unmutated test
 * already filled (such mutants otherwise survive in process and are killed in a fresh one).
 */
const caches: Array<{ clear(): void }> = [];

/** A `Map` that `clearProcessCaches()` empties. */
export function processMap<K, V>(): Map<K, V> {
  const map = new Map<K, V>();
  caches.push(map);
  return map;
}

/** A `Set` that `clearProcessCaches()` empties. */
export function processSet<T>(): Set<T> {
  const set = new Set<T>();
  caches.push(set);
  return set;
}

/** A `WeakMap` (keyed by manifests, settings or secrets, dropped with them) that `clearProcessCaches()` empties. */
export class ProcessWeakMap<K extends object, V> {
  private entries = new WeakMap<K, V>();

  constructor() {
    caches.push(this);
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): this {
    this.entries.set(key, value);
    return this;
  }

  clear(): void {
    this.entries = new WeakMap<K, V>();
  }
}

/** Empties every registered cache. */
export function clearProcessCaches(): void {
  for (const cache of caches) cache.clear();
}
