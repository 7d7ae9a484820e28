/**
 * Minimal Tollgate example: initialize once, before the app renders. No provider key anywhere: the gateway adds it.
 * The app depends on the package as a user installs it (package.json: the tarball from `npm run sdk:package`). The
 * native folders (ios/, android/) come from `npx @react-native-community/cli init TollgateExample --skip-install`; copy
 * them here, then `npm install && (cd ios && pod install) && npm run ios`: no Podfile or Gradle line for Tollgate.
 */
import { AppRegistry } from 'react-native';
import { Tollgate } from '@tollgate/react-native';
import App from './App';
import { name as appName } from './app.json';

// The gateway address comes from Info.plist (TollgateGatewayURL) and AndroidManifest.xml (meta-data
// dev.tollgate.GATEWAY_URL); the native module TollgateNative attests the device and keeps its token in the Keychain /
// Keystore; it also streams HTTP (no fetch polyfill needed). After `npm install`, `cd ios && pod install`.
Tollgate.initialize({
  appToken: 'at_REPLACE_WITH_YOUR_APP_TOKEN', // from the dashboard: identifies the app, safe to ship
  // Simulators and emulators, development builds only: `npx tollgate dev-tokens create --app ID`.
  // Keep the token in an untracked file (tollgate.dev.js: module.exports = { token: 'dt_…', deviceId: 'sim-1' }).
  development: __DEV__ ? require('./tollgate.dev.js') : undefined,
}).catch((error) => console.error('Tollgate configuration:', error.reason, error.message));

AppRegistry.registerComponent(appName, () => App);
