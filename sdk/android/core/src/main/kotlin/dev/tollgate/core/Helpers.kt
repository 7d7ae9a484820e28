package dev.tollgate.core

import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.mapNotNull
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import java.io.ByteArrayOutputStream
import java.util.UUID

/** The API shapes the typed helpers know. */
public enum class ChatApi {
    /** OpenAI Chat Completions and the many providers that copy it (Groq, Mistral, DeepSeek, xAI, OpenRouter, …). */
    OPENAI,

    /** Anthropic Messages (`max_tokens` required, the system prompt a top-level field). */
    ANTHROPIC,

    /** Gemini `generateContent` / `streamGenerateContent` (`contents` of `parts`; the model is in the path). */
    GEMINI,
}

/**
 * Builds the JSON body of a chat call, so that an app writes no JSON by hand:
 *
 * ```
 * val body = ChatRequest(ChatApi.OPENAI, model = "gpt-4o-mini").system("Be brief.").user("Hello").stream().body()
 * Tollgate.stream("POST", "openai/v1/chat/completions", body).textDeltas(ChatApi.OPENAI).collect { print(it) }
 * ```
 */
public class ChatRequest(public val api: ChatApi, public val model: String? = null) {
    private val messages = ArrayList<Pair<String, String>>()
    private var system: String? = null
    private var maxTokens: Int? = null
    private var streaming = false

    public fun system(text: String): ChatRequest = apply { system = text }
    public fun user(text: String): ChatRequest = apply { messages.add("user" to text) }
    public fun assistant(text: String): ChatRequest = apply { messages.add("assistant" to text) }
    public fun maxTokens(count: Int): ChatRequest = apply { maxTokens = count }

    /** Asks for a stream (OpenAI and Anthropic: `"stream": true`; Gemini streams by its endpoint, `:streamGenerateContent?alt=sse`). */
    public fun stream(enabled: Boolean = true): ChatRequest = apply { streaming = enabled }

    public fun json(): JsonObject = when (api) {
        ChatApi.OPENAI -> buildJsonObject {
            model?.let { put("model", it) }
            put("messages", buildJsonArray {
                system?.let { add(message("system", it)) }
                for ((role, text) in messages) add(message(role, text))
            })
            maxTokens?.let { put("max_tokens", it) }
            if (streaming) put("stream", true)
        }
        ChatApi.ANTHROPIC -> buildJsonObject {
            model?.let { put("model", it) }
            put("max_tokens", maxTokens ?: 1024)
            system?.let { put("system", it) }
            put("messages", buildJsonArray { for ((role, text) in messages) add(message(role, text)) })
            if (streaming) put("stream", true)
        }
        ChatApi.GEMINI -> buildJsonObject {
            system?.let { put("systemInstruction", buildJsonObject { put("parts", buildJsonArray { add(buildJsonObject { put("text", it) }) }) }) }
            put("contents", buildJsonArray {
                for ((role, text) in messages) {
                    add(buildJsonObject {
                        put("role", if (role == "assistant") "model" else role)
                        put("parts", buildJsonArray { add(buildJsonObject { put("text", text) }) })
                    })
                }
            })
            maxTokens?.let { count -> put("generationConfig", buildJsonObject { put("maxOutputTokens", count) }) }
        }
    }

    /** The body to send. */
    public fun body(): RequestBody = RequestBody.Text(json().toString())

    private fun message(role: String, text: String) = buildJsonObject {
        put("role", role)
        put("content", text)
    }
}

/**
 * The text a streamed chat event carries, or null (role-only deltas, usage, pings, `[DONE]`):
 * OpenAI-style `choices[0].delta.content`; Anthropic `content_block_delta` with a `text_delta`; Gemini
 * `candidates[0].content.parts[*].text`. Works on SSE events and on JSON elements (Gemini without `alt=sse`).
 */
public object TextDeltas {
    private val json = Json { ignoreUnknownKeys = true }

    public fun extract(api: ChatApi, event: StreamEvent): String? {
        val value: JsonElement = when (event) {
            is StreamEvent.Sse -> {
                val data = event.data.trim()
                if (data.isEmpty() || data == "[DONE]") return null
                try {
                    json.parseToJsonElement(data)
                } catch (_: Exception) {
                    return null
                }
            }
            is StreamEvent.Json -> event.value
            is StreamEvent.Bytes -> return null
        }
        return extract(api, value)
    }

    public fun extract(api: ChatApi, value: JsonElement): String? {
        val root = value as? JsonObject ?: return null
        return when (api) {
            ChatApi.OPENAI -> ((root["choices"] as? JsonArray)?.firstOrNull() as? JsonObject)
                ?.let { it["delta"] as? JsonObject }?.text("content")
            ChatApi.ANTHROPIC -> if (root.text("type") == "content_block_delta") {
                (root["delta"] as? JsonObject)?.takeIf { it.text("type") == "text_delta" }?.text("text")
            } else {
                null
            }
            ChatApi.GEMINI -> ((root["candidates"] as? JsonArray)?.firstOrNull() as? JsonObject)
                ?.let { it["content"] as? JsonObject }
                ?.let { it["parts"] as? JsonArray }
                ?.mapNotNull { (it as? JsonObject)?.text("text") }
                ?.takeIf { it.isNotEmpty() }
                ?.joinToString("")
        }?.takeIf { it.isNotEmpty() }
    }

    private fun JsonObject.text(name: String): String? = (this[name] as? JsonPrimitive)?.takeIf { it.isString }?.content
}

/** The text deltas of a chat stream, in order (see [TextDeltas]). */
public fun Flow<StreamEvent>.textDeltas(api: ChatApi): Flow<String> = mapNotNull { TextDeltas.extract(api, it) }

/**
 * A `multipart/form-data` body (RFC 7578) for uploads: Whisper transcriptions, image edits, Deepgram-style forms.
 *
 * ```
 * val form = Multipart().field("model", "whisper-1").file("file", "note.m4a", "audio/mp4", bytes)
 * Tollgate.request("POST", "openai/v1/audio/transcriptions", form.body())
 * ```
 */
public class Multipart(public val boundary: String = "tollgate-" + UUID.randomUUID().toString().replace("-", "")) {
    private val out = ByteArrayOutputStream()

    init {
        require(boundary.matches(Regex("^[0-9A-Za-z'()+_,\\-./:=?]{1,70}$"))) { "Not a valid multipart boundary." }
    }

    public fun field(name: String, value: String): Multipart = part(name, null, null, value.toByteArray(Charsets.UTF_8))

    public fun file(name: String, filename: String, contentType: String, bytes: ByteArray): Multipart = part(name, filename, contentType, bytes)

    private fun part(name: String, filename: String?, contentType: String?, bytes: ByteArray): Multipart = apply {
        val head = StringBuilder("--").append(boundary).append("\r\n")
            .append("Content-Disposition: form-data; name=\"").append(quote(name)).append('"')
        filename?.let { head.append("; filename=\"").append(quote(it)).append('"') }
        head.append("\r\n")
        contentType?.let { head.append("Content-Type: ").append(it.filter { c -> c != '\r' && c != '\n' }).append("\r\n") }
        head.append("\r\n")
        out.write(head.toString().toByteArray(Charsets.UTF_8))
        out.write(bytes)
        out.write("\r\n".toByteArray())
    }

    /** The `Content-Type` to send with [bytes]. */
    public val contentType: String get() = "multipart/form-data; boundary=$boundary"

    /** The encoded form, closing delimiter included. */
    public fun bytes(): ByteArray = out.toByteArray() + "--$boundary--\r\n".toByteArray(Charsets.UTF_8)

    /** The body to send (its default `Content-Type` is [contentType]). */
    public fun body(): RequestBody = RequestBody.Bytes(bytes(), contentType)

    /** RFC 7578 §4.2: quotes and line breaks in names are percent-encoded. */
    private fun quote(value: String): String = value.replace("\"", "%22").replace("\r", "%0D").replace("\n", "%0A")
}
