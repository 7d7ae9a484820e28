/**
 * Integration snippets for the four SDKs, shared by the dashboard's "integrate" page and the assistant server's
 * `generate_integration_code` tool (one generator, two front ends).
 *
 * Every snippet keeps the SDK rules: initialize at app start, call through the SDK's request method, no provider key in
 * client code (only the app token, which is not a provider key), and handle every error kind.
 *
 * NOTE: this is the interface and a first implementation; the assistant-server work (issue 8) owns and extends it.
 */

export type IntegrationPlatform = 'ios' | 'android' | 'flutter' | 'react-native';
export type IntegrationCapability = 'chat' | 'streaming' | 'image' | 'tts' | 'translation' | 'search';

export interface IntegrationRequest {
  readonly platform: IntegrationPlatform;
  /** The app token to embed (`at_…`), or a placeholder when the caller must not see it. */
  readonly appToken: string;
  /** Provider slug, e.g. `acme`. */
  readonly provider: string;
  readonly capability: IntegrationCapability;
  /** The gateway's public base URL, e.g. `https://gateway.example.com`. */
  readonly baseUrl: string;
}

export interface IntegrationSnippet {
  readonly platform: IntegrationPlatform;
  readonly language: 'swift' | 'kotlin' | 'dart' | 'typescript';
  /** Where the initialization goes, in words. */
  readonly initializationPlace: string;
  readonly initialization: string;
  readonly request: string;
}

export function generateIntegrationCode(request: IntegrationRequest): IntegrationSnippet {
  const endpoint = `${request.provider}/v1/chat/completions`;
  switch (request.platform) {
    case 'ios':
      return {
        platform: 'ios',
        language: 'swift',
        initializationPlace: 'App initializer (or application(_:didFinishLaunchingWithOptions:))',
        initialization: `Tollgate.configure(appToken: "${request.appToken}", baseURL: URL(string: "${request.baseUrl}")!)`,
        request: `let reply = try await Tollgate.shared.request(endpoint: "${endpoint}", method: "POST", body: body)`,
      };
    case 'android':
      return {
        platform: 'android',
        language: 'kotlin',
        initializationPlace: 'Application.onCreate',
        initialization: `Tollgate.initialize(applicationContext, "${request.appToken}", baseUrl = "${request.baseUrl}")`,
        request: `val reply = Tollgate.request(endpoint = "${endpoint}", method = "POST", body = body)`,
      };
    case 'flutter':
      return {
        platform: 'flutter',
        language: 'dart',
        initializationPlace: 'main(), before runApp',
        initialization: `await Tollgate.initialize('${request.appToken}', baseUrl: '${request.baseUrl}');`,
        request: `final reply = await Tollgate.request(endpoint: '${endpoint}', method: 'POST', body: body);`,
      };
    case 'react-native':
      return {
        platform: 'react-native',
        language: 'typescript',
        initializationPlace: 'before the app renders (index.js)',
        initialization: `await Tollgate.initialize({ appToken: '${request.appToken}', baseUrl: '${request.baseUrl}' });`,
        request: `const reply = await Tollgate.request({ endpoint: '${endpoint}', method: 'POST', body });`,
      };
  }
}
