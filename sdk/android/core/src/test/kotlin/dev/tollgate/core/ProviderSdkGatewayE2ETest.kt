package dev.tollgate.core

import com.openai.client.okhttp.OpenAIOkHttpClient
import com.openai.models.chat.completions.ChatCompletionCreateParams
import okhttp3.OkHttpClient
import okhttp3.Request
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/**
 * The official OpenAI Java SDK (com.openai:openai-java 4.x) through the SDK's OkHttp client, against a real gateway and a
 * fake OpenAI that streams a chat completion (https://platform.openai.com/docs/api-reference/chat-streaming): the fake
 * sends the first token, then holds the stream until this test, having received that token, calls its release address.
 * A client that buffered the answer would never see the first token and the test would time out: token by token.
 */
class ProviderSdkGatewayE2ETest {
    @Test
    fun `openai-java streams a chat completion token by token through the Tollgate OkHttp client`() {
        val (client, _) = GatewayE2E.client("kotlin-e2e-openai-java")
        val openai = OpenAIOkHttpClient.builder()
            .baseUrl(client.providerBaseUrl("openai/v1"))
            .apiKey("unused-the-gateway-holds-the-key")
            .okHttpClient(client.okHttpClient())
            .maxRetries(0)
            .build()
        val params = ChatCompletionCreateParams.builder().model("gpt-4o-mini").addUserMessage("Say hello").build()
        val tokens = ArrayList<String>()
        openai.chat().completions().createStreaming(params).use { stream ->
            stream.stream().forEach { chunk ->
                for (choice in chunk.choices()) {
                    choice.delta().content().ifPresent { text ->
                        tokens.add(text)
                        if (tokens.size == 1) release()
                    }
                }
            }
        }
        assertEquals(listOf("Hel", "lo", " world"), tokens)
    }

    @Test
    fun `the text-delta helper reads the same stream through the SDK's own client`() = kotlinx.coroutines.runBlocking {
        val (client, _) = GatewayE2E.client("kotlin-e2e-helpers")
        val body = ChatRequest(ChatApi.OPENAI, "gpt-4o-mini").user("Say hello").stream().body()
        val tokens = ArrayList<String>()
        client.stream(TollgateRequest("POST", "openai/v1/chat/completions", body)).textDeltas(ChatApi.OPENAI).collect { text ->
            tokens.add(text)
            if (tokens.size == 1) release()
        }
        assertEquals(listOf("Hel", "lo", " world"), tokens)
    }

    private fun release() {
        OkHttpClient().newCall(Request.Builder().url(GatewayE2E.env("TOLLGATE_E2E_RELEASE_URL")).build()).execute().close()
    }
}
