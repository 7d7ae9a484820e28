/**
 * HTTP through the native SDKs' transports (URLSession on iOS, OkHttp on Android) that the `TollgateNative` module
 * already holds, instead of React Native's fetch: React Native's fetch delivers a response only when it is complete (a
 * stream would arrive whole, at the end), cannot send a body the SDK has digested byte for byte on every version, and
 * follows redirects by itself, sending the Tollgate tokens to wherever the redirect points. The native side:
 *
 * - never follows a redirect (URLSession's `willPerformHTTPRedirection` answers nil; OkHttp `followRedirects(false)`):
 *   a 3xx comes back as it is, so the tokens reach the configured gateway only;
 * - hands the body over chunk by chunk as it arrives, one `httpRead` at a time (the JS side pulls: backpressure, and
 *   at most one chunk waiting per response);
 * - sends the exact body bytes (standard base64 over the bridge).
 *
 * | method | arguments | result |
 * |---|---|---|
 * | `httpStart(o)` | `{ url, method, headerPairs: [name, value, …], bodyBase64: string \| null }` | `{ id, status, headerPairs }` once the head arrived |
 * | `httpRead(o)` | `{ id }` | `{ chunkBase64: string \| null }`: the next bytes, null at the end |
 * | `httpCancel(o)` | `{ id }` | null (closes the connection; later reads answer null) |
 */
import { decodeBase64, encodeBase64 } from './base64';
import { networkError } from './errors';
import { describe, type AbortSignalLike, type BodyReaderLike, type FetchFunction, type ResponseLike } from './transport';
import { encodeUtf8, utf8ToString } from './utf8';

export interface NativeHttpModule {
  httpStart(options: { url: string; method: string; headerPairs: string[]; bodyBase64: string | null }): Promise<{ id: string; status: number; headerPairs: string[] }>;
  httpRead(options: { id: string }): Promise<{ chunkBase64: string | null }>;
  httpCancel(options: { id: string }): Promise<unknown>;
}

/** True when `native` offers the streaming transport (a module built from this package version). */
export function hasNativeHttp(native: unknown): native is NativeHttpModule {
  const candidate = native as Partial<NativeHttpModule> | null;
  return !!candidate && typeof candidate.httpStart === 'function' && typeof candidate.httpRead === 'function' && typeof candidate.httpCancel === 'function';
}

function bodyBytes(body: unknown): Uint8Array | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return encodeUtf8(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('The native transport sends strings and bytes only.');
}

/** A fetch over the native transport: streams, never follows redirects. */
export function nativeFetch(native: NativeHttpModule): FetchFunction {
  return async (url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown; signal?: AbortSignalLike }): Promise<ResponseLike> => {
    const headerPairs: string[] = [];
    for (const [name, value] of Object.entries(init.headers ?? {})) headerPairs.push(name, value);
    const bytes = bodyBytes(init.body);
    const signal = init.signal;
    if (signal?.aborted) throw networkError('The request was aborted.', 'aborted');
    let head: { id: string; status: number; headerPairs: string[] };
    try {
      head = await native.httpStart({ url, method: init.method ?? 'GET', headerPairs, bodyBase64: bytes && bytes.length > 0 ? encodeBase64(bytes) : null });
    } catch (error) {
      throw networkError(`Could not reach the gateway: ${describe(error)}`, 'unreachable', error);
    }
    const id = head.id;
    let finished = false;
    const cancel = async () => {
      if (finished) return;
      finished = true;
      await native.httpCancel({ id }).catch(() => undefined);
    };
    const onAbort = () => void cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    const release = () => signal?.removeEventListener('abort', onAbort);
    const headers = new Map<string, string>();
    for (let index = 0; index + 1 < head.headerPairs.length; index += 2) {
      const name = head.headerPairs[index]!.toLowerCase();
      const value = head.headerPairs[index + 1]!;
      headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
    }
    const reader: BodyReaderLike = {
      async read() {
        if (finished) return { done: true, value: undefined };
        if (signal?.aborted) {
          await cancel();
          throw networkError('The request was aborted.', 'aborted');
        }
        const { chunkBase64 } = await native.httpRead({ id });
        if (chunkBase64 === null || chunkBase64 === undefined) {
          finished = true;
          release();
          return { done: true, value: undefined };
        }
        const chunk = decodeBase64(chunkBase64);
        if (!chunk) throw networkError('The native transport sent a chunk that is not base64.', 'stream_cut');
        return { done: false, value: chunk };
      },
      async cancel() {
        release();
        await cancel();
      },
    };
    const readAll = async () => {
      const chunks: Uint8Array[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (value) chunks.push(value);
      }
      const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
      let offset = 0;
      for (const chunk of chunks) {
        out.set(chunk, offset);
        offset += chunk.length;
      }
      return out;
    };
    return {
      status: head.status,
      // The native transport never follows a redirect: the response is the requested URL's.
      url,
      redirected: false,
      headers: {
        get: (name: string) => headers.get(name.toLowerCase()) ?? null,
        forEach: (callback: (value: string, name: string) => void) => headers.forEach((value, name) => callback(value, name)),
      },
      body: { getReader: () => reader },
      arrayBuffer: async () => {
        const all = await readAll();
        return all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength) as ArrayBuffer;
      },
      text: async () => utf8ToString(await readAll()),
    };
  };
}
