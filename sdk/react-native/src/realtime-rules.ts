/**
 * The client-side rules of realtime sessions (protocol.md, "Realtime sessions"; sdk/conformance/README.md,
 * "realtime-close-codes.json" and "subprotocols.json"), as pure functions: what a close code means for the app, and
 * what the upgrade request carries. realtime.ts opens the socket with them; the conformance suite runs every vector.
 */
import { invalidRequest, TollgateError, type TollgateErrorKind } from './errors';
import { RequestBuilder, type QueryInput } from './request-builder';

/** What the SDK does after a close: open a new session at once (4503), stop like `device_revoked`, or nothing. */
export type CloseAction = 'reconnect' | 'stop' | 'none';

/** The reading of one close (null for a normal end). */
export interface CloseReading {
  readonly kind: TollgateErrorKind;
  /** The gateway type the code stands for, null for codes that are not the gateway's. */
  readonly errorType: string | null;
  readonly closeCode: number;
  /** The close reason when it is snake_case (the gateway's error reason), else null. */
  readonly reason: string | null;
  /** The close reason text, trimmed. */
  readonly message: string;
  readonly action: CloseAction;
  readonly mayReconnect: boolean;
  /** Always false: no close makes the SDK attest a new key or refresh the device token. */
  readonly newKey: false;
}

const GATEWAY_CLOSES: Readonly<Record<number, readonly [string, TollgateErrorKind]>> = {
  4400: ['invalidRequest', 'invalidRequest'],
  4401: ['unauthorized', 'unauthorized'],
  4403: ['attestationFailed', 'attestationFailed'],
  4429: ['rateLimited', 'rateLimited'],
  4502: ['upstreamUnavailable', 'networkError'],
  4503: ['serviceUnavailable', 'networkError'],
  4504: ['upstreamTimeout', 'networkError'],
};
const SNAKE_CASE = /^[a-z][a-z0-9_]*$/;
/** Transport-level closes (RFC 6455 section 7.4.1 and the IANA registry): going away, no close frame, server trouble. */
const NETWORK_CLOSES = new Set([1001, 1006, 1011, 1012, 1013, 1014]);

/** Rule of realtime-close-codes.json: `code` and `reason` of a close → the SDK's reading (null: a normal end). */
export function readClose(code: number, reason: string): CloseReading | null {
  const message = (reason ?? '').trim();
  const snake = SNAKE_CASE.test(message) ? message : null;
  if (code === 1000) return null;
  let errorType: string | null = null;
  let kind: TollgateErrorKind;
  const gateway = GATEWAY_CLOSES[code];
  if (gateway) [errorType, kind] = gateway;
  else if (code >= 4400 && code <= 4499) kind = 'invalidRequest';
  else if (code >= 4500 && code <= 4599) kind = 'networkError';
  else if (NETWORK_CLOSES.has(code)) kind = 'networkError';
  else return { kind: 'providerError', errorType: null, closeCode: code, reason: null, message, action: 'none', mayReconnect: false, newKey: false };
  const action: CloseAction = code === 4503 ? 'reconnect' : code === 4403 && snake === 'device_revoked' ? 'stop' : 'none';
  return { kind, errorType, closeCode: code, reason: snake, message, action, mayReconnect: action === 'reconnect', newKey: false };
}

/** The reading as the error the message stream fails with. */
export function closeError(reading: CloseReading): TollgateError {
  const text = reading.message || `The realtime session was closed with code ${reading.closeCode}.`;
  return new TollgateError(reading.kind, text, {
    closeCode: reading.closeCode,
    mayReconnect: reading.mayReconnect,
    ...(reading.errorType ? { errorType: reading.errorType } : {}),
    ...(reading.reason ? { reason: reading.reason } : {}),
  });
}

/** How the tokens travel on the upgrade: as headers (native WebSockets) or as subprotocols (clients that cannot set headers). */
export type UpgradeMode = 'headers' | 'subprotocols';

export interface UpgradeInput {
  readonly endpoint: string;
  readonly query?: QueryInput;
  readonly mode: UpgradeMode;
  readonly deviceToken: string;
  readonly userToken?: string | null;
  readonly requestTimeMs: number;
  /** The provider's own subprotocols, in order. */
  readonly protocols?: readonly string[];
}

export interface BuiltUpgrade {
  /** `ws://` or `wss://` */
  readonly url: string;
  readonly pathWithQuery: string;
  /** Headers besides the WebSocket handshake's own, names as sent. */
  readonly headers: Readonly<Record<string, string>>;
  readonly protocols: readonly string[];
  /** The upgrade's digest (GET, empty body): what a `Tollgate-Assertion` on the upgrade signs. */
  readonly digest: string;
  readonly canonicalRequest: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Rule of subprotocols.json: the upgrade request for `input`; refusals are invalidRequest, before anything is sent. */
export function buildUpgrade(builder: RequestBuilder, appToken: string, input: UpgradeInput): BuiltUpgrade {
  const provider = input.protocols ?? [];
  for (const protocol of provider) {
    if (typeof protocol !== 'string' || !TOKEN.test(protocol)) throw invalidRequest(`Not a valid WebSocket subprotocol: "${String(protocol)}".`, 'bad_protocol');
    if (protocol.toLowerCase().startsWith('tollgate')) throw invalidRequest(`Subprotocols starting with "tollgate" are the SDK's: "${protocol}".`, 'bad_protocol');
  }
  const built = builder.build({ method: 'GET', endpoint: input.endpoint, ...(input.query ? { query: input.query } : {}) }, input.deviceToken, input.requestTimeMs);
  const url = built.url.replace(/^http/i, 'ws');
  const headers: Record<string, string> = {};
  let protocols: string[];
  if (input.mode === 'headers') {
    for (const [name, value] of built.headers) headers[name] = value;
    if (input.userToken) headers['Tollgate-User-Token'] = input.userToken;
    protocols = [...provider];
  } else {
    protocols = ['tollgate.v1', `tollgate-app.${appToken}`, `tollgate-device.${input.deviceToken}`, ...provider];
  }
  return { url, pathWithQuery: built.pathWithQuery, headers, protocols, digest: built.digest, canonicalRequest: built.canonicalRequest };
}
