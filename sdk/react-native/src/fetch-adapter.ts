/**
 * A `fetch` for the provider SDKs an app already uses (the `openai` npm package's `fetch` option, and any SDK that
 * takes one): point the SDK's base URL at `client.providerBaseUrl('openai/v1')` and pass `client.fetch`. Each call
 * becomes a Tollgate call: the Tollgate headers and tokens are added (the SDK's own `Authorization` is dropped: the
 * gateway injects the provider key), tokens are refreshed and the call resent as for `request`, and the body streams as
 * it arrives. Gateway errors are handed back as responses (status, `Tollgate-Error` header, JSON body) so that the
 * provider SDK raises its own error type; `mapError` turns one into a TollgateError.
 */
import type { TollgateClient } from './client';
import { invalidRequest, TollgateError } from './errors';
import { isFormData, prepareFormData } from './multipart';
import { prepareBody, type PreparedBody } from './request-builder';
import { CallController, describe, responseHeaders, toBytes, type AbortSignalLike, type BodyReaderLike, type ResponseLike } from './transport';
import { encodeUtf8, utf8ToString } from './utf8';

/** Headers the SDK never forwards: the provider SDK's placeholder credential and what the HTTP stack sets itself. */
const DROPPED = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'host', 'content-length', 'connection', 'accept-encoding', 'cookie']);

interface RequestLike {
  readonly url: string;
  readonly method?: string;
  readonly headers?: unknown;
  readonly signal?: AbortSignalLike;
  arrayBuffer?(): Promise<ArrayBuffer>;
}

interface InitLike {
  readonly method?: string;
  readonly headers?: unknown;
  readonly body?: unknown;
  readonly signal?: AbortSignalLike | null;
}

function headerEntries(headers: unknown): Array<[string, string]> {
  if (!headers) return [];
  const out: Array<[string, string]> = [];
  const withForEach = headers as { forEach?: (callback: (value: string, name: string) => void) => void };
  if (typeof withForEach.forEach === 'function' && !Array.isArray(headers)) {
    withForEach.forEach((value, name) => out.push([name, value]));
    return out;
  }
  if (Array.isArray(headers)) {
    for (const [name, value] of headers as Array<[string, string]>) out.push([String(name), String(value)]);
    return out;
  }
  for (const [name, value] of Object.entries(headers as Record<string, unknown>)) {
    if (value !== undefined && value !== null) out.push([name, String(value)]);
  }
  return out;
}

async function bodyOf(body: unknown): Promise<PreparedBody | null> {
  if (body === undefined || body === null) return null;
  if (isFormData(body)) return prepareFormData(body);
  if (typeof body === 'string') return { bytes: encodeUtf8(body), defaultContentType: 'text/plain;charset=UTF-8', text: body };
  const params = body as { toString(): string; constructor?: { name?: string } };
  if (params.constructor?.name === 'URLSearchParams') {
    const text = params.toString();
    return { bytes: encodeUtf8(text), defaultContentType: 'application/x-www-form-urlencoded;charset=UTF-8', text };
  }
  const blob = body as { arrayBuffer?: () => Promise<ArrayBuffer>; type?: string; getReader?: unknown };
  if (typeof blob.arrayBuffer === 'function') return { bytes: new Uint8Array(await blob.arrayBuffer()), defaultContentType: blob.type || 'application/octet-stream' };
  if (typeof blob.getReader === 'function') {
    // A ReadableStream body: read it whole (the request digest needs every byte before the request is sent).
    const reader = (blob.getReader as () => BodyReaderLike)();
    const chunks: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value) chunks.push(toBytes(value));
    }
    const bytes = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.length;
    }
    return { bytes, defaultContentType: 'application/octet-stream' };
  }
  return prepareBody(body);
}

interface PlatformResponse {
  new (body: unknown, init: { status: number; headers: Array<[string, string]> }): unknown;
}
interface PlatformReadableStream {
  new (source: { pull(controller: { enqueue(chunk: Uint8Array): void; close(): void; error(reason: unknown): void }): Promise<void>; cancel(): Promise<void> }): unknown;
}

/** Wraps the SDK's response in the platform's Response (streaming through a ReadableStream when there is one). */
function toPlatformResponse(response: ResponseLike, call: CallController, url: string): unknown {
  const globals = globalThis as { Response?: PlatformResponse; ReadableStream?: PlatformReadableStream };
  const headers = responseHeaders(response);
  const status = response.status;
  const nullBody = status === 204 || status === 205 || status === 304;
  const reader = !nullBody && response.body && typeof response.body.getReader === 'function' ? response.body.getReader() : null;
  if (typeof globals.Response === 'function' && typeof globals.ReadableStream === 'function' && (reader || nullBody)) {
    const stream = reader
      ? new globals.ReadableStream({
          async pull(controller) {
            try {
              const { done, value } = await reader.read();
              if (done) {
                controller.close();
                call.dispose();
              } else if (value) controller.enqueue(toBytes(value));
            } catch (error) {
              call.dispose();
              controller.error(error);
            }
          },
          async cancel() {
            await reader.cancel().catch(() => undefined);
            call.abort();
            call.dispose();
          },
        })
      : null;
    const result = new globals.Response(stream, { status, headers }) as object;
    Object.defineProperty(result, 'url', { value: url });
    return result;
  }
  // No WHATWG streams here (React Native without a streams polyfill): a Response-shaped object over the reader.
  let used = false;
  const readAll = async (): Promise<Uint8Array> => {
    if (used) throw new TypeError('Body already used');
    used = true;
    if (!reader) return new Uint8Array(await response.arrayBuffer());
    const chunks: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value) chunks.push(toBytes(value));
    }
    call.dispose();
    const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  };
  const lower = new Map(headers.map(([name, value]) => [name.toLowerCase(), value] as const));
  return {
    ok: status >= 200 && status <= 299,
    status,
    statusText: '',
    url,
    redirected: false,
    type: 'basic',
    headers: {
      get: (name: string) => lower.get(name.toLowerCase()) ?? null,
      has: (name: string) => lower.has(name.toLowerCase()),
      forEach: (callback: (value: string, name: string) => void) => lower.forEach((value, name) => callback(value, name)),
      entries: () => lower.entries(),
      [Symbol.iterator]: () => lower.entries(),
    },
    body: reader
      ? {
          getReader: () => reader,
          [Symbol.asyncIterator]: () => ({
            next: async () => {
              const { done, value } = await reader.read();
              return done ? { done: true, value: undefined } : { done: false, value: toBytes(value) };
            },
            return: async () => {
              await reader.cancel().catch(() => undefined);
              return { done: true, value: undefined };
            },
          }),
        }
      : null,
    arrayBuffer: async () => {
      const bytes = await readAll();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    },
    text: async () => utf8ToString(await readAll()),
    json: async () => JSON.parse(utf8ToString(await readAll())),
  };
}

/** The fetch of `client` (see the file comment). `input` must be an address under `client.providerBaseUrl(…)`. */
export function createTollgateFetch(client: TollgateClient): (input: string | { toString(): string } | RequestLike, init?: InitLike) => Promise<unknown> {
  return async (input, init = {}) => {
    const request = typeof input === 'object' && input !== null && 'url' in input && typeof (input as RequestLike).url === 'string' ? (input as RequestLike) : null;
    const url = request ? request.url : String(input);
    const prefix = `${client.gatewayUrl}/v1/proxy/`;
    if (!url.startsWith(prefix)) {
      throw invalidRequest(`The Tollgate fetch only calls its gateway's providers (${prefix}…), not "${url}".`, 'bad_endpoint');
    }
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    for (const [name, value] of [...headerEntries(request?.headers), ...headerEntries(init.headers)]) {
      const lower = name.toLowerCase();
      if (DROPPED.has(lower) || lower.startsWith('tollgate-')) continue;
      headers[name] = value;
    }
    let body: PreparedBody | null;
    try {
      body = await bodyOf(init.body !== undefined ? init.body : request && method !== 'GET' && method !== 'HEAD' && request.arrayBuffer ? await request.arrayBuffer() : undefined);
    } catch (error) {
      if (error instanceof TollgateError) throw error;
      throw invalidRequest(`The request body could not be read: ${describe(error)}`, 'bad_body');
    }
    if (body && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['Content-Type'] = body.defaultContentType;
    const signal = init.signal ?? request?.signal ?? undefined;
    const call = new CallController(signal ?? undefined);
    try {
      const response = await client.open({ endpoint: url.slice(prefix.length), method, headers, ...(signal ? { signal } : {}) }, call, true, { body, passErrors: true });
      return toPlatformResponse(response, call, url);
    } catch (error) {
      call.abort();
      call.dispose();
      // A gateway refusal remembered by the SDK (device_revoked stops every later call before sending): answered as
      // the gateway answered it, so that the provider SDK reports it the same way every time.
      if (error instanceof TollgateError && error.status !== undefined && error.errorType !== undefined) return toPlatformResponse(errorResponse(error), new CallController(), url);
      throw error;
    }
  };
}

/** The gateway's error answer (protocol.md, "Errors") for a TollgateError that came from one. */
function errorResponse(error: TollgateError): ResponseLike {
  const body = encodeUtf8(
    JSON.stringify({ error: { type: error.errorType, ...(error.reason ? { reason: error.reason } : {}), message: error.message, ...(error.requestId ? { requestId: error.requestId } : {}) } }),
  );
  const headers = new Map<string, string>([
    ['content-type', 'application/json'],
    ['tollgate-error', error.errorType!],
  ]);
  let sent = false;
  return {
    status: error.status!,
    headers: { get: (name: string) => headers.get(name.toLowerCase()) ?? null, forEach: (callback: (value: string, name: string) => void) => headers.forEach(callback) },
    body: {
      getReader: () => ({
        read: async () => (sent ? { done: true, value: undefined } : ((sent = true), { done: false, value: body })),
        cancel: async () => undefined,
      }),
    },
    arrayBuffer: async () => body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer,
    text: async () => utf8ToString(body),
  };
}
