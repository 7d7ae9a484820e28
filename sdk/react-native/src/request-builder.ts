/**
 * Endpoint validation, URL, headers and request digest (sdk/conformance/README.md, "request-building.json"). Every
 * refusal is a TollgateError of kind `invalidRequest`, thrown before anything is sent.
 */
import { invalidRequest } from './errors';
import { sha256Hex } from './sha256';
import { decodeUtf8, encodeUtf8 } from './utf8';

/** The SDK version of this build. */
export const SDK_VERSION = '1.2.0';
/** `Tollgate-SDK` sent by this SDK. */
export const SDK_HEADER = `react-native/${SDK_VERSION}`;

/** A request body ready to send: the bytes and the `Content-Type` used when the caller gives none. */
export interface PreparedBody {
  readonly bytes: Uint8Array;
  readonly defaultContentType: string;
  /**
   * The same body as a string when it came from one (a string or JSON): handed to fetch as a string, the most portable
   * body in React Native; fetch encodes it as UTF-8, exactly `bytes`.
   */
  readonly text?: string;
}

/** Query parameters: ordered pairs, or an object (values converted with String()). */
export type QueryInput = ReadonlyArray<readonly [string, string]> | Readonly<Record<string, string | number | boolean>>;

/** One call as the app makes it. `endpoint` is `{slug}/{version}[/{path}][?{query}]`, e.g. `openai/v1/chat/completions`. */
export interface BuildInput {
  readonly method: string;
  readonly endpoint: string;
  readonly body?: PreparedBody | null;
  readonly query?: QueryInput;
  readonly headers?: Readonly<Record<string, string>>;
}

/** What goes on the wire, with the digest an assertion would sign. */
export interface BuiltRequest {
  readonly method: string;
  readonly url: string;
  /** `/v1/proxy/…?query`: the path used in the digest. */
  readonly pathWithQuery: string;
  /** Header names in the case sent, in the order added. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array;
  readonly bodySha256: string;
  readonly canonicalRequest: string;
  readonly digest: string;
}

const BASE_URL = /^[Hh][Tt][Tt][Pp][Ss]?:\/\/[^/?#@\s]+(\/[^?#\s]*)?$/;
const METHOD = /^[A-Za-z]+$/;
const SLUG = /^[a-z0-9][a-z0-9-]{0,39}$/;
const VERSION = /^v[0-9][a-z0-9.-]{0,15}$/;
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;
const QUERY_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const MAX_DECODE_ROUNDS = 3;
const HEX = '0123456789ABCDEF';

/** Throws unless `value` is safe as a header value (no CR, LF or NUL). */
export function checkHeaderValue(name: string, value: string): void {
  if (typeof value !== 'string') throw invalidRequest(`The value of header "${name}" must be a string.`, 'bad_header');
  if (/[\r\n\u0000]/.test(value)) throw invalidRequest(`The value of header "${name}" contains CR, LF or NUL.`, 'bad_header');
}

/** Validates a base URL and returns it without trailing `/`. */
export function normalizeBaseUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || !BASE_URL.test(baseUrl)) {
    throw invalidRequest(`The base URL must be http(s)://host[:port][/path], without query, fragment or user info: "${String(baseUrl)}".`, 'bad_base_url');
  }
  return baseUrl.replace(/\/+$/, '');
}

/** Percent-encodes every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` (uppercase hex; a space is `%20`). */
export function encodeComponent(value: string): string {
  let out = '';
  for (const byte of encodeUtf8(value)) {
    const char = String.fromCharCode(byte);
    out += byte < 0x80 && UNRESERVED.test(char) ? char : `%${HEX[byte >> 4]}${HEX[byte & 0x0f]}`;
  }
  return out;
}

/** Percent-decodes as UTF-8; a malformed escape or bytes that are not UTF-8 are refused. `+` stays `+`. */
function percentDecode(value: string): string {
  if (!value.includes('%')) return value;
  const bytes: number[] = [];
  for (let index = 0; index < value.length; ) {
    const char = value[index]!;
    if (char === '%') {
      const hex = value.slice(index + 1, index + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw invalidRequest('Malformed percent-encoding in the endpoint.', 'bad_endpoint');
      bytes.push(parseInt(hex, 16));
      index += 3;
    } else {
      const code = value.codePointAt(index)!;
      const length = code > 0xffff ? 2 : 1;
      for (const byte of encodeUtf8(value.slice(index, index + length))) bytes.push(byte);
      index += length;
    }
  }
  const decoded = decodeUtf8(Uint8Array.from(bytes), true);
  if (decoded === null) throw invalidRequest("The endpoint's percent-encoding is not UTF-8.", 'bad_endpoint');
  return decoded;
}

function checkDecoded(path: string): void {
  let reason: string | null = null;
  if (CONTROL.test(path)) reason = 'a control character';
  else if (path.includes('\\')) reason = 'a backslash';
  else if (path.includes('@')) reason = "'@'";
  else if (path.includes('//')) reason = "an empty segment ('//')";
  else if (path.startsWith('/')) reason = 'an absolute path';
  else if (SCHEME.test(path) || path.includes('://')) reason = 'a URL scheme';
  else if (path.split('/').some((segment) => segment === '.' || segment === '..')) reason = "a dot segment ('.' or '..')";
  if (reason) throw invalidRequest(`The provider path is not allowed: it contains ${reason}.`, 'unsafe_path');
}

/** Checks the provider path as the gateway does (core/pipeline/proxy-path.ts): as written, then up to three decodings. */
function checkProviderPath(raw: string): void {
  let current = raw;
  checkDecoded(current);
  for (let round = 0; round < MAX_DECODE_ROUNDS; round += 1) {
    const decoded = percentDecode(current);
    if (decoded === current) return;
    checkDecoded(decoded);
    current = decoded;
  }
  throw invalidRequest('The provider path is percent-encoded too many times.', 'unsafe_path');
}

/** Checks an endpoint and returns its path (`slug/version[/provider_path]`, leading `/` removed) and raw query. */
export function checkEndpoint(endpoint: string): { path: string; rawQuery: string | null } {
  if (typeof endpoint !== 'string') throw invalidRequest('The endpoint must be a string such as "openai/v1/chat/completions".', 'bad_endpoint');
  const trimmed = endpoint.startsWith('/') ? endpoint.slice(1) : endpoint;
  if (trimmed.includes('#')) throw invalidRequest("The endpoint must not contain a fragment ('#').", 'bad_endpoint');
  const questionMark = trimmed.indexOf('?');
  const path = questionMark < 0 ? trimmed : trimmed.slice(0, questionMark);
  const rawQuery = questionMark < 0 ? null : trimmed.slice(questionMark + 1);
  if (rawQuery !== null && !QUERY_CHARS.test(rawQuery)) throw invalidRequest("The endpoint's query has characters that must be percent-encoded.", 'bad_endpoint');
  if (!PATH_CHARS.test(path)) {
    throw invalidRequest("The endpoint has characters that must be percent-encoded (spaces, non-ASCII, '\\', control characters).", 'bad_endpoint');
  }
  if (BAD_PERCENT.test(path) || (rawQuery !== null && BAD_PERCENT.test(rawQuery))) {
    throw invalidRequest("The endpoint has a '%' not followed by two hex digits.", 'bad_endpoint');
  }
  if (path.includes('//') || path.startsWith('/')) throw invalidRequest("The endpoint must not contain an empty segment ('//').", 'bad_endpoint');
  const first = path.indexOf('/');
  const second = first < 0 ? -1 : path.indexOf('/', first + 1);
  const slug = first < 0 ? path : path.slice(0, first);
  const version = first < 0 ? null : second < 0 ? path.slice(first + 1) : path.slice(first + 1, second);
  if (version === null || !SLUG.test(slug) || !VERSION.test(version)) {
    throw invalidRequest(`The endpoint must look like {provider}/{version}/{path}, e.g. openai/v1/chat/completions: "${endpoint}".`, 'bad_endpoint');
  }
  if (second >= 0) checkProviderPath(path.slice(second + 1));
  return { path, rawQuery };
}

function queryPairs(query: QueryInput | undefined): Array<readonly [string, string]> {
  if (!query) return [];
  if (Array.isArray(query)) return query as Array<readonly [string, string]>;
  return Object.entries(query as Record<string, string | number | boolean>).map(([name, value]) => [name, String(value)] as const);
}

/**
 * Builds requests for one gateway and app: `{baseUrl}/v1/proxy/{endpoint}` with the Tollgate headers.
 * @param sdk the `Tollgate-SDK` value (default `react-native/1.2.0`).
 */
export class RequestBuilder {
  readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly appToken: string,
    private readonly sdk: string = SDK_HEADER,
  ) {
    this.baseUrl = normalizeBaseUrl(baseUrl);
    checkHeaderValue('Tollgate-App-Token', appToken);
    checkHeaderValue('Tollgate-SDK', sdk);
  }

  /** Builds `input` with `deviceToken`, stamped with `requestTimeMs`. */
  build(input: BuildInput, deviceToken: string, requestTimeMs: number): BuiltRequest {
    if (typeof input.method !== 'string' || !METHOD.test(input.method)) {
      throw invalidRequest(`The HTTP method must be letters only: "${String(input.method)}".`, 'bad_method');
    }
    const method = input.method.toUpperCase();
    const { path, rawQuery } = checkEndpoint(input.endpoint);

    const parts: string[] = [];
    if (rawQuery) parts.push(rawQuery);
    for (const [name, value] of queryPairs(input.query)) parts.push(`${encodeComponent(name)}=${encodeComponent(value)}`);
    const pathWithQuery = `/v1/proxy/${path}${parts.length ? `?${parts.join('&')}` : ''}`;

    const body = input.body?.bytes ?? new Uint8Array(0);
    const headers: Array<readonly [string, string]> = [];
    for (const [name, value] of Object.entries(input.headers ?? {})) {
      if (!TOKEN.test(name)) throw invalidRequest(`Not a valid header name: "${name}".`, 'bad_header');
      if (name.toLowerCase().startsWith('tollgate-')) throw invalidRequest(`Tollgate-* headers are set by the SDK, not by the caller: "${name}".`, 'bad_header');
      checkHeaderValue(name, value);
      headers.push([name, value]);
    }
    checkHeaderValue('Tollgate-Device-Token', deviceToken);
    if (!Number.isSafeInteger(requestTimeMs) || requestTimeMs < 0) throw invalidRequest('The request time must be a non-negative integer.', 'bad_clock');
    const time = String(requestTimeMs);
    headers.push(['Tollgate-App-Token', this.appToken], ['Tollgate-Device-Token', deviceToken], ['Tollgate-Request-Time', time], ['Tollgate-SDK', this.sdk]);
    if (body.length > 0 && !headers.some(([name]) => name.toLowerCase() === 'content-type')) {
      headers.push(['Content-Type', input.body!.defaultContentType]);
    }

    const bodySha256 = sha256Hex(body);
    const canonicalRequest = `${method}\n${pathWithQuery}\n${time}\n${bodySha256}`;
    return {
      method,
      url: this.baseUrl + pathWithQuery,
      pathWithQuery,
      headers,
      body,
      bodySha256,
      canonicalRequest,
      digest: sha256Hex(canonicalRequest),
    };
  }

  /**
   * A gateway route outside the proxy (`GET /v1/me`) with the headers of a proxied request and no body; the digest
   * covers the route's path as it covers `/v1/proxy/…`.
   */
  buildRoute(method: string, route: string, deviceToken: string, requestTimeMs: number): BuiltRequest {
    if (!/^\/v1\/[a-z]+$/.test(route)) throw invalidRequest(`Not a gateway route: "${route}".`, 'bad_route');
    checkHeaderValue('Tollgate-Device-Token', deviceToken);
    if (!Number.isSafeInteger(requestTimeMs) || requestTimeMs < 0) throw invalidRequest('The request time must be a non-negative integer.', 'bad_clock');
    const time = String(requestTimeMs);
    const bodySha256 = sha256Hex(new Uint8Array(0));
    const canonicalRequest = `${method}\n${route}\n${time}\n${bodySha256}`;
    return {
      method,
      url: this.baseUrl + route,
      pathWithQuery: route,
      headers: [['Tollgate-App-Token', this.appToken], ['Tollgate-Device-Token', deviceToken], ['Tollgate-Request-Time', time], ['Tollgate-SDK', this.sdk]],
      body: new Uint8Array(0),
      bodySha256,
      canonicalRequest,
      digest: sha256Hex(canonicalRequest),
    };
  }

  /** The app token (for the subprotocol form of a realtime upgrade). */
  get token(): string {
    return this.appToken;
  }

  /** URL of `POST /v1/attest/{method}` (`challenge`, `development`, `apple-app-attest`, …). */
  attestUrl(method: string): string {
    if (!SLUG.test(method)) throw invalidRequest(`Not an attestation method: "${method}".`, 'bad_method');
    return `${this.baseUrl}/v1/attest/${method}`;
  }

  /** Headers of the attestation routes, which take the app token only (client-behaviour.json, `attestation-request`). */
  attestHeaders(): Array<readonly [string, string]> {
    return [['Tollgate-App-Token', this.appToken]];
  }
}

/**
 * The request body as the caller gave it: a string is sent as UTF-8 (default `application/json`), bytes
 * (Uint8Array, any ArrayBufferView or ArrayBuffer) as they are (default `application/octet-stream`), anything else is
 * serialized with JSON.stringify (`application/json`). Undefined or null is no body.
 */
export function prepareBody(body: unknown): PreparedBody | null {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return { bytes: encodeUtf8(body), defaultContentType: 'application/json', ...(isWellFormed(body) ? { text: body } : {}) };
  if (body instanceof Uint8Array) return { bytes: body, defaultContentType: 'application/octet-stream' };
  if (body instanceof ArrayBuffer) return { bytes: new Uint8Array(body), defaultContentType: 'application/octet-stream' };
  if (ArrayBuffer.isView(body)) {
    return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), defaultContentType: 'application/octet-stream' };
  }
  const form = body as { append?: unknown; getParts?: unknown; entries?: unknown };
  if (typeof form.append === 'function' && (typeof form.getParts === 'function' || typeof form.entries === 'function')) {
    // JSON.stringify(formData) is "{}": the client encodes forms as multipart (multipart.ts), asynchronously.
    throw invalidRequest('A FormData body is encoded by the client (request/stream/fetch), not by prepareBody.', 'bad_body');
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(body);
  } catch (error) {
    throw invalidRequest(`The body cannot be serialized as JSON: ${(error as Error).message}`, 'bad_body');
  }
  if (json === undefined) throw invalidRequest('The body cannot be serialized as JSON.', 'bad_body');
  return { bytes: encodeUtf8(json), defaultContentType: 'application/json', text: json };
}

/** True when `text` has no lone surrogate (then every UTF-8 encoder gives exactly the bytes the digest covers). */
function isWellFormed(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0xd800 || code > 0xdfff) continue;
    const next = text.charCodeAt(index + 1);
    if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return false;
    index += 1;
  }
  return true;
}
