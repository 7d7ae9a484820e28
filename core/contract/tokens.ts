/**
 * Dependency-injection tokens. Stages and plugins are registered and resolved under these names only; nothing outside
 * the composition root (`core/server`) names a concrete class.
 */
import type { StageName } from './pipeline';

/** One token per pipeline stage; register a class under it to replace the stage. */
export const STAGE_TOKENS: Readonly<Record<StageName, symbol>> = Object.freeze({
  verifyToken: Symbol.for('tollgate.stage.verifyToken'),
  verifyDevice: Symbol.for('tollgate.stage.verifyDevice'),
  verifyUser: Symbol.for('tollgate.stage.verifyUser'),
  limitRate: Symbol.for('tollgate.stage.limitRate'),
  resolveSecret: Symbol.for('tollgate.stage.resolveSecret'),
  injectKey: Symbol.for('tollgate.stage.injectKey'),
  forward: Symbol.for('tollgate.stage.forward'),
});

/** Every provider manifest is registered under this token (multi-registration, resolved with `@injectAll`). */
export const PROVIDER_MANIFEST = Symbol.for('tollgate.providerManifest');
/** Every attestation verifier is registered under this token (multi-registration). */
export const ATTESTATION_VERIFIER = Symbol.for('tollgate.attestationVerifier');
/** The rate-limit store (one). */
export const RATE_LIMIT_STORE = Symbol.for('tollgate.rateLimitStore');
/** The challenge store (one). */
export const CHALLENGE_STORE = Symbol.for('tollgate.challengeStore');
/** Pipeline observers (multi-registration). */
export const PIPELINE_OBSERVER = Symbol.for('tollgate.pipelineObserver');
/** The resolved configuration object. */
export const CONFIGURATION = Symbol.for('tollgate.configuration');
/** The pino logger. */
export const LOGGER = Symbol.for('tollgate.logger');
/** A clock, `() => unix ms`, replaceable in tests. */
export const CLOCK = Symbol.for('tollgate.clock');
/** The hot-path read model (`GatewayDirectory`). */
export const GATEWAY_DIRECTORY = Symbol.for('tollgate.gatewayDirectory');
/** The device-token service (issue and verify). */
export const DEVICE_TOKENS = Symbol.for('tollgate.deviceTokens');
/** The knex database handle. */
export const DATABASE = Symbol.for('tollgate.database');
/** The secret cipher (master key). */
export const SECRET_CIPHER = Symbol.for('tollgate.secretCipher');
/** The usage recorder. */
export const USAGE_RECORDER = Symbol.for('tollgate.usageRecorder');
/** The device key store (`DeviceKeyStore`): attested public keys and assertion counters. */
export const DEVICE_KEYS = Symbol.for('tollgate.deviceKeys');
