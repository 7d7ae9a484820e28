/**
 * Realtime (WebSocket) routes and credential-minting routes: what a provider manifest declares so that the gateway can
 * carry a provider's socket API (protocol.md, "Realtime sessions") and keep its credential-minting routes closed unless
 * an app opens them ("Credentials minted for the device"). Core varies only on this data; it never names a provider.
 */
import type { HttpMethod, TokenUsage } from './manifest';

/**
 * What one provider frame says was used. Token fields follow {@link TokenUsage}; `audioSeconds` is audio the provider
 * reports having processed (Deepgram `Metadata.duration`, AssemblyAI `Termination.audio_duration_seconds`). Each frame
 * reports its own increment: a reader never returns a running total.
 */
export interface RealtimeUsage extends TokenUsage {
  audioSeconds?: number;
}

/**
 * Reads usage from a provider's frames. Only text frames from the provider are considered, and only those containing
 * one of `markers` are parsed as JSON (most frames carry audio or text deltas: they cost one substring search, never a
 * parse). `read` gets the parsed document and returns what it reports, or undefined; it must not throw.
 *
 * @example { markers: ['"response.done"'], read: (frame) => ... (frame as { response?: { usage?: … } }).response?.usage ... }
 */
export interface RealtimeUsageReader {
  readonly markers: readonly string[];
  read(frame: unknown): RealtimeUsage | undefined;
}

/**
 * One condition on a JSON client frame: its dotted member `member` is the string `equals` (OpenAI names each event in
 * `type`: `session.update`), or, without `equals`, the frame has the member at all (Gemini Live names each message by
 * its one top-level member: `setup`).
 */
export interface RealtimeFrameMatch {
  readonly member: string;
  readonly equals?: string;
}

/**
 * Where one kind of JSON client frame names the model and the output-token limit, for the app's model policy. Member
 * paths are dotted, as in {@link RequestBodyFields}. A frame that names no model passes; an output limit is lowered to
 * the policy's cap where present, and set to it when the frame names none.
 *
 * @example { frame: [{ member: 'type', equals: 'session.update' }], model: 'session.model' }
 * @example { frame: [{ member: 'setup' }], model: 'setup.model', outputLimit: ['setup.generationConfig.maxOutputTokens'] }
 */
export interface RealtimeFrameFields {
  /** The frames meant: every condition holds (at least one; the first should be the rarest text, it is searched for). */
  readonly frame: readonly RealtimeFrameMatch[];
  /** Member naming the model. */
  readonly model?: string;
  /** Members that may hold the output-token limit: every one present is clamped; the first is written when none is. */
  readonly outputLimit?: readonly string[];
}

/**
 * Where a realtime route names the model, so that the app's `modelPolicy` holds for its sessions as for HTTP requests
 * (protocol.md, "Realtime sessions"): the upgrade URL's query parameter, checked (and an alias replaced) before the
 * provider's socket is opened, and JSON client frames, checked (and rewritten) one by one, a refused one closing the
 * session with 4400 `model_not_allowed`. Only when a policy applies to the provider are frames read at all.
 */
export interface RealtimeModelFields {
  /** The upgrade URL's query parameter naming the model (OpenAI `model`). */
  readonly query?: string;
  /** JSON client frames naming the model or the output limit. */
  readonly frames?: readonly RealtimeFrameFields[];
  /**
   * A prefix the provider puts before a model's id in frames (Gemini's resource names `models/{model}`): the policy
   * compares the id with and without it, and writes an alias's model with it.
   */
  readonly modelPrefix?: string;
  /**
   * The provider reads JSON from binary client frames too (not only from text frames): the policy then reads binary
   * frames as it reads text ones. Absent: binary frames (audio) pass unread.
   */
  readonly jsonInBinaryFrames?: boolean;
}

/**
 * One realtime route of a provider: a path the client may open as a WebSocket with `GET` + `Upgrade: websocket` on the
 * proxy address, and where the gateway opens the provider's socket for it.
 *
 * The upstream socket URL is `url` (or, absent, the version's HTTP base with `https` → `wss`) joined with the client's
 * provider path and query, as for HTTP. The operator's credential goes where the manifest's `auth` says (the header or
 * query parameter documented for servers); every client credential channel is stripped as for HTTP.
 *
 * @example { path: 'realtime', doc: 'https://platform.openai.com/docs/guides/realtime-websocket', usage: openAiRealtimeUsage }
 * @example { path: 'v3/ws', url: 'wss://streaming.assemblyai.com', doc: 'https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api' }
 */
export interface RealtimeRoute {
  /** Route pattern below the version (the syntax of `routes.account` patterns: `text-to-speech/{voice_id}/stream-input`). */
  readonly path: string;
  /**
   * The socket base the provider path is joined to, when it is not the version's HTTP base: `wss://host[/prefix]`
   * (another host, or the host without the version prefix). An operator's `TOLLGATE_PROVIDER_<SLUG>_REALTIME_URL`
   * (or, failing that, `…_BASE_URL`) replaces its origin, keeping the prefix.
   */
  readonly url?: string;
  /** The provider's documentation page for this socket API (cited in docs/reference/providers.md). */
  readonly doc: string;
  /** How usage is read from the provider's frames; absent: the session is charged its seconds only. */
  readonly usage?: RealtimeUsageReader;
  /**
   * Subprotocols through which a browser client could bring its own provider credential, removed before the upgrade
   * goes upstream: entries starting with one of `prefixes` (OpenAI's `openai-insecure-api-key.<key>`), and an entry
   * named in `announcers` together with the entry after it (Deepgram's `token`, `<key>`).
   */
  readonly credentialSubprotocols?: { readonly prefixes?: readonly string[]; readonly announcers?: readonly string[] };
  /** Where the session names the model, for the app's model policy (see {@link RealtimeModelFields}); absent: not checked. */
  readonly model?: RealtimeModelFields;
}

/**
 * Where a credential-minting route takes the lifetime of the credential it mints, so that the gateway can clamp it to
 * the app's `credentialTtlSeconds`:
 * - `query`: a query parameter in seconds (AssemblyAI `expires_in_seconds`);
 * - `body-seconds`: a JSON body member in seconds, dotted path (`expires_after.seconds`, `ttl_seconds`);
 * - `body-expire-time`: a JSON body member holding an RFC 3339 timestamp (Gemini `expireTime`).
 * Absent: the provider fixes the lifetime itself (documented beside the route).
 */
export type CredentialLifetime =
  | { readonly kind: 'query'; readonly parameter: string }
  | { readonly kind: 'body-seconds'; readonly member: string }
  | { readonly kind: 'body-expire-time'; readonly member: string };

/**
 * A route that mints a short-lived provider credential for the device (route class `credential`): closed unless the
 * app lists the provider in `openCredentialRoutes`, because what the device then does with the credential bypasses the
 * gateway's limits, budgets, request log and revocation until it expires.
 *
 * @example { methods: ['POST'], path: 'realtime/client_secrets', lifetime: { kind: 'body-seconds', member: 'expires_after.seconds' },
 *            doc: 'https://platform.openai.com/docs/api-reference/realtime-sessions/create-realtime-client-secret' }
 */
export interface CredentialRoute {
  readonly methods: readonly HttpMethod[];
  /** Route pattern below the version (the syntax of `routes.account` patterns). */
  readonly path: string;
  readonly lifetime?: CredentialLifetime;
  /** The provider's documentation page for this route. */
  readonly doc: string;
}
