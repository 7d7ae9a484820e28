/**
 * `@tollgate/react-native`: call AI providers through a Tollgate gateway from a React Native app, without shipping a
 * provider key.
 *
 * ```ts
 * import { Tollgate, TollgateError } from '@tollgate/react-native';
 *
 * await Tollgate.initialize({ appToken: 'at_…', baseUrl: 'https://gateway.example.com' });
 * const reply = await Tollgate.request({ endpoint: 'openai/v1/chat/completions', method: 'POST', body: { … } });
 * for await (const event of Tollgate.stream({ endpoint: 'openai/v1/chat/completions', body: { …, stream: true } })) { … }
 * ```
 */
import { TollgateClient, type CallOptions, type RequestOptions, type StreamOptions, type TollgateOptions, type TollgateResponse } from './client';
import { TollgateError } from './errors';
import type { StreamEvent } from './streams';

function notInitialized(): TollgateError {
  return new TollgateError(
    'invalidRequest',
    'Tollgate is not initialized: call Tollgate.initialize({ appToken, baseUrl }) once at app start (index.js, before the app renders).',
    { reason: 'not_initialized' },
  );
}

/** The app-wide client. Every method rejects with TollgateError `invalidRequest` (reason `not_initialized`) until `initialize`. */
export class TollgateSingleton {
  private instance: TollgateClient | null = null;

  /**
   * Configures the SDK; call once at app start, before the app renders. Resolves quickly (it does not wait for the
   * network: attestation starts in the background). Rejects with TollgateError `invalidRequest` for bad options.
   * Calling it again replaces the configuration.
   */
  async initialize(options: TollgateOptions): Promise<void> {
    this.instance = new TollgateClient(options);
  }

  /** True once `initialize` succeeded. */
  get isInitialized(): boolean {
    return this.instance !== null;
  }

  /** The underlying client (throws when not initialized). */
  get client(): TollgateClient {
    if (!this.instance) throw notInitialized();
    return this.instance;
  }

  /** See {@link TollgateClient.request}. */
  request<T = unknown>(options: RequestOptions): Promise<T> {
    return this.instance ? this.instance.request<T>(options) : Promise.reject(notInitialized());
  }

  /** See {@link TollgateClient.send}. */
  send(options: CallOptions): Promise<TollgateResponse> {
    return this.instance ? this.instance.send(options) : Promise.reject(notInitialized());
  }

  /** See {@link TollgateClient.stream}. The client is looked up when iteration starts. */
  stream(options: StreamOptions): AsyncIterable<StreamEvent> {
    return {
      [Symbol.asyncIterator]: (): AsyncIterator<StreamEvent> => {
        if (this.instance) return this.instance.stream(options)[Symbol.asyncIterator]();
        let failed = false;
        return {
          next: async () => {
            if (failed) return { done: true, value: undefined };
            failed = true;
            throw notInitialized();
          },
          return: async () => ({ done: true, value: undefined }),
        };
      },
    };
  }

  /** See {@link TollgateClient.warmUp}. */
  warmUp(): Promise<void> {
    return this.instance ? this.instance.warmUp() : Promise.reject(notInitialized());
  }

  /** Forgets the configuration (tests, sign-out); calls then reject until `initialize` again. */
  reset(): void {
    this.instance = null;
  }
}

/** The app-wide client. */
export const Tollgate = new TollgateSingleton();

export {
  TollgateClient,
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
export {
  AttestationApi,
  chooseAttestation,
  type DevelopmentAttestation,
  type IssuedDeviceToken,
  type NativeAttestation,
  type NativeAttestationMethod,
} from './attestation';
export { DeviceTokenCache, jwsExpiryMs, REFRESH_MARGIN_MS } from './device-token-cache';
export { sha256, sha256Hex } from './sha256';
export type { AbortSignalLike, FetchFunction } from './transport';
