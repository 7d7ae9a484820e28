/**
 * The few `react-native` types NativeTollgate.ts uses, so that this package type-checks (`npm run typecheck`, and the
 * repository's tests) without react-native installed. In an app the real `react-native` types are used: this file is
 * not part of the published declarations (lib/ holds no copy of it).
 */
declare module 'react-native' {
  // eslint-disable-next-line @typescript-eslint/no-empty-interface
  export interface TurboModule {}
  export const TurboModuleRegistry: {
    get<T extends TurboModule>(name: string): T | null;
    getEnforcing<T extends TurboModule>(name: string): T;
  };
  export const NativeModules: Record<string, unknown>;
}

/** Metro's (and CommonJS') module-scope `require`, used with literal names only. */
declare function require(id: string): unknown;
