/**
 * Minimal Tollgate example: initialize once, before the app renders. No provider key anywhere: the gateway adds it.
 * Not compiled by the repository; copy into a React Native app created with `npx @react-native-community/cli init`.
 */
import { AppRegistry } from 'react-native';
import { Tollgate } from '@tollgate/react-native';
import App from './App';
import { name as appName } from './app.json';

// The gateway address comes from Info.plist (TollgateGatewayURL) and AndroidManifest.xml (meta-data
// dev.tollgate.GATEWAY_URL); the native module TollgateNative attests the device and keeps its token in the Keychain /
// Keystore. After `npm install @tollgate/react-native`, run `cd ios && pod install`; Android links it by autolinking.
Tollgate.initialize({
  appToken: 'at_REPLACE_WITH_YOUR_APP_TOKEN', // from the dashboard: identifies the app, safe to ship
  // Simulators and emulators, development builds only: `npx tollgate dev-tokens create --app ID`.
  // Keep the token in an untracked file (tollgate.dev.js: module.exports = { token: 'dt_…', deviceId: 'sim-1' }).
  development: __DEV__ ? require('./tollgate.dev.js') : undefined,
  // For streams that stream, pass a streaming fetch: `import { fetch } from 'expo/fetch'` and `fetch,` here.
}).catch((error) => console.error('Tollgate configuration:', error.reason, error.message));

AppRegistry.registerComponent(appName, () => App);
