/**
 * Google Play Integrity verdicts, verified on the gateway (https://developer.android.com/google/play/integrity/verdicts):
 * - classic requests: the app's token is a JWE (A256KW key wrapping, A256GCM content) around a JWS (ES256) around the
 *   verdict JSON. The gateway decrypts and verifies it locally with the two keys the operator downloads from Play
 *   Console ("Decrypt and verify the integrity verdict" locally), no call to Google;
 * - standard requests: the token is opaque; the gateway sends it to Google's
 *   `POST /v1/{packageName}:decodeIntegrityToken` with an OAuth access token of a service account (RFC 7523 JWT bearer
 *   grant, scope `playintegrity`) and gets the verdict JSON back.
 *
 * Either way the verdict is then checked against the operator's policy: the request binding (the nonce for classic, the
 * request hash for standard), the package name, Play recognition, the signing-certificate digest, the device verdict and
 * the freshness of the token. Replay protection beyond freshness is the caller's: the nonce (or the data hashed into the
 * request hash) must be a one-time challenge from the gateway's challenge store.
 *
 * Every rejection is a `PlayIntegrityError` with a snake_case reason. A bad configuration (keys that cannot be imported,
 * a service-account key without `client_email`) is a plain `Error`: it is the operator's problem, not the device's.
 * No error message ever carries key material or an access token.
 */
import { createPrivateKey, createPublicKey, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SignJWT, compactDecrypt, compactVerify } from 'jose';

export class PlayIntegrityError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export type DeviceVerdict = 'MEETS_BASIC_INTEGRITY' | 'MEETS_DEVICE_INTEGRITY' | 'MEETS_STRONG_INTEGRITY';

export interface IntegrityPolicy {
  /** The app's package name: must be both the requesting package and the package Play evaluated. */
  packageName: string;
  /**
   * SHA-256 digests of the app's signing certificates, base64url (as Play reports them) or hex (as Play Console shows
   * them, colons allowed). Every digest in the verdict must be one of these. Absent or empty: not checked.
   */
  certificateSha256Digests?: string[];
  /** Default MEETS_DEVICE_INTEGRITY. A stronger label satisfies a weaker requirement. */
  requiredDeviceVerdict?: DeviceVerdict;
  /** Default true: the app must be PLAY_RECOGNIZED (the build Play distributes, signed with the Play-known key). */
  requirePlayRecognized?: boolean;
  /** How old the token may be. Default 5 minutes. */
  maxAgeMs?: number;
  now: Date;
}

export interface IntegrityVerdict {
  readonly valid: true;
  readonly packageName: string;
  readonly deviceRecognitionVerdict: string[];
  readonly appRecognitionVerdict: string;
  readonly timestampMillis: number;
  /** LICENSED, UNLICENSED or UNEVALUATED, when Play sent account details; reported, not enforced. */
  readonly appLicensingVerdict?: string;
  /** The evaluated build's version code, when Play evaluated the app; reported, not enforced. */
  readonly versionCode?: string;
}

export type ExpectedBinding = { nonce: string } | { requestHash: string };

const DEFAULT_MAX_AGE_MS = 5 * 60_000;
/** Google's clock and ours differ; a token from up to a minute "in the future" is clock skew, not forgery. */
const ALLOWED_CLOCK_SKEW_MS = 60_000;
/** A label earns its rank and every rank below it: STRONG implies DEVICE implies BASIC. */
const DEVICE_VERDICT_RANK: Readonly<Record<string, number>> = { MEETS_BASIC_INTEGRITY: 1, MEETS_DEVICE_INTEGRITY: 2, MEETS_STRONG_INTEGRITY: 3 };

// ---------------------------------------------------------------------------------------------------------------------
// Verdict payload checks (shared by classic and standard requests)
// ---------------------------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function objectField(parent: Json, name: string): Json {
  const value = parent[name];
  if (!isObject(value)) throw new PlayIntegrityError('malformed_token', `the verdict has no ${name} object`);
  return value;
}

function optionalString(parent: Json, name: string): string | undefined {
  const value = parent[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new PlayIntegrityError('malformed_token', `the verdict's ${name} is not a string`);
  return value;
}

function stringList(parent: Json, name: string): string[] {
  const value = parent[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
    throw new PlayIntegrityError('malformed_token', `the verdict's ${name} is not a list of strings`);
  }
  return value as string[];
}

/** Constant-time equality of two strings (lengths are not secret). */
function sameString(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The bytes of a base64 or base64url string, padded or not; undefined when it is not canonical base64. Node's decoder
 * silently skips stray characters and ignores the unused bits of the last character, so the encoding is re-derived from
 * the bytes and compared: two strings decode to the same bytes here only if they differ just in alphabet and padding.
 */
function base64Bytes(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  const normalized = text.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
  const bytes = Buffer.from(normalized, 'base64url');
  return bytes.length > 0 && bytes.toString('base64url') === normalized ? bytes : undefined;
}

/**
 * The classic nonce is a base64url string the app passed to Play; Play echoes it, but not always in the same alphabet or
 * with the same padding. The two match when they are the same string or encode the same bytes.
 */
function sameNonce(received: string, expected: string): boolean {
  if (sameString(received, expected)) return true;
  const left = base64Bytes(received);
  const right = base64Bytes(expected);
  return left !== undefined && right !== undefined && left.length === right.length && timingSafeEqual(left, right);
}

/** A SHA-256 digest as lower-case hex, from hex (colons allowed) or base64/base64url; undefined when it is neither. */
function normalizeDigest(digest: string): string | undefined {
  const hex = digest.replace(/:/g, '');
  if (/^[0-9a-fA-F]{64}$/.test(hex)) return hex.toLowerCase();
  const bytes = base64Bytes(digest);
  return bytes?.length === 32 ? bytes.toString('hex') : undefined;
}

/** Play sends int64 fields as JSON strings ("1675655009345"); a number is accepted too. */
function parseTimestamp(value: unknown): number {
  const millis = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (typeof millis !== 'number' || !Number.isSafeInteger(millis) || millis <= 0) {
    throw new PlayIntegrityError('malformed_token', 'the verdict has no valid requestDetails.timestampMillis');
  }
  return millis;
}

function checkBinding(requestDetails: Json, expected: ExpectedBinding): void {
  if ('nonce' in expected) {
    const nonce = optionalString(requestDetails, 'nonce');
    if (nonce === undefined || !sameNonce(nonce, expected.nonce)) throw new PlayIntegrityError('nonce_mismatch', 'the verdict does not carry the expected nonce');
  } else {
    // Play echoes the standard request hash exactly as the app passed it; any string is allowed, so no decoding.
    const requestHash = optionalString(requestDetails, 'requestHash');
    if (requestHash === undefined || !sameString(requestHash, expected.requestHash)) {
      throw new PlayIntegrityError('request_hash_mismatch', 'the verdict does not carry the expected request hash');
    }
  }
}

function checkFreshness(timestampMillis: number, policy: IntegrityPolicy): void {
  const now = policy.now.getTime();
  if (timestampMillis - now > ALLOWED_CLOCK_SKEW_MS) throw new PlayIntegrityError('future_timestamp', 'the verdict was issued in the future');
  if (now - timestampMillis > (policy.maxAgeMs ?? DEFAULT_MAX_AGE_MS)) throw new PlayIntegrityError('stale_timestamp', 'the verdict is too old');
}

function checkCertificates(digests: string[], policy: IntegrityPolicy): void {
  const allowed = (policy.certificateSha256Digests ?? []).map((digest) => {
    const normalized = normalizeDigest(digest);
    if (normalized === undefined) throw new Error('a policy certificate digest is neither a hex nor a base64url SHA-256 digest');
    return normalized;
  });
  if (allowed.length === 0) return;
  if (digests.length === 0) throw new PlayIntegrityError('certificate_mismatch', 'the verdict names no signing certificate');
  for (const digest of digests) {
    const normalized = normalizeDigest(digest);
    if (normalized === undefined || !allowed.includes(normalized)) {
      throw new PlayIntegrityError('certificate_mismatch', 'the app is signed with a certificate the policy does not allow');
    }
  }
}

function checkDevice(labels: string[], policy: IntegrityPolicy): void {
  const required = policy.requiredDeviceVerdict ?? 'MEETS_DEVICE_INTEGRITY';
  const best = Math.max(0, ...labels.map((label) => DEVICE_VERDICT_RANK[label] ?? 0));
  if (best < DEVICE_VERDICT_RANK[required]!) {
    throw new PlayIntegrityError('device_integrity_insufficient', `the device does not meet ${required} (verdict: ${labels.join(', ') || 'none'})`);
  }
}

/**
 * Checks a decrypted, signature-verified (classic) or Google-decoded (standard) verdict against the policy and the
 * request binding. The request details are checked first, as Google asks: a verdict for another request says nothing.
 */
export function checkIntegrityPayload(payload: unknown, policy: IntegrityPolicy, expected: ExpectedBinding): IntegrityVerdict {
  if (!isObject(payload)) throw new PlayIntegrityError('malformed_token', 'the verdict is not a JSON object');
  const requestDetails = objectField(payload, 'requestDetails');
  const appIntegrity = objectField(payload, 'appIntegrity');
  const deviceIntegrity = objectField(payload, 'deviceIntegrity');
  const accountDetails = isObject(payload.accountDetails) ? payload.accountDetails : {};

  checkBinding(requestDetails, expected);
  // requestPackageName is what the device asked for and may be spoofed; appIntegrity.packageName is what Play evaluated.
  if (optionalString(requestDetails, 'requestPackageName') !== policy.packageName) {
    throw new PlayIntegrityError('package_mismatch', `the verdict was requested for another package than ${policy.packageName}`);
  }
  const timestampMillis = parseTimestamp(requestDetails.timestampMillis);
  checkFreshness(timestampMillis, policy);

  const appRecognitionVerdict = optionalString(appIntegrity, 'appRecognitionVerdict');
  if (appRecognitionVerdict === undefined) throw new PlayIntegrityError('malformed_token', 'the verdict has no appRecognitionVerdict');
  if ((policy.requirePlayRecognized ?? true) && appRecognitionVerdict !== 'PLAY_RECOGNIZED') {
    throw new PlayIntegrityError('app_not_recognized', `the app is not recognized by Play (${appRecognitionVerdict})`);
  }
  // Play leaves the package name and digests out only when it did not evaluate the app at all.
  const evaluatedPackage = optionalString(appIntegrity, 'packageName');
  if (evaluatedPackage === undefined ? appRecognitionVerdict !== 'UNEVALUATED' : evaluatedPackage !== policy.packageName) {
    throw new PlayIntegrityError('package_mismatch', `the evaluated app is not ${policy.packageName}`);
  }
  checkCertificates(stringList(appIntegrity, 'certificateSha256Digest'), policy);

  const deviceRecognitionVerdict = stringList(deviceIntegrity, 'deviceRecognitionVerdict');
  checkDevice(deviceRecognitionVerdict, policy);

  const appLicensingVerdict = optionalString(accountDetails, 'appLicensingVerdict');
  const versionCode = appIntegrity.versionCode;
  return {
    valid: true,
    packageName: policy.packageName,
    deviceRecognitionVerdict,
    appRecognitionVerdict,
    timestampMillis,
    ...(appLicensingVerdict !== undefined ? { appLicensingVerdict } : {}),
    ...(typeof versionCode === 'string' || typeof versionCode === 'number' ? { versionCode: String(versionCode) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Classic requests: decrypt and verify locally
// ---------------------------------------------------------------------------------------------------------------------

export interface PlayConsoleKeys {
  readonly decryptionKey: KeyObject;
  readonly verificationKey: KeyObject;
}

/**
 * Imports the two keys Play Console gives for local verification: the response decryption key (base64 of a raw AES-256
 * key) and the response verification key (base64 DER SubjectPublicKeyInfo of an EC P-256 key). Throws a plain `Error`
 * naming which key is wrong, never echoing it; a plugin can call this at boot to fail early on a bad configuration.
 */
export function importPlayConsoleKeys(keys: { decryptionKey: string; verificationKey: string }): PlayConsoleKeys {
  const aes = Buffer.from(keys.decryptionKey.trim(), 'base64');
  if (aes.length !== 32) throw new Error('the Play Integrity decryption key must be the base64 of a 32-byte AES-256 key');
  let verificationKey: KeyObject;
  try {
    verificationKey = createPublicKey({ key: Buffer.from(keys.verificationKey.trim(), 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw new Error('the Play Integrity verification key must be the base64 of a DER SubjectPublicKeyInfo');
  }
  if (verificationKey.asymmetricKeyType !== 'ec' || verificationKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new Error('the Play Integrity verification key must be an EC P-256 public key');
  }
  return { decryptionKey: createSecretKey(aes), verificationKey };
}

const joseCode = (error: unknown) => (error as { code?: unknown }).code;

/**
 * Structural problems are `malformed_token`; anything else about the envelope (a wrong key, tampered bytes, an algorithm
 * Google does not use, such as `dir` or another content encryption) is `decryption_failed`.
 */
async function decrypt(token: string, key: KeyObject): Promise<string> {
  try {
    const { plaintext } = await compactDecrypt(token, key, { keyManagementAlgorithms: ['A256KW'], contentEncryptionAlgorithms: ['A256GCM'] });
    return Buffer.from(plaintext).toString('utf8');
  } catch (error) {
    const code = joseCode(error);
    if (code === 'ERR_JWE_INVALID') throw new PlayIntegrityError('malformed_token', 'the integrity token is not a well-formed JWE');
    if (code === 'ERR_JOSE_ALG_NOT_ALLOWED' || code === 'ERR_JOSE_NOT_SUPPORTED') {
      throw new PlayIntegrityError('decryption_failed', 'the integrity token is not encrypted with A256KW and A256GCM, as Google encrypts it');
    }
    throw new PlayIntegrityError('decryption_failed', 'the integrity token cannot be decrypted with the Play Console decryption key');
  }
}

/** Structural problems are `malformed_token`; a wrong key, altered bytes or an algorithm other than ES256 are `signature_invalid`. */
async function verifySignature(jws: string, key: KeyObject): Promise<unknown> {
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(jws, key, { algorithms: ['ES256'] }));
  } catch (error) {
    if (joseCode(error) === 'ERR_JWS_INVALID') throw new PlayIntegrityError('malformed_token', 'the decrypted integrity token is not a well-formed JWS');
    throw new PlayIntegrityError('signature_invalid', 'the integrity verdict is not signed with the Play Console verification key');
  }
  try {
    return JSON.parse(Buffer.from(payload).toString('utf8'));
  } catch {
    throw new PlayIntegrityError('malformed_token', 'the integrity verdict is not JSON');
  }
}

/** Verifies a classic Play Integrity token locally; throws `PlayIntegrityError` with a reason. */
export async function verifyClassicIntegrityToken(input: {
  token: string;
  decryptionKey: string;
  verificationKey: string;
  policy: IntegrityPolicy;
  nonce: string;
}): Promise<IntegrityVerdict> {
  if (typeof input.token !== 'string' || input.token.split('.').length !== 5) {
    throw new PlayIntegrityError('malformed_token', 'the integrity token is not a compact JWE');
  }
  const keys = importPlayConsoleKeys(input);
  const jws = await decrypt(input.token, keys.decryptionKey);
  const payload = await verifySignature(jws, keys.verificationKey);
  return checkIntegrityPayload(payload, input.policy, { nonce: input.nonce });
}

// ---------------------------------------------------------------------------------------------------------------------
// Standard requests: Google decodes the token
// ---------------------------------------------------------------------------------------------------------------------

export interface StandardIntegrityDecoder {
  /** Google's `tokenPayloadExternal` for the token; throws `PlayIntegrityError` (google_unavailable, google_rejected). */
  decode(packageName: string, integrityToken: string): Promise<unknown>;
}

export interface GoogleIntegrityDecoderOptions {
  /** The service-account JSON key of a Google Cloud project linked to the app in Play Console. */
  serviceAccountJson: string;
  /** Default https://playintegrity.googleapis.com. */
  apiBaseUrl?: string;
  /** Default Google's token endpoint. The key file's `token_uri` is ignored, as for Vertex AI: see below. */
  tokenUrl?: string;
  fetch?: typeof fetch;
  /** Milliseconds since the epoch; for the access-token cache. */
  clock?: () => number;
}

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const GOOGLE_PLAY_INTEGRITY_URL = 'https://playintegrity.googleapis.com';
const PLAY_INTEGRITY_SCOPE = 'https://www.googleapis.com/auth/playintegrity';
const REQUEST_TIMEOUT_MS = 10_000;
/** Tokens are renewed this long before Google says they expire, so a token never expires in flight. */
const TOKEN_RENEWAL_MARGIN_MS = 60_000;

interface AccessToken {
  readonly token: string;
  readonly expiresAt: number;
}

/** Google's error bodies: `{"error":"invalid_grant"}` (OAuth) or `{"error":{"status":"INVALID_ARGUMENT"}}` (APIs). Only the code is kept. */
async function googleErrorCode(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: unknown };
    const code = isObject(body.error) ? body.error.status : body.error;
    return typeof code === 'string' && /^[A-Za-z_]{1,64}$/.test(code) ? ` (${code})` : '';
  } catch {
    return '';
  }
}

/** A network failure, named by its code (ECONNREFUSED, a timeout) and nothing else: no request, no headers. */
function unavailable(what: string, error: unknown): PlayIntegrityError {
  if (error instanceof PlayIntegrityError) return error;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { name?: unknown }).name;
  return new PlayIntegrityError('google_unavailable', `${what} cannot be reached${typeof code === 'string' && /^[A-Za-z_]{1,64}$/.test(code) ? ` (${code})` : ''}`);
}

function statusError(what: string, status: number, code: string): PlayIntegrityError {
  return status >= 500 || status === 429
    ? new PlayIntegrityError('google_unavailable', `${what} answered ${status}${code}`)
    : new PlayIntegrityError('google_rejected', `${what} answered ${status}${code}`);
}

/**
 * Decodes standard integrity tokens with Google's Play Integrity API. The service-account key is imported once and its
 * PEM text is not kept; the key object and the access token live in private fields, so that neither shows when the
 * decoder is logged or inspected. The token endpoint is Google's unless the operator names another (a fake in tests):
 * the key file's `token_uri` is not trusted, so a tampered key file cannot make the gateway post assertions elsewhere.
 */
export class GoogleIntegrityDecoder implements StandardIntegrityDecoder {
  readonly #clientEmail: string;
  readonly #keyId: string | undefined;
  readonly #privateKey: KeyObject;
  readonly #apiBaseUrl: string;
  readonly #tokenUrl: string;
  readonly #fetch: typeof fetch;
  readonly #clock: () => number;
  #accessToken: Promise<AccessToken> | undefined;

  constructor(options: GoogleIntegrityDecoderOptions) {
    let account: { client_email?: unknown; private_key?: unknown; private_key_id?: unknown };
    try {
      account = JSON.parse(options.serviceAccountJson) as typeof account;
    } catch {
      throw new Error('the Play Integrity service-account key is not JSON');
    }
    if (!isObject(account) || typeof account.client_email !== 'string' || typeof account.private_key !== 'string') {
      throw new Error('the Play Integrity service-account key lacks client_email or private_key');
    }
    try {
      this.#privateKey = createPrivateKey(account.private_key);
    } catch {
      throw new Error('the Play Integrity service-account private_key cannot be imported');
    }
    if (this.#privateKey.asymmetricKeyType !== 'rsa') throw new Error('the Play Integrity service-account private_key is not an RSA key');
    this.#clientEmail = account.client_email;
    this.#keyId = typeof account.private_key_id === 'string' ? account.private_key_id : undefined;
    this.#apiBaseUrl = (options.apiBaseUrl ?? GOOGLE_PLAY_INTEGRITY_URL).replace(/\/+$/, '');
    this.#tokenUrl = options.tokenUrl ?? GOOGLE_TOKEN_URL;
    this.#fetch = options.fetch ?? fetch;
    this.#clock = options.clock ?? Date.now;
  }

  async decode(packageName: string, integrityToken: string): Promise<unknown> {
    const token = await this.#currentAccessToken();
    const url = `${this.#apiBaseUrl}/v1/${encodeURIComponent(packageName)}:decodeIntegrityToken`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ integrity_token: integrityToken }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw unavailable('the Play Integrity API', error);
    }
    if (response.status === 401) this.#accessToken = undefined; // revoked or expired early: mint a new one next time
    if (!response.ok) throw statusError('the Play Integrity API', response.status, await googleErrorCode(response));
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw unavailable('the Play Integrity API', error);
    }
    if (!isObject(body) || !isObject(body.tokenPayloadExternal)) {
      throw new PlayIntegrityError('google_unavailable', 'the Play Integrity API answered without tokenPayloadExternal');
    }
    return body.tokenPayloadExternal;
  }

  /** The cached access token, or a new one; concurrent callers share one exchange, and a failed exchange is not cached. */
  async #currentAccessToken(): Promise<string> {
    const cached = this.#accessToken && (await this.#accessToken.catch(() => undefined));
    if (cached && cached.expiresAt - TOKEN_RENEWAL_MARGIN_MS > this.#clock()) return cached.token;
    const pending = this.#mintAccessToken();
    this.#accessToken = pending;
    pending.catch(() => {
      if (this.#accessToken === pending) this.#accessToken = undefined;
    });
    return (await pending).token;
  }

  /** RFC 7523: an RS256 assertion signed with the service-account key, traded at the token endpoint for an access token. */
  async #mintAccessToken(): Promise<AccessToken> {
    const issuedAt = Math.floor(this.#clock() / 1000);
    const assertion = await new SignJWT({ scope: PLAY_INTEGRITY_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(this.#keyId ? { kid: this.#keyId } : {}) })
      .setIssuer(this.#clientEmail)
      .setSubject(this.#clientEmail)
      .setAudience(this.#tokenUrl)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + 3600)
      .sign(this.#privateKey);
    let response: Response;
    try {
      response = await this.#fetch(this.#tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw unavailable('the OAuth token endpoint', error);
    }
    if (!response.ok) throw statusError('the OAuth token endpoint', response.status, await googleErrorCode(response));
    let body: { access_token?: unknown; expires_in?: unknown };
    try {
      body = (await response.json()) as typeof body;
    } catch (error) {
      throw unavailable('the OAuth token endpoint', error);
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') {
      throw new PlayIntegrityError('google_unavailable', 'the OAuth token endpoint answered without access_token');
    }
    const lifetimeSeconds = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 3600;
    return { token: body.access_token, expiresAt: this.#clock() + lifetimeSeconds * 1000 };
  }
}

/** Verifies a standard Play Integrity token through a decoder (Google's, or a fake in tests); throws `PlayIntegrityError`. */
export async function verifyStandardIntegrityToken(input: {
  token: string;
  decoder: StandardIntegrityDecoder;
  policy: IntegrityPolicy;
  requestHash: string;
}): Promise<IntegrityVerdict> {
  if (typeof input.token !== 'string' || input.token.length === 0) throw new PlayIntegrityError('malformed_token', 'the integrity token is empty');
  let payload: unknown;
  try {
    payload = await input.decoder.decode(input.policy.packageName, input.token);
  } catch (error) {
    throw unavailable('the integrity token decoder', error);
  }
  return checkIntegrityPayload(payload, input.policy, { requestHash: input.requestHash });
}
