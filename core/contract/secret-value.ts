/**
 * A provider secret in memory. The plain value is reachable only through {@link SecretValue.reveal}; every other way of
 * turning it into text (`String()`, template literals, `JSON.stringify`, `util.inspect`, pino) yields a mask, so that a
 * careless log line or error cannot leak it.
 */
const plain = new WeakMap<SecretValue, string>();

export class SecretValue {
  constructor(value: string) {
    plain.set(this, value);
  }

  /** The plain value. Call it only where the value is put on the wire. */
  reveal(): string {
    return plain.get(this) ?? '';
  }

  /** A display form that reveals nothing usable of the value ({@link maskSecret}), e.g. `sk-…abcd`. */
  masked(): string {
    return maskSecret(this.reveal());
  }

  toString(): string {
    return '[secret]';
  }

  toJSON(): string {
    return '[secret]';
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'SecretValue([secret])';
  }
}

/** Values shorter than this show no character at all: four characters of a short secret are too large a share of it. */
const MASK_MIN_LENGTH = 24;

/**
 * Masks a credential for display, revealing nothing an attacker could use (docs/security.md, "Policies, proofs and identities"):
 * - a JSON value (a service-account key file) shows no character of its own: `JSON key (…@<domain of client_email>)`
 *   when it names a `client_email`, which is what tells two service accounts apart, else `JSON value`;
 * - a PEM block shows `PEM key`;
 * - a value of at least 24 characters shows its last 4, after its public vendor marker when it has one (letters and
 *   a dash or underscore, e.g. `sk-`, `gsk_`, `xai-`): `sk-…wxyz`, `…wxyz`;
 * - anything shorter shows `…` only.
 */
export function maskSecret(value: string): string {
  const text = value.trim();
  if (text.startsWith('{') || text.startsWith('[')) return maskJson(text);
  if (text.startsWith('-----BEGIN')) return 'PEM key';
  if (text.length < MASK_MIN_LENGTH) return '…';
  const marker = /^[A-Za-z]{1,8}[-_]/.exec(text)?.[0] ?? '';
  return `${marker}…${text.slice(-4)}`;
}

function maskJson(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'JSON value';
  }
  const email = parsed !== null && typeof parsed === 'object' ? (parsed as { client_email?: unknown }).client_email : undefined;
  const domain = typeof email === 'string' ? /@([A-Za-z0-9.-]{1,253})$/.exec(email)?.[1] : undefined;
  return domain ? `JSON key (…@${domain})` : 'JSON value';
}
