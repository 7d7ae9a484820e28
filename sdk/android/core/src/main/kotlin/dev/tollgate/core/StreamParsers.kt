package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement

/** One parsed unit of a streamed response (sdk/conformance/README.md, "Event shapes"). */
public sealed class StreamEvent {
    /**
     * A server-sent event. [event] is `message` when the stream named none; [id] is the last event id (it persists
     * across events, as in the WHATWG specification); [retry] is the `retry:` value of this event's block, if any.
     */
    public data class Sse(val event: String, val data: String, val id: String? = null, val retry: Long? = null) : StreamEvent()

    /** One NDJSON line or one element of a streamed JSON array. */
    public data class Json(val value: JsonElement) : StreamEvent()

    /** Raw bytes as they arrived (audio, images, anything not framed). */
    public class Bytes(public val bytes: ByteArray) : StreamEvent() {
        override fun toString(): String = "Bytes(${bytes.size})"
    }
}

/** The body does not follow its declared format; the client reports it as [TollgateError.NetworkError]. */
public class MalformedStreamException(message: String) : Exception(message)

/**
 * An incremental parser: feed chunks as they arrive, in order; call [finish] once when the body ended cleanly. When the
 * transport fails, do not call [finish]: whatever is pending is dropped.
 */
public interface StreamParser {
    /**
     * Parses [chunk] and appends complete events to [out]. Events found before a format error are appended before
     * [MalformedStreamException] is thrown; after that, the parser refuses further input.
     */
    public fun feed(chunk: ByteArray, out: MutableList<StreamEvent>)

    /** The body ended cleanly: appends what the format allows to flush, or throws [MalformedStreamException]. */
    public fun finish(out: MutableList<StreamEvent>)
}

/** The streaming formats a provider can declare (`GET /v1/providers`, `streaming`). */
public enum class StreamFormat(public val wireName: String) {
    SSE("sse"),
    NDJSON("ndjson"),
    JSON_ARRAY("json-array"),
    RAW("raw");

    /** A new parser for one response. */
    public fun newParser(): StreamParser = when (this) {
        SSE -> SseParser()
        NDJSON -> NdjsonParser()
        JSON_ARRAY -> JsonArrayParser()
        RAW -> RawParser()
    }

    public companion object {
        /** The format named [name] (`sse`, `ndjson`, `json-array`, `raw`), or null. */
        public fun fromWireName(name: String): StreamFormat? = values().firstOrNull { it.wireName == name }

        /**
         * The format of a response whose caller named none, from its `Content-Type` (sdk/conformance `stream-format`):
         * the media type compared case-insensitively, parameters ignored. `text/event-stream` → [SSE];
         * `application/x-ndjson`, `application/ndjson`, `application/jsonl`, `application/x-jsonlines` → [NDJSON];
         * `application/json` and any `+json` type → [JSON_ARRAY]; anything else, or none → [RAW].
         */
        public fun fromContentType(contentType: String?): StreamFormat {
            val media = contentType?.substringBefore(';')?.trim()?.lowercase() ?: return RAW
            return when {
                media == "text/event-stream" -> SSE
                media in NDJSON_TYPES -> NDJSON
                media == "application/json" || (media.startsWith("application/") && media.endsWith("+json")) -> JSON_ARRAY
                else -> RAW
            }
        }

        private val NDJSON_TYPES = setOf("application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines")
    }
}

/** A growable byte buffer (ByteArrayOutputStream without synchronisation). */
internal class ByteBuffer(initial: Int = 256) {
    private var data = ByteArray(initial)
    var size: Int = 0
        private set

    fun add(byte: Byte) {
        if (size == data.size) data = data.copyOf(data.size * 2)
        data[size++] = byte
    }

    fun clear() {
        size = 0
    }

    fun toUtf8(): String = String(data, 0, size, Charsets.UTF_8)

    operator fun get(index: Int): Byte = data[index]
}

/** Drops one UTF-8 byte order mark (EF BB BF) at the very start of a stream, even when it is split across chunks. */
internal class BomSkipper {
    // Not private: read by the inline functions below.
    internal var matched = 0
    internal var decided = false

    /** Calls [sink] with every byte of [chunk] that is content. */
    inline fun feed(chunk: ByteArray, sink: (Byte) -> Unit) {
        var start = 0
        if (!decided) {
            while (start < chunk.size) {
                if (chunk[start] == BOM[matched]) {
                    matched += 1
                    start += 1
                    if (matched == BOM.size) {
                        decided = true
                        break
                    }
                } else {
                    decided = true
                    for (index in 0 until matched) sink(BOM[index])
                    break
                }
            }
        }
        for (index in start until chunk.size) sink(chunk[index])
    }

    /** At a clean end: a partial BOM was content after all. */
    inline fun finish(sink: (Byte) -> Unit) {
        if (!decided) {
            decided = true
            for (index in 0 until matched) sink(BOM[index])
        }
    }

    companion object {
        val BOM = byteArrayOf(0xEF.toByte(), 0xBB.toByte(), 0xBF.toByte())
    }
}

private const val LF: Byte = 0x0A
private const val CR: Byte = 0x0D

/**
 * Server-sent events, as the WHATWG HTML specification ("Parsing an event stream") reads them: CRLF, LF or CR line
 * ends (a CR at the end of one chunk and an LF at the start of the next are one line end), `:` comments, one leading
 * space removed from values, multi-line data joined with `\n`, a leading BOM skipped, and an unterminated block at the
 * end dropped. `data: [DONE]` is not interpreted.
 */
public class SseParser : StreamParser {
    private val bom = BomSkipper()
    private val line = ByteBuffer()
    private var skipLineFeed = false
    private val data = StringBuilder()
    private var hasData = false
    private var eventType = ""
    private var lastEventId = ""
    private var retry: Long? = null

    override fun feed(chunk: ByteArray, out: MutableList<StreamEvent>) {
        bom.feed(chunk) { byte -> accept(byte, out) }
    }

    override fun finish(out: MutableList<StreamEvent>) {
        bom.finish { byte -> accept(byte, out) }
        // End of file: pending data is discarded (WHATWG), so a block without its blank line is not dispatched.
    }

    private fun accept(byte: Byte, out: MutableList<StreamEvent>) {
        if (skipLineFeed) {
            skipLineFeed = false
            if (byte == LF) return
        }
        when (byte) {
            LF -> endLine(out)
            CR -> {
                endLine(out)
                skipLineFeed = true
            }
            else -> line.add(byte)
        }
    }

    private fun endLine(out: MutableList<StreamEvent>) {
        // Decoding whole lines keeps a multi-byte character split across chunks intact.
        val text = line.toUtf8()
        line.clear()
        if (text.isEmpty()) {
            dispatch(out)
            return
        }
        if (text[0] == ':') return
        val colon = text.indexOf(':')
        val field = if (colon < 0) text else text.substring(0, colon)
        var value = if (colon < 0) "" else text.substring(colon + 1)
        if (value.startsWith(' ')) value = value.substring(1)
        when (field) {
            "data" -> {
                data.append(value).append('\n')
                hasData = true
            }
            "event" -> eventType = value
            "id" -> if (!value.contains('\u0000')) lastEventId = value
            "retry" -> if (value.isNotEmpty() && value.all { it in '0'..'9' }) retry = value.toLongOrNull()
        }
    }

    private fun dispatch(out: MutableList<StreamEvent>) {
        if (hasData) {
            data.setLength(data.length - 1)
            out.add(
                StreamEvent.Sse(
                    event = eventType.ifEmpty { "message" },
                    data = data.toString(),
                    id = lastEventId.ifEmpty { null },
                    retry = retry,
                ),
            )
        }
        data.setLength(0)
        hasData = false
        eventType = ""
        retry = null
    }
}

private val lineJson = Json

private fun parseJson(text: String, what: String): JsonElement = try {
    lineJson.parseToJsonElement(text)
} catch (error: Exception) {
    throw MalformedStreamException("$what is not valid JSON: ${error.message?.lineSequence()?.firstOrNull()}")
}

/**
 * Newline-delimited JSON: one JSON value per LF-terminated line (CRLF accepted), blank lines skipped, a leading BOM
 * skipped. A last line without a newline is emitted at a clean end.
 */
public class NdjsonParser : StreamParser {
    private val bom = BomSkipper()
    private val line = ByteBuffer()
    private var failed: MalformedStreamException? = null

    override fun feed(chunk: ByteArray, out: MutableList<StreamEvent>) {
        failed?.let { throw it }
        bom.feed(chunk) { byte -> if (byte == LF) endLine(out) else line.add(byte) }
    }

    override fun finish(out: MutableList<StreamEvent>) {
        failed?.let { throw it }
        bom.finish { byte -> line.add(byte) }
        endLine(out)
    }

    private fun endLine(out: MutableList<StreamEvent>) {
        failed?.let { throw it }
        val text = line.toUtf8()
        line.clear()
        if (text.all { it == ' ' || it == '\t' || it == '\r' }) return
        try {
            out.add(StreamEvent.Json(parseJson(text.removeSuffix("\r"), "An NDJSON line")))
        } catch (error: MalformedStreamException) {
            failed = error
            throw error
        }
    }
}

/**
 * A top-level JSON array streamed element by element (Gemini's `streamGenerateContent` without `alt=sse`). Each
 * element is emitted once complete; strings are tracked so that brackets, braces and commas inside them are content.
 */
public class JsonArrayParser : StreamParser {
    private enum class State { BEFORE_ARRAY, FIRST_ELEMENT_OR_END, ELEMENT, IN_ELEMENT, AFTER_ELEMENT, DONE }

    private val bom = BomSkipper()
    private var state = State.BEFORE_ARRAY
    private val element = ByteBuffer()
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var scalar = false
    private var failed: MalformedStreamException? = null

    override fun feed(chunk: ByteArray, out: MutableList<StreamEvent>) {
        failed?.let { throw it }
        try {
            bom.feed(chunk) { byte -> accept(byte, out) }
        } catch (error: MalformedStreamException) {
            failed = error
            throw error
        }
    }

    override fun finish(out: MutableList<StreamEvent>) {
        failed?.let { throw it }
        bom.finish { byte -> accept(byte, out) }
        if (state != State.DONE) {
            throw MalformedStreamException(if (state == State.BEFORE_ARRAY) "The body is not a JSON array." else "The JSON array ended before its closing ']'.")
        }
    }

    private fun isWhitespace(byte: Byte) = byte == 0x20.toByte() || byte == 0x09.toByte() || byte == LF || byte == CR

    private fun accept(byte: Byte, out: MutableList<StreamEvent>) {
        val char = byte.toInt().toChar()
        when (state) {
            State.BEFORE_ARRAY -> when {
                isWhitespace(byte) -> Unit
                char == '[' -> state = State.FIRST_ELEMENT_OR_END
                else -> throw MalformedStreamException("The body is not a JSON array.")
            }
            State.FIRST_ELEMENT_OR_END, State.ELEMENT -> when {
                isWhitespace(byte) -> Unit
                char == ']' && state == State.FIRST_ELEMENT_OR_END -> state = State.DONE
                char == ']' || char == ',' -> throw MalformedStreamException("A JSON array element is missing.")
                else -> startElement(byte, out)
            }
            State.IN_ELEMENT -> continueElement(byte, out)
            State.AFTER_ELEMENT -> when {
                isWhitespace(byte) -> Unit
                char == ',' -> state = State.ELEMENT
                char == ']' -> state = State.DONE
                else -> throw MalformedStreamException("Expected ',' or ']' between JSON array elements.")
            }
            State.DONE -> if (!isWhitespace(byte)) throw MalformedStreamException("Data after the end of the JSON array.")
        }
    }

    private fun startElement(byte: Byte, out: MutableList<StreamEvent>) {
        element.clear()
        depth = 0
        inString = false
        escaped = false
        scalar = false
        state = State.IN_ELEMENT
        when (byte.toInt().toChar()) {
            '{', '[' -> {
                depth = 1
                element.add(byte)
            }
            '"' -> {
                inString = true
                element.add(byte)
            }
            else -> {
                scalar = true
                element.add(byte)
            }
        }
        if (!inString && depth == 0 && !scalar) complete(out)
    }

    private fun continueElement(byte: Byte, out: MutableList<StreamEvent>) {
        val char = byte.toInt().toChar()
        if (scalar) {
            // A number or literal ends at the next delimiter, which then belongs to the array.
            if (isWhitespace(byte) || char == ',' || char == ']') {
                complete(out)
                accept(byte, out)
            } else {
                element.add(byte)
            }
            return
        }
        element.add(byte)
        if (inString) {
            when {
                escaped -> escaped = false
                char == '\\' -> escaped = true
                char == '"' -> {
                    inString = false
                    if (depth == 0) complete(out)
                }
            }
            return
        }
        when (char) {
            '"' -> inString = true
            '{', '[' -> depth += 1
            '}', ']' -> {
                depth -= 1
                if (depth == 0) complete(out)
            }
        }
    }

    private fun complete(out: MutableList<StreamEvent>) {
        state = State.AFTER_ELEMENT
        out.add(StreamEvent.Json(parseJson(element.toUtf8(), "A JSON array element")))
        element.clear()
    }
}

/** Bytes pass through untouched: each chunk is one [StreamEvent.Bytes]. */
public class RawParser : StreamParser {
    override fun feed(chunk: ByteArray, out: MutableList<StreamEvent>) {
        if (chunk.isNotEmpty()) out.add(StreamEvent.Bytes(chunk.copyOf()))
    }

    override fun finish(out: MutableList<StreamEvent>): Unit = Unit
}
