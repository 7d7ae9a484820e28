/**
 * The attestation-verifier contract. A verifier serves `POST /v1/attest/{method}`: it checks a platform attestation
 * and names the device; the gateway then issues a device token (protocol.md, "Device tokens").
 */
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
}
