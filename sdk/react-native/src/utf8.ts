/**
 * UTF-8 without TextEncoder/TextDecoder: Hermes (React Native's engine) has no TextDecoder on every version the SDK
 * supports, so the SDK carries its own codec. The decoder follows the WHATWG Encoding Standard's UTF-8 decoder exactly
 * (each maximal invalid subpart becomes one U+FFFD), so it agrees with `new TextDecoder()` byte for byte.
 */

/** UTF-8 bytes of `text`. A lone surrogate becomes U+FFFD, as TextEncoder does. */
export function encodeUtf8(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 3);
  let length = 0;
  for (let index = 0; index < text.length; index += 1) {
    let code = text.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = index + 1 < text.length ? text.charCodeAt(index + 1) : 0;
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
        index += 1;
      } else {
        code = 0xfffd;
      }
    }
    if (code < 0x80) {
      out[length++] = code;
    } else if (code < 0x800) {
      out[length++] = 0xc0 | (code >> 6);
      out[length++] = 0x80 | (code & 0x3f);
    } else if (code < 0x10000) {
      out[length++] = 0xe0 | (code >> 12);
      out[length++] = 0x80 | ((code >> 6) & 0x3f);
      out[length++] = 0x80 | (code & 0x3f);
    } else {
      out[length++] = 0xf0 | (code >> 18);
      out[length++] = 0x80 | ((code >> 12) & 0x3f);
      out[length++] = 0x80 | ((code >> 6) & 0x3f);
      out[length++] = 0x80 | (code & 0x3f);
    }
  }
  return out.slice(0, length);
}

/** Appends code point `code` to `units` as UTF-16 code units. */
function pushCodePoint(units: number[], code: number): void {
  if (code < 0x10000) {
    units.push(code);
  } else {
    const offset = code - 0x10000;
    units.push(0xd800 + (offset >> 10), 0xdc00 + (offset & 0x3ff));
  }
}

function unitsToString(units: readonly number[]): string {
  let text = '';
  const step = 8192;
  for (let start = 0; start < units.length; start += step) {
    text += String.fromCharCode.apply(null, units.slice(start, start + step) as number[]);
  }
  return text;
}

/**
 * Decodes `bytes` (from `start` to `end`). With `fatal`, returns null at the first invalid sequence; otherwise each
 * maximal invalid subpart becomes U+FFFD (WHATWG). A leading BOM is content here: callers strip it when a format says so.
 */
export function decodeUtf8(bytes: Uint8Array, fatal = false, start = 0, end = bytes.length): string | null {
  const units: number[] = [];
  let needed = 0;
  let seen = 0;
  let codePoint = 0;
  let lower = 0x80;
  let upper = 0xbf;
  let index = start;
  while (index < end) {
    const byte = bytes[index]!;
    if (needed === 0) {
      index += 1;
      if (byte <= 0x7f) {
        units.push(byte);
      } else if (byte >= 0xc2 && byte <= 0xdf) {
        needed = 1;
        codePoint = byte & 0x1f;
      } else if (byte >= 0xe0 && byte <= 0xef) {
        if (byte === 0xe0) lower = 0xa0;
        if (byte === 0xed) upper = 0x9f;
        needed = 2;
        codePoint = byte & 0x0f;
      } else if (byte >= 0xf0 && byte <= 0xf4) {
        if (byte === 0xf0) lower = 0x90;
        if (byte === 0xf4) upper = 0x8f;
        needed = 3;
        codePoint = byte & 0x07;
      } else {
        if (fatal) return null;
        units.push(0xfffd);
      }
      continue;
    }
    if (byte < lower || byte > upper) {
      // The byte is not consumed: it starts over after the replacement character.
      needed = 0;
      seen = 0;
      codePoint = 0;
      lower = 0x80;
      upper = 0xbf;
      if (fatal) return null;
      units.push(0xfffd);
      continue;
    }
    index += 1;
    lower = 0x80;
    upper = 0xbf;
    codePoint = (codePoint << 6) | (byte & 0x3f);
    seen += 1;
    if (seen === needed) {
      pushCodePoint(units, codePoint);
      needed = 0;
      seen = 0;
      codePoint = 0;
    }
  }
  if (needed !== 0) {
    if (fatal) return null;
    units.push(0xfffd);
  }
  return unitsToString(units);
}

/** Decodes with replacement (never null). */
export function utf8ToString(bytes: Uint8Array): string {
  return decodeUtf8(bytes, false) as string;
}
