/**
 * Integration code for the four SDKs, shared by the dashboard's "integrate" page and the assistant server's
 * `generate_integration_code` tool (one generator, two front ends).
 *
 * Every snippet keeps the SDK rules (protocol.md and the SDK READMEs in sdk/): the SDK is initialized at app start with
 * the call its README shows (iOS `try Tollgate.configure(appToken:)`, Android `Tollgate.initialize(context, appToken)`,
 * Flutter `await Tollgate.initialize(appToken)`, React Native `Tollgate.initialize({ appToken })`), the gateway
 * address goes in the app's native configuration (Info.plist `TollgateGatewayURL`, AndroidManifest meta-data
 * `dev.tollgate.GATEWAY_URL`), every call goes through the SDK's request or stream method, no provider key appears in
 * client code (only the app token, which identifies the app and is useless without an attested device), and every error
 * kind of protocol.md is handled, with the gateway's `reason` where the SDK exposes it. A development token, when given
 * for an app that allows development attestation, is wired in for simulators and emulators in debug builds only.
 * The call itself comes from the provider manifest's `examples`, so core never names a provider; a capability the
 * provider declares neither an example nor a capability for is refused (see {@link supportedCapabilities}).
 */
import { GatewayError, type CapabilityExample, type ExampleCapability, type ProviderManifest } from '../contract';
import { integrationFeatures, type IntegrationFeature } from './sdk-features';

export type { IntegrationFeature } from './sdk-features';

export type IntegrationPlatform = 'ios' | 'android' | 'flutter' | 'react-native';
export type IntegrationCapability = ExampleCapability;
export const INTEGRATION_PLATFORMS: readonly IntegrationPlatform[] = ['ios', 'android', 'flutter', 'react-native'];
export const INTEGRATION_CAPABILITIES: readonly IntegrationCapability[] = ['chat', 'streaming', 'image', 'tts', 'translation', 'search'];
/** A development token as the gateway issues it (core/security/tokens.ts). */
export const DEVELOPMENT_TOKEN_PATTERN = /^dt_[0-9A-Za-z]{32}$/;

/** What the generator reads of a provider manifest. */
export type IntegrationProvider = Pick<ProviderManifest, 'slug' | 'name' | 'versions' | 'examples' | 'capabilities' | 'streaming' | 'realtime'>;

export interface IntegrationRequest {
  readonly platform: IntegrationPlatform;
  /** The app token to embed (`at_…`), or a placeholder such as `at_YOUR_APP_TOKEN`. */
  readonly appToken: string;
  readonly provider: IntegrationProvider;
  readonly capability: IntegrationCapability;
  /** The gateway's address as devices reach it (`TOLLGATE_PUBLIC_URL`), e.g. `https://gateway.example.com`. */
  readonly gatewayUrl: string;
  /** Whether the app allows development attestation (simulators and emulators). */
  readonly allowDevelopmentAttestation?: boolean;
  /**
   * A development token (`dt_…`) to wire in for simulators and emulators, in debug builds only. Used only when
   * `allowDevelopmentAttestation` is true; refused (400 `validation`) otherwise.
   */
  readonly developmentToken?: string;
}

/** A native configuration entry: where the gateway address goes. */
export interface IntegrationConfiguration {
  /** The file, relative to the app's project, e.g. `ios/<App>/Info.plist`. */
  readonly file: string;
  /** Where in that file. */
  readonly place: string;
  readonly language: 'xml';
  readonly content: string;
}

export interface IntegrationSnippet {
  readonly platform: IntegrationPlatform;
  readonly language: 'swift' | 'kotlin' | 'dart' | 'typescript';
  /** How to add the SDK to the app (commands and build-file lines), as text with comments. */
  readonly install: string;
  /** The native configuration the SDK reads the gateway address from. */
  readonly configuration: readonly IntegrationConfiguration[];
  /** Where the initialization goes, in words. */
  readonly initializationPlace: string;
  /** The initialization call, to run once at app start. */
  readonly initialization: string;
  /** The request (or stream) with every error kind handled. */
  readonly request: string;
  /**
   * Beside the request: a realtime session, a signed-in user (`setUserTokenProvider`), what is left (`me()`), and a
   * provider SDK routed through Tollgate (see sdk-features.ts).
   */
  readonly features: readonly IntegrationFeature[];
  /** Everything above, as one text to read top to bottom. */
  readonly code: string;
  /** True when the provider declares the capability but no example for it, and a generic call was generated. */
  readonly generic: boolean;
  /** True when the debug-only development-token wiring for simulators and emulators is included. */
  readonly development: boolean;
}

/**
 * The capabilities the generator offers for a provider: those it declares an example for, and those its manifest
 * declares (`streaming` when it declares `chat` and a streaming format). In {@link INTEGRATION_CAPABILITIES} order.
 */
export function supportedCapabilities(provider: Pick<ProviderManifest, 'examples' | 'capabilities' | 'streaming'>): IntegrationCapability[] {
  return INTEGRATION_CAPABILITIES.filter((capability) => {
    if (provider.examples?.[capability]) return true;
    if (capability === 'streaming') return provider.capabilities.includes('chat') && provider.streaming.length > 0;
    return (provider.capabilities as readonly string[]).includes(capability);
  });
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalidRequest', message, { reason: 'validation', fields: { [field]: [message] } });
}

/** The example call for the capability, or a generic one on the provider's first version when only the capability is declared. */
function exampleFor(request: IntegrationRequest): { example: CapabilityExample; generic: boolean } {
  const declared = request.provider.examples?.[request.capability];
  if (declared) return { example: declared, generic: false };
  const supported = supportedCapabilities(request.provider);
  if (!supported.includes(request.capability)) {
    throw invalid(
      'capability',
      `${request.provider.name} offers no ${request.capability} capability; it offers: ${supported.length > 0 ? supported.join(', ') : 'none the generator knows'}.`,
    );
  }
  const version = Object.keys(request.provider.versions)[0] ?? 'v1';
  const streams = request.capability === 'streaming' || request.capability === 'tts';
  return { example: { method: 'POST', version, path: 'PATH_FROM_PROVIDER_DOCS', body: { input: 'Hello!' }, streams }, generic: true };
}

const indent = (text: string, spaces: number) => text.split('\n').map((line) => (line ? ' '.repeat(spaces) + line : line)).join('\n');
const xmlEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const functionName = (request: IntegrationRequest) => `call${request.provider.name.replace(/\W/g, '')}`;

function loopbackNote(gatewayUrl: string): string {
  let host = '';
  try {
    host = new URL(gatewayUrl).hostname;
  } catch {
    return '';
  }
  return /^(127\.|localhost$|\[::1\]$|0\.0\.0\.0$)/.test(host)
    ? ' (this is the gateway\'s own listen address: set TOLLGATE_PUBLIC_URL to the address devices reach; an emulator reaches the host as 10.0.2.2)'
    : '';
}

function infoPlist(file: string, gatewayUrl: string): IntegrationConfiguration {
  return {
    file,
    place: 'a top-level key of the property list (the SDK reads the gateway address from it)',
    language: 'xml',
    content: `<key>TollgateGatewayURL</key>\n<string>${xmlEscape(gatewayUrl)}</string>`,
  };
}

function androidManifest(file: string, gatewayUrl: string): IntegrationConfiguration {
  return {
    file,
    place: 'inside <application> (the SDK reads the gateway address from it)',
    language: 'xml',
    content: `<meta-data android:name="dev.tollgate.GATEWAY_URL" android:value="${xmlEscape(gatewayUrl)}" />`,
  };
}

interface PlatformParts {
  readonly language: IntegrationSnippet['language'];
  readonly install: string;
  readonly configuration: readonly IntegrationConfiguration[];
  readonly initializationPlace: string;
  readonly initialization: string;
  readonly request: string;
}

function swift(request: IntegrationRequest, endpoint: string, example: CapabilityExample, developmentToken: string | undefined): PlatformParts {
  const body = example.body ? `, body: ${JSON.stringify(JSON.stringify(example.body))}.data(using: .utf8)` : '';
  const call = example.streams
    ? `for try await event in Tollgate.stream(endpoint: "${endpoint}", method: "${example.method}"${body}) {\n    handle(event)   // parsed per the response's Content-Type (SSE, NDJSON, JSON array or raw bytes)\n}`
    : `let response = try await Tollgate.request(endpoint: "${endpoint}", method: "${example.method}"${body})\nhandle(response)`;
  const configure = developmentToken
    ? `        #if DEBUG && targetEnvironment(simulator)\n        // The simulator cannot use App Attest: a development token, in DEBUG simulator builds only (never on a\n        // device, never in a release build). Keep it out of source control (e.g. the scheme's environment).\n        let developmentToken: String? = "${developmentToken}"\n        #else\n        let developmentToken: String? = nil\n        #endif\n        do {\n            try Tollgate.configure(appToken: "${request.appToken}", developmentToken: developmentToken)\n        } catch {\n            assertionFailure("Tollgate: \\(error)")   // invalidRequest, reason gateway_url_missing: fix Info.plist\n        }`
    : `        do {\n            try Tollgate.configure(appToken: "${request.appToken}")\n        } catch {\n            assertionFailure("Tollgate: \\(error)")   // invalidRequest, reason gateway_url_missing: fix Info.plist\n        }`;
  return {
    language: 'swift',
    install:
      `// Swift Package Manager: Xcode ▸ File ▸ Add Package Dependencies… ▸ the repository URL, from 1.2.0, then add the\n` +
      `// TollgateSDK library to the app target. In a Package.swift:\n` +
      `dependencies: [\n    .package(url: "https://github.com/tollgate-dev/tollgate.git", from: "1.2.0"),\n],\n` +
      `targets: [\n    .target(name: "MyApp", dependencies: [.product(name: "TollgateSDK", package: "tollgate")]),\n]\n\n` +
      `// CocoaPods instead, in the Podfile, then \`pod install\`:\n` +
      `// pod 'TollgateSDK', '~> 1.2'\n\n` +
      `// Signing & Capabilities: add App Attest (entitlement com.apple.developer.devicecheck.appattest-environment).`,
    configuration: [infoPlist('<App>/Info.plist', request.gatewayUrl)],
    initializationPlace: 'your App initializer (or application(_:didFinishLaunchingWithOptions:)), before any request',
    initialization: `import SwiftUI\nimport TollgateSDK\n\n@main\nstruct MyApp: App {\n    init() {\n${configure}\n    }\n    var body: some Scene { WindowGroup { ContentView() } }\n}`,
    request:
      `import Foundation\nimport TollgateSDK\n\n// handle(_:) is yours.\nfunc ${functionName(request)}() async {\n    do {\n${indent(call, 8)}\n` +
      `    } catch TollgateError.attestationFailed(let details) where details.reason == "device_revoked" {\n        // The operator revoked this device: no call succeeds until the app restarts.\n        print("Tollgate: device revoked")\n` +
      `    } catch TollgateError.attestationFailed(let details) {\n        // Not the genuine app on a real device (or no development token on a simulator).\n        print("Tollgate: attestation failed (\\(details.reason ?? "-")): \\(details.message)")\n` +
      `    } catch TollgateError.unauthorized(let details) {\n        // The app token is wrong, rotated, or the app is disabled: ship the current token.\n        print("Tollgate: unauthorized (\\(details.reason ?? "-"))")\n` +
      `    } catch TollgateError.rateLimited(let retryAfter) {\n        // A gateway limit: wait retryAfter seconds (nil when the gateway did not say) before trying again.\n        print("Tollgate: rate limited, retry after \\(retryAfter ?? 1) s")\n` +
      `    } catch TollgateError.secretNotFound(let details) {\n        // The gateway has no key for this provider yet: add it in the dashboard.\n        print("Tollgate: no provider key on the gateway (\\(details.reason ?? "-"))")\n` +
      `    } catch TollgateError.networkError(let details) {\n        // Offline, gateway or provider unreachable, cut stream: offer a retry.\n        print("Tollgate: network error (\\(details.reason ?? "-"))")\n` +
      `    } catch TollgateError.invalidRequest(let details) {\n        // A bug in the request, or not configured (not_initialized, gateway_url_missing).\n        print("Tollgate: invalid request (\\(details.reason ?? "-")): \\(details.message)")\n` +
      `    } catch TollgateError.providerError(let status, let body) {\n        // The provider's own error, passed through unchanged.\n        print("Tollgate: provider answered \\(status): \\(body)")\n` +
      `    } catch {\n        // CancellationError.\n    }\n}`,
  };
}

function kotlin(request: IntegrationRequest, endpoint: string, example: CapabilityExample, developmentToken: string | undefined): PlatformParts {
  // A Kotlin raw string interpolates `$`: write it as ${'$'}.
  const body = example.body ? `,\n    body = RequestBody.Text("""${JSON.stringify(example.body).replace(/\$/g, "${'$'}")}"""),` : ',';
  const call = example.streams
    ? `Tollgate.stream(\n    method = "${example.method}",\n    endpoint = "${endpoint}"${body}\n).collect { event ->\n    handle(event) // parsed per the response's Content-Type (SSE, NDJSON, JSON array or raw bytes)\n}`
    : `val response = Tollgate.request(\n    method = "${example.method}",\n    endpoint = "${endpoint}"${body}\n)\nhandle(response)`;
  const initialize = developmentToken
    ? `        Tollgate.initialize(\n            this, "${request.appToken}",\n            // Emulators cannot pass hardware attestation: a development token, in debug builds only (the SDK refuses it\n            // in a non-debuggable app). Keep it out of source control (e.g. a debug buildConfigField from local.properties).\n            TollgateConfiguration(developmentToken = if (BuildConfig.DEBUG) "${developmentToken}" else null),\n        )`
    : `        Tollgate.initialize(this, "${request.appToken}")`;
  return {
    language: 'kotlin',
    install:
      `// settings.gradle.kts of your app\ninclude(":tollgate", ":core")\nproject(":tollgate").projectDir = file("../tollgate/sdk/android/tollgate")\nproject(":core").projectDir = file("../tollgate/sdk/android/core")\n\n` +
      `// app/build.gradle.kts\ndependencies {\n    implementation(project(":tollgate"))   // or implementation("dev.tollgate:tollgate-android:1.2.0") after publishToMavenLocal\n}\n` +
      (developmentToken ? `android {\n    buildFeatures { buildConfig = true }   // BuildConfig.DEBUG, for the development token\n}\n` : '') +
      `// minSdk 26; register the Application class: <application android:name=".MyApplication" …>`,
    configuration: [androidManifest('app/src/main/AndroidManifest.xml', request.gatewayUrl)],
    initializationPlace: 'Application.onCreate, with the application context',
    initialization:
      `import android.app.Application\nimport dev.tollgate.Tollgate\n${developmentToken ? 'import dev.tollgate.TollgateConfiguration\n' : ''}\n` +
      `class MyApplication : Application() {\n    override fun onCreate() {\n        super.onCreate()\n${initialize}\n    }\n}`,
    request:
      `import dev.tollgate.Tollgate\nimport dev.tollgate.core.RequestBody\nimport dev.tollgate.core.TollgateError\n\n// handle(…) and log(…) are yours; call from a coroutine (e.g. lifecycleScope.launch).\nsuspend fun ${functionName(request)}() {\n    try {\n${indent(call, 8)}\n    } catch (error: TollgateError) {\n        when (error) {\n` +
      `            is TollgateError.AttestationFailed -> if (error.reason == "device_revoked") {\n                log("device revoked: no call succeeds until the app restarts")\n            } else {\n                log("not the genuine app on a real device (${'$'}{error.reason})")\n            }\n` +
      `            is TollgateError.Unauthorized -> log("wrong, rotated or disabled app token (${'$'}{error.reason})")\n` +
      `            is TollgateError.RateLimited -> log("rate limited: retry in ${'$'}{error.retryAfterSeconds} s (${'$'}{error.reason})")\n` +
      `            is TollgateError.SecretNotFound -> log("no key for this provider on the gateway yet (${'$'}{error.reason})")\n` +
      `            is TollgateError.NetworkError -> log("offline or unreachable, offer a retry (${'$'}{error.reason})")\n` +
      `            is TollgateError.InvalidRequest -> log("refused (${'$'}{error.reason}): ${'$'}{error.message}")\n` +
      `            is TollgateError.ProviderError -> log("the provider answered ${'$'}{error.status}: ${'$'}{error.body}")\n` +
      `        }\n    }\n}`,
  };
}

function dart(request: IntegrationRequest, endpoint: string, example: CapabilityExample, developmentToken: string | undefined): PlatformParts {
  // A Dart string interpolates `$`: escape it.
  const body = example.body ? `, body: ${JSON.stringify(example.body).replace(/\$/g, '\\$')}` : '';
  const call = example.streams
    ? `await for (final event in Tollgate.stream(endpoint: '${endpoint}', method: '${example.method}'${body})) {\n  handle(event); // parsed per the response's Content-Type (SSE, NDJSON, JSON array or raw bytes)\n}`
    : `final response = await Tollgate.request(endpoint: '${endpoint}', method: '${example.method}'${body});\nhandle(response);`;
  const initialize = developmentToken
    ? `  await Tollgate.initialize(\n    '${request.appToken}',\n    // Simulators and emulators, debug builds only (kDebugMode): ignored in profile and release builds.\n    developmentToken: kDebugMode ? '${developmentToken}' : null,\n  );`
    : `  await Tollgate.initialize('${request.appToken}');`;
  return {
    language: 'dart',
    install:
      `# pubspec.yaml of your app, then \`flutter pub get\`\ndependencies:\n  tollgate:\n    path: ../tollgate/sdk/flutter     # or a git dependency on the repository, path: sdk/flutter\n\n` +
      `# iOS: in ios/Podfile (inside target 'Runner', with platform :ios, '15.0'), then \`cd ios && pod install\`;\n` +
      `# add the App Attest capability to the Runner target.\n#   pod 'TollgateSDK', '~> 1.2'\n` +
      `# Android: nothing to add (minSdk 26).`,
    configuration: [infoPlist('ios/Runner/Info.plist', request.gatewayUrl), androidManifest('android/app/src/main/AndroidManifest.xml', request.gatewayUrl)],
    initializationPlace: 'main(), before runApp',
    initialization:
      `${developmentToken ? "import 'package:flutter/foundation.dart';\n" : ''}import 'package:flutter/widgets.dart';\nimport 'package:tollgate/tollgate.dart';\n\n` +
      `Future<void> main() async {\n  WidgetsFlutterBinding.ensureInitialized();\n${initialize}\n  runApp(const MyApp());\n}`,
    request:
      `import 'package:tollgate/tollgate.dart';\n\nFuture<void> ${functionName(request)}() async {\n  try {\n${indent(call, 4)}\n` +
      `  } on AttestationFailedException catch (error) {\n    // not the genuine app on a real device; error.reason == 'device_revoked': revoked, no call succeeds until restart\n    print('attestation failed (\${error.reason}): \${error.message}');\n` +
      `  } on UnauthorizedException catch (error) {\n    // wrong, rotated or disabled app token\n    print('unauthorized (\${error.reason})');\n` +
      `  } on RateLimitedException catch (error) {\n    // wait error.retryAfter (a Duration, null when unknown) before retrying\n    print('rate limited (\${error.reason}): retry after \${error.retryAfter}');\n` +
      `  } on SecretNotFoundException catch (error) {\n    // no key for this provider on the gateway yet\n    print('no provider key (\${error.reason})');\n` +
      `  } on NetworkException catch (error) {\n    // offline or provider unreachable: offer a retry\n    print('network error (\${error.reason})');\n` +
      `  } on InvalidRequestException catch (error) {\n    // a bug in the request, or not initialized\n    print('invalid request (\${error.reason}): \${error.message}');\n` +
      `  } on ProviderErrorException catch (error) {\n    // the provider's own error, unchanged\n    print('provider answered \${error.status}: \${error.body}');\n  }\n}`,
  };
}

function typescript(request: IntegrationRequest, endpoint: string, example: CapabilityExample, developmentToken: string | undefined): PlatformParts {
  const body = example.body ? `, body: ${JSON.stringify(example.body)}` : '';
  const call = example.streams
    ? `for await (const event of Tollgate.stream({ endpoint: '${endpoint}', method: '${example.method}'${body} })) {\n  handle(event); // parsed per the response's Content-Type (SSE, NDJSON, JSON array or raw bytes)\n}`
    : `const response = await Tollgate.request({ endpoint: '${endpoint}', method: '${example.method}'${body} });\nhandle(response);`;
  const initialize = developmentToken
    ? `// No top-level await (Metro does not support it): calls made before initialize finished wait for it.\nTollgate.initialize({\n  appToken: '${request.appToken}',\n  // Simulators and emulators, development builds only (__DEV__): never used in a release bundle. Keep the token out\n  // of source control; check the release bundle holds no dt_ (grep -c dt_ main.jsbundle).\n  development: __DEV__ ? { token: '${developmentToken}', deviceId: 'simulator-1' } : undefined,\n}).catch((error) => console.error('Tollgate:', error.reason, error.message));`
    : `// No top-level await (Metro does not support it): calls made before initialize finished wait for it.\nTollgate.initialize({ appToken: '${request.appToken}' }).catch((error) => console.error('Tollgate:', error.reason, error.message));`;
  return {
    language: 'typescript',
    install: `npm install @tollgate/react-native\ncd ios && pod install          # iOS: links the TollgateNative module; Android links by autolinking\n# Expo: a development build (npx expo prebuild), not Expo Go.`,
    configuration: [infoPlist('ios/<App>/Info.plist', request.gatewayUrl), androidManifest('android/app/src/main/AndroidManifest.xml', request.gatewayUrl)],
    initializationPlace: 'index.js, before the app renders',
    initialization: `import { AppRegistry } from 'react-native';\nimport { Tollgate } from '@tollgate/react-native';\nimport App from './App';\n\n${initialize}\nAppRegistry.registerComponent('MyApp', () => App);`,
    request:
      `import { Tollgate, TollgateError } from '@tollgate/react-native';\n\nexport async function ${functionName(request)}() {\n  try {\n${indent(call, 4)}\n  } catch (error) {\n    if (!(error instanceof TollgateError)) throw error;\n    switch (error.kind) {\n` +
      `      case 'attestationFailed': /* not the genuine app on a real device; error.reason 'device_revoked': revoked */ console.warn(error.reason); break;\n` +
      `      case 'unauthorized': /* wrong, rotated or disabled app token */ console.warn(error.reason); break;\n` +
      `      case 'rateLimited': /* wait error.retryAfter seconds (undefined when unknown) */ console.warn(error.retryAfter, error.reason); break;\n` +
      `      case 'secretNotFound': /* no key for this provider on the gateway yet */ console.warn(error.reason); break;\n` +
      `      case 'networkError': /* offline or provider unreachable: offer a retry */ console.warn(error.reason); break;\n` +
      `      case 'invalidRequest': /* a bug in the request, or not initialized */ console.warn(error.reason, error.message); break;\n` +
      `      case 'providerError': /* the provider's own error, unchanged */ console.warn(error.status, error.body); break;\n` +
      `    }\n  }\n}`,
  };
}

/** Ready-to-paste install steps, native configuration, initialization and request code for one platform, provider and capability. */
export function generateIntegrationCode(request: IntegrationRequest): IntegrationSnippet {
  const { example, generic } = exampleFor(request);
  let developmentToken: string | undefined;
  if (request.developmentToken !== undefined) {
    if (!DEVELOPMENT_TOKEN_PATTERN.test(request.developmentToken)) throw invalid('developmentToken', 'must be a development token (dt_ and 32 letters or digits)');
    if (!request.allowDevelopmentAttestation) throw invalid('developmentToken', 'this app does not allow development attestation (allowDevelopmentAttestation)');
    developmentToken = request.developmentToken;
  }
  const endpoint = `${request.provider.slug}/${example.version}/${example.path}`;
  const parts = { ios: swift, android: kotlin, flutter: dart, 'react-native': typescript }[request.platform](request, endpoint, example, developmentToken);
  const comment = (text: string) => text.split('\n').map((line) => (line.startsWith('//') ? line : line === '' ? '' : `//   ${line}`)).join('\n');
  const configuration = parts.configuration.map((entry) => `// ${entry.file}, ${entry.place}:\n${comment(entry.content)}`).join('\n');
  const features = integrationFeatures(request.platform, request.provider, request.gatewayUrl);
  return {
    platform: request.platform,
    generic,
    development: developmentToken !== undefined,
    ...parts,
    features,
    code:
      `// 1. Install the SDK.\n${comment(parts.install)}\n\n` +
      `// 2. The gateway address${loopbackNote(request.gatewayUrl)}.\n${configuration}\n\n` +
      `// 3. Initialize once, at app start: ${parts.initializationPlace}.\n${parts.initialization}\n\n` +
      `// 4. Call ${request.provider.name} through the SDK (no provider key in the app).\n${parts.request}\n` +
      features.map((feature, index) => `\n// ${index + 5}. ${feature.title}: ${feature.description}\n${feature.content}\n`).join(''),
  };
}
