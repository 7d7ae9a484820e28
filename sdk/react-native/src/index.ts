/**
 * `@tollgate/react-native`: call AI providers through a Tollgate gateway from a React Native app, without shipping a
 * provider key. Device attestation runs in the package's native module (`TollgateNative`, over the iOS and Android
 * SDKs); the gateway address comes from the app's Info.plist / AndroidManifest.
 *
 * ```ts
 * import { Tollgate, TollgateError } from '@tollgate/react-native';
 *
 * await Tollgate.initialize({ appToken: 'at_…' });
 * const reply = await Tollgate.request({ endpoint: 'openai/v1/chat/completions', method: 'POST', body: { … } });
 * for await (const event of Tollgate.stream({ endpoint: 'openai/v1/chat/completions', body: { …, stream: true } })) { … }
 * ```
 */
import { optionsGatewayUrl, TollgateClient, TollgateStream, type CallOptions, type RequestOptions, type StreamOptions, type TollgateOptions, type TollgateResponse } from './client';
import { TollgateError } from './errors';
import { findNativeModule, nativeGatewayUrl } from './native';
import type { StreamEvent } from './streams';
import type { Me } from './me';
import type { RealtimeOptions, RealtimeSession } from './realtime';
import type { AbortSignalLike } from './transport';
import type { UserTokenProvider } from './user-token';

function notInitialized(): TollgateError {
  return new TollgateError(
    'invalidRequest',
    'Tollgate is not initialized: call `await Tollgate.initialize({ appToken })` once at app start (index.js, before the app renders).',
    { reason: 'not_initialized' },
  );
}

/** A copy of `error` (each caller gets its own stack). */
function again(error: TollgateError): TollgateError {
  return new TollgateError(error.kind, error.message, { ...(error.reason ? { reason: error.reason } : {}) });
}

/** The app-wide client. Every method rejects with TollgateError `invalidRequest` (reason `not_initialized`) until `initialize`. */
export class TollgateSingleton {
  private instance: TollgateClient | null = null;
  /** Why the last `initialize` failed when the app did not wait for it (e.g. `gateway_url_missing`). */
  private failure: TollgateError | null = null;
  private userTokenProvider: UserTokenProvider | null = null;
  /** The `initialize` in progress, if any. */
  private pending: Promise<void> | null = null;

  /**
   * Configures the SDK; call once at app start, before the app renders: `await Tollgate.initialize({ appToken })`.
   * The gateway address comes from `gatewayUrl` when given, else from the app's native configuration (Info.plist
   * `TollgateGatewayURL`, AndroidManifest meta-data `dev.tollgate.GATEWAY_URL`), read by the native module. Rejects with
   * TollgateError `invalidRequest`: reason `gateway_url_missing` without an address, `bad_options` for bad options
   * (calls then reject with the same error). It does not wait for attestation, which starts in the background.
   * Calling it again replaces the configuration.
   */
  initialize(options: TollgateOptions): Promise<void> {
    // Calls made while this runs wait for it, so that index.js need not (cannot, under Metro) await it at top level.
    const flight = this.configure(options);
    this.pending = flight;
    const settle = () => {
      if (this.pending === flight) this.pending = null;
    };
    flight.then(settle, settle);
    return flight;
  }

  private async configure(options: TollgateOptions): Promise<void> {
    this.instance = null;
    this.failure = null;
    try {
      if (!options || typeof options !== 'object') throw new TollgateError('invalidRequest', 'Tollgate needs options: { appToken }.', { reason: 'bad_options' });
      const native = options.nativeModule === undefined ? findNativeModule() : options.nativeModule;
      let gatewayUrl = options.gatewayUrl ?? options.baseUrl;
      if ((gatewayUrl === undefined || gatewayUrl === null || gatewayUrl === '') && native) gatewayUrl = (await nativeGatewayUrl(native)) ?? undefined;
      const resolved = { ...options, nativeModule: native, gatewayUrl: optionsGatewayUrl({ ...options, gatewayUrl }) };
      delete (resolved as { baseUrl?: string }).baseUrl;
      const client = new TollgateClient(resolved);
      await client.ready();
      if (this.userTokenProvider) client.setUserTokenProvider(this.userTokenProvider);
      this.instance = client;
    } catch (error) {
      const failure =
        error instanceof TollgateError ? error : new TollgateError('invalidRequest', `Tollgate could not be initialized: ${String(error)}`, { reason: 'bad_options', cause: error });
      this.failure = failure;
      throw failure;
    }
  }

  /** True once `initialize` succeeded. */
  get isInitialized(): boolean {
    return this.instance !== null;
  }

  /** The underlying client (throws when not initialized). */
  get client(): TollgateClient {
    if (!this.instance) throw this.unavailable();
    return this.instance;
  }

  private unavailable(): TollgateError {
    return this.failure ? again(this.failure) : notInitialized();
  }

  /** The client, once a running `initialize` finished; the not-initialized error without one. */
  private ready(): Promise<TollgateClient> {
    if (this.instance) return Promise.resolve(this.instance);
    const pending = this.pending;
    if (!pending) return Promise.reject(this.unavailable());
    return pending.then(
      () => (this.instance ? this.instance : Promise.reject(this.unavailable())),
      () => Promise.reject(this.unavailable()),
    );
  }

  /** See {@link TollgateClient.request}. */
  request<T = unknown>(options: RequestOptions): Promise<T> {
    return this.instance ? this.instance.request<T>(options) : this.ready().then((client) => client.request<T>(options));
  }

  /** See {@link TollgateClient.send}. */
  send(options: CallOptions): Promise<TollgateResponse> {
    return this.instance ? this.instance.send(options) : this.ready().then((client) => client.send(options));
  }

  /** See {@link TollgateClient.stream}. The client is looked up when reading starts. */
  stream(options: StreamOptions): TollgateStream {
    return new TollgateStream((): AsyncIterator<StreamEvent> => {
      if (this.instance) return this.instance.stream(options);
      // Not initialized yet: wait for a running initialize, then stream; without one, fail with its error.
      let inner: AsyncIterator<StreamEvent> | null = null;
      let failed = false;
      const open = async (): Promise<AsyncIterator<StreamEvent>> => {
        if (!inner) inner = (await this.ready()).stream(options);
        return inner;
      };
      return {
        next: async () => {
          if (failed) return { done: true, value: undefined };
          try {
            return await (await open()).next();
          } catch (error) {
            failed = true;
            throw error;
          }
        },
        return: async () => (inner?.return ? inner.return() : { done: true, value: undefined }),
      };
    });
  }

  /** See {@link TollgateClient.realtime}. */
  realtime(endpointOrOptions: string | RealtimeOptions): Promise<RealtimeSession> {
    return this.instance ? this.instance.realtime(endpointOrOptions) : this.ready().then((client) => client.realtime(endpointOrOptions));
  }

  /** See {@link TollgateClient.me}. */
  me(options?: { readonly signal?: AbortSignalLike }): Promise<Me> {
    return this.instance ? this.instance.me(options) : this.ready().then((client) => client.me(options));
  }

  /**
   * See {@link TollgateClient.setUserTokenProvider}. May be called before `initialize` finished: the callback is
   * handed to the client once there is one.
   */
  setUserTokenProvider(provider: UserTokenProvider | null): void {
    this.userTokenProvider = provider;
    this.instance?.setUserTokenProvider(provider);
  }

  /** See {@link TollgateClient.providerBaseUrl}. */
  providerBaseUrl(prefix: string): string {
    return this.client.providerBaseUrl(prefix);
  }

  /**
   * A `fetch` for provider SDKs (see {@link TollgateClient.fetch}); usable before `initialize` finished (each call
   * waits for nothing and fails with the initialization error if there is none).
   */
  readonly fetch = (input: Parameters<TollgateClient['fetch']>[0], init?: Parameters<TollgateClient['fetch']>[1]): Promise<unknown> =>
    this.instance ? this.instance.fetch(input, init) : this.ready().then((client) => client.fetch(input, init));

  /** See {@link TollgateClient.warmUp}. */
  warmUp(): Promise<void> {
    return this.instance ? this.instance.warmUp() : this.ready().then((client) => client.warmUp());
  }

  /** See {@link TollgateClient.clear}: forgets the stored device token. */
  clear(): Promise<void> {
    return this.instance ? this.instance.clear() : Promise.reject(this.unavailable());
  }

  /** Forgets the configuration (tests); calls then reject until `initialize` again. */
  reset(): void {
    this.instance = null;
    this.failure = null;
    this.pending = null;
  }
}

/** The app-wide client. */
export const Tollgate = new TollgateSingleton();

export {
  TollgateClient,
  TollgateStream,
  createTollgateClient,
  type CallOptions,
  type RequestOptions,
  type RetryOptions,
  type StreamOptions,
  type TollgateOptions,
  type TollgateResponse,
} from './client';
export {
  TollgateError,
  TOLLGATE_ERROR_KINDS,
  mapError,
  parseRetryAfter,
  parseHttpDate,
  type HeaderInput,
  type TollgateErrorDetails,
  type TollgateErrorKind,
} from './errors';
export {
  RequestBuilder,
  SDK_HEADER,
  SDK_VERSION,
  checkEndpoint,
  encodeComponent,
  prepareBody,
  type BuildInput,
  type BuiltRequest,
  type PreparedBody,
  type QueryInput,
} from './request-builder';
export {
  createStreamParser,
  formatForContentType,
  JsonArrayParser,
  MalformedStreamError,
  NdjsonParser,
  RawParser,
  SseParser,
  STREAM_FORMATS,
  type BytesEvent,
  type JsonEvent,
  type SseEvent,
  type StreamEvent,
  type StreamFormat,
  type StreamParser,
} from './streams';
export { AttestationApi, DevelopmentSession, type DevelopmentAttestation, type DeviceSession } from './attestation';
export {
  base64UrlNoPad,
  buildAttestationRequest,
  encodeAssertion,
  jwsExpiryMs,
  parseAttestationResponse,
  reasonAction,
  refreshDue,
  retryDecision,
  tokenExpiryMs,
  REASON_ACTIONS,
  REFRESH_MARGIN_MS,
  type AttestationMethod,
  type AttestationRequest,
  type IssuedDeviceToken,
  type ReasonAction,
  type RetryRuleOptions,
} from './behaviour';
export { DeviceTokenCache } from './device-token-cache';
export { findNativeModule, nativeError, NativeDeviceSession, type TollgateNativeModule } from './native';
export { sha256, sha256Hex } from './sha256';
export type { AbortSignalLike, FetchFunction } from './transport';
export { parseMe, type Me, type MeLimit } from './me';
export { RealtimeSession, type RealtimeMessage, type RealtimeOptions, type WebSocketConstructor, type WebSocketLike } from './realtime';
export { buildUpgrade, closeError, readClose, type BuiltUpgrade, type CloseAction, type CloseReading, type UpgradeInput, type UpgradeMode } from './realtime-rules';
export { UserTokenCache, USER_TOKEN_MARGIN_MS, type UserTokenProvider } from './user-token';
export { ServerClock, CLOCK_OFFSET_THRESHOLD_MS } from './server-clock';
export { MultipartBuilder, encodeMultipart, isFormData, prepareFormData, type MultipartPart } from './multipart';
export { createTollgateFetch } from './fetch-adapter';
export { hasNativeHttp, nativeFetch, type NativeHttpModule } from './native-transport';
