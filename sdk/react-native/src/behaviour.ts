/**
 * The client-side rules every Tollgate SDK shares (sdk/conformance/README.md, "client-behaviour.json"), as pure
 * functions: which expiry wins, when a device token is due for refresh, the retry schedule, what the SDK does with an
 * error's `reason`, how a proof is encoded as `Tollgate-Assertion`, and the attestation request and response bodies.
 * The client and the device sessions use these; the conformance suite runs every vector against them.
 */
import { decodeBase64, encodeBase64 } from './base64';
import { invalidRequest, networkError } from './errors';
import { sha256 } from './sha256';
import { encodeUtf8, utf8ToString } from './utf8';

/** Refresh when less than this remains (or a fifth of the token's lifetime, if that is shorter). */
export const REFRESH_MARGIN_MS = 60_000;

/** The `exp` claim of a compact JWS, in unix ms, read without verifying the signature; null when unreadable. */
export function jwsExpiryMs(token: string): number | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const payload = decodeBase64(parts[1]!);
  if (!payload) return null;
  try {
    const claims: unknown = JSON.parse(utf8ToString(payload));
    const exp = (claims as { exp?: unknown } | null)?.exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/**
 * Rule `token-expiry`: the earlier of the JWS `exp` and the answer's `expiresAt` (ISO 8601), each when readable;
 * neither → `receivedAtMs` (the token is then used for one call and never cached).
 */
export function tokenExpiryMs(deviceToken: string, expiresAt: string | null | undefined, receivedAtMs: number): number {
  const candidates: number[] = [];
  const exp = jwsExpiryMs(deviceToken);
  if (exp !== null) candidates.push(exp);
  if (typeof expiresAt === 'string') {
    const parsed = Date.parse(expiresAt);
    if (Number.isFinite(parsed)) candidates.push(parsed);
  }
  return candidates.length > 0 ? Math.min(...candidates) : receivedAtMs;
}

/** Rule `refresh-due`: `nowMs >= expiresAtMs - min(refreshMarginMs, (expiresAtMs - receivedAtMs) / 5)`. */
export function refreshDue(receivedAtMs: number, expiresAtMs: number, nowMs: number, refreshMarginMs: number = REFRESH_MARGIN_MS): boolean {
  const lifetime = Math.max(0, expiresAtMs - receivedAtMs);
  return nowMs >= expiresAtMs - Math.min(refreshMarginMs, lifetime / 5);
}

/** Retry options as the rule reads them (null = retries off, the default). */
export interface RetryRuleOptions {
  readonly maxRetries: number;
  readonly maxWaitSeconds: number;
}

/**
 * Rule `retry`: only the gateway's `rateLimited` is retried; wait `Retry-After` when given, else `min(30, 2^retriesDone)`
 * seconds; never more than `maxRetries` retries, never a wait that would take the total past `maxWaitSeconds`.
 */
export function retryDecision(
  errorKind: string,
  retryAfterSeconds: number | null | undefined,
  retriesDone: number,
  waitedSeconds: number,
  options: RetryRuleOptions | null,
): { retry: boolean; delaySeconds: number | null } {
  const no = { retry: false, delaySeconds: null };
  if (!options || errorKind !== 'rateLimited' || retriesDone >= options.maxRetries) return no;
  const delay = retryAfterSeconds ?? Math.min(30, 2 ** retriesDone);
  if (waitedSeconds + delay > options.maxWaitSeconds) return no;
  return { retry: true, delaySeconds: delay };
}

/** What the SDK does after a gateway error (rule `reason-action`). */
export type ReasonAction = 'stop' | 'refresh' | 'attest' | 'assert' | 'none';

export const REASON_ACTIONS: readonly ReasonAction[] = ['stop', 'refresh', 'attest', 'assert', 'none'];

/**
 * Rule `reason-action`. Only `attestationFailed` touches the device: `device_revoked` → `stop` (surface the error, no new
 * key, no refresh until the app restarts); an expired, invalid or missing token (or an older gateway's 403 without a
 * reason) → `refresh` with the existing key; `device_key_unknown` → `attest` a new key; `assertion_required` → `assert`
 * (send `Tollgate-Assertion` from now on); anything else → `none`. `during` (`refresh`) does not change the answer.
 */
export function reasonAction(errorType: string | null | undefined, reason: string | null | undefined): { action: ReasonAction; retryOnce: boolean; newKey: boolean } {
  let action: ReasonAction = 'none';
  if (errorType === 'attestationFailed') {
    switch (reason ?? null) {
      case 'device_revoked':
        action = 'stop';
        break;
      case null:
      case 'device_token_expired':
      case 'device_token_invalid':
      case 'device_token_missing':
        action = 'refresh';
        break;
      case 'device_key_unknown':
        action = 'attest';
        break;
      case 'assertion_required':
        action = 'assert';
        break;
      default:
        action = 'none';
    }
  }
  return { action, retryOnce: action === 'refresh' || action === 'attest' || action === 'assert', newKey: action === 'attest' };
}

/** Base64url (RFC 4648 §5) without padding. */
export function base64UrlNoPad(bytes: Uint8Array): string {
  return encodeBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Rule `assertion-encoding`: the `Tollgate-Assertion` value of a proof; empty bytes are invalidRequest. */
export function encodeAssertion(proof: Uint8Array): string {
  if (proof.length === 0) throw invalidRequest('An assertion needs at least one byte.', 'assertion_empty');
  return base64UrlNoPad(proof);
}

/** Bytes of a hex string (even length, 0-9a-fA-F); throws TypeError otherwise. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new TypeError('Not a hex string.');
  const out = new Uint8Array(hex.length / 2);
  for (let index = 0; index < out.length; index += 1) out[index] = parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  return out;
}

/** The attestation methods of `POST /v1/attest/{method}` (protocol.md, "Device tokens"). */
export type AttestationMethod = 'challenge' | 'apple-app-attest' | 'android-key-attestation' | 'android-play-integrity' | 'development';

/** One attestation request, plus what the platform call takes (rule `attestation-request`). */
export interface AttestationRequest {
  readonly method: 'POST';
  readonly path: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The JSON body, null for none. */
  readonly body: Record<string, unknown> | null;
  /** App Attest: SHA-256 of the UTF-8 challenge (attestKey / generateAssertion take it). */
  readonly clientDataHash?: Uint8Array;
  /** Android key attestation: setAttestationChallenge takes the base64url-decoded challenge. */
  readonly attestationChallenge?: Uint8Array;
  /** Android refresh: the message signed SHA256withECDSA by the attested key (the UTF-8 challenge). */
  readonly signedMessage?: Uint8Array;
  /** Play Integrity standard request: base64url-nopad SHA-256 of `challenge + "\n" + installation id`. */
  readonly requestHash?: string;
  /** Play Integrity classic request: the same binding as `requestHash`. */
  readonly nonce?: string;
}

function stringField(fields: Record<string, unknown>, name: string): string {
  const value = fields[name];
  if (typeof value !== 'string' || value === '') throw invalidRequest(`The attestation needs "${name}".`, 'bad_attestation');
  return value;
}

function bytesField(fields: Record<string, unknown>, name: string): Uint8Array {
  const bytes = fromHex(stringField(fields, name));
  if (bytes.length === 0) throw invalidRequest(`The attestation needs "${name}".`, 'bad_attestation');
  return bytes;
}

/**
 * Rule `attestation-request`: the request for `method` from `fields` (byte fields as `…Hex`, `refresh: true` for a
 * refresh by the attested key). The React Native SDK itself sends only `challenge` and `development`; the native
 * module sends the platform ones, and this function is the reference its bodies are checked against.
 */
export function buildAttestationRequest(method: AttestationMethod, appToken: string, fields: Record<string, unknown>): AttestationRequest {
  const path = `/v1/attest/${method}`;
  const json: Array<readonly [string, string]> = [['Content-Type', 'application/json'], ['Tollgate-App-Token', appToken]];
  const refresh = fields.refresh === true;
  switch (method) {
    case 'challenge':
      return { method: 'POST', path, headers: [['Tollgate-App-Token', appToken]], body: null };
    case 'development':
      return { method: 'POST', path, headers: json, body: { developmentToken: stringField(fields, 'developmentToken'), deviceId: stringField(fields, 'deviceId') } };
    case 'apple-app-attest': {
      const challenge = stringField(fields, 'challenge');
      const proof = encodeBase64(bytesField(fields, 'proofHex'));
      const body = { keyId: stringField(fields, 'keyId'), challenge, ...(refresh ? { assertion: proof } : { attestation: proof }) };
      return { method: 'POST', path, headers: json, body, clientDataHash: sha256(encodeUtf8(challenge)) };
    }
    case 'android-key-attestation': {
      const challenge = stringField(fields, 'challenge');
      if (refresh) {
        const body = { challenge, keyId: stringField(fields, 'keyId'), signature: encodeBase64(bytesField(fields, 'proofHex')) };
        return { method: 'POST', path, headers: json, body, signedMessage: encodeUtf8(challenge) };
      }
      const chain = fields.chainHex;
      if (!Array.isArray(chain) || chain.length === 0) throw invalidRequest('The attestation needs "chainHex".', 'bad_attestation');
      const decoded = decodeBase64(challenge);
      if (!decoded) throw invalidRequest('The challenge is not base64url.', 'bad_attestation');
      return {
        method: 'POST',
        path,
        headers: json,
        body: { challenge, chain: chain.map((item) => encodeBase64(fromHex(String(item)))) },
        attestationChallenge: decoded,
      };
    }
    case 'android-play-integrity': {
      const challenge = stringField(fields, 'challenge');
      const deviceId = stringField(fields, 'deviceId');
      const type = fields.type === 'classic' ? 'classic' : 'standard';
      const binding = base64UrlNoPad(sha256(encodeUtf8(`${challenge}\n${deviceId}`)));
      const body = { challenge, integrityToken: stringField(fields, 'integrityToken'), deviceId, type };
      return { method: 'POST', path, headers: json, body, ...(type === 'standard' ? { requestHash: binding } : { nonce: binding }) };
    }
    default:
      throw invalidRequest(`Unknown attestation method "${String(method)}".`, 'bad_attestation');
  }
}

/** A device token from the gateway. */
export interface IssuedDeviceToken {
  readonly token: string;
  /** Unix ms after which the gateway refuses it (rule `token-expiry`). */
  readonly expiresAtMs: number;
  /** Unix ms when it was received. */
  readonly receivedAtMs: number;
  /** The device id the gateway knows this device by, when told. */
  readonly deviceId?: string;
}

/**
 * Rule `attestation-response`: a 200 answer of `POST /v1/attest/{method}` → the token and its expiry. A 200 without a
 * usable `deviceToken`, or not JSON, breaks the protocol: networkError, nothing cached. The expiry is on the device
 * clock: `receivedAtMs + expiresIn` when the gateway says `expiresIn` (seconds; immune to a wrong device clock), else
 * rule `token-expiry` on the absolute times, moved to the device clock by `serverOffsetMs` (gateway minus device).
 */
export function parseAttestationResponse(bodyText: string, receivedAtMs: number, serverOffsetMs = 0): IssuedDeviceToken {
  let answer: unknown;
  try {
    answer = JSON.parse(bodyText);
  } catch {
    throw networkError("The gateway's attestation answer is not JSON.", 'malformed_response');
  }
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) {
    throw networkError("The gateway's attestation answer is not a JSON object.", 'malformed_response');
  }
  const object = answer as Record<string, unknown>;
  const token = object.deviceToken;
  if (typeof token !== 'string' || token === '') throw networkError('The gateway\'s attestation answer has no "deviceToken".', 'malformed_response');
  const expiresAt = typeof object.expiresAt === 'string' ? object.expiresAt : null;
  const expiresIn = object.expiresIn;
  const expiresAtMs =
    typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn >= 0
      ? receivedAtMs + Math.floor(expiresIn * 1000)
      : tokenExpiryMs(token, expiresAt, receivedAtMs + serverOffsetMs) - serverOffsetMs;
  return {
    token,
    expiresAtMs,
    receivedAtMs,
    ...(typeof object.deviceId === 'string' ? { deviceId: object.deviceId } : {}),
  };
}
