/**
 * Keeping the injected credential out of what a provider sends back (protocol.md, "Errors"; docs/security.md,
 * "Provider responses"). An upstream that echoes the key (a redirect to `…?key=…`, a `WWW-Authenticate` quoting the
 * `Authorization` it got, an error body that prints the request) must not hand it to the app.
 *
 * Headers are scrubbed in header-hygiene.ts; this module names the credential's forms and redacts small error bodies.
 * A body is inspected only when it is a non-2xx answer that is not a stream, at most {@link ERROR_BODY_INSPECT_BYTES}
 * long (declared, or counted while buffering); anything else streams through untouched (protocol.md, "Streaming").
 */
import type { IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import type { ProxyContext } from '../contract';
import { redactCredentials } from './header-hygiene';

/** Largest non-2xx response body buffered to look for the credential. */
export const ERROR_BODY_INSPECT_BYTES = 64 * 1024;
/** Largest decompressed size of such a body (a compressed body that inflates past this passes untouched). */
const INFLATED_LIMIT = 1024 * 1024;
/** Shorter strings are not searched for: they would redact ordinary text. */
const MIN_CREDENTIAL_LENGTH = 8;

/** The ways a credential string could appear in a response: as is, percent-encoded, JSON-escaped. */
function formsOf(value: string): string[] {
  if (value.length < MIN_CREDENTIAL_LENGTH) return [];
  const forms = new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]);
  return [...forms];
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
export function credentialForms(context: ProxyContext): string[] {
  const secret = context.peek('secret');
  if (!secret) return [];
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
  const unique = new Set<string>();
  for (const value of values) for (const form of formsOf(value)) unique.add(form);
  const forms = [...unique].sort((a, b) => b.length - a.length);
  FORMS_CACHE.set(secret.value, { sent: names.map((name) => sentText(sent?.[name])), forms });
  return forms;
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

/** Credential forms per secret object (weakly held: a replaced or evicted secret takes its entry with it). */
const FORMS_CACHE = new WeakMap<object, { readonly sent: readonly string[]; readonly forms: string[] }>();

const STREAMED = /^(text\/event-stream|application\/(x-)?ndjson|application\/vnd\.amazon\.eventstream|audio\/|video\/)/i;

/** Whether this answer's body is inspected for the credential before it is sent. */
export function inspectsBody(status: number, headers: IncomingHttpHeaders, method: string, credentials: readonly string[]): boolean {
  if (credentials.length === 0 || (status >= 200 && status < 300) || status === 204 || status === 304 || method === 'HEAD') return false;
  if (STREAMED.test(String(headers['content-type'] ?? ''))) return false;
  const declared = headers['content-length'];
  return declared === undefined || Number(declared) <= ERROR_BODY_INSPECT_BYTES;
}

function decode(body: Buffer, encoding: string): Buffer | null {
  const options = { maxOutputLength: INFLATED_LIMIT };
  try {
    if (encoding === '' || encoding === 'identity') return body;
    if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.gunzipSync(body, options);
    if (encoding === 'deflate') return zlib.inflateSync(body, options);
    if (encoding === 'br') return zlib.brotliDecompressSync(body, options);
  } catch {
    return null;
  }
  return null;
}

/**
 * The body to send for an inspected answer: `null` when it holds no credential (send the provider's bytes unchanged),
 * else the decoded body with every credential form replaced, and the headers adjusted in place (no
 * `Content-Encoding`, the new `Content-Length`, no digests of the old bytes).
 */
export function redactErrorBody(body: Buffer, headers: IncomingHttpHeaders, credentials: readonly string[]): Buffer | null {
  const encoding = String(headers['content-encoding'] ?? '').trim().toLowerCase();
  const plain = decode(body, encoding);
  if (!plain) return null;
  // latin1 maps bytes 1:1, so bytes around a match survive exactly; the forms are compared as their UTF-8 bytes.
  const text = plain.toString('latin1');
  const redacted = redactCredentials(text, credentials.map((form) => Buffer.from(form, 'utf8').toString('latin1')));
  if (redacted === text) return null;
  const out = Buffer.from(redacted, 'latin1');
  delete headers['content-encoding'];
  delete headers['content-md5'];
  delete headers['digest'];
  delete headers['content-digest'];
  delete headers['repr-digest'];
  delete headers['etag'];
  headers['content-length'] = String(out.length);
  return out;
}
