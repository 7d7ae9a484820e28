/**
 * `GET /v1/me` (protocol.md, "What the device may still spend"; sdk/conformance/README.md, "me.json"): what the calling
 * device and user may still spend, typed.
 */
import { networkError } from './errors';

/** One limit or budget that applies to this device (or user). */
export interface MeLimit {
  /** e.g. `requests_per_day`, `tokens_per_day`, `session_seconds_per_day`. */
  readonly name: string;
  /** `device`, `user`, `app`, … (null when the gateway did not say). */
  readonly scope: string | null;
  /** `requests`, `tokens`, `seconds`, … */
  readonly unit: string | null;
  readonly limit: number;
  readonly remaining: number;
  /** e.g. `1m`, `1d`. */
  readonly window: string | null;
  /** When `remaining` goes back to `limit`, unix ms; null when unknown. */
  readonly resetsAtMs: number | null;
}

export interface Me {
  /** The gateway's id of this device. */
  readonly deviceId: string | null;
  /** The signed-in user's id (issuer-scoped), null when no user token was sent or accepted. */
  readonly userId: string | null;
  readonly signedIn: boolean;
  readonly limits: readonly MeLimit[];
  /** The answer as the gateway sent it (fields this SDK version does not read yet). */
  readonly raw: Readonly<Record<string, unknown>>;
}

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const stringOrNull = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Reads a 200 answer of `/v1/me`; a body that is not such a document is networkError `malformed_response`. */
export function parseMe(bodyText: string): Me {
  let document: unknown;
  try {
    document = JSON.parse(bodyText);
  } catch {
    throw networkError('The /v1/me answer is not JSON.', 'malformed_response');
  }
  const object = document as Record<string, unknown> | null;
  if (!object || typeof object !== 'object' || Array.isArray(object) || !Array.isArray(object.limits) || !object.device || typeof object.device !== 'object') {
    throw networkError('The /v1/me answer has no device or limits.', 'malformed_response');
  }
  const limits: MeLimit[] = [];
  for (const entry of object.limits as unknown[]) {
    // A newer gateway may send entries this version cannot read: skip them rather than fail the whole answer.
    if (!entry || typeof entry !== 'object') continue;
    const item = entry as Record<string, unknown>;
    if (typeof item.name !== 'string' || !isNumber(item.limit) || !isNumber(item.remaining)) continue;
    const resets = typeof item.resetsAt === 'string' ? Date.parse(item.resetsAt) : NaN;
    limits.push({
      name: item.name,
      scope: stringOrNull(item.scope),
      unit: stringOrNull(item.unit),
      limit: item.limit,
      remaining: item.remaining,
      window: stringOrNull(item.window),
      resetsAtMs: Number.isFinite(resets) ? resets : null,
    });
  }
  const device = object.device as Record<string, unknown>;
  const user = object.user && typeof object.user === 'object' && !Array.isArray(object.user) ? (object.user as Record<string, unknown>) : null;
  return { deviceId: stringOrNull(device.id), userId: user ? stringOrNull(user.id) : null, signedIn: user !== null, limits, raw: object };
}
