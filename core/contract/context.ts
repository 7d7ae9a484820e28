import type { IncomingMessage, ServerResponse } from 'node:http';
import { TollgateError } from './errors';
import type { ProviderManifest, ResolvedSecret, TokenUsage } from './manifest';
import type { AppIdentity, DeviceIdentity, EndUserIdentity, LimitDecision } from './records';

/** The parsed proxy route `/v1/proxy/{slug}/{version}/{providerPath}?{query}`. */
export interface ProxyRoute {
  readonly slug: string;
  readonly version: string;
  /** The provider path exactly as the client sent it (still percent-encoded), validated, without a leading slash. */
  readonly providerPath: string;
  /** The raw query string without `?`, or `''`. */
  readonly query: string;
}

/** The request that `injectKey` built and `forward` sends. */
export interface UpstreamRequest {
  readonly method: string;
  /** `scheme://host[:port]`. */
  readonly origin: string;
  /** Path and query, beginning with `/`. */
  readonly path: string;
  /** Exactly the headers that go upstream (lower-case names), credential included. Never log it. */
  readonly headers: Record<string, string | string[]>;
  /** A buffered body (only for providers whose signature covers the payload); otherwise the client's body is streamed. */
  readonly body?: Buffer;
  /**
   * For providers that declare `responseUrlHeaders`: how `forward` maps a provider URL in those response headers back to
   * the gateway's own proxy route (core/pipeline/response-urls.ts).
   */
  readonly responseUrls?: {
    readonly headers: readonly string[];
    readonly upstreamOrigin: string;
    readonly versions: ReadonlyArray<{ readonly name: string; readonly prefix: string }>;
    readonly proxyBase: string;
  };
}

/**
 * Facts each stage adds, by name. A stage reads only facts of earlier stages; reading one before it exists is a coded
 * error (`TG_ERR_STAGE_ORDER`), not `undefined`.
 */
export interface ProxyFacts {
  app: AppIdentity;
  device: DeviceIdentity;
  /** The signed-in end user, or null (no user token, or user tokens off for the app). */
  user: EndUserIdentity | null;
  limit: LimitDecision;
  secret: ResolvedSecret;
  upstream: UpstreamRequest;
}

/** The stage that provides each fact, for error messages. */
const PROVIDED_BY: Readonly<Record<keyof ProxyFacts, string>> = {
  app: 'verifyToken',
  device: 'verifyDevice',
  user: 'verifyUser',
  limit: 'limitRate',
  secret: 'resolveSecret',
  upstream: 'injectKey',
};

/** Per-request state of one proxied call, typed per stage. */
export class ProxyContext {
  private readonly facts: Partial<ProxyFacts> = {};
  /** Set by `forward` or the error path: the outcome, for usage events and logs. */
  outcome: {
    status: number;
    errorType?: string;
    reason?: string;
    bytesIn: number;
    bytesOut: number;
    truncated: boolean;
    /** Tokens the provider reported, read by the usage tap as the answer passed (absent: usage unknown). */
    usage?: TokenUsage;
  } = {
    status: 0,
    bytesIn: 0,
    bytesOut: 0,
    truncated: false,
  };

  /** What read the answer's usage, until {@link settleUsage} asks it for what it found. */
  private usageReader: { finish(): TokenUsage | undefined } | undefined;

  /**
   * Hands over the reader of the answer's usage when the answer ended (`forward`): its last step (parsing a JSON body)
   * runs in {@link settleUsage}, with the other finished requests' reports, not between two requests' network work.
   */
  deferUsage(reader: { finish(): TokenUsage | undefined }): void {
    this.usageReader = reader;
  }

  /** Puts the deferred reader's usage on `outcome.usage` (once); the proxy route calls it before the observers hear. */
  settleUsage(): void {
    const reader = this.usageReader;
    if (reader === undefined) return;
    this.usageReader = undefined;
    const usage = reader.finish();
    if (usage) this.outcome.usage = usage;
  }

  /**
   * The whole request body, when a stage had to read it before forwarding (a per-request assertion covers it, or a
   * payload signature does); `forward` then sends these bytes instead of streaming the request.
   */
  requestBody: Buffer | undefined;

  constructor(
    readonly requestId: string,
    readonly request: IncomingMessage,
    readonly response: ServerResponse,
    /**
     * The parsed address. Replaced (never changed in place: parsed routes are shared) only where a stage rewrites what
     * goes upstream before `injectKey` builds it: the model policy replacing a model alias in a realtime upgrade's query.
     */
    public route: ProxyRoute,
    readonly provider: ProviderManifest,
    readonly startedAt: number,
  ) {}

  /** Records a fact. Each fact is set once. */
  set<K extends keyof ProxyFacts>(key: K, value: ProxyFacts[K]): void {
    this.facts[key] = value;
  }

  /** Reads a fact, or throws `TG_ERR_STAGE_ORDER` if the stage that provides it has not run. */
  get<K extends keyof ProxyFacts>(key: K): ProxyFacts[K] {
    const value = this.facts[key];
    if (value === undefined) {
      throw new TollgateError(
        'TG_ERR_STAGE_ORDER',
        `"${key}" was read before the ${PROVIDED_BY[key]} stage provided it`,
      );
    }
    return value as ProxyFacts[K];
  }

  /** Reads a fact if present (for logging and usage after a failure). */
  peek<K extends keyof ProxyFacts>(key: K): ProxyFacts[K] | undefined {
    return this.facts[key];
  }
}
