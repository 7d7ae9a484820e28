/**
 * Keeping the injected credential out of what a provider sends back (protocol.md, "Errors"; docs/security.md,
 * "Provider responses"). An upstream that echoes the key (a redirect to `…?key=…`, a `WWW-Authenticate` quoting the
 * `Authorization` it got, an error body that prints the request) must not hand it to the app.
 *
 * Headers are scrubbed in header-hygiene.ts; this module names the credential's forms and redacts error bodies. Every
 * non-2xx body is inspected, whatever its type or length; 2xx answers stream through untouched (protocol.md,
 * "Streaming"; docs/security.md, "Provider responses"):
 * - a body of at most {@link ERROR_BODY_INSPECT_BYTES} (declared, or counted while buffering) is read whole, decoded
 *   (every `Content-Encoding` the gateway lets the provider use, stacked codings, and a compressed body inside), looked at
 *   with its JSON `\uXXXX` escapes undone, and sent redacted when it holds the credential in any of its forms (raw,
 *   percent-encoded, JSON-escaped, base64). One in a coding the gateway cannot decode is withheld (the status passes,
 *   the body does not);
 * - a longer, or streamed, uncompressed body passes through a {@link StreamRedactor}: each form is masked in place
 *   (same length, so `Content-Length` holds), a short tail held back so a form cut between two chunks is still seen;
 *   a form that cannot be masked in place (escaped) cuts the answer;
 * - a longer compressed body is withheld.
 */
import type { IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import type { ProxyContext } from '../contract';
import { REDACTED, redactCredentials } from './header-hygiene';
import { ProcessWeakMap, processMap } from './process-caches';

/** Largest non-2xx response body buffered to look for the credential. */
export const ERROR_BODY_INSPECT_BYTES = 64 * 1024;
/** Largest decompressed size of such a body (past it, the body is withheld, as one that does not decode). */
const INFLATED_LIMIT = 1024 * 1024;
/** Shorter strings are not searched for: they would redact ordinary text. */
const MIN_CREDENTIAL_LENGTH = 8;

/** The ways a credential string could appear in a response: as is, percent-encoded, JSON-escaped. */
function formsOf(value: string): string[] {
  if (value.length < MIN_CREDENTIAL_LENGTH) return [];
  const forms = new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]);
  return [...forms];
}

/** Base64 runs shorter than this are not searched for (they would match ordinary base64 data by chance). */
const MIN_BASE64_FORM_LENGTH = 16;

/**
 * The base64 (and base64url) text a credential turns into inside a longer base64 string: at each of the three byte
 * alignments, the characters that depend on the credential's bytes alone (the first group, which mixes in the bytes
 * before it, and the last partial group are left out).
 */
function base64FormsOf(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset += 1) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    const inner = encoded.slice(offset > 0 ? 4 : 0, 4 * Math.floor((offset + bytes.length) / 3));
    if (inner.length < MIN_BASE64_FORM_LENGTH) continue;
    forms.push(inner, inner.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return forms;
}

/**
 * The credential's forms with what the header and body checks need of them, computed once per secret: `lower` for
 * header names (which arrive lower-cased), `shortest` so that a shorter header name is not even compared, `encoded` the
 * base64 forms (searched in bodies, and in header values long enough to hold one).
 */
export interface CredentialForms extends Array<string> {
  lower?: readonly string[];
  shortest?: number;
  encoded?: readonly string[];
  shortestEncoded?: number;
}

function withExtras(forms: string[]): CredentialForms {
  const result = forms as CredentialForms;
  result.lower = [...new Set(forms.map((form) => form.toLowerCase()))];
  result.shortest = forms.length === 0 ? Infinity : Math.min(...forms.map((form) => form.length));
  const encoded = [...new Set(forms.filter((form) => !/[%\\]/.test(form)).flatMap(base64FormsOf))].sort((a, b) => b.length - a.length);
  result.encoded = encoded;
  result.shortestEncoded = encoded.length === 0 ? Infinity : Math.min(...encoded.map((form) => form.length));
  return result;
}

/** JSON secrets (cloud credentials): the string fields that are credentials themselves. */
function jsonCredentialFields(value: string): string[] {
  if (!value.startsWith('{')) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return [];
  }
  if (parsed === null || typeof parsed !== 'object') return [];
  return Object.entries(parsed as Record<string, unknown>)
    .filter(([key, field]) => typeof field === 'string' && /key|secret|token|password|credential/i.test(key) && !/ur[il]$/i.test(key))
    .map(([, field]) => field as string);
}

/**
 * Every form of the credential this request injected: the resolved secret (and the credential fields of a JSON secret),
 * and the value of the credential header sent upstream (e.g. a computed `Authorization: Bearer …` token). Longest
 * first, so a longer form is redacted before a form it contains. Never log the result.
 */
export function credentialForms(context: ProxyContext): CredentialForms {
  const secret = context.peek('secret');
  if (!secret) return NO_FORMS;
  const sent = context.peek('upstream')?.headers;
  const names = credentialHeaderNames(context.provider.auth);
  // The forms depend only on the secret and what was sent with it: for a static key they are the same on every request,
  // so they are computed once per secret (the directory caches the secret object itself) and kept with the sent values
  // they were computed for, compared one by one (no key string is built per request).
  const cached = FORMS_CACHE.get(secret.value);
  if (cached && sameSent(cached.sent, sent, names)) return cached.forms;
  const sentValues: string[] = [];
  for (const name of names) {
    const value = sent?.[name];
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) sentValues.push(item);
  }
  const plain = secret.value.reveal();
  const values = [plain, ...jsonCredentialFields(plain)];
  for (const item of sentValues) {
    values.push(item);
    const space = item.indexOf(' ');
    if (space > 0) values.push(item.slice(space + 1));
  }
  const forms = credentialFormsOf(values);
  FORMS_CACHE.set(secret.value, { sent: names.map((name) => sentText(sent?.[name])), forms });
  return forms;
}

/** The forms of these credential values (raw, percent-encoded, JSON-escaped; base64 in `encoded`), longest first. */
export function credentialFormsOf(values: readonly string[]): CredentialForms {
  const unique = new Set<string>();
  for (const value of values) for (const form of formsOf(value)) unique.add(form);
  return withExtras([...unique].sort((a, b) => b.length - a.length));
}

/** Whether the credential headers sent now are those `kept` was made from (a repeated header's values joined by NUL). */
function sameSent(kept: readonly string[], sent: Readonly<Record<string, string | string[]>> | undefined, names: readonly string[]): boolean {
  if (kept.length !== names.length) return false;
  for (let index = 0; index < names.length; index += 1) if (sentText(sent?.[names[index]!]) !== kept[index]) return false;
  return true;
}

/** The headers a computed credential (a request signature) is sent in. */
const COMPUTED_CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'x-amz-security-token'];

/** The request headers that carry the provider's credential (none when it goes in the query). */
function credentialHeaderNames(auth: ProxyContext['provider']['auth']): readonly string[] {
  if (auth.kind === 'header') return [auth.header.toLowerCase()];
  return auth.kind === 'computed' ? COMPUTED_CREDENTIAL_HEADERS : [];
}

/** A sent header's value as one string (a repeated header's values joined by NUL). */
function sentText(value: string | string[] | undefined): string {
  return value === undefined ? '' : typeof value === 'string' ? value : value.join('\u0000');
}

const NO_FORMS: CredentialForms = withExtras([]);

/** Credential forms per secret object (weakly held: a replaced or evicted secret takes its entry with it). */
const FORMS_CACHE = new ProcessWeakMap<object, { readonly sent: readonly string[]; readonly forms: CredentialForms }>();

const STREAMED = /^(text\/event-stream|application\/(x-)?ndjson|application\/vnd\.amazon\.eventstream|audio\/|video\/)/i;

/** Whether this answer's body is inspected for the credential before it is sent: every non-2xx answer with a body. */
export function inspectsBody(status: number, method: string, credentials: readonly string[]): boolean {
  return credentials.length > 0 && !(status >= 200 && status < 300) && status !== 304 && method !== 'HEAD';
}

/**
 * How an inspected body is read: `whole` (buffered, at most {@link ERROR_BODY_INSPECT_BYTES}, decoded), or `stream`
 * (uncompressed and declared longer, or a stream type: masked as it passes, {@link StreamRedactor}).
 */
export function inspectionMode(headers: IncomingHttpHeaders): 'whole' | 'stream' {
  if (!isIdentity(headers)) return 'whole';
  const declared = headers['content-length'];
  if (declared !== undefined && Number(declared) > ERROR_BODY_INSPECT_BYTES) return 'stream';
  return STREAMED.test(String(headers['content-type'] ?? '')) ? 'stream' : 'whole';
}

/** No `Content-Encoding`, or `identity`. */
export function isIdentity(headers: IncomingHttpHeaders): boolean {
  const encoding = headers['content-encoding'];
  if (encoding === undefined) return true;
  const text = String(encoding).trim().toLowerCase();
  return text === '' || text === 'identity';
}

/** The content codings the gateway decodes (RFC 9110 §8.4.1; zstd needs a newer Node than the gateway requires). */
const DECODED_CODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br', 'identity']);

/**
 * A client's `Accept-Encoding` cut to the codings the gateway can decode when it inspects an answer: `zstd`, `*` and
 * the rest are dropped (RFC 9110 §12.5.3), `identity` when none is left. The usual values are remembered.
 */
export function inspectableAcceptEncoding(value: string | string[]): string {
  const text = Array.isArray(value) ? value.join(', ') : value;
  const known = ACCEPT_ENCODINGS.get(text);
  if (known !== undefined) return known;
  const kept = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => DECODED_CODINGS.has(item.split(';', 1)[0]!.trim().toLowerCase()));
  const result = kept.length > 0 ? kept.join(', ') : 'identity';
  if (ACCEPT_ENCODINGS.size < 256 && text.length < 200) ACCEPT_ENCODINGS.set(text, result);
  return result;
}
const ACCEPT_ENCODINGS = processMap<string, string>();

function decodeOne(body: Buffer, coding: string): Buffer | null {
  const options = { maxOutputLength: INFLATED_LIMIT };
  try {
    if (coding === '' || coding === 'identity') return body;
    if (coding === 'gzip' || coding === 'x-gzip') return zlib.gunzipSync(body, options);
    if (coding === 'deflate') return zlib.inflateSync(body, options);
    if (coding === 'br') return zlib.brotliDecompressSync(body, options);
  } catch {
    return null;
  }
  return null;
}

/** Stacked codings (`gzip, gzip`) are undone last first (RFC 9110 §8.4); at most this many. */
const MAX_CODINGS = 4;

/** The body with its declared codings undone, or null when one is unknown, too many, or does not decode. */
function decode(body: Buffer, encoding: string): Buffer | null {
  const codings = encoding === '' ? [] : encoding.split(',').map((coding) => coding.trim()).filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length > MAX_CODINGS) return null;
  let current: Buffer | null = body;
  for (let index = codings.length - 1; index >= 0 && current; index -= 1) current = decodeOne(current, codings[index]!);
  return current;
}

/**
 * A body that is itself compressed (gzip or zlib magic bytes), as a careless or hostile provider may nest it: its
 * content; `undefined` when the body does not start like a compressed one; null when it does but cannot be read (broken,
 * or over INFLATED_LIMIT once inflated), which the caller withholds rather than pass unsearched.
 */
function nestedLayer(body: Buffer): Buffer | null | undefined {
  if (body.length < 3) return undefined;
  if (body[0] === 0x1f && body[1] === 0x8b) return decodeOne(body, 'gzip');
  if (body[0] === 0x78 && (body[0]! * 256 + body[1]!) % 31 === 0) return decodeOne(body, 'deflate');
  return undefined;
}

/** JSON `\uXXXX` escapes of printable ASCII (but `"` and `\\`) and `\/` undone: the text a JSON reader sees. */
function unescapedJson(text: string): string {
  if (!text.includes('\\u') && !text.includes('\\/')) return text;
  return text.replace(/\\(?:u([0-9a-fA-F]{4})|\/)/g, (match, hex: string | undefined) => {
    if (hex === undefined) return '/';
    const code = parseInt(hex, 16);
    return code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c ? String.fromCharCode(code) : match;
  });
}

/** Every form to search a body for, as latin1 text (the forms compared as their UTF-8 bytes), longest first. */
function bodyForms(credentials: CredentialForms): string[] {
  const all = [...credentials, ...(credentials.encoded ?? [])].sort((a, b) => b.length - a.length);
  return all.map((form) => Buffer.from(form, 'utf8').toString('latin1'));
}

/** What {@link redactErrorBody} decided. */
export type RedactedBody = { readonly kind: 'clean' } | { readonly kind: 'redacted'; readonly body: Buffer } | { readonly kind: 'withheld' };

/**
 * An inspected body: `clean` when it holds no credential (send the provider's bytes unchanged), `redacted` with the
 * decoded body with every credential form replaced (the headers adjusted in place: no `Content-Encoding`, the new
 * `Content-Length`, no digests of the old bytes), or `withheld` when it cannot be read (an unknown or broken coding):
 * then the headers are adjusted for an empty body.
 */
export function redactErrorBody(body: Buffer, headers: IncomingHttpHeaders, credentials: CredentialForms): RedactedBody {
  const encoding = String(headers['content-encoding'] ?? '').trim().toLowerCase();
  let layer = decode(body, encoding);
  if (!layer) {
    replaceBody(headers, 0);
    return { kind: 'withheld' };
  }
  const forms = bodyForms(credentials);
  // The body, and each compressed layer inside it: the first that holds a form is sent redacted, decoded that far. A
  // layer that looks compressed but cannot be read, or one nested deeper than MAX_CODINGS, is withheld: the client
  // could decode what the gateway could not search.
  for (let round = 0; ; round += 1) {
    // latin1 maps bytes 1:1, so bytes around a match survive exactly.
    const text = unescapedJson(layer.toString('latin1'));
    const redacted = redactCredentials(text, forms);
    if (redacted !== text) {
      const out = Buffer.from(redacted, 'latin1');
      replaceBody(headers, out.length);
      return { kind: 'redacted', body: out };
    }
    const nested = nestedLayer(layer);
    if (nested === undefined) return { kind: 'clean' };
    if (nested === null || round + 1 >= MAX_CODINGS) {
      replaceBody(headers, 0);
      return { kind: 'withheld' };
    }
    layer = nested;
  }
}

/** Headers for a body the gateway replaced (`length` bytes, no coding, no digest of the provider's bytes). */
function replaceBody(headers: IncomingHttpHeaders, length: number): void {
  delete headers['content-encoding'];
  delete headers['content-md5'];
  delete headers['digest'];
  delete headers['content-digest'];
  delete headers['repr-digest'];
  delete headers['etag'];
  headers['content-length'] = String(length);
}

/** Headers for an answer whose body is withheld (empty). */
export function withheldBody(headers: IncomingHttpHeaders): void {
  replaceBody(headers, 0);
}

/**
 * Masks the credential in an uncompressed body as it streams (a long or streamed error answer): each form (raw,
 * percent-encoded, JSON-escaped, base64) is overwritten in place with as many characters of `REDACTED…`, so the length,
 * and `Content-Length`, hold. The last bytes of what was seen are held back until more arrive (a form cut between two
 * chunks is then seen whole). A credential found only once JSON escapes are undone cannot be masked in place: `push`
 * returns null and the caller cuts the answer.
 */
export class StreamRedactor {
  private held = '';
  private readonly forms: string[];
  private readonly tail: number;

  constructor(credentials: CredentialForms) {
    this.forms = bodyForms(credentials);
    // An escaped form is at most six characters per character of the longest form.
    this.tail = 6 * (this.forms[0]?.length ?? 0);
  }

  /** What may be sent of `chunk` now (null: cut the answer). */
  push(chunk: Buffer): Buffer | null {
    const text = this.masked(this.held + chunk.toString('latin1'));
    if (text === null) return null;
    const cut = Math.max(0, text.length - this.tail);
    this.held = text.slice(cut);
    return Buffer.from(text.slice(0, cut), 'latin1');
  }

  /** The rest, at the end of the body (null: cut the answer). */
  flush(): Buffer | null {
    const text = this.masked(this.held);
    this.held = '';
    return text === null ? null : Buffer.from(text, 'latin1');
  }

  private masked(text: string): string | null {
    let out = text;
    for (const form of this.forms) {
      if (!out.includes(form)) continue;
      const mask = REDACTED.repeat(Math.ceil(form.length / REDACTED.length)).slice(0, form.length);
      out = out.split(form).join(mask);
    }
    const unescaped = unescapedJson(out);
    if (unescaped !== out && this.forms.some((form) => unescaped.includes(form))) return null;
    return out;
  }
}
