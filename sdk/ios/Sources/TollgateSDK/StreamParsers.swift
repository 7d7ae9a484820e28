import Foundation

/// A server-sent event. `event` is `message` when the stream named none; `id` is the last event id (it persists
/// across events, as in the WHATWG specification), nil when empty; `retry` is the `retry:` value of this event's block.
public struct ServerSentEvent: Sendable, Equatable {
    public var event: String
    public var data: String
    public var id: String?
    public var retry: Int?

    public init(event: String = "message", data: String, id: String? = nil, retry: Int? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// One parsed unit of a streamed response (sdk/conformance/README.md, "Event shapes").
public enum StreamEvent: Sendable, Equatable {
    /// A server-sent event (`sse` format). `data: [DONE]` arrives as an ordinary event.
    case sse(ServerSentEvent)
    /// One NDJSON line or one element of a streamed JSON array.
    case json(JSONValue)
    /// Raw bytes as they arrived (audio, images, anything not framed).
    case bytes(Data)
}

/// The streaming formats a provider can declare (`GET /v1/providers`, `streaming`).
public enum StreamFormat: String, Sendable, CaseIterable {
    case sse = "sse"
    case ndjson = "ndjson"
    case jsonArray = "json-array"
    case raw = "raw"

    /// A new parser for one response.
    public func makeParser() -> StreamParser {
        switch self {
        case .sse: return SSEParser()
        case .ndjson: return NDJSONParser()
        case .jsonArray: return JSONArrayParser()
        case .raw: return RawParser()
        }
    }

    /// The format a response's `Content-Type` implies: `text/event-stream` → sse, NDJSON types → ndjson, JSON →
    /// json-array (Gemini's `streamGenerateContent` without `alt=sse`), anything else → raw.
    public static func forContentType(_ contentType: String?) -> StreamFormat {
        let type = (contentType ?? "").split(separator: ";", maxSplits: 1).first.map(String.init)?
            .trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        switch type {
        case "text/event-stream": return .sse
        case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines": return .ndjson
        case "application/json": return .jsonArray
        default: return type.hasSuffix("+json") ? .jsonArray : .raw
        }
    }
}

/// The body does not follow its declared format; the client reports it as ``TollgateError/networkError(_:)``.
public struct MalformedStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// What one call to a parser produced: the complete events, then, if the format broke, the error. Events found before
/// a format error are always delivered before it (conformance README: "fails … after the events before it").
public struct StreamParseResult: Sendable, Equatable {
    public var events: [StreamEvent]
    public var error: MalformedStreamError?

    public init(events: [StreamEvent] = [], error: MalformedStreamError? = nil) {
        self.events = events
        self.error = error
    }
}

/// An incremental parser: feed chunks as they arrive, in order; call ``finish()`` once when the body ended cleanly.
/// When the transport fails (a cut), do not call ``finish()``: whatever is pending is dropped, and the stream fails
/// with `networkError`. After a format error the parser refuses further input (it answers the same error).
public protocol StreamParser: AnyObject {
    /// Parses `bytes` (any chunking: one byte, a whole body, a split multi-byte character).
    func feed<Bytes: Sequence>(_ bytes: Bytes) -> StreamParseResult where Bytes.Element == UInt8
    /// The body ended cleanly: flushes what the format allows, or reports a format error.
    func finish() -> StreamParseResult
}

/// Drops one UTF-8 byte order mark (EF BB BF) at the very start of a stream, even when it is split across chunks; a
/// partial BOM followed by something else (or by a clean end) was content after all and is passed on.
final class BOMSkipper {
    private static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    private var matched = 0
    private var decided = false

    /// Calls `sink` with each content byte that `byte` releases (none, one, or the held partial BOM and `byte`).
    func push(_ byte: UInt8, _ sink: (UInt8) -> Void) {
        if !decided {
            if byte == BOMSkipper.bom[matched] {
                matched += 1
                if matched == BOMSkipper.bom.count { decided = true }
                return
            }
            decided = true
            for index in 0..<matched { sink(BOMSkipper.bom[index]) }
        }
        sink(byte)
    }

    /// At a clean end: a partial BOM was content.
    func finish(_ sink: (UInt8) -> Void) {
        if !decided {
            decided = true
            for index in 0..<matched { sink(BOMSkipper.bom[index]) }
        }
    }
}

private let lineFeed: UInt8 = 0x0A
private let carriageReturn: UInt8 = 0x0D

// MARK: - SSE

/// Server-sent events as the WHATWG HTML specification ("Parsing an event stream") reads them.
///
/// - Lines end with CRLF, LF or CR, mixed freely; a CR ending one chunk and an LF starting the next are one line end
///   (`skipLineFeed`).
/// - Lines are decoded as UTF-8 whole (with U+FFFD for invalid bytes), so a character split across chunks is intact.
///   The split at the first `:` is done on bytes: `:` is ASCII and never part of a multi-byte sequence, so this equals
///   splitting the decoded line.
/// - An empty line dispatches; a block without `data` emits nothing; the last event id persists; `retry` only when all
///   digits; at a clean end an unterminated block is dropped (no error). `data: [DONE]` is not interpreted.
///
/// Walkthrough, vector-style: `"data: a\r\ndata:b\r\n\r\n"` → field `data`, value `a` (one leading space removed),
/// then `b` (no space to remove) → buffer `"a\nb\n"` → the empty line emits `{event: "message", data: "a\nb"}`.
public final class SSEParser: StreamParser {
    private let bom = BOMSkipper()
    private var line: [UInt8] = []
    private var skipLineFeed = false
    private var data = ""
    private var hasData = false
    private var eventType = ""
    private var lastEventId = ""
    private var retry: Int?
    private var out: [StreamEvent] = []

    public init() {}

    public func feed<Bytes: Sequence>(_ bytes: Bytes) -> StreamParseResult where Bytes.Element == UInt8 {
        for byte in bytes {
            bom.push(byte) { accept($0) }
        }
        return take()
    }

    public func finish() -> StreamParseResult {
        bom.finish { accept($0) }
        // End of file: pending data is discarded (WHATWG), so a block without its blank line is not dispatched, and a
        // last line without its line end is dropped with it.
        return take()
    }

    private func take() -> StreamParseResult {
        defer { out = [] }
        return StreamParseResult(events: out, error: nil)
    }

    private func accept(_ byte: UInt8) {
        if skipLineFeed {
            skipLineFeed = false
            if byte == lineFeed { return }
        }
        switch byte {
        case lineFeed:
            endLine()
        case carriageReturn:
            endLine()
            skipLineFeed = true
        default:
            line.append(byte)
        }
    }

    private func endLine() {
        let bytes = line
        line.removeAll(keepingCapacity: true)
        if bytes.isEmpty {
            dispatch()
            return
        }
        if bytes[0] == UInt8(ascii: ":") { return } // comment
        let field: String
        var valueBytes: ArraySlice<UInt8>
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: bytes[..<colon], as: UTF8.self)
            valueBytes = bytes[(colon + 1)...]
            if valueBytes.first == UInt8(ascii: " ") { valueBytes = valueBytes.dropFirst() }
        } else {
            field = String(decoding: bytes, as: UTF8.self)
            valueBytes = []
        }
        switch field {
        case "data":
            data += String(decoding: valueBytes, as: UTF8.self)
            data += "\n"
            hasData = true
        case "event":
            eventType = String(decoding: valueBytes, as: UTF8.self)
        case "id":
            if !valueBytes.contains(0) { lastEventId = String(decoding: valueBytes, as: UTF8.self) }
        case "retry":
            if !valueBytes.isEmpty, valueBytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                retry = Int(String(decoding: valueBytes, as: UTF8.self))
            }
        default:
            break // any other field is ignored
        }
    }

    private func dispatch() {
        if hasData {
            data.removeLast() // the final "\n"
            out.append(.sse(ServerSentEvent(
                event: eventType.isEmpty ? "message" : eventType,
                data: data,
                id: lastEventId.isEmpty ? nil : lastEventId,
                retry: retry
            )))
        }
        data = ""
        hasData = false
        eventType = ""
        retry = nil
    }
}

// MARK: - NDJSON

/// Newline-delimited JSON: one JSON value per LF-terminated line (a CR before the LF is removed), blank or
/// whitespace-only lines skipped, a leading BOM skipped. A last line without its newline is emitted at a clean end
/// (never at a cut, where ``finish()`` is not called).
public final class NDJSONParser: StreamParser {
    private let bom = BOMSkipper()
    private var line: [UInt8] = []
    private var failure: MalformedStreamError?
    private var out: [StreamEvent] = []

    public init() {}

    public func feed<Bytes: Sequence>(_ bytes: Bytes) -> StreamParseResult where Bytes.Element == UInt8 {
        for byte in bytes {
            if failure != nil { break }
            bom.push(byte) { content in
                if content == lineFeed { endLine() } else { line.append(content) }
            }
        }
        return take()
    }

    public func finish() -> StreamParseResult {
        if failure == nil {
            bom.finish { line.append($0) }
            endLine()
        }
        return take()
    }

    private func take() -> StreamParseResult {
        defer { out = [] }
        return StreamParseResult(events: out, error: failure)
    }

    private func endLine() {
        if failure != nil { return }
        var bytes = line
        line.removeAll(keepingCapacity: true)
        // Empty, or only space / tab / CR: skipped.
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == carriageReturn }) { return }
        if bytes.last == carriageReturn { bytes.removeLast() }
        do {
            out.append(.json(try JSONValue.parse(bytes)))
        } catch {
            failure = MalformedStreamError(message: "An NDJSON line is not valid JSON: \(error)")
        }
    }
}

// MARK: - JSON array

/// A top-level JSON array streamed element by element (Gemini's `streamGenerateContent` without `alt=sse`). Each
/// element is emitted once complete; strings are tracked (with `\"` and `\\` escapes) so that brackets, braces and
/// commas inside them are content. A number or literal ends at the next `,`, `]` or whitespace.
///
/// Walkthrough: `[{"a":"]"} , 2 ]` → `[` opens; `{` starts an object element (depth 1); the `]` inside `"…"` is
/// string content; `}` closes it (depth 0) → event `{"a":"]"}`; whitespace, `,` → next element; `2` starts a scalar,
/// the space ends it → event `2`; `]` closes the array. A clean end before `]` (`[1,2`) or `[1 2]` is an error.
public final class JSONArrayParser: StreamParser {
    private enum State { case beforeArray, firstElementOrEnd, element, inElement, afterElement, done }

    private let bom = BOMSkipper()
    private var state = State.beforeArray
    private var element: [UInt8] = []
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var scalar = false
    private var failure: MalformedStreamError?
    private var out: [StreamEvent] = []

    public init() {}

    public func feed<Bytes: Sequence>(_ bytes: Bytes) -> StreamParseResult where Bytes.Element == UInt8 {
        for byte in bytes {
            if failure != nil { break }
            bom.push(byte) { accept($0) }
        }
        return take()
    }

    public func finish() -> StreamParseResult {
        if failure == nil {
            bom.finish { accept($0) }
            if failure == nil, state != .done {
                fail(state == .beforeArray ? "The body is not a JSON array." : "The JSON array ended before its closing ']'.")
            }
        }
        return take()
    }

    private func take() -> StreamParseResult {
        defer { out = [] }
        return StreamParseResult(events: out, error: failure)
    }

    private func fail(_ message: String) {
        if failure == nil { failure = MalformedStreamError(message: message) }
    }

    private func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == lineFeed || byte == carriageReturn
    }

    private func accept(_ byte: UInt8) {
        if failure != nil { return }
        switch state {
        case .beforeArray:
            if isWhitespace(byte) { return }
            if byte == UInt8(ascii: "[") { state = .firstElementOrEnd } else { fail("The body is not a JSON array.") }
        case .firstElementOrEnd, .element:
            if isWhitespace(byte) { return }
            if byte == UInt8(ascii: "]"), state == .firstElementOrEnd {
                state = .done
            } else if byte == UInt8(ascii: "]") || byte == UInt8(ascii: ",") {
                fail("A JSON array element is missing.")
            } else {
                startElement(byte)
            }
        case .inElement:
            continueElement(byte)
        case .afterElement:
            if isWhitespace(byte) { return }
            if byte == UInt8(ascii: ",") {
                state = .element
            } else if byte == UInt8(ascii: "]") {
                state = .done
            } else {
                fail("Expected ',' or ']' between JSON array elements.")
            }
        case .done:
            if !isWhitespace(byte) { fail("Data after the end of the JSON array.") }
        }
    }

    private func startElement(_ byte: UInt8) {
        element.removeAll(keepingCapacity: true)
        depth = 0
        inString = false
        escaped = false
        scalar = false
        state = .inElement
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth = 1
        case UInt8(ascii: "\""): inString = true
        default: scalar = true
        }
        element.append(byte)
    }

    private func continueElement(_ byte: UInt8) {
        if scalar {
            // A number or literal ends at the next delimiter, which then belongs to the array.
            if isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") {
                complete()
                accept(byte)
            } else {
                element.append(byte)
            }
            return
        }
        element.append(byte)
        if inString {
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                if depth == 0 { complete() }
            }
            return
        }
        switch byte {
        case UInt8(ascii: "\""): inString = true
        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            depth -= 1
            if depth == 0 { complete() }
        default: break
        }
    }

    private func complete() {
        state = .afterElement
        do {
            out.append(.json(try JSONValue.parse(element)))
        } catch {
            fail("A JSON array element is not valid JSON: \(error)")
        }
        element.removeAll(keepingCapacity: true)
    }
}

// MARK: - Raw

/// Bytes pass through untouched (no BOM skipping, no line handling): each non-empty chunk is one `.bytes` event.
public final class RawParser: StreamParser {
    public init() {}

    public func feed<Bytes: Sequence>(_ bytes: Bytes) -> StreamParseResult where Bytes.Element == UInt8 {
        let chunk = Data(bytes)
        return StreamParseResult(events: chunk.isEmpty ? [] : [.bytes(chunk)], error: nil)
    }

    public func finish() -> StreamParseResult {
        StreamParseResult()
    }
}
