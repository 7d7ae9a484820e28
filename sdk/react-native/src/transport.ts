/**
 * The few platform pieces the SDK needs, typed structurally so that the package compiles without DOM or Node types and
 * accepts React Native's fetch, `expo/fetch`, a polyfill, or Node's fetch in tests.
 */
import { abortedError, networkError, TollgateError } from './errors';
import { encodeUtf8 } from './utf8';

/** What the SDK passes to fetch. */
export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignalLike;
  redirect?: 'manual';
  /** react-native-fetch-api: deliver the body as it arrives (ignored by every other fetch). */
  reactNative?: { textStreaming: boolean };
}

/** A reader of a streamed response body (WHATWG ReadableStreamDefaultReader). */
export interface BodyReaderLike {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
  cancel(reason?: unknown): Promise<void>;
  releaseLock?(): void;
}

/** The part of a fetch Response the SDK reads. */
export interface ResponseLike {
  readonly status: number;
  /** The final URL (React Native's fetch follows redirects whatever `redirect` says, and reports where it ended). */
  readonly url?: string;
  /** True when the fetch followed a redirect (WHATWG fetch). */
  readonly redirected?: boolean;
  /** `opaqueredirect` when a WHATWG fetch honoured `redirect: 'manual'`. */
  readonly type?: string;
  readonly headers: { get(name: string): string | null; forEach(callback: (value: string, name: string) => void): void };
  /** A ReadableStream when the fetch implementation streams; null or absent in React Native's built-in fetch. */
  readonly body?: { getReader(): BodyReaderLike } | null;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
}

/**
 * A fetch function. The SDK needs `status`, `headers`, and either `body.getReader()` (streaming) or `arrayBuffer()`
 * (React Native's built-in fetch: the whole body at once). Typed loosely so that any fetch implementation fits.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type FetchFunction = (url: string, init: any) => Promise<any>;

export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

interface AbortControllerLike {
  readonly signal: AbortSignalLike;
  abort(reason?: unknown): void;
}

interface PlatformGlobals {
  fetch?: FetchFunction;
  AbortController?: new () => AbortControllerLike;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  __DEV__?: unknown;
}

const platform = globalThis as unknown as PlatformGlobals;

/** The global fetch, or undefined. */
export function globalFetch(): FetchFunction | undefined {
  return typeof platform.fetch === 'function' ? platform.fetch.bind(globalThis) : undefined;
}

/** True when React Native's `__DEV__` is set (a debug build). */
export function isDevGlobal(): boolean {
  return platform.__DEV__ === true;
}

/**
 * An abort controller for one call, following the caller's signal. Without a global AbortController (very old
 * runtimes) the call cannot be cancelled on the wire, but the SDK still stops waiting for it.
 */
export class CallController {
  private readonly controller: AbortControllerLike | null;
  private readonly unlink: () => void;
  private abortedLocally = false;

  constructor(private readonly external?: AbortSignalLike) {
    this.controller = typeof platform.AbortController === 'function' ? new platform.AbortController() : null;
    if (external) {
      const onAbort = () => this.abort();
      external.addEventListener('abort', onAbort, { once: true });
      this.unlink = () => external.removeEventListener('abort', onAbort);
    } else {
      this.unlink = () => undefined;
    }
  }

  /** The signal handed to fetch. */
  get signal(): AbortSignalLike | undefined {
    return this.controller?.signal;
  }

  /** True when the caller aborted. */
  get callerAborted(): boolean {
    return this.external?.aborted === true;
  }

  get aborted(): boolean {
    return this.abortedLocally || this.callerAborted;
  }

  abort(): void {
    this.abortedLocally = true;
    try {
      this.controller?.abort();
    } catch {
      // Nothing to do: the call is over either way.
    }
  }

  /** Throws the aborted error when the caller aborted. */
  throwIfAborted(): void {
    if (this.callerAborted) throw abortedError(this.external?.reason);
  }

  /** Settles with `promise`, or rejects with the aborted error as soon as the caller aborts. */
  race<T>(promise: Promise<T>): Promise<T> {
    if (!this.external) return promise;
    if (this.external.aborted) {
      promise.catch(() => undefined);
      return Promise.reject(abortedError(this.external.reason));
    }
    const external = this.external;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(abortedError(external.reason));
      external.addEventListener('abort', onAbort, { once: true });
      promise.then(
        (value) => {
          external.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          external.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  /** Stops following the caller's signal. */
  dispose(): void {
    this.unlink();
  }
}

/** Waits `ms`, or rejects with the aborted error when `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignalLike): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortedError(signal.reason));
      return;
    }
    const onAbort = () => {
      platform.clearTimeout(handle);
      reject(abortedError(signal?.reason));
    };
    const handle = platform.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Response headers as pairs, names lower-cased. */
export function responseHeaders(response: ResponseLike): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  response.headers.forEach((value, name) => pairs.push([name.toLowerCase(), value]));
  return pairs;
}

/** A body chunk as bytes: streaming polyfills may hand out ArrayBuffers or (text streaming) strings. */
export function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return encodeUtf8(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError('The response body stream delivered something other than bytes.');
}

/** Concatenates byte chunks. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const chunk of chunks) total += chunk.length;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Reads a whole body: from the stream reader when there is one, else `arrayBuffer()`, else (React Native versions whose
 * FileReader lacks readAsArrayBuffer) `text()` re-encoded as UTF-8. A failure is a networkError.
 */
export async function readAllBytes(response: ResponseLike, call?: CallController): Promise<Uint8Array> {
  try {
    const reader = response.body && typeof response.body.getReader === 'function' ? response.body.getReader() : null;
    if (reader) {
      const chunks: Uint8Array[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (value) {
          const bytes = toBytes(value);
          if (bytes.length) chunks.push(bytes);
        }
      }
      return concatBytes(chunks);
    }
    try {
      return new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      if (call?.aborted) throw error;
      return encodeUtf8(await response.text());
    }
  } catch (error) {
    if (error instanceof TollgateError) throw error;
    if (call?.callerAborted) throw abortedError(error);
    throw networkError(`The response could not be read: ${describe(error)}`, 'response_cut', error);
  }
}

/** `scheme://host[:port]` lower-cased without a default port, and the path with lower-cased percent-escapes. */
function urlParts(url: string): { origin: string; path: string } | null {
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)/.exec(url);
  if (!match) return null;
  const scheme = match[1]!.toLowerCase();
  let host = match[2]!.toLowerCase();
  if ((scheme === 'http' && host.endsWith(':80')) || (scheme === 'https' && host.endsWith(':443'))) host = host.replace(/:\d+$/, '');
  const path = (match[3] || '/').replace(/%[0-9A-Fa-f]{2}/g, (escape) => escape.toLowerCase());
  return { origin: `${scheme}://${host}`, path };
}

/**
 * The SDK never follows a redirect (the app token and device token must reach the configured gateway only). A 3xx the
 * fetch hands back is mapped like any non-2xx answer (providerError without `Tollgate-Error`). React Native's fetch
 * ignores `redirect: 'manual'` and follows by itself: a response that says it was redirected (`redirected`, an
 * `opaqueredirect`, or a final `url` elsewhere than the one requested) is refused with invalidRequest, reason
 * `redirect_refused`, and its body is never read.
 */
export function refuseRedirect(response: ResponseLike, requestedUrl: string): void {
  let redirected = response.redirected === true || response.type === 'opaqueredirect' || response.status === 0;
  if (!redirected && typeof response.url === 'string' && response.url !== '') {
    const requested = urlParts(requestedUrl);
    const final = urlParts(response.url);
    redirected = !requested || !final || requested.origin !== final.origin || requested.path !== final.path;
  }
  if (!redirected) return;
  try {
    (response.body as { cancel?: () => Promise<void> } | null | undefined)?.cancel?.().catch(() => undefined);
  } catch {
    // Nothing to release.
  }
  throw new TollgateError(
    'invalidRequest',
    'The gateway address answered with a redirect, which Tollgate never follows: configure the final address (https://…) of your gateway.',
    { reason: 'redirect_refused', ...(response.status > 0 ? { status: response.status } : {}) },
  );
}

/** A short description of a thrown value, for messages. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error && cause.message ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
