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

  /** A display form that never holds more than the first 3 and last 4 characters, e.g. `sk-…abcd`. */
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

/**
 * Masks a credential for display: `sk-proj-abc…wxyz` keeps 3 leading and 4 trailing characters when the value is long
 * enough (≥ 16) that this reveals little; shorter values show only `…` and the last 2.
 */
export function maskSecret(value: string): string {
  if (value.length >= 16) return `${value.slice(0, 3)}…${value.slice(-4)}`;
  if (value.length >= 6) return `…${value.slice(-2)}`;
  return '…';
}
