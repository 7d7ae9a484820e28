package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicContainer
import org.junit.jupiter.api.DynamicNode
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.fail
import java.io.File
import java.util.Base64

/**
 * Runs every vector of sdk/conformance/\*.json (sdk/conformance/README.md): one dynamic test per vector. The folder
 * comes from the `tollgate.conformance.dir` system property (set by the pom), else `../../conformance`.
 */
class ConformanceTest {
    private val directory: File = File(System.getProperty("tollgate.conformance.dir") ?: "../../conformance").canonicalFile

    @TestFactory
    fun conformance(): List<DynamicNode> {
        val files = directory.listFiles { file -> file.name.endsWith(".json") }?.sortedBy { it.name }
            ?: fail("No conformance folder at $directory")
        val required = listOf(
            "request-building.json", "error-mapping.json", "stream-parsing.json", "client-behaviour.json",
            "realtime-close-codes.json", "subprotocols.json", "user-token.json", "me.json",
        )
        assertTrue(files.map { it.name }.containsAll(required), "vector files missing in $directory")
        return files.map { file ->
            val document = Json.parseToJsonElement(file.readText()).jsonObject
            assertEquals(1, document["version"]!!.jsonPrimitive.int, "${file.name}: unknown format version")
            val kind = document["kind"]!!.jsonPrimitive.content
            val vectors = document["vectors"]!!.jsonArray.map { it.jsonObject }
            val constants = document["constants"]?.jsonObject
            assertTrue(vectors.isNotEmpty(), "${file.name} has no vectors")
            DynamicContainer.dynamicContainer(file.name, vectors.map { vector ->
                val name = vector["name"]!!.jsonPrimitive.content
                DynamicTest.dynamicTest(name) {
                    when (kind) {
                        "request-building" -> requestBuilding(vector)
                        "error-mapping" -> errorMapping(vector)
                        "stream-parsing" -> streamParsing(vector)
                        "client-behaviour" -> ClientBehaviourVectors(constants ?: fail("client-behaviour.json has no constants")).run(vector)
                        "realtime-close-codes" -> ProtocolVectors.realtimeClose(vector)
                        "subprotocols" -> ProtocolVectors.subprotocols(vector)
                        "user-token" -> {
                            assertEquals(constants?.get("userTokenMarginMs")?.jsonPrimitive?.long, UserTokens.MARGIN_MS, "userTokenMarginMs")
                            ProtocolVectors.userToken(vector)
                        }
                        "me" -> ProtocolVectors.me(vector)
                        else -> fail("unknown vector kind \"$kind\" in ${file.name}")
                    }
                }
            })
        }
    }

    // ---- request building ----

    private fun requestBuilding(vector: JsonObject) {
        val input = vector["input"]!!.jsonObject
        val expected = vector["expected"]!!.jsonObject
        val build = {
            val builder = RequestBuilder(input.string("baseUrl"), input.string("appToken"), input.string("sdk"))
            val body = input["body"]?.jsonObject?.let { body ->
                body["text"]?.let { RequestBody.Text(it.jsonPrimitive.content) } ?: RequestBody.Bytes(bytesOf(body))
            }
            val query = input["query"]?.jsonArray?.map { pair -> pair.jsonArray[0].jsonPrimitive.content to pair.jsonArray[1].jsonPrimitive.content }
                ?: emptyList()
            val headers = input["headers"]?.jsonObject?.mapValues { it.value.jsonPrimitive.content } ?: emptyMap()
            builder.build(
                TollgateRequest(input.string("method"), input.string("endpoint"), body, query, headers),
                input.string("deviceToken"),
                input["requestTimeMs"]!!.jsonPrimitive.long,
            )
        }
        if (expected.containsKey("error")) {
            assertEquals("invalidRequest", expected.string("error"))
            assertThrows<TollgateError.InvalidRequest> { build() }
            return
        }
        val built = build()
        assertEquals(expected.string("method"), built.method, "method")
        assertEquals(expected.string("url"), built.url, "url")
        assertEquals(expected.string("pathWithQuery"), built.pathWithQuery, "pathWithQuery")
        val expectedHeaders = expected["headers"]!!.jsonObject.entries.associate { it.key.lowercase() to it.value.jsonPrimitive.content }
        val actualHeaders = built.headers.associate { it.first.lowercase() to it.second }
        assertEquals(built.headers.size, actualHeaders.size, "duplicate header names")
        assertEquals(expectedHeaders, actualHeaders, "headers")
        assertEquals(expected.string("bodySha256"), built.bodySha256, "bodySha256")
        assertEquals(expected.string("canonicalRequest"), built.canonicalRequest, "canonicalRequest")
        assertEquals(expected.string("digest"), built.digest, "digest")
        assertEquals(expected.string("digest"), Digest.requestDigest(built.method, built.pathWithQuery, input["requestTimeMs"]!!.jsonPrimitive.long, built.body))
    }

    // ---- error mapping ----

    private fun errorMapping(vector: JsonObject) {
        val input = vector["input"]!!.jsonObject
        val expected = vector["expected"]!!
        val status = input["status"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.int }
        val error: TollgateError? = if (status == null) {
            ErrorMapper.noResponse(java.io.IOException(input["transportError"]?.jsonPrimitive?.content ?: "no response"))
        } else {
            val headers = Headers.of(input["headers"]!!.jsonArray.map { it.jsonArray[0].jsonPrimitive.content to it.jsonArray[1].jsonPrimitive.content })
            val body = input["body"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.content.toByteArray(Charsets.UTF_8) }
            ErrorMapper.map(status, headers, body, input["nowMs"]!!.jsonPrimitive.long)
        }
        if (expected is JsonNull) {
            assertNull(error, "a 2xx is not an error")
            return
        }
        val fields = expected.jsonObject
        if (error == null) fail("expected ${fields.string("kind")}, got no error")
        assertEquals(fields.string("kind"), error.kind, "kind")
        val typed = when (fields.string("kind")) {
            "unauthorized" -> error is TollgateError.Unauthorized
            "attestationFailed" -> error is TollgateError.AttestationFailed
            "rateLimited" -> error is TollgateError.RateLimited
            "secretNotFound" -> error is TollgateError.SecretNotFound
            "invalidRequest" -> error is TollgateError.InvalidRequest
            "networkError" -> error is TollgateError.NetworkError
            "providerError" -> error is TollgateError.ProviderError
            else -> fail("unknown kind ${fields.string("kind")}")
        }
        assertTrue(typed, "class ${error::class.simpleName} for kind ${error.kind}")
        fields["errorType"]?.let { assertEquals(it.jsonPrimitive.content, error.errorType, "errorType") }
        fields["message"]?.let { assertEquals(it.jsonPrimitive.content, error.message, "message") }
        fields["requestId"]?.let { assertEquals(it.jsonPrimitive.content, error.requestId, "requestId") }
        if (fields.containsKey("reason")) {
            val value = fields["reason"]!!
            assertEquals(if (value is JsonNull) null else value.jsonPrimitive.content, error.reason, "reason")
        }
        if (fields.containsKey("retryAfterSeconds")) {
            val value = fields["retryAfterSeconds"]!!
            assertEquals(if (value is JsonNull) null else value.jsonPrimitive.long, (error as TollgateError.RateLimited).retryAfterSeconds, "retryAfterSeconds")
        }
        fields["status"]?.let { assertEquals(it.jsonPrimitive.int, (error as TollgateError.ProviderError).status, "status") }
        fields["body"]?.let { assertEquals(it.jsonPrimitive.content, (error as TollgateError.ProviderError).body, "body") }
    }

    // ---- stream parsing ----

    private fun streamParsing(vector: JsonObject) {
        val format = StreamFormat.fromWireName(vector.string("format")) ?: fail("unknown format ${vector.string("format")}")
        val input = vector["input"]!!.jsonObject
        val expected = vector["expected"]!!.jsonObject
        val chunks = input["chunks"]!!.jsonArray.map { bytesOf(it.jsonObject) }
        val whole = Base64.getDecoder().decode(input.string("base64"))
        input["text"]?.let { assertEquals(it.jsonPrimitive.content, whole.toString(Charsets.UTF_8), "input.text and input.base64 differ") }
        assertTrue(chunks.fold(ByteArray(0)) { all, chunk -> all + chunk }.contentEquals(whole), "chunks do not add up to input.base64")
        val cut = when (input.string("end")) {
            "clean" -> false
            "cut" -> true
            else -> fail("unknown end ${input.string("end")}")
        }
        val expectedError = expected["error"]!!.let { if (it is JsonNull) null else it.jsonPrimitive.content }
        val ways = mapOf(
            "as given" to chunks,
            "whole" to listOf(whole),
            "byte by byte" to whole.map { byteArrayOf(it) },
        )
        for ((way, feed) in ways) {
            val (events, error) = run(format, feed, cut)
            assertEquals(expectedError, error, "error ($way)")
            if (format == StreamFormat.RAW) {
                val bytes = events.fold(ByteArray(0)) { all, event -> all + (event as StreamEvent.Bytes).bytes }
                assertEquals(expected.string("bytes"), Base64.getEncoder().encodeToString(bytes), "bytes ($way)")
            } else {
                assertEquals(expected["events"]!!.jsonArray.map(::expectedEvent), events, "events ($way)")
            }
        }
    }

    /** Feeds [chunks] as the client does; a cut is the transport failing after the last chunk (no finish). */
    private fun run(format: StreamFormat, chunks: List<ByteArray>, cut: Boolean): Pair<List<StreamEvent>, String?> {
        val parser = format.newParser()
        val events = ArrayList<StreamEvent>()
        try {
            for (chunk in chunks) parser.feed(chunk, events)
            if (cut) return events to "networkError"
            parser.finish(events)
        } catch (_: MalformedStreamException) {
            return events to "networkError"
        }
        return events to null
    }

    private fun expectedEvent(element: JsonElement): StreamEvent {
        val event = element.jsonObject
        if (event.containsKey("json")) return StreamEvent.Json(event["json"]!!)
        return StreamEvent.Sse(
            event = event.string("event"),
            data = event.string("data"),
            id = event["id"]?.jsonPrimitive?.content,
            retry = event["retry"]?.jsonPrimitive?.long,
        )
    }

    private fun bytesOf(chunk: JsonObject): ByteArray = chunk["text"]?.jsonPrimitive?.content?.toByteArray(Charsets.UTF_8)
        ?: Base64.getDecoder().decode(chunk["base64"]?.jsonPrimitive?.content ?: fail("bytes need text or base64"))

    private fun JsonObject.string(name: String): String {
        val value = this[name] ?: fail("missing field \"$name\"")
        if (value !is JsonPrimitive || !value.isString) fail("field \"$name\" is not a string")
        return value.content
    }

    @Suppress("unused")
    private fun JsonArray.strings(): List<String> = map { it.jsonPrimitive.content }
}
