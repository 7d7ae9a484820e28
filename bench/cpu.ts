/**
 * CPU time of a process from the operating system's accounting (`/proc/<pid>/stat`, fields 14 and 15: user and system
 * time in clock ticks; proc(5)). A process's own CPU per request is far more stable on a shared machine than its
 * throughput, which moves with whatever else runs on the same cores.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/** `getconf CLK_TCK` (100 on Linux almost everywhere). */
function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU time in a `stat` file of /proc (a process's or one thread's), in microseconds. */
function statCpuMicros(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const userTicks = Number(fields[11]);
  const systemTicks = Number(fields[12]);
  return ((userTicks + systemTicks) * 1_000_000) / clockTicksPerSecond();
}

/** User + system CPU time of `pid` so far, all its threads, in microseconds. */
export function processCpuMicros(pid: number): number {
  return statCpuMicros(`/proc/${pid}/stat`);
}

/**
 * CPU time of `pid`'s main thread (the one whose id is the process id: the event loop, JavaScript and the GC work done
 * there) so far, in microseconds. The rest of {@link processCpuMicros} is spent on the other threads: V8's platform
 * workers (parallel scavenges, concurrent marking and sweeping, background compilation) and libuv's thread pool.
 */
export function mainThreadCpuMicros(pid: number): number {
  return statCpuMicros(`/proc/${pid}/task/${pid}/stat`);
}

/** Resident set size of `pid` in bytes (`VmRSS` of /proc/<pid>/status). */
export function processRssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : 0;
}

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
