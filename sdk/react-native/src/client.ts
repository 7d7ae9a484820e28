/**
 * The client: `{baseUrl}/v1/proxy/{endpoint}` with the Tollgate headers (protocol.md), device tokens by attestation,
 * gateway errors mapped to {@link TollgateError}, optional retries of `rateLimited`, cancellation by AbortSignal, and
 * streamed responses parsed per the provider's format.
 */
import { AttestationApi, DEVICE_ID_PATTERN, DevelopmentSession, type DeviceSession, type DevelopmentAttestation } from './attestation';
import { retryDecision } from './behaviour';
import { DeviceTokenCache } from './device-token-cache';
import { abortedError, invalidRequest, mapError, networkError, TollgateError } from './errors';
import { findNativeModule, NativeDeviceSession, type TollgateNativeModule } from './native';
import { checkEndpoint, checkHeaderValue, prepareBody, RequestBuilder, SDK_HEADER, type PreparedBody, type QueryInput } from './request-builder';
import { createStreamParser, formatForContentType, MalformedStreamError, STREAM_FORMATS, type StreamEvent, type StreamFormat, type StreamParser } from './streams';
import {
  CallController,
  describe,
  globalFetch,
  isDevGlobal,
  readAllBytes,
  refuseRedirect,
  responseHeaders,
  toBytes,
  sleep,
  type AbortSignalLike,
  type BodyReaderLike,
  type FetchFunction,
  type ResponseLike,
} from './transport';
import { utf8ToString } from './utf8';
import { parseMe, type Me } from './me';
import { openRealtime, type RealtimeHost, type RealtimeOptions, type RealtimeSession } from './realtime';
import { buildUpgrade } from './realtime-rules';
import { ServerClock } from './server-clock';
import { isFormData, prepareFormData } from './multipart';
import { createTollgateFetch } from './fetch-adapter';
import { hasNativeHttp, nativeFetch } from './native-transport';
import { UserTokenCache, type UserTokenProvider } from './user-token';

/** Automatic retries of `rateLimited` (the gateway's own 429). Off unless set, for the client or per call. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3 when `retry` is given; 0 turns retrying off). */
  readonly maxRetries?: number;
  /**
   * Total seconds the SDK may spend waiting between attempts of one call (default 30 when `retry` is given). A wait
   * that would go beyond it is not started: the call fails at once with `rateLimited` and its `retryAfter`.
   */
  readonly maxWaitSeconds?: number;
  /** Called before each wait (e.g. to show "busy, retrying in 3 s"). */
  readonly onRetry?: (info: { readonly attempt: number; readonly delaySeconds: number; readonly error: TollgateError }) => void;
}

export interface TollgateOptions {
  /** The app token from the dashboard (`at_…`). It identifies the app; it is not a secret and no provider key is ever in the app. */
  readonly appToken: string;
  /**
   * The gateway, e.g. `https://gateway.example.com` (a path prefix is allowed). `Tollgate.initialize` reads it from
   * the app's native configuration when omitted (Info.plist `TollgateGatewayURL`, AndroidManifest meta-data
   * `dev.tollgate.GATEWAY_URL`); `createTollgateClient` needs it here.
   */
  readonly gatewayUrl?: string;
  /** @deprecated the former name of `gatewayUrl`. */
  readonly baseUrl?: string;
  /**
   * Development attestation for simulators and emulators, used only when `isDevelopmentBuild` is true: the native
   * module trades `token` itself; without the native module (Expo Go, tests) the SDK trades `token` and `deviceId`.
   */
  readonly development?: DevelopmentAttestation;
  /** Whether this is a development build; default React Native's `__DEV__`. Development attestation is refused otherwise. */
  readonly isDevelopmentBuild?: boolean;
  /**
   * The native module; default the linked `TollgateNative` (TurboModule, else `NativeModules.TollgateNative`). `null`
   * uses none. For tests and for apps that bring their own native code.
   */
  readonly nativeModule?: TollgateNativeModule | null;
  /**
   * A fetch implementation; default the global fetch. React Native's built-in fetch does not stream (a stream then
   * arrives whole, at the end): pass `fetch` from `expo/fetch` (or any fetch whose `Response.body.getReader()` works)
   * for streams that stream.
   */
  readonly fetch?: FetchFunction;
  /** Automatic retries of `rateLimited`; off by default. */
  readonly retry?: RetryOptions;
  /**
   * Lets `stream` deliver a response whole, at its end, when the fetch cannot stream (React Native's built-in fetch
   * without the native module's transport). Off by default: such a stream fails with invalidRequest
   * `streaming_unavailable` instead of silently buffering.
   */
  readonly bufferedStreams?: boolean;
  /** Unix ms clock (tests). */
  readonly clock?: () => number;
  /** Attest in the background right away so that the first call does not wait (default true). Failures are kept for the first call to report. */
  readonly warmUp?: boolean;
}

export interface CallOptions {
  /** `{provider}/{version}/{path}[?query]`, e.g. `openai/v1/chat/completions`. */
  readonly endpoint: string;
  /** HTTP method, default `POST`. */
  readonly method?: string;
  /**
   * The body: an object or array is sent as JSON, a string as UTF-8 (both `Content-Type: application/json` unless you
   * set one), a Uint8Array or ArrayBuffer as bytes (`application/octet-stream`). Omit for none.
   */
  readonly body?: unknown;
  /** Extra headers for the provider (e.g. `anthropic-version`). `Tollgate-*` names are refused. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Query parameters, appended after any query written in the endpoint. */
  readonly query?: QueryInput;
  /** Cancels the call: it then rejects with TollgateError kind `networkError`, reason `aborted`. */
  readonly signal?: AbortSignalLike;
  /** Overrides the client's retry options for this call. */
  readonly retry?: RetryOptions;
}

export interface RequestOptions extends CallOptions {
  /** How to read the body; default by Content-Type: JSON → parsed value, text/* → string, anything else → Uint8Array. */
  readonly format?: 'json' | 'text' | 'bytes';
}

export interface StreamOptions extends CallOptions {
  /** The provider's streaming format; default from the response's Content-Type (text/event-stream → sse, NDJSON → ndjson, JSON → json-array, else raw). */
  readonly format?: StreamFormat;
}

/** A complete 2xx response. */
export interface TollgateResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The gateway's `Tollgate-Request-Id`. */
  readonly requestId?: string;
  text(): string;
  json<T = unknown>(): T;
}

interface ResolvedRetry {
  readonly maxRetries: number;
  readonly maxWaitSeconds: number;
  readonly onRetry?: RetryOptions['onRetry'];
}

const NO_RETRY: ResolvedRetry = { maxRetries: 0, maxWaitSeconds: 0 };

function resolveRetry(retry: RetryOptions | undefined): ResolvedRetry {
  if (!retry) return NO_RETRY;
  const maxRetries = retry.maxRetries ?? 3;
  const maxWaitSeconds = retry.maxWaitSeconds ?? 30;
  if (!Number.isFinite(maxRetries) || maxRetries < 0 || !Number.isFinite(maxWaitSeconds) || maxWaitSeconds < 0) {
    throw invalidRequest('retry.maxRetries and retry.maxWaitSeconds must be non-negative numbers.', 'bad_options');
  }
  return { maxRetries: Math.floor(maxRetries), maxWaitSeconds, ...(retry.onRetry ? { onRetry: retry.onRetry } : {}) };
}

/** Any failure as a TollgateError (an unexpected one becomes networkError, reason `unexpected`). */
function toTollgateError(error: unknown, call?: CallController): TollgateError {
  if (error instanceof TollgateError) return error;
  if (call?.callerAborted) return abortedError(error);
  return networkError(`Unexpected failure: ${describe(error)}`, 'unexpected', error);
}

const isJsonType = (type: string) => type === 'application/json' || type.endsWith('+json');

function makeResponse(status: number, headers: Record<string, string>, body: Uint8Array): TollgateResponse {
  return {
    status,
    headers,
    body,
    ...(headers['tollgate-request-id'] ? { requestId: headers['tollgate-request-id'] } : {}),
    text: () => utf8ToString(body),
    json: <T>() => JSON.parse(utf8ToString(body)) as T,
  };
}

/** Reads `response` per `format` (or its Content-Type). */
function decodeResponse(response: TollgateResponse, format: RequestOptions['format']): unknown {
  const type = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const chosen = format ?? (isJsonType(type) ? 'json' : type.startsWith('text/') ? 'text' : 'bytes');
  if (chosen === 'bytes') return response.body;
  const text = response.text();
  if (chosen === 'text') return text;
  if (chosen !== 'json') throw invalidRequest(`Unknown response format "${String(format)}" (json, text or bytes).`, 'bad_options');
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw networkError(`The response is not valid JSON: ${describe(error)}`, 'malformed_response', error);
  }
}

/** @internal What `open` does besides a proxied call. */
export interface OpenExtras {
  /** A gateway route instead of `/v1/proxy/{endpoint}` (`/v1/me`). */
  readonly route?: string;
  /** An already prepared body (multipart from the fetch adapter). */
  readonly body?: PreparedBody | null;
  /** Hand non-2xx answers back (after the SDK's own retries) instead of throwing: the fetch adapter's provider SDKs read them. */
  readonly passErrors?: boolean;
}

/** A response whose body was already read: the same head, the bytes again. */
function bufferedResponse(response: ResponseLike, bytes: Uint8Array): ResponseLike {
  let used = false;
  const once = () => {
    if (used) throw new TypeError('Body already used');
    used = true;
    return bytes;
  };
  return {
    status: response.status,
    headers: response.headers,
    body: {
      getReader: () => {
        const chunk = once();
        let sent = false;
        return {
          read: async () => (sent || chunk.length === 0 ? { done: true, value: undefined } : ((sent = true), { done: false, value: chunk })),
          cancel: async () => undefined,
        };
      },
    },
    arrayBuffer: async () => {
      const chunk = once();
      return chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer;
    },
    text: async () => utf8ToString(once()),
  };
}

/** The gateway address the options give, or invalidRequest `gateway_url_missing`. */
export function optionsGatewayUrl(options: TollgateOptions): string {
  const url = options.gatewayUrl ?? options.baseUrl;
  if (typeof url !== 'string' || url.trim() === '') {
    throw invalidRequest(
      'No gateway address: set TollgateGatewayURL in Info.plist and dev.tollgate.GATEWAY_URL in AndroidManifest.xml, or pass gatewayUrl.',
      'gateway_url_missing',
    );
  }
  return url.trim();
}

export class TollgateClient {
  private readonly builder: RequestBuilder;
  private readonly transport: FetchFunction;
  private readonly clock: () => number;
  private readonly retry: ResolvedRetry;
  private readonly session: DeviceSession | null;
  private readonly unavailable: TollgateError | null;
  /** @internal See {@link TollgateOptions.bufferedStreams}. */
  readonly bufferedStreams: boolean;
  /** Set when the gateway answered `assertion_required`: every request from then on carries `Tollgate-Assertion`. */
  private assertions = false;
  /** The device token cache (exposed for diagnostics and tests). */
  readonly deviceTokens: DeviceTokenCache;
  /** The signed-in user's ID token (see {@link setUserTokenProvider}). */
  readonly userTokens: UserTokenCache;
  /** The gateway's clock (offset from its `Date` header): `Tollgate-Request-Time` is read from it. */
  readonly serverClock: ServerClock;

  constructor(options: TollgateOptions) {
    if (!options || typeof options !== 'object') throw invalidRequest('Tollgate needs options: { appToken }.', 'bad_options');
    if (typeof options.appToken !== 'string' || options.appToken.trim() === '') {
      throw invalidRequest('appToken is required: the app token from the Tollgate dashboard (at_…).', 'bad_options');
    }
    const gatewayUrl = optionsGatewayUrl(options);
    this.builder = new RequestBuilder(gatewayUrl, options.appToken, SDK_HEADER);
    const native = options.nativeModule === undefined ? findNativeModule() : options.nativeModule;
    // Default transport: the native SDKs' (streams, never follows a redirect); React Native's fetch only without one.
    const fetchImpl = options.fetch ?? (hasNativeHttp(native) ? nativeFetch(native) : globalFetch());
    this.bufferedStreams = options.bufferedStreams === true;
    if (!fetchImpl) throw invalidRequest('No fetch implementation is available: pass `fetch` in the options.', 'bad_options');
    this.transport = fetchImpl;
    const clock = options.clock ?? (() => Date.now());
    this.clock = () => Math.floor(clock());
    this.serverClock = new ServerClock(this.clock);
    this.userTokens = new UserTokenCache(this.clock);
    this.retry = resolveRetry(options.retry);
    const developmentBuild = options.isDevelopmentBuild ?? isDevGlobal();
    const development = options.development;
    const developmentToken = development && typeof development.token === 'string' && development.token.trim() !== '' ? development.token.trim() : null;
    if (developmentToken !== null) checkHeaderValue('developmentToken', developmentToken);
    this.session = null;
    this.unavailable = null;
    if (native) {
      this.session = new NativeDeviceSession(native, { appToken: options.appToken, gatewayUrl: this.builder.baseUrl, developmentToken: developmentBuild ? developmentToken : null }, this.clock);
    } else if (developmentToken !== null && developmentBuild) {
      const deviceId = development!.deviceId;
      if (typeof deviceId !== 'string' || !DEVICE_ID_PATTERN.test(deviceId)) {
        throw invalidRequest('Without the native module, development.deviceId must be 1–128 letters, digits, ".", "_", ":" or "-".', 'bad_options');
      }
      this.session = new DevelopmentSession(new AttestationApi(this.builder, this.transport, this.clock, this.serverClock), { token: developmentToken, deviceId });
    } else if (developmentToken !== null) {
      this.unavailable = new TollgateError('attestationFailed', 'Development attestation is refused in a release build, and the TollgateNative module is not linked.', { reason: 'no_attestation' });
    } else {
      this.unavailable = new TollgateError(
        'attestationFailed',
        'The TollgateNative module is not linked into this app (run `pod install` and rebuild; Expo Go has no native modules: pass `development` in a development build).',
        { reason: 'native_module_missing' },
      );
    }
    this.deviceTokens = new DeviceTokenCache((force) => this.obtainToken(force), this.clock);
    if (options.warmUp ?? true) this.warmUp().catch(() => undefined);
  }

  /** How this client gets device tokens: `native` (the TollgateNative module), `development` (pure JS) or `none`. */
  get attestationKind(): 'native' | 'development' | 'none' {
    return this.session?.kind ?? 'none';
  }

  /** True once the gateway asked for per-request assertions (`assertion_required`). */
  get sendsAssertions(): boolean {
    return this.assertions;
  }

  /** Configures the native module (once); rejects with its TollgateError. `Tollgate.initialize` waits for it. */
  async ready(): Promise<void> {
    if (this.session) await this.session.ready();
  }

  /**
   * Forgets the stored device token (the native module's Keychain / Keystore entry, and the memory cache), e.g. at
   * sign-out; the next call gets a new one. A revocation stays in force until the app restarts.
   */
  async clear(): Promise<void> {
    this.deviceTokens.clear();
    try {
      await this.session?.clear();
    } catch (error) {
      throw toTollgateError(error);
    }
  }

  private obtainToken(forceRefresh: boolean) {
    if (!this.session) return Promise.reject(this.unavailable!);
    return this.session.token(forceRefresh);
  }

  /** Gets a device token now unless a valid one is cached; rejects with the TollgateError. */
  async warmUp(): Promise<void> {
    try {
      await this.deviceTokens.token();
    } catch (error) {
      throw toTollgateError(error);
    }
  }

  /** The gateway address, without a trailing `/`. */
  get gatewayUrl(): string {
    return this.builder.baseUrl;
  }

  /**
   * The base URL to give a provider SDK whose HTTP goes through {@link fetch}: `{gateway}/v1/proxy/{prefix}`, e.g.
   * `providerBaseUrl('openai/v1')` for the `openai` package's `baseURL`.
   */
  providerBaseUrl(prefix: string): string {
    const clean = String(prefix).replace(/^\/+|\/+$/g, '');
    checkEndpoint(clean.includes('/') ? clean : `${clean}/v1`);
    return `${this.builder.baseUrl}/v1/proxy/${clean}`;
  }

  private adapter: ReturnType<typeof createTollgateFetch> | null = null;

  /**
   * A `fetch` for provider SDKs (the `openai` package's `fetch` option): calls under {@link providerBaseUrl} go through
   * Tollgate with its headers, token refresh and streaming; gateway errors come back as responses with `Tollgate-Error`.
   */
  get fetch(): ReturnType<typeof createTollgateFetch> {
    if (!this.adapter) this.adapter = createTollgateFetch(this);
    return this.adapter;
  }

  /**
   * Registers the callback that returns the signed-in user's current ID token (null when signed out); the SDK sends it
   * as `Tollgate-User-Token`, reuses it until a minute before its `exp`, and calls the callback again (with
   * `forceRefresh: true`) once when the gateway answers `user_token_expired`. `null` signs out: no header from now on.
   */
  setUserTokenProvider(provider: UserTokenProvider | null): void {
    if (provider !== null && typeof provider !== 'function') throw invalidRequest('setUserTokenProvider takes a function or null.', 'bad_options');
    this.userTokens.setProvider(provider);
  }

  /** What this device (and signed-in user) may still spend: `GET /v1/me`, typed. Counts against no limit. */
  async me(options: { readonly signal?: AbortSignalLike } = {}): Promise<Me> {
    const call = new CallController(options.signal);
    try {
      const response = await this.open({ endpoint: '', method: 'GET', ...(options.signal ? { signal: options.signal } : {}) }, call, false, { route: '/v1/me' });
      const body = await call.race(readAllBytes(response, call));
      return parseMe(utf8ToString(body));
    } catch (error) {
      call.abort();
      throw toTollgateError(error, call);
    } finally {
      call.dispose();
    }
  }

  /**
   * Opens a realtime session (protocol.md, "Realtime sessions"): `GET {gateway}/v1/proxy/{endpoint}` upgraded to a
   * WebSocket, with the Tollgate headers on the upgrade. See {@link RealtimeSession}.
   */
  realtime(endpointOrOptions: string | RealtimeOptions): Promise<RealtimeSession> {
    const options = typeof endpointOrOptions === 'string' ? { endpoint: endpointOrOptions } : endpointOrOptions;
    return openRealtime(this.realtimeHost, options);
  }

  /** @internal What realtime.ts needs of the client. */
  get realtimeHost(): RealtimeHost {
    return {
      deviceTokens: this.deviceTokens,
      userTokens: this.userTokens,
      clock: this.clock,
      upgrade: async (input, call) => {
        const requestTimeMs = this.serverClock.now();
        const built = buildUpgrade(this.builder, this.builder.token, { ...input, requestTimeMs });
        if (this.assertions && this.session && input.mode === 'headers') {
          const assertion = await call.race(this.session.assertion(built.digest));
          if (assertion) return { ...built, headers: { ...built.headers, 'Tollgate-Assertion': assertion } };
        }
        return built;
      },
      reportDeviceError: async (token, error) => {
        if (!this.session) return 'none';
        const action = await this.session.reportError(token, error.reason ?? null);
        if (action === 'stop') this.deviceTokens.stop(error);
        if (action === 'assert') this.assertions = true;
        return action;
      },
    };
  }

  /** Sends a request and returns the parsed body: JSON → value, text/* → string, else Uint8Array (see `format`). */
  async request<T = unknown>(options: RequestOptions): Promise<T> {
    const format = options?.format;
    if (format !== undefined && format !== 'json' && format !== 'text' && format !== 'bytes') {
      throw invalidRequest(`Unknown response format "${String(format)}" (json, text or bytes).`, 'bad_options');
    }
    const response = await this.send(options);
    return decodeResponse(response, options.format) as T;
  }

  /** Sends a request and returns the whole 2xx response (status, headers, bytes). */
  async send(options: CallOptions): Promise<TollgateResponse> {
    const call = new CallController(options?.signal);
    try {
      const response = await this.open(options, call);
      const headers = Object.fromEntries(responseHeaders(response));
      const body = await call.race(readAllBytes(response, call));
      return makeResponse(response.status, headers, body);
    } catch (error) {
      call.abort();
      throw toTollgateError(error, call);
    } finally {
      call.dispose();
    }
  }

  /**
   * Sends a request and yields events as bytes arrive: `{ type: 'sse', event, data, id, retry }` for SSE,
   * `{ type: 'json', json }` for NDJSON and JSON-array streams, `{ type: 'bytes', bytes }` for raw. Nothing is sent until
   * iteration starts. Leaving the loop early (break, return, throw) closes the connection, which makes the gateway
   * abort the provider request. A cut or malformed stream fails with networkError after the events already complete.
   */
  stream(options: StreamOptions): TollgateStream {
    return new TollgateStream(() => new EventIterator(this, options));
  }

  /** @internal Opens a call and returns the 2xx response head; used by `send` and streams. */
  async open(options: CallOptions, call: CallController, streaming = false, extra: OpenExtras = {}): Promise<ResponseLike> {
    if (!options || typeof options !== 'object') throw invalidRequest('Pass the call options: { endpoint, method, body }.', 'bad_options');
    const method = options.method ?? 'POST';
    const body = extra.body ?? (isFormData(options.body) ? await prepareFormData(options.body) : prepareBody(options.body));
    const input = {
      method,
      endpoint: options.endpoint,
      body,
      ...(options.query ? { query: options.query } : {}),
      ...(options.headers ? { headers: options.headers } : {}),
    };
    // Everything the SDK can refuse is refused before attesting or sending.
    if (!extra.route) this.builder.build(input, 'placeholder', this.clock());
    if (body && body.bytes.length > 0 && /^(GET|HEAD)$/i.test(method)) {
      throw invalidRequest(`A ${method.toUpperCase()} request cannot have a body.`, 'bad_body');
    }
    const retry = options.retry ? resolveRetry(options.retry) : this.retry;
    let retries = 0;
    let waitedSeconds = 0;
    let retriedForDevice = false;
    let retriedForUser = false;
    let forceRefresh = false;
    let forceUser = false;
    for (;;) {
      call.throwIfAborted();
      try {
        const token = await call.race(this.deviceTokens.token(forceRefresh));
        forceRefresh = false;
        const userToken = await call.race(this.userTokens.token(forceUser));
        forceUser = false;
        const time = this.serverClock.now();
        const built = extra.route ? this.builder.buildRoute(method.toUpperCase(), extra.route, token, time) : this.builder.build(input, token, time);
        const headers: Record<string, string> = {};
        for (const [name, value] of built.headers) headers[name] = value;
        if (userToken !== null) headers['Tollgate-User-Token'] = userToken;
        if (this.assertions && this.session) {
          const assertion = await call.race(this.session.assertion(built.digest));
          if (assertion) headers['Tollgate-Assertion'] = assertion;
        }
        let response: ResponseLike;
        try {
          response = (await call.race(
            this.transport(built.url, {
              method: built.method,
              headers,
              ...(built.body.length > 0 ? { body: body?.text ?? built.body } : {}),
              ...(call.signal ? { signal: call.signal } : {}),
              redirect: 'manual',
              ...(streaming ? { reactNative: { textStreaming: true } } : {}),
            }),
          )) as ResponseLike;
        } catch (error) {
          if (error instanceof TollgateError) throw error;
          throw networkError(`Could not reach the gateway: ${describe(error)}`, 'unreachable', error);
        }
        refuseRedirect(response, built.url);
        this.serverClock.observe(response.headers.get('date'), this.clock());
        if (response.status >= 200 && response.status <= 299) return response;
        const bytes = await call.race(readAllBytes(response, call));
        const error = mapError(response.status, responseHeaders(response), bytes, this.clock())!;
        if (error.kind === 'unauthorized' && error.reason === 'user_token_expired' && !retriedForUser && this.userTokens.hasProvider) {
          // user-token.json: ask the callback once more (forced) and resend once; a second expiry surfaces.
          retriedForUser = true;
          this.userTokens.invalidate(userToken);
          forceUser = true;
          continue;
        }
        if (error.kind === 'attestationFailed' && response.status === 403 && this.session) {
          // Rule reason-action: the session (the native module) decides; the SDK acts on its answer.
          const action = await call.race(this.session.reportError(token, error.reason ?? null));
          if (action === 'stop') {
            this.deviceTokens.stop(error);
            if (extra.passErrors) return bufferedResponse(response, bytes);
            throw error;
          }
          if (!retriedForDevice && (action === 'refresh' || action === 'attest' || action === 'assert')) {
            retriedForDevice = true;
            if (action === 'assert') {
              this.assertions = true;
            } else {
              this.deviceTokens.invalidate(token);
              forceRefresh = true;
            }
            continue;
          }
        }
        if (extra.passErrors) return bufferedResponse(response, bytes);
        throw error;
      } catch (error) {
        if (error instanceof TollgateError) {
          const decision = retryDecision(error.kind, error.retryAfter ?? null, retries, waitedSeconds, retry.maxRetries > 0 ? retry : null);
          if (decision.retry && decision.delaySeconds !== null) {
            retries += 1;
            retry.onRetry?.({ attempt: retries, delaySeconds: decision.delaySeconds, error });
            await sleep(decision.delaySeconds * 1000, options.signal);
            waitedSeconds += decision.delaySeconds;
            continue;
          }
        }
        throw error;
      }
    }
  }
}

/**
 * A streamed response: iterate it with `for await` (the iterator is found under `Symbol.asyncIterator`, or under
 * `'@@asyncIterator'` where the runtime has no such symbol), call `next()` yourself, or pass a callback to `forEach`.
 * Single use: one request per stream object, sent when reading starts.
 */
export class TollgateStream implements AsyncIterable<StreamEvent>, AsyncIterator<StreamEvent> {
  private iterator: AsyncIterator<StreamEvent> | null = null;

  constructor(private readonly open: () => AsyncIterator<StreamEvent>) {}

  private get events(): AsyncIterator<StreamEvent> {
    if (!this.iterator) this.iterator = this.open();
    return this.iterator;
  }

  next(): Promise<IteratorResult<StreamEvent>> {
    return this.events.next();
  }

  /** Stops reading and closes the connection (the gateway then aborts the provider request). */
  return(): Promise<IteratorResult<StreamEvent>> {
    if (!this.iterator) {
      this.iterator = { next: async () => ({ done: true, value: undefined }) };
      return Promise.resolve({ done: true, value: undefined });
    }
    return this.iterator.return ? this.iterator.return() : Promise.resolve({ done: true, value: undefined });
  }

  /**
   * Calls `onEvent` for every event, in order, waiting for a returned promise before reading on; resolves at the end
   * of the stream. A callback that throws ends the stream (the connection is closed) and rejects with its error.
   */
  async forEach(onEvent: (event: StreamEvent) => void | Promise<void>): Promise<void> {
    for (;;) {
      const result = await this.next();
      if (result.done) return;
      try {
        await onEvent(result.value);
      } catch (error) {
        await this.return();
        throw error;
      }
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    return this;
  }

  /** Babel's for-await helper looks here when the runtime has no `Symbol.asyncIterator`. */
  '@@asyncIterator'(): AsyncIterator<StreamEvent> {
    return this;
  }
}

/** Iterates one streamed response. Not safe for concurrent `next()` calls (for-await never makes them). */
class EventIterator implements AsyncIterator<StreamEvent> {
  private readonly call: CallController;
  private readonly queue: StreamEvent[] = [];
  private started = false;
  private finished = false;
  private failure: TollgateError | null = null;
  private reader: BodyReaderLike | null = null;
  private parser: StreamParser | null = null;

  constructor(
    private readonly client: TollgateClient,
    private readonly options: StreamOptions,
  ) {
    this.call = new CallController(options?.signal);
  }

  async next(): Promise<IteratorResult<StreamEvent>> {
    try {
      while (this.queue.length === 0 && !this.finished && !this.failure) await this.pump();
    } catch (error) {
      this.fail(
        error instanceof MalformedStreamError
          ? networkError(`The stream is malformed: ${error.message}`, 'malformed_stream', error)
          : toTollgateError(error, this.call),
      );
    }
    if (this.queue.length > 0) return { done: false, value: this.queue.shift()! };
    if (this.failure) {
      const failure = this.failure;
      this.failure = null;
      this.finished = true;
      throw failure;
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<StreamEvent>> {
    this.close();
    return { done: true, value: undefined };
  }

  private async pump(): Promise<void> {
    if (!this.started) {
      this.started = true;
      const format = this.options?.format;
      if (format !== undefined && !STREAM_FORMATS.includes(format)) {
        throw invalidRequest(`Unknown stream format "${String(format)}" (known: ${STREAM_FORMATS.join(', ')}).`, 'bad_options');
      }
      const response = await this.client.open(this.options, this.call, true);
      this.parser = createStreamParser(format ?? formatForContentType(response.headers.get('content-type')));
      const body = response.body;
      if (body && typeof body.getReader === 'function') {
        this.reader = body.getReader();
      } else {
        if (!this.client.bufferedStreams) {
          response.body && (response.body as { cancel?: () => Promise<void> }).cancel?.().catch(() => undefined);
          throw invalidRequest(
            "This fetch cannot stream (React Native's built-in fetch delivers the body at its end): link the TollgateNative module (its transport streams), pass a streaming fetch, or set bufferedStreams: true.",
            'streaming_unavailable',
          );
        }
        // Buffered streams allowed by the app: the body arrives whole.
        const bytes = await this.call.race(readAllBytes(response, this.call));
        this.feed(bytes);
        this.end();
      }
      return;
    }
    const reader = this.reader;
    if (!reader) {
      // Closed by return() while a next() was pending.
      this.finished = true;
      return;
    }
    let chunk: { done: boolean; value?: Uint8Array | undefined };
    try {
      chunk = await this.call.race(reader.read());
    } catch (error) {
      if (error instanceof TollgateError) throw error;
      if (this.call.callerAborted) throw abortedError(error);
      throw networkError(`The stream was cut: ${describe(error)}`, 'stream_cut', error);
    }
    if (chunk.done) this.end();
    else if (chunk.value) {
      const bytes = toBytes(chunk.value);
      if (bytes.length > 0) this.feed(bytes);
    }
  }

  private feed(bytes: Uint8Array): void {
    const events: StreamEvent[] = [];
    try {
      this.parser!.feed(bytes, events);
    } finally {
      this.queue.push(...events);
    }
  }

  private end(): void {
    const events: StreamEvent[] = [];
    try {
      this.parser!.finish(events);
    } finally {
      this.queue.push(...events);
    }
    this.finished = true;
    this.release();
  }

  private fail(error: TollgateError): void {
    this.failure = error;
    this.close(false);
  }

  /** Closes the connection (aborting it when it is still open). */
  private close(markFinished = true): void {
    if (markFinished) this.finished = true;
    if (!this.started) this.started = true;
    const reader = this.reader;
    this.reader = null;
    if (reader) reader.cancel().catch(() => undefined);
    this.call.abort();
    this.call.dispose();
  }

  private release(): void {
    this.reader = null;
    this.call.dispose();
  }
}

/** A new, independent client (the `Tollgate` singleton wraps one). Throws TollgateError `invalidRequest` for bad options. */
export function createTollgateClient(options: TollgateOptions): TollgateClient {
  return new TollgateClient(options);
}
