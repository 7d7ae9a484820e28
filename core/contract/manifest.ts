/**
 * The provider plugin contract: what a provider folder (`providers/<slug>/`) or an external npm plugin declares.
 * Core varies only on this data; it never names a provider (docs/architecture.md).
 */
import type { SecretValue } from './secret-value';
import type { CredentialRoute, RealtimeRoute } from './realtime';

/**
 * Version of the plugin contract this server speaks. A provider or plugin built for another version is refused at boot
 * with `TG_ERR_PLUGIN_CONTRACT_VERSION`, naming the package.
 */
export const PLUGIN_CONTRACT_VERSION = 1;

/** What a provider can do, as the product brief names it. */
export type Capability =
  | 'chat'
  | 'embeddings'
  | 'image'
  | 'tts'
  | 'stt'
  | 'translation'
  | 'search'
  | 'rerank'
  | 'audio'
  | 'video';

/**
 * How a provider frames a streamed response. The gateway pipes bytes whatever the format; the declaration tells SDKs
 * which parser to use.
 * - `sse`: Server-Sent Events (`data:` lines, optional `event:` names and `:` comments, LF or CRLF framing).
 * - `ndjson`: one JSON document per line.
 * - `json-array`: one JSON array streamed element by element (Gemini without `alt=sse`).
 * - `binary`: raw bytes, e.g. audio chunks.
 * - `aws-event-stream`: AWS binary event-stream frames (length-prefixed, CRC-checked).
 */
export type StreamFormat = 'sse' | 'ndjson' | 'json-array' | 'binary' | 'aws-event-stream';

/** A representative call for one capability, used by the integration-code generator (dashboard and assistant server). */
export interface CapabilityExample {
  readonly method: HttpMethod;
  readonly version: string;
  /** Provider path after the version. */
  readonly path: string;
  /** A JSON body, or undefined for GET. */
  readonly body?: Readonly<Record<string, unknown>>;
  /** True when the answer is a stream (SSE, NDJSON, audio bytes). */
  readonly streams?: boolean;
}

/** The capabilities the integration generator knows, plus `streaming` (a streamed chat). */
export type ExampleCapability = 'chat' | 'streaming' | 'image' | 'tts' | 'translation' | 'search';

/** The HTTP methods a provider route may allow. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How the provider's credential is attached to the upstream request.
 *
 * @example { kind: 'header', header: 'Authorization', scheme: 'Bearer' }  // Authorization: Bearer <key>
 * @example { kind: 'header', header: 'x-api-key' }                       // x-api-key: <key>
 * @example { kind: 'query', parameter: 'key' }                            // ?key=<key>
 * @example { kind: 'computed' }                                           // the manifest's `authorize` hook does it
 */
export type AuthStyle =
  | {
      kind: 'header';
      /** Header name, as the provider documents it. Compared case-insensitively. */
      header: string;
      /** Scheme put before the key with one space, e.g. `Bearer`, `Token`, `Key`, `DeepL-Auth-Key`. Default: none. */
      scheme?: string;
    }
  | {
      kind: 'query';
      /** Query parameter that carries the key, e.g. `key` or `api_key`. A client's own value for it is dropped. */
      parameter: string;
    }
  | { kind: 'computed' };

/**
 * One `account`-class route (providers.md, "Route classes"): a method and path pattern that reads, lists or deletes data
 * shared across the operator's account (files, stored completions, vector stores, fine-tunes, batches, voice
 * libraries…). Closed unless the operator opens the provider's account routes for an app (`openAccountRoutes`). Every
 * other route a provider allows is `inference`, open by default.
 *
 * Path patterns are relative to the version root and matched on whole segments, case-insensitively, after the
 * client's path is decoded once, with a trailing `/` and `;…` matrix parameters ignored:
 * - a literal segment matches itself (`files` matches `files`, not `files/x`);
 * - `*` inside a segment matches any run of characters except `/` (`{name}` is the same as `*` and reads better:
 *   `files/{file_id}/content`; `models/ft:*`);
 * - a final `**` matches zero or more further segments (`vector_stores/**` covers the listing and everything below).
 *
 * @example { methods: ['GET'], path: 'files', why: 'lists every file uploaded with the operator key' }
 */
export interface AccountRoute {
  /** The methods of this pattern that are account-class; others on the same path stay as `allow` says. */
  readonly methods: readonly HttpMethod[];
  readonly path: string;
  /** One line: what opening this route exposes to every device of the app (shown in the dashboard and the docs). */
  readonly why: string;
}

/**
 * Which routes of a provider a client may call. `allow` and `deny` paths are relative to the version root (no leading
 * slash) and matched as prefixes on whole segments: `audio/` allows `audio/speech`; `models` allows `models` and
 * `models/x`; a `*` segment matches any one segment (`*` + `/` + `*` allows every `{owner}/{app}/…`).
 * Default: every method in `methods` on every path not in `deny`.
 *
 * Order of decision: `deny` refuses, always; an `account` entry matching method and path is closed unless the app
 * opened this provider's account routes (then allowed, even outside `allow` and `methods`); an app's extra route
 * (`extraRoutes`) allows its own method and pattern; otherwise `methods` and `allow` decide, and the route is `inference`.
 *
 * @example { methods: ['GET', 'POST'], allow: ['chat/completions', 'audio/'], deny: ['organization/'],
 *            account: [{ methods: ['GET'], path: 'chat/completions', why: 'lists stored completions of every user' }] }
 */
export interface RoutePolicy {
  /** Default `['GET', 'POST']`. */
  methods?: HttpMethod[];
  /** Path prefixes that are allowed. Absent: all paths not denied. */
  allow?: string[];
  /** Path prefixes that are refused even when allowed or opened (billing, key and organization management). */
  deny?: string[];
  /** The `account`-class routes, decided per provider and method from its documentation (cite it beside the list). */
  account?: readonly AccountRoute[];
}

/**
 * Channels through which a client could bring its own credential to this provider, besides the manifest's `auth`
 * (whose header or query parameter is always stripped). Core removes them from every client request before signing or
 * forwarding. Header names and prefixes apply to every provider (a credential header of one provider is never forwarded
 * to another); query parameters apply to this provider. Core always strips its default set too (docs/security.md).
 *
 * @example { headerPrefixes: ['x-amz-'], queryParameterPrefixes: ['x-amz-'] }  // AWS SigV4 headers and presigned URLs
 */
export interface ClientCredentialChannels {
  /** Header names, compared case-insensitively. */
  readonly headers?: readonly string[];
  /** Header name prefixes, compared case-insensitively, e.g. `x-amz-`. */
  readonly headerPrefixes?: readonly string[];
  /** Query parameter names, compared case-insensitively after decoding, e.g. `key`. */
  readonly queryParameters?: readonly string[];
  /** Query parameter name prefixes, e.g. `x-amz-` (`X-Amz-Signature`, `X-Amz-Credential` of a presigned URL). */
  readonly queryParameterPrefixes?: readonly string[];
}

/**
 * Rules for a per-tenant upstream host (Azure resource, regional endpoints). The host is taken from the app's secret
 * record, set by an operator, and is never chosen by the client.
 */
export interface TenantHostRule {
  /** `required`: every secret must carry a base URL. `optional`: the manifest's base URL is the default. */
  baseUrl: 'required' | 'optional';
  /** Host patterns a tenant base URL must match; `*.` matches one or more labels, e.g. `*.openai.azure.com`. */
  allowedHosts: string[];
  /** A regular expression the tenant base URL's path must match, e.g. `^/openai$`. Default: any path. */
  pathPattern?: string;
}

/** An upstream request as the pipeline built it, before it is sent; computed auth hooks may add to it. */
export interface UpstreamRequestDraft {
  readonly method: string;
  /** `https://host[:port]` with no trailing slash. */
  readonly origin: string;
  /** Path and query string, already validated, beginning with `/`. */
  path: string;
  /** Outgoing headers with lower-case names. */
  readonly headers: Record<string, string | string[]>;
  /**
   * The whole request body, present only when the manifest sets `authorizeNeedsBody` (signatures that cover the
   * payload, such as AWS SigV4). Bounded by `TOLLGATE_SIGNED_BODY_MAX_BYTES` (and `TOLLGATE_MAX_BODY_BYTES`).
   */
  readonly body?: Buffer;
}

/** The secret the pipeline resolved for this request. */
export interface ResolvedSecret {
  readonly provider: string;
  readonly value: SecretValue;
  /** Per-tenant base URL from the secret record, already validated against the manifest's {@link TenantHostRule}. */
  readonly baseUrl: string | undefined;
}

/**
 * Tokens a provider reported for one response (docs/reference/usage.md). Every field is optional: a reader returns
 * what the document it was given holds, and later documents of the same response override earlier ones field by field
 * (Anthropic reports input tokens in `message_start` and the final output count in `message_delta`).
 */
export interface TokenUsage {
  /** Prompt tokens, including cached ones where the provider counts them in. */
  inputTokens?: number;
  /** Completion tokens, including reasoning tokens where the provider counts them in. */
  outputTokens?: number;
  /** Prompt tokens served from the provider's cache, where reported. */
  cachedTokens?: number;
  /** Reasoning ("thinking") tokens, where reported. */
  reasoningTokens?: number;
  /** The model that answered, as the provider names it. */
  model?: string;
}

/**
 * How to read token usage from a provider's answers. Core does the framing (a whole JSON body, each SSE `data:` payload,
 * each NDJSON line, each element of a JSON array, each AWS event-stream message as `{ [eventType]: payload }`) while the
 * bytes pass to the client, never holding them back, and hands each parsed JSON document to `read`. A response that
 * cannot be read (compressed, over the size bound, not JSON) is recorded as "usage unknown", never an error.
 * Shared readers for the common formats are in `providers/_shared/usage.ts`.
 *
 * @example { read: (document) => { const usage = (document as { usage?: { prompt_tokens?: number } }).usage; ... } }
 */
export interface UsageExtractor {
  /** Reads one parsed document; returns what it found, or undefined. Must not throw (a throw counts as nothing found). */
  read(document: unknown): TokenUsage | undefined;
  /** The model named by the request path, for providers that put it there (`models/{model}:generateContent`). */
  modelFromPath?(providerPath: string): string | undefined;
  /**
   * Optional: strings at least one of which appears in every streamed document that reports usage (e.g. `"usage"`).
   * After the first streamed document (which names the model when the provider does), an event or line containing none
   * of them is not parsed: most chunks of a stream carry only text. Absent: every document is parsed.
   */
  readonly markers?: readonly string[];
  /**
   * Optional: every top-level member of a document that `read` looks at (e.g. `usage`, `model`). A whole JSON answer
   * is then parsed for those members only, the others skipped unparsed (a long completion or an embedding is never
   * turned into objects just to read its token counts). Absent: the whole document is parsed.
   */
  readonly members?: readonly string[];
}

/**
 * Where a route's JSON request body names the model, the output-token limit and streaming: the facts token budgets
 * (a reservation is estimated from the declared output limit) and model policy (allow-lists, aliases, the output clamp)
 * act on. Core never knows these names: a provider declares them per route, citing its API reference. Member paths are
 * dotted (`generationConfig.maxOutputTokens`). Routes are matched like {@link AccountRoute} patterns, on the provider
 * path below the version.
 *
 * @example { methods: ['POST'], path: 'chat/completions', model: 'model', outputLimit: ['max_completion_tokens', 'max_tokens'],
 *            defaultOutputTokens: 4096, stream: 'stream', streamUsageRequest: { stream_options: { include_usage: true } } }
 */
export interface RequestBodyFields {
  readonly methods: readonly HttpMethod[];
  /** Route pattern (same syntax as {@link AccountRoute.path}). */
  readonly path: string;
  /** Member naming the model; absent where the model is in the path (see {@link UsageExtractor.modelFromPath}). */
  readonly model?: string;
  /** Members that may hold the output-token limit, first present wins; the first is the one written by a clamp. */
  readonly outputLimit?: readonly string[];
  /** Output tokens to reserve when the request names no limit (the provider's documented default). */
  readonly defaultOutputTokens?: number;
  /** Member whose `true` asks for a streamed answer; absent where streaming is chosen by the path. */
  readonly stream?: string;
  /**
   * Members merged into a streaming request's body so that the stream reports usage when the client did not ask for it
   * (OpenAI's `stream_options.include_usage`). The gateway then removes what the client did not ask for from the stream.
   */
  readonly streamUsageRequest?: Readonly<Record<string, unknown>>;
}

/**
 * Where a route's PATH names the model (Gemini's `models/{model}:generateContent`, Bedrock's `model/{modelId}/converse`,
 * an Azure deployment): model policy (allow-lists, aliases) acts on it as on a body's model. `path` is a route pattern
 * (same syntax as {@link AccountRoute.path}, plus `**` as the last segment) with one or more `{model}` placeholders; each
 * stands for one path segment or part of one (`{model}:*`), and their captures, percent-decoded once and joined with
 * `/`, are the model name (`models/{model}/{model}/predictions` names `owner/name`). Matched on the provider path below
 * the version and as seen from every other declared version root on the same host, case-insensitively; a segment
 * holding `%2F` is one segment (a Bedrock ARN). Declare the widest pattern that names a model (`models/{model}:*` rather
 * than each method): a path that matches no declaration escapes the policy.
 *
 * @example { methods: ['POST'], path: 'models/{model}:*', doc: 'https://ai.google.dev/api/generate-content' }
 */
export interface PathModelRoute {
  readonly methods: readonly HttpMethod[];
  /** Route pattern with at least one `{model}` placeholder. */
  readonly path: string;
  /** Only below these versions (absent: every version). */
  readonly versions?: readonly string[];
  /** Text the model name starts with that the path leaves to the version (`@cf/` for a version mapped to `/run/@cf`). */
  readonly modelPrefix?: string;
  /** The provider's documentation of the route. */
  readonly doc: string;
}

/**
 * A cheap, harmless request that proves a stored key works ("test this key": the dashboard, `POST
 * /v1/admin/apps/{appId}/secrets/{provider}/test`, `tollgate secrets test`). A `GET` the provider documents as needing
 * the key and changing nothing, typically listing models; cite the documentation page beside it. The gateway sends it
 * to the manifest's host (or the operator's override, or the secret's tenant URL) with the key attached as `auth`
 * says, and reports only the status and the latency: never the body. Absent: the key cannot be tested
 * (`key_check_unsupported`).
 *
 * @example { method: 'GET', version: 'v1', path: 'models' }  // https://platform.openai.com/docs/api-reference/models/list
 */
export interface KeyCheck {
  readonly method: 'GET';
  /** One of the manifest's `versions`. */
  readonly version: string;
  /** Provider path after the version, no leading slash and no query, e.g. `models`. */
  readonly path: string;
}

/**
 * The declaration of one provider.
 *
 * @example
 * export const manifest: ProviderManifest = {
 *   contractVersion: PLUGIN_CONTRACT_VERSION,
 *   slug: 'example', name: 'Example AI',
 *   baseUrl: 'https://api.example.com', versions: { v1: '/v1' },
 *   auth: { kind: 'header', header: 'Authorization', scheme: 'Bearer' },
 *   capabilities: ['chat'], streaming: ['sse'],
 * };
 */
/** The platforms of the client SDKs. */
export type SdkPlatform = 'ios' | 'android' | 'flutter' | 'react-native';

/** What an SDK-hook example is written for: the provider's gateway base (`slug/version`), a model, the gateway address. */
export interface SdkHookExampleInput {
  readonly base: string;
  readonly model: string;
  readonly gatewayUrl: string;
  /** The gateway address in parts (scheme, host, port, path prefix), for SDKs configured that way. */
  readonly host: string;
  readonly port: number;
  readonly scheme: string;
  readonly prefix: string;
}

/** A provider's published prices (see {@link ProviderManifest.prices}). */
export interface ProviderPrices {
  /** The provider's price page. */
  readonly source: string;
  /** `YYYY-MM-DD`: the day the page was read. */
  readonly asOf: string;
  /** [model id, USD per million input tokens, USD per million output tokens], the standard rate. */
  readonly models: ReadonlyArray<readonly [model: string, inputUsdPerMillion: number, outputUsdPerMillion: number]>;
}

export interface ProviderManifest {
  /** Must equal {@link PLUGIN_CONTRACT_VERSION}. */
  readonly contractVersion: number;
  /** `^[a-z0-9][a-z0-9-]{0,39}$`, unique, used in the route `/v1/proxy/{slug}/{version}/…`. */
  readonly slug: string;
  /** Display name, e.g. `OpenAI`. */
  readonly name: string;
  /** Upstream origin plus any fixed prefix, e.g. `https://api.groq.com/openai`. No trailing slash. https only, except
   * when an operator overrides it with `TOLLGATE_PROVIDER_<SLUG>_BASE_URL`. */
  readonly baseUrl: string;
  /**
   * Accepted versions and the path prefix each maps to on top of `baseUrl`, e.g. `{ v1: '/v1' }`. An unversioned
   * provider declares a pseudo-version mapped to the root: `{ v1: '' }`. A version may instead map to an absolute
   * https URL on a second declared host (Replicate's streaming host, fal's queue host):
   * `{ 'v1-stream': 'https://streaming.api.replicate.com/v1' }`. An operator base-URL override replaces that host too.
   */
  readonly versions: Readonly<Record<string, string>>;
  /**
   * Path prefixes (`upload/`) that always live at the host root, whatever version a request names: a request below any
   * version whose path starts with one is sent, and judged, as if under the version mapped to `''` (which the manifest
   * must declare). For an SDK that writes its own root path after the version (an older `@google/genai` sends
   * `v1beta/upload/v1beta/files`).
   */
  readonly rootPaths?: readonly string[];
  readonly auth: AuthStyle;
  /** Headers sent upstream when the client did not send them, e.g. `{ 'anthropic-version': '2023-06-01' }`. */
  readonly defaultHeaders?: Readonly<Record<string, string>>;
  readonly capabilities: readonly Capability[];
  /** Streaming formats the provider uses; empty when it never streams. */
  readonly streaming: readonly StreamFormat[];
  /** Default: GET and POST on every path. */
  readonly routes?: RoutePolicy;
  /** Other ways the provider accepts a credential, stripped from client requests (see {@link ClientCredentialChannels}). */
  readonly clientCredentials?: ClientCredentialChannels;
  /** Present for providers whose host depends on the tenant (Azure resource, region). */
  readonly tenant?: TenantHostRule;
  /** Short notes for the catalog (`GET /v1/providers`) and the SDK docs. */
  readonly notes?: string;
  /** Representative calls per capability, for generated integration code. */
  readonly examples?: Readonly<Partial<Record<ExampleCapability, CapabilityExample>>>;
  /**
   * Picks the upstream base URL from the secret when the host depends on the key itself (DeepL Free keys end in `:fx`).
   * Must return the manifest's `baseUrl` or one of `alternateBaseUrls`.
   */
  readonly selectBaseUrl?: (secret: ResolvedSecret) => string;
  /** Other fixed hosts this provider may select (a second streaming host, a free tier). */
  readonly alternateBaseUrls?: readonly string[];
  /**
   * Computed credentials (`auth.kind === 'computed'`): sign or authorize the request, e.g. AWS SigV4 or an OAuth token
   * minted from a service account. Called once per request, after header hygiene.
   */
  readonly authorize?: (request: UpstreamRequestDraft, secret: ResolvedSecret) => void | Promise<void>;
  /**
   * Set when `authorize` must see the whole body (a signature over the payload). The gateway then reads the body before
   * signing and forwards that buffer; every other provider's body is streamed. Such a body is held in memory, so it is
   * capped at `TOLLGATE_SIGNED_BODY_MAX_BYTES` (413 `signed_body_too_large`) and the process holds at most
   * `TOLLGATE_SIGNED_BODY_BUDGET_BYTES` of them at once (503 `signed_body_budget_exhausted`).
   */
  readonly authorizeNeedsBody?: boolean;
  /**
   * Response headers whose value is a provider URL the client must call next (e.g. `x-goog-upload-url`, Gemini's
   * resumable upload). The gateway rewrites such a URL to its own proxy route for the matching version, or removes it
   * when it points anywhere else: the client never receives a provider address it cannot use.
   */
  readonly responseUrlHeaders?: readonly string[];
  /** How to read token usage from this provider's answers; absent: usage unknown (requests and bytes only). */
  readonly usage?: UsageExtractor;
  /** The request that tests a stored key (see {@link KeyCheck}); absent: the key cannot be tested. */
  readonly keyCheck?: KeyCheck;
  /** Where request bodies name the model, output limit and streaming, per route (see {@link RequestBodyFields}). */
  readonly requestFields?: readonly RequestBodyFields[];
  /** Routes whose path names the model, for model policy (see {@link PathModelRoute}); absent: none. */
  readonly pathModels?: readonly PathModelRoute[];
  /**
   * The provider's published prices of its common models, read from its price page on `asOf`: spend is estimated from
   * them where the operator set no price of their own (core/storage/default-prices.ts). Absent: none.
   */
  readonly prices?: ProviderPrices;
  /**
   * Integration code: the provider's own client library on a platform, its HTTP layer given to the Tollgate SDK's hook
   * (core/integration/sdk-features.ts). Absent: the hook is shown on its own, with this provider's gateway address.
   */
  readonly sdkHookExample?: (platform: SdkPlatform, input: SdkHookExampleInput) => string;
  /** WebSocket routes the gateway relays as realtime sessions (see {@link RealtimeRoute}); absent: none. */
  readonly realtime?: readonly RealtimeRoute[];
  /** Routes that mint a provider credential for the device, closed by default (see {@link CredentialRoute}). */
  readonly credentialRoutes?: readonly CredentialRoute[];
}

/**
 * Declares a provider: type-checks the manifest literal and freezes it.
 *
 * @example export const manifest = defineProvider({ contractVersion: PLUGIN_CONTRACT_VERSION, slug: 'acme', ... });
 */
export function defineProvider(manifest: ProviderManifest): ProviderManifest {
  return Object.freeze({ ...manifest });
}
