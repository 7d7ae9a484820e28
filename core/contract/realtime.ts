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
