/**
 * The attestation-verifier contract. A verifier serves `POST /v1/attest/{method}`: it checks a platform attestation
 * and names the device; the gateway then issues a device token (protocol.md, "Device tokens").
 */
import { GatewayError } from './errors';
import type { AppIdentity } from './records';

/** The request body of `POST /v1/attest/{method}` and what the route already knows. */
export interface AttestationInput {
  readonly app: AppIdentity;
  /** Parsed JSON body; each verifier validates its own fields. */
  readonly body: Readonly<Record<string, unknown>>;
  /** True when the server runs with `TOLLGATE_ENV=production`. */
  readonly production: boolean;
  /** Consumes a challenge issued by `POST /v1/attest/challenge` for this app: true only once. */
  consumeChallenge(challenge: string): Promise<boolean>;
  /** Consumes the challenge, or throws the `attestationFailed` (`challenge_invalid`) every method answers. */
  useChallenge(challenge: string): Promise<void>;
  /** The app's attested device keys (for assertion-based refreshes). */
  readonly devices: DeviceKeyStore;
  /** Reads a credential the app keeps for its attestation (e.g. Play Integrity keys), decrypted; null when absent. */
  readAttestationSecret(name: string): Promise<string | null>;
}

/** An attested device key as stored. */
export interface DeviceKeyRecord {
  readonly publicKey: string | null;
  /** The highest assertion counter accepted so far. */
  readonly counter: number;
  readonly revoked: boolean;
}

/** Device keys of attested devices, with their assertion counters. */
export interface DeviceKeyStore {
  find(appId: string, deviceId: string): Promise<DeviceKeyRecord | null>;
  /**
   * Moves the stored counter from `expected` to `next` atomically (compare-and-set); false when it no longer holds
   * `expected` (another request advanced it first: a replay or a race, refused either way).
   */
  advanceCounter(appId: string, deviceId: string, expected: number, next: number): Promise<boolean>;
}

/** A per-request assertion to check (`Tollgate-Assertion`, the app's `every-request` assertion mode). */
export interface RequestAssertionInput {
  readonly app: AppIdentity;
  readonly deviceId: string;
  /** The decoded `Tollgate-Assertion` header (base64url without padding, protocol.md). */
  readonly assertion: Buffer;
  /** The `Tollgate-Assertion` header as sent, for proofs that are text (a Play Integrity standard token). */
  readonly header: string;
  /** The request digest of protocol.md (32 bytes): what the device signed. */
  readonly digest: Buffer;
  readonly devices: DeviceKeyStore;
  /** Reads a credential the app keeps for its attestation (e.g. the Play Integrity service account), decrypted; null when absent. */
  readAttestationSecret(name: string): Promise<string | null>;
}

/** A verified device. */
export interface AttestedDevice {
  /** Stable device key id, e.g. the App Attest key id. Becomes the `dev` claim. */
  readonly deviceId: string;
  /** Public key (PEM or JWK JSON) kept for later assertions, when the method has one. */
  readonly publicKey?: string;
}

/**
 * A verifier for one attestation method. It throws `GatewayError('attestationFailed', …)` with a `reason` when the
 * attestation is rejected.
 */
export interface AttestationVerifier {
  /** The `{method}` of the route, e.g. `apple-app-attest`, `development`. */
  readonly method: string;
  verify(input: AttestationInput): Promise<AttestedDevice>;
  /**
   * Checks a per-request proof (`Tollgate-Assertion`) over the request digest by a device this method attested. A
   * method without it cannot prove requests: an app in `every-request` mode refuses its device tokens, and management
   * refuses that mode for an app whose allowed methods all lack it. Throws `GatewayError('attestationFailed', …)`
   * when the proof is rejected.
   */
  verifyRequestAssertion?(input: RequestAssertionInput): Promise<void>;
}

/**
 * The stored key of a device this app attested earlier, for assertion- or signature-based refreshes; throws
 * `attestationFailed` when the key was never attested (`device_key_unknown`) or the device is revoked.
 */
export async function requireAttestedKey(devices: DeviceKeyStore, appId: string, deviceId: string): Promise<{ readonly publicKey: string; readonly counter: number }> {
  const device = await devices.find(appId, deviceId);
  if (!device?.publicKey) throw new GatewayError('attestationFailed', 'This key was never attested for this app: attest it first.', { reason: 'device_key_unknown' });
  if (device.revoked) throw new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' });
  return { publicKey: device.publicKey, counter: device.counter };
}

/**
 * Attestation credentials an app keeps (Play Integrity keys, a service account) live in the secrets table under
 * `@<name>`: a provider slug cannot start with `@`, so the proxy can never inject one.
 */
export function attestationSecretKey(name: string): string {
  return `@${name}`;
}

/** The credential name of a secrets-table key, or null for a provider key. */
export function attestationSecretName(key: string): string | null {
  return key.startsWith('@') ? key.slice(1) : null;
}

/**
 * The normal form of a device id, applied when a device token is issued and before every revocation check, so that one
 * device has one id (docs/security.md, "Policies, proofs and identities"). Ids a client names itself (development device ids, Play
 * Integrity installation ids, `pi:<id>`) are case-insensitive ASCII: lower-cased. Android key ids are lower-case hex
 * (lower-cased too). App Attest key ids are standard base64, where case is significant: left as they are.
 */
export function normalizeDeviceId(method: string, deviceId: string): string {
  return CASE_INSENSITIVE_DEVICE_IDS.has(method) ? deviceId.toLowerCase() : deviceId;
}

/** Methods whose device ids are case-insensitive (see {@link normalizeDeviceId}); any other method's ids are kept as they are. */
const CASE_INSENSITIVE_DEVICE_IDS: ReadonlySet<string> = new Set(['development', 'android-play-integrity', 'android-key-attestation']);
