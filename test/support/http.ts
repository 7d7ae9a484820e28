/**
 * Raw HTTP helpers for tests: `fetch` normalizes paths (`..`, `%2e`) and hides duplicate headers, so wire-level tests use
 * node:http with the path and headers exactly as given.
 */
import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  json<T = unknown>(): T;
  text(): string;
}

/** Sends a request with `path` untouched. `headers` may be a raw array to send duplicates. */
export function rawRequest(
  baseUrl: string,
  options: { method?: string; path: string; headers?: OutgoingHttpHeaders | string[]; body?: string | Buffer },
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  // With raw array headers Node adds no Host header, and an HTTP/1.1 server must refuse a request without one.
  const headers = Array.isArray(options.headers) && !options.headers.some((value, index) => index % 2 === 0 && value.toLowerCase() === 'host')
    ? ['Host', url.host, ...options.headers]
    : options.headers;
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, method: options.method ?? 'GET', path: options.path, headers: headers as OutgoingHttpHeaders, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body,
            json: <T>() => JSON.parse(body.toString('utf8')) as T,
            text: () => body.toString('utf8'),
          });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (options.body !== undefined) request.write(options.body);
    request.end();
  });
}

/** The protocol's error body. */
export interface ErrorBody {
  error: { type: string; reason: string; message: string; requestId: string };
}
