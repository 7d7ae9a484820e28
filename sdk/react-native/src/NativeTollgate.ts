/**
 * New Architecture spec of the `TollgateNative` module (React Native codegen reads this file: package.json
 * `codegenConfig`, name `TollgateNativeSpec`). The classic bridge exposes the same methods as
 * `NativeModules.TollgateNative`. The TypeScript core never imports this file statically (it needs `react-native`):
 * native.ts requires it at run time and checks the shape. Keep the methods in step with `TollgateNativeModule` in
 * native.ts and with ios/ and android/.
 */
import type { TurboModule } from 'react-native';
import { TurboModuleRegistry } from 'react-native';

export type NativeConfiguration = {
  gatewayUrl: string | null;
};

export type NativeConfigureOptions = {
  appToken: string;
  gatewayUrl: string;
  developmentToken: string | null;
};

export type NativeDeviceTokenOptions = {
  forceRefresh: boolean;
};

export type NativeDeviceToken = {
  deviceToken: string;
  expiresAtMs: number;
  deviceId: string;
};

export type NativeReportErrorOptions = {
  deviceToken: string;
  reason: string | null;
};

export type NativeReportErrorResult = {
  action: string;
};

export type NativeAssertionOptions = {
  digest: string;
};

export type NativeAssertionResult = {
  assertion: string | null;
};

export type NativeHttpRequest = {
  url: string;
  method: string;
  /** name, value, name, value, … (codegen has no string maps) */
  headerPairs: Array<string>;
  bodyBase64: string | null;
};

export type NativeHttpHead = {
  id: string;
  status: number;
  headerPairs: Array<string>;
};

export type NativeHttpId = {
  id: string;
};

export type NativeHttpChunk = {
  chunkBase64: string | null;
};

export interface Spec extends TurboModule {
  getConfiguration(): Promise<NativeConfiguration>;
  configure(options: NativeConfigureOptions): Promise<void>;
  deviceToken(options: NativeDeviceTokenOptions): Promise<NativeDeviceToken>;
  reportError(options: NativeReportErrorOptions): Promise<NativeReportErrorResult>;
  assertion(options: NativeAssertionOptions): Promise<NativeAssertionResult>;
  clear(): Promise<void>;
  httpStart(request: NativeHttpRequest): Promise<NativeHttpHead>;
  httpRead(options: NativeHttpId): Promise<NativeHttpChunk>;
  httpCancel(options: NativeHttpId): Promise<void>;
}

export default TurboModuleRegistry.get<Spec>('TollgateNative');
