/**
 * Getting a device token (protocol.md, "Device tokens"; docs/guides/attestation.md) goes through a {@link DeviceSession}:
 *
 * - on a device, {@link NativeDeviceSession} (native.ts): the `TollgateNative` module of this package wraps the iOS and
 *   Android SDKs (App Attest; Keystore key attestation, Play Integrity), keeps the token in the Keychain / Keystore,
 *   refreshes it with the attested key and attests a new key only when the gateway no longer knows the old one;
 * - without the native module (Node tests, Expo Go) and in a development build only, {@link DevelopmentSession}: a
 *   development token (`dt_…`) and a device id traded at `POST /v1/attest/development`, in memory.
 */
import { parseAttestationResponse, reasonAction, type IssuedDeviceToken, type ReasonAction } from './behaviour';
import { mapError, networkError, TollgateError } from './errors';
import type { RequestBuilder } from './request-builder';
import type { ServerClock } from './server-clock';
import { describe, readAllBytes, refuseRedirect, responseHeaders, type CallController, type FetchFunction, type ResponseLike } from './transport';
import { encodeUtf8, utf8ToString } from './utf8';

export type { IssuedDeviceToken } from './behaviour';

/** Development attestation for simulators and emulators (development builds only). */
export interface DevelopmentAttestation {
  /** A development token, `dt_…`, from the dashboard (App → Devices) or `tollgate dev-token`. */
  readonly token: string;
  /**
   * A stable id for this simulator or emulator: 1–128 letters, digits, `.`, `_`, `:` or `-`. Used by the pure-JS
   * session only; the native module uses its own installation id.
   */
  readonly deviceId?: string;
}

/** Where device tokens come from. */
export interface DeviceSession {
  readonly kind: 'native' | 'development';
  /** Prepares the session (the native module's `configure`); rejects with a TollgateError. */
  ready(): Promise<void>;
  /** A device token; `forceRefresh` asks for a new one even if the stored one is still valid. */
  token(forceRefresh: boolean): Promise<IssuedDeviceToken>;
  /** The gateway refused `token` with `reason` (attestationFailed): what the client does next (rule `reason-action`). */
  reportError(token: string, reason: string | null): Promise<ReasonAction>;
  /** The `Tollgate-Assertion` value for a request digest (lowercase hex), or null when this session sends none. */
  assertion(digestHex: string): Promise<string | null>;
  /** Forgets the stored token. */
  clear(): Promise<void>;
}

export const DEVICE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** The attestation exchange over HTTP, platform-free. */
export class AttestationApi {
  constructor(
    private readonly builder: RequestBuilder,
    private readonly fetch: FetchFunction,
    private readonly clock: () => number,
    private readonly serverClock?: ServerClock,
  ) {}

  /** `POST /v1/attest/{method}` with `body`: trades an attestation for a device token. */
  async exchange(method: string, body: Record<string, unknown>, call?: CallController): Promise<IssuedDeviceToken> {
    const received = this.clock();
    const url = this.builder.attestUrl(method);
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    for (const [name, value] of this.builder.attestHeaders()) headers[name] = value;
    let response: ResponseLike;
    try {
      response = (await this.fetch(url, {
        method: 'POST',
        headers,
        body: encodeUtf8(JSON.stringify(body)),
        ...(call?.signal ? { signal: call.signal } : {}),
        redirect: 'manual',
      })) as ResponseLike;
    } catch (error) {
      throw networkError(`Could not reach the gateway for attestation: ${describe(error)}`, 'unreachable', error);
    }
    refuseRedirect(response, url);
    this.serverClock?.observe(response.headers.get('date'), this.clock());
    const bytes = await readAllBytes(response, call);
    const error = mapError(response.status, responseHeaders(response), bytes, this.clock());
    if (error) throw error;
    return parseAttestationResponse(utf8ToString(bytes), received, this.serverClock?.offsetMs ?? 0);
  }
}

/**
 * Development attestation in JavaScript, for Node tests and Expo Go (no native module). The token lives in memory.
 * After `device_revoked` it attests nothing more: every call fails with attestationFailed until the app restarts.
 */
export class DevelopmentSession implements DeviceSession {
  readonly kind = 'development' as const;
  private stopped: TollgateError | null = null;

  constructor(
    private readonly api: AttestationApi,
    private readonly development: { readonly token: string; readonly deviceId: string },
  ) {}

  async ready(): Promise<void> {}

  async token(): Promise<IssuedDeviceToken> {
    if (this.stopped) throw this.stopped;
    try {
      return await this.api.exchange('development', { developmentToken: this.development.token, deviceId: this.development.deviceId });
    } catch (error) {
      if (error instanceof TollgateError && reasonAction(error.errorType ?? error.kind, error.reason).action === 'stop') this.stopped = error;
      throw error;
    }
  }

  async reportError(_token: string, reason: string | null): Promise<ReasonAction> {
    const { action } = reasonAction('attestationFailed', reason);
    if (action === 'stop') this.stopped = revokedError();
    // A development token cannot sign requests: asking for assertions would only fail the same way again.
    return action === 'assert' ? 'none' : action;
  }

  async assertion(): Promise<string | null> {
    return null;
  }

  async clear(): Promise<void> {}
}

/** The error every call gets after the gateway said `device_revoked`. */
export function revokedError(): TollgateError {
  return new TollgateError('attestationFailed', 'This device has been revoked by the operator; Tollgate stops until the app restarts.', { reason: 'device_revoked' });
}
