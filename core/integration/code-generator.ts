/**
 * Integration code for the four SDKs, shared by the dashboard's "integrate" page and the assistant server's
 * `generate_integration_code` tool (one generator, two front ends).
 *
 * Every snippet keeps the SDK rules (protocol.md and the SDK issue): the SDK is initialized at app start, not lazily;
 * every call goes through the SDK's request or stream method; no provider key appears in client code (only the app
 * token, which identifies the app and is useless without an attested device); and every error kind of protocol.md is
 * handled: attestationFailed, unauthorized, rateLimited, secretNotFound, networkError, invalidRequest, providerError.
 * The call itself comes from the provider manifest's `examples`, so core never names a provider.
 */
import type { CapabilityExample, ExampleCapability, ProviderManifest } from '../contract';

export type IntegrationPlatform = 'ios' | 'android' | 'flutter' | 'react-native';
export type IntegrationCapability = ExampleCapability;
export const INTEGRATION_PLATFORMS: readonly IntegrationPlatform[] = ['ios', 'android', 'flutter', 'react-native'];
export const INTEGRATION_CAPABILITIES: readonly IntegrationCapability[] = ['chat', 'streaming', 'image', 'tts', 'translation', 'search'];

export interface IntegrationRequest {
  readonly platform: IntegrationPlatform;
  /** The app token to embed (`at_…`), or a placeholder such as `at_YOUR_APP_TOKEN`. */
  readonly appToken: string;
  readonly provider: Pick<ProviderManifest, 'slug' | 'name' | 'versions' | 'examples'>;
  readonly capability: IntegrationCapability;
  /** The gateway's public base URL, e.g. `https://gateway.example.com`. */
  readonly baseUrl: string;
}

export interface IntegrationSnippet {
  readonly platform: IntegrationPlatform;
  readonly language: 'swift' | 'kotlin' | 'dart' | 'typescript';
  /** Where the initialization goes, in words. */
  readonly initializationPlace: string;
  /** The initialization call, to run once at app start. */
  readonly initialization: string;
  /** The request (or stream) with every error kind handled. */
  readonly request: string;
  /** Both, as one ready-to-paste file. */
  readonly code: string;
  /** True when the provider declares no example for this capability and a generic call was generated. */
  readonly generic: boolean;
}

/** The example call for the capability, or a generic one on the provider's first version. */
function exampleFor(request: IntegrationRequest): { example: CapabilityExample; generic: boolean } {
  const declared = request.provider.examples?.[request.capability];
  if (declared) return { example: declared, generic: false };
  const version = Object.keys(request.provider.versions)[0] ?? 'v1';
  const streams = request.capability === 'streaming' || request.capability === 'tts';
  return { example: { method: 'POST', version, path: 'PATH_FROM_PROVIDER_DOCS', body: { input: 'Hello!' }, streams }, generic: true };
}

const indent = (text: string, spaces: number) => text.split('\n').map((line) => (line ? ' '.repeat(spaces) + line : line)).join('\n');

function swift(request: IntegrationRequest, endpoint: string, example: CapabilityExample) {
  const body = example.body ? `, body: ${JSON.stringify(JSON.stringify(example.body))}.data(using: .utf8)` : '';
  const call = example.streams
    ? `for try await event in Tollgate.stream(endpoint: "${endpoint}", method: "${example.method}"${body}) {\n    handle(event)   // parsed per the provider's streaming format\n}`
    : `let response = try await Tollgate.request(endpoint: "${endpoint}", method: "${example.method}"${body})\nhandle(response)`;
  return {
    language: 'swift' as const,
    initializationPlace: 'your App initializer (or application(_:didFinishLaunchingWithOptions:)), before any request',
    initialization: `import Tollgate\n\n@main\nstruct MyApp: App {\n    init() {\n        Tollgate.configure(appToken: "${request.appToken}", baseURL: URL(string: "${request.baseUrl}")!)\n    }\n    var body: some Scene { WindowGroup { ContentView() } }\n}`,
    request: `func call${request.provider.name.replace(/\W/g, '')}() async {\n    do {\n${indent(call, 8)}\n    } catch TollgateError.attestationFailed {\n        // The device could not prove it runs the genuine app (or its token was revoked): do not retry blindly.\n    } catch TollgateError.unauthorized {\n        // The app token is wrong, rotated or the app is disabled: ship the current token.\n    } catch TollgateError.rateLimited(let retryAfter) {\n        // Too many requests: wait retryAfter seconds before trying again.\n    } catch TollgateError.secretNotFound {\n        // The gateway has no key for this provider yet: add it in the dashboard.\n    } catch TollgateError.networkError {\n        // Offline, or the provider is unreachable: offer a retry.\n    } catch TollgateError.invalidRequest(let message) {\n        // A bug in the request: log message.\n    } catch TollgateError.providerError(let status, let body) {\n        // The provider answered an error: inspect status and body.\n    } catch {\n        // Anything else.\n    }\n}`,
  };
}

function kotlin(request: IntegrationRequest, endpoint: string, example: CapabilityExample) {
  const body = example.body ? `,\n    body = RequestBody.Text("""${JSON.stringify(example.body)}"""),` : ',';
  const call = example.streams
    ? `Tollgate.stream(\n    method = "${example.method}",\n    endpoint = "${endpoint}"${body}\n    format = StreamFormat.SSE,\n).collect { event ->\n    handle(event) // parsed per the provider's streaming format\n}`
    : `val response = Tollgate.request(\n    method = "${example.method}",\n    endpoint = "${endpoint}"${body}\n)\nhandle(response)`;
  return {
    language: 'kotlin' as const,
    initializationPlace: 'Application.onCreate, with the application context',
    initialization: `import dev.tollgate.Tollgate\nimport dev.tollgate.TollgateConfiguration\n\nclass MyApplication : Application() {\n    override fun onCreate() {\n        super.onCreate()\n        Tollgate.initialize(this, "${request.appToken}", TollgateConfiguration(gatewayUrl = "${request.baseUrl}"))\n    }\n}`,
    request: `import dev.tollgate.Tollgate\nimport dev.tollgate.core.RequestBody\nimport dev.tollgate.core.StreamFormat\nimport dev.tollgate.core.TollgateError\n\nsuspend fun call${request.provider.name.replace(/\W/g, '')}() {\n    try {\n${indent(call, 8)}\n    } catch (error: TollgateError) {\n        when (error) {\n            is TollgateError.AttestationFailed -> { /* not the genuine app on a real device, or revoked */ }\n            is TollgateError.Unauthorized -> { /* wrong, rotated or disabled app token */ }\n            is TollgateError.RateLimited -> { /* wait error.retryAfterSeconds seconds */ }\n            is TollgateError.SecretNotFound -> { /* no key for this provider on the gateway yet */ }\n            is TollgateError.NetworkError -> { /* offline or provider unreachable: offer a retry */ }\n            is TollgateError.InvalidRequest -> { /* a bug in the request: log error.message */ }\n            is TollgateError.ProviderError -> { /* the provider answered error.status with error.body */ }\n        }\n    }\n}`,
  };
}

function dart(request: IntegrationRequest, endpoint: string, example: CapabilityExample) {
  const body = example.body ? `, body: ${JSON.stringify(example.body)}` : '';
  const call = example.streams
    ? `await for (final event in Tollgate.stream(endpoint: '${endpoint}', method: '${example.method}'${body})) {\n  handle(event); // parsed per the provider's streaming format\n}`
    : `final response = await Tollgate.request(endpoint: '${endpoint}', method: '${example.method}'${body});\nhandle(response);`;
  return {
    language: 'dart' as const,
    initializationPlace: 'main(), before runApp',
    initialization: `import 'package:tollgate/tollgate.dart';\n\nFuture<void> main() async {\n  WidgetsFlutterBinding.ensureInitialized();\n  await Tollgate.initialize('${request.appToken}', baseUrl: '${request.baseUrl}');\n  runApp(const MyApp());\n}`,
    request: `Future<void> call${request.provider.name.replace(/\W/g, '')}() async {\n  try {\n${indent(call, 4)}\n  } on AttestationFailedException {\n    // not the genuine app on a real device, or revoked\n  } on UnauthorizedException {\n    // wrong, rotated or disabled app token\n  } on RateLimitedException catch (error) {\n    // wait error.retryAfter before retrying\n  } on SecretNotFoundException {\n    // no key for this provider on the gateway yet\n  } on NetworkException {\n    // offline or provider unreachable: offer a retry\n  } on InvalidRequestException catch (error) {\n    // a bug in the request: log error.message\n  } on ProviderErrorException catch (error) {\n    // the provider answered error.status with error.body\n  }\n}`,
  };
}

function typescript(request: IntegrationRequest, endpoint: string, example: CapabilityExample) {
  const body = example.body ? `, body: ${JSON.stringify(example.body)}` : '';
  const call = example.streams
    ? `for await (const event of Tollgate.stream({ endpoint: '${endpoint}', method: '${example.method}'${body} })) {\n  handle(event); // parsed per the provider's streaming format\n}`
    : `const response = await Tollgate.request({ endpoint: '${endpoint}', method: '${example.method}'${body} });\nhandle(response);`;
  return {
    language: 'typescript' as const,
    initializationPlace: 'index.js, before the app renders',
    initialization: `import { AppRegistry } from 'react-native';\nimport { Tollgate } from '@tollgate/react-native';\nimport App from './App';\n\nawait Tollgate.initialize({ appToken: '${request.appToken}', baseUrl: '${request.baseUrl}' });\nAppRegistry.registerComponent('MyApp', () => App);`,
    request: `import { Tollgate, TollgateError } from '@tollgate/react-native';\n\nexport async function call${request.provider.name.replace(/\W/g, '')}() {\n  try {\n${indent(call, 4)}\n  } catch (error) {\n    if (!(error instanceof TollgateError)) throw error;\n    switch (error.kind) {\n      case 'attestationFailed': /* not the genuine app on a real device, or revoked */ break;\n      case 'unauthorized': /* wrong, rotated or disabled app token */ break;\n      case 'rateLimited': /* wait error.retryAfter seconds */ break;\n      case 'secretNotFound': /* no key for this provider on the gateway yet */ break;\n      case 'networkError': /* offline or provider unreachable: offer a retry */ break;\n      case 'invalidRequest': /* a bug in the request: log error.message */ break;\n      case 'providerError': /* the provider answered error.status with error.body */ break;\n    }\n  }\n}`,
  };
}

/** Ready-to-paste initialization and request code for one platform, provider and capability. */
export function generateIntegrationCode(request: IntegrationRequest): IntegrationSnippet {
  const { example, generic } = exampleFor(request);
  const endpoint = `${request.provider.slug}/${example.version}/${example.path}`;
  const parts = { ios: swift, android: kotlin, flutter: dart, 'react-native': typescript }[request.platform](request, endpoint, example);
  return {
    platform: request.platform,
    generic,
    ...parts,
    code: `// 1. Initialize once, at app start: ${parts.initializationPlace}.\n${parts.initialization}\n\n// 2. Call ${request.provider.name} through the SDK (no provider key in the app).\n${parts.request}\n`,
  };
}
