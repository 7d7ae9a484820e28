/**
 * Encryption of secrets at rest: AES-256-GCM (NIST SP 800-38D) with a random 96-bit IV per value and associated data
 * that binds each ciphertext to its row (app and provider), so that a ciphertext copied to another row fails to decrypt.
 *
 * Stored form: `v1.<keyId>.<iv>.<tag>.<ciphertext>` (base64url parts). `keyId` names the master key that sealed it, so
 * that a rotation can tell which rows still need re-encryption.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { TollgateError } from '../contract';

export class SecretCipher {
  /** Short public identifier of the master key: the first 8 bytes of SHA-256("tollgate-key-id" ‖ key), hex. */
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new TollgateError('TG_ERR_MASTER_KEY', 'the master key must be 32 bytes');
    this.keyId = createHash('sha256').update('tollgate-key-id').update(key).digest('hex').slice(0, 16);
  }

  seal(plaintext: string, associatedData: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', this.keyId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join('.');
  }

  open(sealed: string, associatedData: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1') throw new TollgateError('TG_ERR_DECRYPT', 'unknown sealed-secret format');
    const [, keyId, iv, tag, ciphertext] = parts as [string, string, string, string, string];
    if (keyId !== this.keyId) {
      throw new TollgateError('TG_ERR_DECRYPT', `secret was sealed under master key ${keyId}, the configured key is ${this.keyId}`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(associatedData, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new TollgateError('TG_ERR_DECRYPT', 'secret failed authentication (wrong key, or the row was altered)');
    }
  }

  /** The key id a sealed value was sealed under. */
  static keyIdOf(sealed: string): string | undefined {
    return sealed.split('.')[1];
  }
}
