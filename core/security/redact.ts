/**
 * Redaction of credentials before anything is logged or returned. Public gateways have shipped provider keys in logged
 * URLs many times (query-string keys such as Gemini's `key=`); every URL and header set goes through here first.
 */

/** Query parameters whose values are credentials or may be. Matched case-insensitively on the whole name. */
const SENSITIVE_QUERY = /^(key|api[_-]?key|apikey|access[_-]?token|development[_-]?token|token|auth|authorization|secret|password|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|code)$/i;

/** Header names never logged with their value. */
const SENSITIVE_HEADER = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key|xi-api-key|x-goog-api-key|x-subscription-token|tollgate-app-token|tollgate-device-token|tollgate-assertion|x-amz-security-token)$|key|token|secret/i;

export const REDACTED = '[redacted]';

/**
 * A name that reads as a credential once normalized: as the list above, or ending in `key`, `token`, `secret`,
 * `password` or `signature` after a `-`, `_` or `.` (`x-goog-api-key`, `client_secret`, `id_token`).
 */
const SENSITIVE_QUERY_SUFFIX = /(?:^|[-_.])(?:api[-_]?key|key|token|secret|password|signature)$/i;

/** A query parameter name with nothing a server would decode, strip or trim. */
const PLAIN_QUERY_NAME = /^[A-Za-z0-9_.~-]*$/;

/**
 * A query parameter name as a server may read it: percent-decoded until it no longer changes, without control
 * characters (`key%00`), without a PHP/Rails-style `[]` or `[index]` suffix (`key[]`), trimmed.
 */
function normalizedQueryName(name: string): string {
  // The common case: nothing to decode, strip or trim (no '%', '+', control character, space or bracket).
  if (PLAIN_QUERY_NAME.test(name)) return name;
  let decoded = name;
  for (let round = 0; round < 3; round += 1) {
    let next: string;
    try {
      next = decodeURIComponent(decoded.replace(/\+/g, ' '));
    } catch {
      break;
    }
    if (next === decoded) break;
    decoded = next;
  }
  // eslint-disable-next-line no-control-regex
  return decoded.replace(/[\u0000-\u001f\u007f]/g, '').replace(/\[[^\]]*\]$/, '').trim();
}

/**
 * Replaces the values of sensitive query parameters in a path-with-query or URL; the rest is kept as sent. Pairs are
 * split on `&` and on `;` (which some servers also read as a separator), so `?a=1;key=…` is caught too.
 */
export function redactUrl(pathOrUrl: string): string {
  const queryStart = pathOrUrl.indexOf('?');
  if (queryStart < 0) return pathOrUrl;
  const head = pathOrUrl.slice(0, queryStart);
  const query = pathOrUrl
    .slice(queryStart + 1)
    .split(/([&;])/)
    .map((pair) => {
      if (pair === '&' || pair === ';') return pair;
      const equals = pair.indexOf('=');
      const name = equals < 0 ? pair : pair.slice(0, equals);
      const normalized = normalizedQueryName(name);
      return SENSITIVE_QUERY.test(normalized) || SENSITIVE_QUERY_SUFFIX.test(normalized) ? `${name}=${REDACTED}` : pair;
    })
    .join('');
  return `${head}?${query}`;
}

/** A copy of a header set with every credential-bearing value replaced. */
export function redactHeaders(headers: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = SENSITIVE_HEADER.test(name) ? REDACTED : value;
  return out;
}
