/** Base64 without `atob`/`Buffer` (neither is guaranteed in React Native). */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const LOOKUP: Record<string, number> = {};
for (let index = 0; index < ALPHABET.length; index += 1) LOOKUP[ALPHABET[index]!] = index;
LOOKUP['-'] = 62;
LOOKUP['_'] = 63;

/** Decodes standard or URL-safe base64, padded or not. Returns null when `text` is not base64. */
export function decodeBase64(text: string): Uint8Array | null {
  const clean = text.replace(/=+$/, '');
  if (clean.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let length = 0;
  for (let index = 0; index < clean.length; index += 1) {
    const value = LOOKUP[clean[index]!];
    if (value === undefined) return null;
    buffer = (buffer << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[length++] = (buffer >> bits) & 0xff;
    }
  }
  return out.slice(0, length);
}

/** Standard base64 with padding. */
export function encodeBase64(bytes: Uint8Array): string {
  let out = '';
  let index = 0;
  for (; index + 2 < bytes.length; index += 3) {
    const value = (bytes[index]! << 16) | (bytes[index + 1]! << 8) | bytes[index + 2]!;
    out += ALPHABET[value >> 18]! + ALPHABET[(value >> 12) & 63]! + ALPHABET[(value >> 6) & 63]! + ALPHABET[value & 63]!;
  }
  const rest = bytes.length - index;
  if (rest === 1) {
    const value = bytes[index]! << 16;
    out += ALPHABET[value >> 18]! + ALPHABET[(value >> 12) & 63]! + '==';
  } else if (rest === 2) {
    const value = (bytes[index]! << 16) | (bytes[index + 1]! << 8);
    out += ALPHABET[value >> 18]! + ALPHABET[(value >> 12) & 63]! + ALPHABET[(value >> 6) & 63]! + '=';
  }
  return out;
}
