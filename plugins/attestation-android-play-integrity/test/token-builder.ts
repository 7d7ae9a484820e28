/**
 * Classic Play Integrity tokens made the way Google makes them (https://developer.android.com/google/play/integrity/verdicts):
 * the verdict JSON signed as a compact JWS (ES256) with an EC P-256 key, then encrypted as a compact JWE (A256KW key
 * wrapping, A256GCM content) with an AES-256 key. The keys are exported as Play Console hands them to developers: the
 * decryption key as base64 of the raw AES key, the verification key as base64 of the DER SubjectPublicKeyInfo.
 */
import { createSecretKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { CompactEncrypt, CompactSign } from 'jose';

export interface PlayConsoleTestKeys {
  /** As Play Console gives it: base64 of the raw AES-256 key. */
  readonly decryptionKey: string;
  /** As Play Console gives it: base64 of the DER SubjectPublicKeyInfo of the EC P-256 key. */
  readonly verificationKey: string;
  readonly aesKey: KeyObject;
  readonly signingKey: KeyObject;
}

export function generatePlayConsoleKeys(): PlayConsoleTestKeys {
  const raw = randomBytes(32);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    decryptionKey: raw.toString('base64'),
    verificationKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    aesKey: createSecretKey(raw),
    signingKey: privateKey,
  };
}

export const PACKAGE = 'com.example.tollgate';
/** SHA-256 of the test app's signing certificate, base64url without padding as Play reports it. */
export const CERTIFICATE_DIGEST = Buffer.alloc(32, 0xab).toString('base64url');

/** A verdict for a genuine app on a genuine device, as Play returns it (int64 fields as strings). */
export function verdictPayload(options: { nonce?: string; requestHash?: string; timestampMillis: number }): Record<string, unknown> {
  return {
    requestDetails: {
      requestPackageName: PACKAGE,
      ...(options.nonce !== undefined ? { nonce: options.nonce } : {}),
      ...(options.requestHash !== undefined ? { requestHash: options.requestHash } : {}),
      timestampMillis: String(options.timestampMillis),
    },
    appIntegrity: {
      appRecognitionVerdict: 'PLAY_RECOGNIZED',
      packageName: PACKAGE,
      certificateSha256Digest: [CERTIFICATE_DIGEST],
      versionCode: '42',
    },
    deviceIntegrity: { deviceRecognitionVerdict: ['MEETS_DEVICE_INTEGRITY'] },
    accountDetails: { appLicensingVerdict: 'LICENSED' },
  };
}

export interface BuildOptions {
  /** Sign with this EC key instead of the Play Console one. */
  readonly signingKey?: KeyObject;
  /** Encrypt with this AES key instead of the Play Console one. */
  readonly aesKey?: KeyObject;
  /** JWE key management and content encryption algorithms; Google's are A256KW and A256GCM. */
  readonly alg?: string;
  readonly enc?: string;
  /** The inner content, instead of a JWS of the payload. */
  readonly inner?: string;
}

export async function signVerdict(payload: unknown, signingKey: KeyObject): Promise<string> {
  return new CompactSign(Buffer.from(JSON.stringify(payload))).setProtectedHeader({ alg: 'ES256' }).sign(signingKey);
}

export async function buildClassicToken(payload: unknown, keys: PlayConsoleTestKeys, options: BuildOptions = {}): Promise<string> {
  const jws = options.inner ?? (await signVerdict(payload, options.signingKey ?? keys.signingKey));
  const alg = options.alg ?? 'A256KW';
  return new CompactEncrypt(Buffer.from(jws)).setProtectedHeader({ alg, enc: options.enc ?? 'A256GCM' }).encrypt(options.aesKey ?? keys.aesKey);
}
