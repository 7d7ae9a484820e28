/**
 * The SDK features beside a plain request, for the integration page and the assistant server: a realtime session, a
 * signed-in user (`setUserTokenProvider`), what is left (`me()`), and a provider SDK routed through Tollgate (iOS
 * `TollgateURLProtocol`, Android `okHttpClient()`/`interceptor()`, Flutter `TollgateHttpClient`, React Native
 * `Tollgate.fetch`). Every name is the SDK's public API (sdk/ios/Sources, sdk/android, sdk/flutter/lib,
 * sdk/react-native/src; test/sdk/generated-code.test.ts holds the snippets against those sources). Endpoints come from
 * the chosen provider's manifest (its first realtime route, its first version), so no provider is named here.
 */
import type { ProviderManifest, SdkPlatform } from '../contract';

export type FeatureId = 'realtime' | 'signed-in-user' | 'me' | 'provider-sdk';
type PlatformFeatureId = Exclude<FeatureId, 'provider-sdk'>;

export interface IntegrationFeature {
  readonly id: FeatureId;
  readonly title: string;
  /** What the code does and where it goes, in words. */
  readonly description: string;
  readonly content: string;
}

type FeatureProvider = Pick<ProviderManifest, 'slug' | 'name' | 'versions' | 'examples' | 'realtime' | 'sdkHookExample'>;
type Platform = SdkPlatform;

/** The provider's realtime endpoint (`slug/version/path`, `{name}` segments as NAME placeholders), its doc, or none. */
function realtimeEndpoint(provider: FeatureProvider): { endpoint: string; doc: string; declared: boolean } {
  const version = Object.keys(provider.versions)[0] ?? 'v1';
  const route = provider.realtime?.find((entry) => !entry.path.includes('*'));
  if (!route) return { endpoint: `${provider.slug}/${version}/REALTIME_PATH_FROM_PROVIDER_DOCS`, doc: '', declared: false };
  const path = route.path.replace(/\{(\w+)\}/g, (_match, name: string) => name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase());
  return { endpoint: `${provider.slug}/${version}/${path}`, doc: route.doc, declared: true };
}

/** The gateway address split as MacPaw's OpenAI configuration takes it. */
function hostParts(gatewayUrl: string): { host: string; port: number; scheme: string; prefix: string } {
  try {
    const url = new URL(gatewayUrl);
    const scheme = url.protocol.replace(':', '');
    return { host: url.hostname, port: url.port ? Number(url.port) : scheme === 'http' ? 80 : 443, scheme, prefix: url.pathname.replace(/\/+$/, '') };
  } catch {
    return { host: 'gateway.example.com', port: 443, scheme: 'https', prefix: '' };
  }
}

const modelOf = (provider: FeatureProvider): string => {
  const model = provider.examples?.chat?.body?.model;
  return typeof model === 'string' ? model : 'MODEL_FROM_PROVIDER_DOCS';
};

function swift(realtime: string): Record<PlatformFeatureId, string> {
  return {
    realtime:
      `import Foundation\nimport TollgateSDK\n\n// handle(_:) and play(_:) are yours; firstEvent is the provider's JSON event that starts the exchange.\nfunc openRealtimeSession(firstEvent: String) async {\n    do {\n` +
      `        let session = try await Tollgate.shared.realtime(endpoint: "${realtime}")\n        try await session.send(firstEvent)            // a text frame; send(_ data: Data) for audio\n` +
      `        do {\n            for try await message in session.messages {\n                switch message {\n                case .text(let event): handle(event)\n                case .binary(let audio): play(audio)\n                }\n            }\n` +
      `        } catch let closed as RealtimeCloseError {\n            // The gateway closed it: closed.kind, closed.reason (token_budget, session_too_long, …), closed.closeCode.\n            if closed.mayReconnect { await openRealtimeSession(firstEvent: firstEvent) }   // 4503 draining: at once\n        }\n` +
      `        session.close()\n    } catch {\n        // The upgrade was refused: a TollgateError, as for a request (attestationFailed, rateLimited, …).\n        print("Tollgate: \\(error)")\n    }\n}`,
    'signed-in-user':
      `import TollgateSDK\n\n// After sign-in. Firebase Authentication shown: return your sign-in SDK's current ID token (nil when signed out).\nfunc userSignedIn() async throws {\n` +
      `    try await Tollgate.shared.setUserTokenProvider { forceRefresh in\n        try await Auth.auth().currentUser?.getIDTokenResult(forcingRefresh: forceRefresh).token\n    }\n}\n\n` +
      `// At sign-out: no user token is sent any more.\nfunc userSignedOut() async throws {\n    try await Tollgate.shared.setUserTokenProvider(nil)\n}`,
    me:
      `import TollgateSDK\n\n// GET /v1/me: every limit and budget of this device (and user) with what remains. Counts against nothing.\nfunc showWhatIsLeft() async {\n    do {\n        let me = try await Tollgate.shared.me()\n` +
      `        for limit in me.limits {\n            print("\\(limit.scope ?? "") \\(limit.name): \\(Int(limit.remaining)) of \\(Int(limit.limit)) left")\n        }\n    } catch {\n        print("Tollgate: \\(error)")\n    }\n}`,

  };
}

function kotlin(realtime: string): Record<PlatformFeatureId, string> {
  const d = '$';
  return {
    realtime:
      `import dev.tollgate.Tollgate\nimport dev.tollgate.core.RealtimeMessage\nimport dev.tollgate.core.TollgateError\n\n` +
      `// handleEvent(…), play(…) and log(…) are yours; call from a coroutine. firstEvent: the provider's JSON event that starts the exchange.\n` +
      `suspend fun openRealtimeSession(firstEvent: String) {\n    val session = try {\n        Tollgate.realtime("${realtime}")\n    } catch (error: TollgateError) {\n        log("upgrade refused (${d}{error.reason})")   // as for a request: attestationFailed, rateLimited, …\n        return\n    }\n` +
      `    session.send(firstEvent)                      // a text frame; send(bytes) for audio\n    try {\n        session.messages.collect { message ->\n            when (message) {\n                is RealtimeMessage.Text -> handleEvent(message.text)\n                is RealtimeMessage.Binary -> play(message.bytes)\n            }\n        }\n` +
      `    } catch (error: TollgateError.RateLimited) {\n        log("budget spent (${d}{error.reason})")     // 4429: token_budget, session_seconds_budget, session_too_long\n` +
      `    } catch (error: TollgateError) {\n        if (session.closed?.mayReconnect == true) openRealtimeSession(firstEvent)   // 4503 draining: at once\n        else log("closed (${d}{error.reason})")\n    } finally {\n        session.close()\n    }\n}`,
    'signed-in-user':
      `import dev.tollgate.Tollgate\n\n// After sign-in. Firebase Authentication shown: return your sign-in SDK's current ID token (null when signed out).\nfun onSignedIn() {\n` +
      `    Tollgate.setUserTokenProvider { forceRefresh ->\n        Firebase.auth.currentUser?.getIdToken(forceRefresh)?.await()?.token\n    }\n}\n\n` +
      `// At sign-out: no user token is sent any more.\nfun onSignedOut() {\n    Tollgate.setUserTokenProvider(null)\n}`,
    me:
      `import dev.tollgate.Tollgate\n\n// GET /v1/me: every limit and budget of this device (and user) with what remains. log(…) is yours.\nsuspend fun showWhatIsLeft() {\n    val me = Tollgate.me()\n` +
      `    for (limit in me.limits) log("${d}{limit.scope} ${d}{limit.name}: ${d}{limit.remaining} of ${d}{limit.limit} left")\n}`,

  };
}

function dart(realtime: string): Record<PlatformFeatureId, string> {
  return {
    realtime:
      `import 'package:tollgate/tollgate.dart';\n\n// handleEvent(…) and play(…) are yours; firstEvent is the provider's JSON event that starts the exchange.\nFuture<void> openRealtimeSession(String firstEvent) async {\n  final RealtimeSession session;\n  try {\n` +
      `    session = await Tollgate.realtime('${realtime}');\n  } on TollgateException catch (error) {\n    print('upgrade refused (\${error.reason})'); // as for a request: attestationFailed, rateLimited, …\n    return;\n  }\n` +
      `  session.send(firstEvent); // a text frame; sendBytes(audio) for binary\n  try {\n    await for (final message in session.messages) {\n      switch (message) {\n        case RealtimeText(:final text):\n          handleEvent(text);\n        case RealtimeBinary(:final bytes):\n          play(bytes);\n      }\n    }\n` +
      `  } on RateLimitedException catch (error) {\n    print('budget spent (\${error.reason})'); // 4429: token_budget, session_seconds_budget, session_too_long\n` +
      `  } on TollgateException catch (error) {\n    if (session.closed?.mayReconnect ?? false) return openRealtimeSession(firstEvent); // 4503 draining: at once\n    print('closed (\${error.reason})');\n  } finally {\n    await session.close();\n  }\n}`,
    'signed-in-user':
      `import 'package:tollgate/tollgate.dart';\n\n// After sign-in. Firebase Authentication shown: return your sign-in SDK's current ID token (null when signed out).\nvoid onSignedIn() {\n` +
      `  Tollgate.setUserTokenProvider((forceRefresh) async => FirebaseAuth.instance.currentUser?.getIdToken(forceRefresh));\n}\n\n` +
      `// At sign-out: no user token is sent any more.\nvoid onSignedOut() => Tollgate.setUserTokenProvider(null);`,
    me:
      `import 'package:tollgate/tollgate.dart';\n\n// GET /v1/me: every limit and budget of this device (and user) with what remains. Counts against nothing.\nFuture<void> showWhatIsLeft() async {\n  final me = await Tollgate.me();\n` +
      `  for (final limit in me.limits) {\n    print('\${limit.scope} \${limit.name}: \${limit.remaining} of \${limit.limit} left');\n  }\n}`,

  };
}

function typescript(realtime: string): Record<PlatformFeatureId, string> {
  return {
    realtime:
      `import { Tollgate, TollgateError } from '@tollgate/react-native';\n\n// handleEvent(…) and play(…) are yours; firstEvent is the provider's JSON event that starts the exchange.\n` +
      `export async function openRealtimeSession(firstEvent: string): Promise<void> {\n  // A refused upgrade rejects with its TollgateError, as a request does.\n  const session = await Tollgate.realtime('${realtime}');\n` +
      `  session.send(firstEvent); // a text frame; send(bytes) for audio\n  try {\n    for await (const message of session) {\n      if (message.type === 'text') handleEvent(message.text);\n      else play(message.bytes);\n    }\n` +
      `  } catch (error) {\n    if (!(error instanceof TollgateError)) throw error;\n    if (error.mayReconnect) return openRealtimeSession(firstEvent); // 4503 draining: at once\n` +
      `    console.warn(error.kind, error.reason, error.closeCode); // e.g. rateLimited token_budget 4429\n  } finally {\n    session.close();\n  }\n}`,
    'signed-in-user':
      `import auth from '@react-native-firebase/auth';\nimport { Tollgate } from '@tollgate/react-native';\n\n// After sign-in. Firebase Authentication shown: return your sign-in SDK's current ID token (null when signed out).\n` +
      `export function onSignedIn(): void {\n  Tollgate.setUserTokenProvider(({ forceRefresh }) => auth().currentUser?.getIdToken(forceRefresh) ?? null);\n}\n\n` +
      `// At sign-out: no user token is sent any more.\nexport function onSignedOut(): void {\n  Tollgate.setUserTokenProvider(null);\n}`,
    me:
      `import { Tollgate } from '@tollgate/react-native';\n\n// GET /v1/me: every limit and budget of this device (and user) with what remains. Counts against nothing.\n` +
      `export async function showWhatIsLeft(): Promise<void> {\n  const me = await Tollgate.me();\n  for (const limit of me.limits) console.log(\`\${limit.scope ?? ''} \${limit.name}: \${limit.remaining} of \${limit.limit} left\`);\n}`,

  };
}

/** The hook on its own, for a provider that declares no client-library example: the SDK's names only. */
function hookAlone(platform: Platform, base: string, gatewayUrl: string): string {
  switch (platform) {
    case 'ios':
      return `import Foundation\nimport TollgateSDK\n\n// Give this session to your provider SDK (it takes a URLSession), with the base URL below and any placeholder key:\n// requests to {gateway}/v1/proxy/ get Tollgate's tokens, refresh and resend; the gateway adds the real key.\nlet session = URLSession(configuration: TollgateURLProtocol.configuration(client: Tollgate.shared, gatewayURL: "${gatewayUrl}"))\nlet baseURL = "${gatewayUrl.replace(/\/+$/, '')}/v1/proxy/${base}"`;
    case 'android':
      return `import dev.tollgate.Tollgate\n\n// Give this OkHttpClient to your provider SDK, with the base URL below and any placeholder key: requests get\n// Tollgate's tokens, refresh and resend; the gateway adds the real key.\nval client = Tollgate.okHttpClient()\nval baseUrl = Tollgate.providerBaseUrl("${base}")`;
    case 'flutter':
      return `import 'package:tollgate/tollgate.dart';\n\n// Give this http.Client to your provider package, with the base URL below and any placeholder key: requests get\n// Tollgate's tokens, refresh and resend; the gateway adds the real key.\nfinal client = TollgateHttpClient(Tollgate.client);\nfinal baseUrl = Tollgate.providerBaseUrl('${base}');`;
    case 'react-native':
      return `import { Tollgate } from '@tollgate/react-native';\n\n// Give this fetch to your provider SDK (most JavaScript SDKs take a fetch option), with the base URL below and any\n// placeholder key: requests get Tollgate's tokens, refresh and resend; the gateway adds the real key.\nexport const providerFetch = Tollgate.fetch as typeof fetch;\nexport const baseURL = Tollgate.providerBaseUrl('${base}');`;
  }
}

/** The four features for one platform and provider. */
export function integrationFeatures(platform: Platform, provider: FeatureProvider, gatewayUrl: string): IntegrationFeature[] {
  const { endpoint, doc, declared } = realtimeEndpoint(provider);
  const base = `${provider.slug}/${Object.keys(provider.versions)[0] ?? 'v1'}`;
  const code = { ios: () => swift(endpoint), android: () => kotlin(endpoint), flutter: () => dart(endpoint), 'react-native': () => typescript(endpoint) }[platform]();
  const providerSdk = provider.sdkHookExample ? provider.sdkHookExample(platform, { base, model: modelOf(provider), gatewayUrl, ...hostParts(gatewayUrl) }) : hookAlone(platform, base, gatewayUrl);
  const sdkHook = { ios: 'TollgateURLProtocol in the URLSession it uses', android: 'Tollgate.okHttpClient() (or Tollgate.interceptor()) as its HTTP client', flutter: 'TollgateHttpClient (an http.BaseClient) as its client', 'react-native': 'Tollgate.fetch as its fetch' }[platform];
  return [
    {
      id: 'realtime',
      title: 'A realtime session',
      description: declared
        ? `A WebSocket session through the gateway (${doc}): the same checks as a request, with limits, budgets and revocation holding inside the session; add the query parameters the provider documents (a model, for example).`
        : `${provider.name} declares no realtime route: take the socket path from the provider's documentation. Sessions go through the gateway with the same checks as a request.`,
      content: code.realtime,
    },
    { id: 'signed-in-user', title: 'A signed-in user', description: 'When the app’s policy checks user tokens: the SDK sends the user’s ID token (Tollgate-User-Token) with every request and session, reuses it until a minute before it expires, and asks again once when the gateway answers user_token_expired.', content: code['signed-in-user'] },
    { id: 'me', title: 'What is left: me()', description: 'Shows the user how much remains before a limit refuses them ("12 messages left today").', content: code.me },
    { id: 'provider-sdk', title: 'Your provider SDK, through Tollgate', description: provider.sdkHookExample ? `Keep the provider SDK you use: ${sdkHook}, with this provider's gateway address. Shown with the client library ${provider.name} declares; other SDKs that take the same hook work alike.` : `Keep the provider SDK you use: ${sdkHook}, with this provider's gateway address.`, content: providerSdk },
  ];
}
