/**
 * Minimal Tollgate example: initialize once, before the app renders. No provider key anywhere: the gateway adds it.
 * Not compiled by the repository; copy into a React Native app created with `npx @react-native-community/cli init`.
 */
import { AppRegistry } from 'react-native';
import { Tollgate } from '@tollgate/react-native';
import App from './App';
import { name as appName } from './app.json';

Tollgate.initialize({
  appToken: 'at_REPLACE_WITH_YOUR_APP_TOKEN', // from the dashboard: identifies the app, safe to ship
  // The simulator reaches the gateway on your machine; the Android emulator uses http://10.0.2.2:8080.
  baseUrl: __DEV__ ? 'http://localhost:8080' : 'https://gateway.example.com',
  // Simulators and emulators, development builds only: `npx tollgate dev-tokens create --app ID`.
  // Keep the token in an untracked file (tollgate.dev.js: module.exports = { token: 'dt_…', deviceId: 'sim-1' }).
  development: __DEV__ ? require('./tollgate.dev.js') : undefined,
  isDevelopmentBuild: __DEV__,
  // On real devices, pass your native attestation module: attestation: TollgateAttestation.
}).catch((error) => console.error('Tollgate configuration:', error.message));

AppRegistry.registerComponent(appName, () => App);
