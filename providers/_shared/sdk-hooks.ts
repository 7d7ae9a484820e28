/**
 * The provider-SDK example of the integration code for providers with an OpenAI-compatible API: the OpenAI client
 * library of each platform, its HTTP layer given to Tollgate's hook (iOS `TollgateURLProtocol` with MacPaw's OpenAI
 * package, Android `Tollgate.okHttpClient()` with openai-java, Flutter `TollgateHttpClient` with openai_dart, React Native
 * `Tollgate.fetch` with the openai package). Every Tollgate name is the SDK's public API
 * (test/sdk/generated-code.test.ts holds the snippets against the SDK sources).
 */
import type { SdkHookExampleInput, SdkPlatform } from '../../core/contract';

export function openAiSdkHookExample(platform: SdkPlatform, input: SdkHookExampleInput): string {
  const { base, model, gatewayUrl, host, port, scheme, prefix } = input;
  switch (platform) {
    case 'ios':
      return (
      `import Foundation\nimport OpenAI          // MacPaw's OpenAI Swift package (https://github.com/MacPaw/OpenAI)\nimport TollgateSDK\n\n` +
      `// Requests to {gateway}/v1/proxy/ go through Tollgate (tokens, refresh, resend); the SDK's placeholder key is dropped.\n` +
      `let session = URLSession(configuration: TollgateURLProtocol.configuration(client: Tollgate.shared, gatewayURL: "${gatewayUrl}"))\n` +
      `let openAI = OpenAI(configuration: OpenAI.Configuration(token: "unused", host: "${host}", port: ${port}, scheme: "${scheme}", basePath: "${prefix}/v1/proxy/${base}"),\n                    session: session)\n` +
      `// A gateway refusal fails the SDK's call with the TollgateError: (error as? TollgateError)?.reason`
      );
    case 'android':
      return (
      `import com.openai.client.okhttp.OpenAIOkHttpClient\nimport com.openai.models.chat.completions.ChatCompletionCreateParams\nimport dev.tollgate.Tollgate\n\n` +
      `// openai-java (com.openai:openai-java): its OkHttp client carries Tollgate's interceptor (tokens, refresh, resend);\n// the placeholder key is dropped, the gateway adds the real one.\n` +
      `val openai = OpenAIOkHttpClient.builder()\n    .baseUrl(Tollgate.providerBaseUrl("${base}"))\n    .apiKey("unused")\n    .okHttpClient(Tollgate.okHttpClient())\n    .build()\n` +
      `// An OkHttpClient of your own (Retrofit, Ktor): OkHttpClient.Builder().addInterceptor(Tollgate.interceptor()).build()\n\n` +
      `fun ask(): String? {\n    val params = ChatCompletionCreateParams.builder().model("${model}").addUserMessage("Hello!").build()\n    return openai.chat().completions().create(params).choices().firstOrNull()?.message()?.content()?.orElse(null)\n}`
      );
    case 'flutter':
      return (
      `import 'package:openai_dart/openai_dart.dart';\nimport 'package:tollgate/tollgate.dart';\n\n` +
      `// TollgateHttpClient is an http.BaseClient: requests to {gateway}/v1/proxy/ get Tollgate's tokens, refresh and resend;\n// the placeholder key is dropped, the gateway adds the real one. Any package taking an http.Client works the same way.\n` +
      `final openai = OpenAIClient(\n  apiKey: 'unused',\n  baseUrl: Tollgate.providerBaseUrl('${base}'),\n  client: TollgateHttpClient(Tollgate.client),\n);`
      );
    case 'react-native':
      return (
      `import OpenAI from 'openai';\nimport { Tollgate } from '@tollgate/react-native';\n\n` +
      `// The openai package with Tollgate's fetch: calls under the provider's gateway address get Tollgate's tokens, refresh\n// and resend; the placeholder key is dropped, the gateway adds the real one.\n` +
      `export const openai = new OpenAI({\n  apiKey: 'unused',\n  baseURL: Tollgate.providerBaseUrl('${base}'),\n  fetch: Tollgate.fetch as typeof fetch, // the SDK types its answers loosely (no DOM types in React Native's lib)\n  dangerouslyAllowBrowser: true, // React Native looks like a browser to the openai package\n});\n\n` +
      `export async function ask(): Promise<string | null> {\n  const completion = await openai.chat.completions.create({ model: '${model}', messages: [{ role: 'user', content: 'Hello!' }] });\n  return completion.choices[0]?.message.content ?? null;\n}`
      );
  }
}
