/**
 * The `TollgateNative` module of this package (ios/ in Swift over the iOS SDK, android/ in Kotlin over the Android SDK),
 * as the TypeScript core calls it. The New Architecture spec is `NativeTollgate.ts`; this file finds the module (the
 * TurboModule, else the classic bridge's `NativeModules.TollgateNative`) and wraps it as a {@link DeviceSession}.
 *
 * Interface (every method returns a promise; errors reject with `code` = the SDK error kind and `userInfo.reason`):
 *
 * | method | arguments | result |
 * |---|---|---|
 * | `getConfiguration()` | | `{ gatewayUrl: string \| null }` (Info.plist `TollgateGatewayURL`, AndroidManifest `dev.tollgate.GATEWAY_URL`) |
 * | `configure(o)` | `{ appToken, gatewayUrl, developmentToken: string \| null }` | null |
 * | `deviceToken(o)` | `{ forceRefresh: boolean }` | `{ deviceToken, expiresAtMs, deviceId }` |
 * | `reportError(o)` | `{ deviceToken, reason: string \| null }` | `{ action: 'stop' \| 'refresh' \| 'attest' \| 'assert' \| 'none' }` |
 * | `assertion(o)` | `{ digest }` (standard base64 of the 32-byte request digest) | `{ assertion: string \| null }` |
 * | `clear()` | | null |
 */
import type { DeviceSession } from './attestation';
import { REASON_ACTIONS, fromHex, type IssuedDeviceToken, type ReasonAction } from './behaviour';
import { encodeBase64 } from './base64';
import { TOLLGATE_ERROR_KINDS, TollgateError, type TollgateErrorKind } from './errors';
import { checkHeaderValue } from './request-builder';
import { describe } from './transport';

/** The native module's methods, as `NativeTollgate.ts` declares them for codegen. */
export interface TollgateNativeModule {
  getConfiguration(): Promise<{ gatewayUrl: string | null }>;
  configure(options: { appToken: string; gatewayUrl: string; developmentToken: string | null }): Promise<unknown>;
  deviceToken(options: { forceRefresh: boolean }): Promise<{ deviceToken: string; expiresAtMs: number; deviceId: string }>;
  reportError(options: { deviceToken: string; reason: string | null }): Promise<{ action: string }>;
  assertion(options: { digest: string }): Promise<{ assertion: string | null }>;
  clear(): Promise<unknown>;
}

const METHODS = ['getConfiguration', 'configure', 'deviceToken', 'reportError', 'assertion', 'clear'] as const;

function isNativeModule(value: unknown): value is TollgateNativeModule {
  if (value === null || value === undefined || (typeof value !== 'object' && typeof value !== 'function')) return false;
  return METHODS.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

/**
 * The linked `TollgateNative` module: `TurboModuleRegistry.get('TollgateNative')` (New Architecture, through the spec
 * in NativeTollgate.ts), else `NativeModules.TollgateNative` (classic bridge); null when neither exists (Node, Expo Go,
 * a build without `pod install` / autolinking).
 */
export function findNativeModule(): TollgateNativeModule | null {
  try {
    // Literal requires, so that Metro bundles them; absent outside React Native, hence the try.
    const spec = (require('./NativeTollgate') as { default?: unknown }).default;
    if (isNativeModule(spec)) return spec;
  } catch {
    // Not React Native: fall through.
  }
  try {
    const legacy = (require('react-native') as { NativeModules?: Record<string, unknown> }).NativeModules?.TollgateNative;
    if (isNativeModule(legacy)) return legacy;
  } catch {
    // Not React Native.
  }
  return null;
}

/** A native rejection (`code` = SDK error kind, `userInfo.reason`; Android puts it in `userInfo` too) as a TollgateError. */
export function nativeError(error: unknown, fallbackReason: string): TollgateError {
  if (error instanceof TollgateError) return error;
  const object = (error ?? {}) as { code?: unknown; userInfo?: unknown; message?: unknown };
  const code = typeof object.code === 'string' ? object.code : '';
  const kind: TollgateErrorKind = (TOLLGATE_ERROR_KINDS as readonly string[]).includes(code) ? (code as TollgateErrorKind) : 'attestationFailed';
  const info = object.userInfo !== null && typeof object.userInfo === 'object' ? (object.userInfo as Record<string, unknown>) : {};
  const reason = typeof info.reason === 'string' && info.reason !== '' ? info.reason : fallbackReason;
  const status = typeof info.status === 'number' ? info.status : undefined;
  return new TollgateError(kind, `The native Tollgate module failed: ${describe(error)}`, {
    reason,
    ...(status !== undefined ? { status } : {}),
    ...(kind === 'attestationFailed' ? { errorType: 'attestationFailed' } : {}),
    cause: error,
  });
}

async function callNative<T>(run: () => Promise<T>, fallbackReason: string): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw nativeError(error, fallbackReason);
  }
}

const malformed = (method: string) =>
  new TollgateError('attestationFailed', `The native Tollgate module answered ${method} with an unexpected value.`, { reason: 'native_module_malformed' });

/** Reads the gateway address from the app's native configuration; null when it has none. */
export async function nativeGatewayUrl(native: TollgateNativeModule): Promise<string | null> {
  const answer = await callNative(() => native.getConfiguration(), 'native_configuration_failed');
  const url = (answer as { gatewayUrl?: unknown } | null)?.gatewayUrl;
  return typeof url === 'string' && url.trim() !== '' ? url.trim() : null;
}

/**
 * Device tokens from the native module: it persists them (Keychain / Keystore), refreshes them with the attested key,
 * attests a new key only when needed, and after `device_revoked` refuses until the next launch.
 */
export class NativeDeviceSession implements DeviceSession {
  readonly kind = 'native' as const;
  private configured: Promise<void> | null = null;

  constructor(
    private readonly native: TollgateNativeModule,
    private readonly settings: { readonly appToken: string; readonly gatewayUrl: string; readonly developmentToken: string | null },
    private readonly clock: () => number,
  ) {}

  /** `configure` once (again after a failure). */
  ready(): Promise<void> {
    if (!this.configured) {
      const flight = callNative(() => this.native.configure({ ...this.settings }), 'native_configuration_failed').then(() => undefined);
      this.configured = flight;
      flight.catch(() => {
        if (this.configured === flight) this.configured = null;
      });
    }
    return this.configured;
  }

  async token(forceRefresh: boolean): Promise<IssuedDeviceToken> {
    await this.ready();
    const answer = await callNative(() => this.native.deviceToken({ forceRefresh }), 'native_attestation_failed');
    const { deviceToken, expiresAtMs, deviceId } = (answer ?? {}) as { deviceToken?: unknown; expiresAtMs?: unknown; deviceId?: unknown };
    if (typeof deviceToken !== 'string' || deviceToken === '' || typeof expiresAtMs !== 'number' || !Number.isFinite(expiresAtMs)) throw malformed('deviceToken');
    checkHeaderValue('Tollgate-Device-Token', deviceToken);
    return { token: deviceToken, expiresAtMs, receivedAtMs: this.clock(), ...(typeof deviceId === 'string' ? { deviceId } : {}) };
  }

  async reportError(token: string, reason: string | null): Promise<ReasonAction> {
    await this.ready();
    const answer = await callNative(() => this.native.reportError({ deviceToken: token, reason }), 'native_report_failed');
    const action = (answer as { action?: unknown } | null)?.action;
    if (typeof action !== 'string' || !(REASON_ACTIONS as readonly string[]).includes(action)) throw malformed('reportError');
    return action as ReasonAction;
  }

  async assertion(digestHex: string): Promise<string | null> {
    await this.ready();
    const answer = await callNative(() => this.native.assertion({ digest: encodeBase64(fromHex(digestHex)) }), 'assertion_failed');
    const value = (answer as { assertion?: unknown } | null)?.assertion;
    if (value === null || value === undefined || value === '') return null;
    if (typeof value !== 'string') throw malformed('assertion');
    checkHeaderValue('Tollgate-Assertion', value);
    return value;
  }

  async clear(): Promise<void> {
    await callNative(() => this.native.clear(), 'native_clear_failed');
  }
}
