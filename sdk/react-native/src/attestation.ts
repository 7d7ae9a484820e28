/**
 * Getting a device token (protocol.md, "Device tokens"; docs/guides/attestation.md):
 *
 * - on a real device, the native module attests: App Attest on iOS, Play Integrity or Keystore key attestation on
 *   Android. The SDK asks the gateway for a one-time challenge (`POST /v1/attest/challenge`), hands it to the native
 *   module, and trades what the module returns for a device token (`POST /v1/attest/{method}`);
 * - on a simulator or emulator, in a development build only, a development token (`dt_…`, made in the dashboard or
 *   with `tollgate dev-token`) and a device id are traded at `POST /v1/attest/development`.
 */
import { jwsExpiryMs } from './device-token-cache';
import { mapError, networkError, TollgateError } from './errors';
import type { RequestBuilder } from './request-builder';
import { describe, readAllBytes, responseHeaders, type CallController, type FetchFunction, type ResponseLike } from './transport';
import { encodeUtf8, utf8ToString } from './utf8';

export type NativeAttestationMethod = 'apple-app-attest' | 'android-play-integrity' | 'android-key-attestation';

/**
 * The native half of attestation, implemented by a native module (Swift: DCAppAttestService; Kotlin: Play Integrity
 * or Android Keystore). The SDK never sees a key: it moves challenges and artifacts between the module and the gateway.
 */
export interface NativeAttestation {
  readonly platform: 'ios' | 'android';
  /**
   * Attests this app instance over `challenge` (base64url of 32 bytes, from the gateway) and returns the attestation
   * method and the JSON body for `POST /v1/attest/{method}` (e.g. for `android-key-attestation`
   * `{ challenge, chain: [leaf, …, root] }`). Reject when the platform cannot attest; the SDK reports attestationFailed
   * with the error's `code` (or `native_attestation_failed`) as reason.
   */
  attest(challenge: string): Promise<{ method: NativeAttestationMethod; body: Record<string, unknown> }>;
  /**
   * Optional: signs a request digest (lowercase hex SHA-256, see protocol.md) with the attested key and returns the
   * assertion (base64url), sent as `Tollgate-Assertion`. An empty string sends none.
   */
  assert?(digestHex: string): Promise<string>;
}

/** Development attestation for simulators and emulators (development builds only). */
export interface DevelopmentAttestation {
  /** A development token, `dt_…`, from the dashboard (App → Devices) or `tollgate dev-token`. */
  readonly token: string;
  /** A stable id for this simulator or emulator: 1–128 letters, digits, `.`, `_`, `:` or `-`. */
  readonly deviceId: string;
}

/** A device token from the gateway. */
export interface IssuedDeviceToken {
  readonly token: string;
  /** Unix ms after which the gateway refuses it (the JWS `exp`, else the answer's `expiresAt`/`expiresIn`). */
  readonly expiresAtMs: number;
  /** Unix ms when it was received. */
  readonly receivedAtMs: number;
  /** The attestation method that produced it. */
  readonly method: string;
  readonly deviceId?: string;
}

export const DEVICE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** The attestation exchange over HTTP, platform-free. */
export class AttestationApi {
  constructor(
    private readonly builder: RequestBuilder,
    private readonly fetch: FetchFunction,
    private readonly clock: () => number,
  ) {}

  /** `POST /v1/attest/challenge`: a one-time challenge (base64url). */
  async challenge(call?: CallController): Promise<string> {
    const answer = await this.post('challenge', null, call);
    if (typeof answer.challenge !== 'string') throw malformed('challenge');
    return answer.challenge;
  }

  /** `POST /v1/attest/{method}` with `body`: trades an attestation for a device token. */
  async exchange(method: string, body: Record<string, unknown>, call?: CallController): Promise<IssuedDeviceToken> {
    const received = this.clock();
    const answer = await this.post(method, body, call);
    const token = answer.deviceToken;
    if (typeof token !== 'string' || token === '') throw malformed('deviceToken');
    let expiresAtMs = jwsExpiryMs(token);
    if (expiresAtMs === null && typeof answer.expiresAt === 'string') {
      const parsed = Date.parse(answer.expiresAt);
      if (Number.isFinite(parsed)) expiresAtMs = parsed;
    }
    if (expiresAtMs === null && typeof answer.expiresIn === 'number') expiresAtMs = received + answer.expiresIn * 1000;
    if (expiresAtMs === null) throw malformed('expiresAt');
    return {
      token,
      expiresAtMs,
      receivedAtMs: received,
      method,
      ...(typeof answer.deviceId === 'string' ? { deviceId: answer.deviceId } : {}),
    };
  }

  private async post(method: string, body: Record<string, unknown> | null, call?: CallController): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {};
    for (const [name, value] of this.builder.attestHeaders()) headers[name] = value;
    const payload = body ? encodeUtf8(JSON.stringify(body)) : undefined;
    if (payload) headers['Content-Type'] = 'application/json';
    let response: ResponseLike;
    try {
      response = (await this.fetch(this.builder.attestUrl(method), {
        method: 'POST',
        headers,
        ...(payload ? { body: payload } : {}),
        ...(call?.signal ? { signal: call.signal } : {}),
        redirect: 'manual',
      })) as ResponseLike;
    } catch (error) {
      throw networkError(`Could not reach the gateway for attestation: ${describe(error)}`, 'unreachable', error);
    }
    const bytes = await readAllBytes(response, call);
    const error = mapError(response.status, responseHeaders(response), bytes, this.clock());
    if (error) throw error;
    try {
      const parsed: unknown = JSON.parse(utf8ToString(bytes));
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      // Reported below.
    }
    throw networkError("The gateway's attestation answer is not a JSON object.", 'malformed_response');
  }
}

function malformed(field: string): TollgateError {
  return networkError(`The gateway's attestation answer has no "${field}".`, 'malformed_response');
}

/** Where the device token comes from, as chosen at initialization. */
export type AttestationSource =
  | { readonly kind: 'native'; readonly native: NativeAttestation }
  | { readonly kind: 'development'; readonly development: DevelopmentAttestation }
  | { readonly kind: 'none'; readonly reason: string };

/**
 * Picks the attestation: development when the app passes `development` AND this is a development build
 * (`isDevelopmentBuild`, default React Native's `__DEV__`); otherwise the native module; otherwise none (every call then
 * fails with attestationFailed, reason `no_attestation`).
 */
export function chooseAttestation(options: {
  readonly attestation?: NativeAttestation | undefined;
  readonly development?: DevelopmentAttestation | undefined;
  readonly isDevelopmentBuild: boolean;
}): AttestationSource {
  const development = options.development;
  const hasDevelopment = development !== undefined && development !== null && typeof development.token === 'string' && development.token.trim() !== '';
  if (hasDevelopment && options.isDevelopmentBuild) return { kind: 'development', development: development! };
  if (options.attestation) return { kind: 'native', native: options.attestation };
  if (hasDevelopment) {
    return { kind: 'none', reason: 'Development attestation is refused in a release build (isDevelopmentBuild is false) and no native attestation module is configured.' };
  }
  return { kind: 'none', reason: 'No attestation is configured: pass `attestation` (the native module) or, in a development build, `development: { token, deviceId }`.' };
}

/** One attestation: gets a fresh device token from `source`. */
export async function attest(api: AttestationApi, source: AttestationSource, call?: CallController): Promise<IssuedDeviceToken> {
  switch (source.kind) {
    case 'development':
      return api.exchange('development', { developmentToken: source.development.token, deviceId: source.development.deviceId }, call);
    case 'native': {
      const challenge = await api.challenge(call);
      let artifact: { method: NativeAttestationMethod; body: Record<string, unknown> };
      try {
        artifact = await source.native.attest(challenge);
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        throw new TollgateError('attestationFailed', `The device could not attest: ${describe(error)}`, {
          reason: typeof code === 'string' && code ? code : 'native_attestation_failed',
          cause: error,
        });
      }
      if (!artifact || typeof artifact.method !== 'string' || artifact.body === null || typeof artifact.body !== 'object') {
        throw new TollgateError('attestationFailed', 'The native attestation module returned no method and body.', { reason: 'native_attestation_failed' });
      }
      return api.exchange(artifact.method, artifact.body, call);
    }
    case 'none':
      throw new TollgateError('attestationFailed', source.reason, { reason: 'no_attestation' });
  }
}
