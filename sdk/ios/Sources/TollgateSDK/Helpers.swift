import Foundation

/// A chat request for the three common wire formats, so that an app does not write provider JSON by hand:
///
/// ```swift
/// let chat = ChatRequest(model: "gpt-4o-mini", messages: [.user("Hello")], stream: true)
/// for try await event in Tollgate.stream(chat.request(.openAI())) {
///     if let text = TextDelta.text(in: event) { append(text) }
/// }
/// ```
public struct ChatRequest: Sendable, Equatable {
    /// The provider's wire format.
    public enum Dialect: Sendable, Equatable {
        /// OpenAI Chat Completions and every OpenAI-compatible API (`{slug}/v1/chat/completions`).
        case openAI(slug: String = "openai")
        /// Anthropic Messages (`anthropic/v1/messages`, `anthropic-version: 2023-06-01`).
        case anthropic
        /// Gemini `generateContent` / `streamGenerateContent?alt=sse` (`gemini/v1beta/models/{model}:…`).
        case gemini
    }

    public struct Message: Sendable, Equatable {
        public var role: String
        public var content: String

        public init(role: String, content: String) {
            self.role = role
            self.content = content
        }

        public static func user(_ text: String) -> Message { Message(role: "user", content: text) }
        public static func assistant(_ text: String) -> Message { Message(role: "assistant", content: text) }
    }

    public var model: String
    public var messages: [Message]
    public var system: String?
    public var maxTokens: Int?
    public var stream: Bool

    public init(model: String, messages: [Message], system: String? = nil, maxTokens: Int? = nil, stream: Bool = false) {
        self.model = model
        self.messages = messages
        self.system = system
        self.maxTokens = maxTokens
        self.stream = stream
    }

    /// The endpoint, body and headers for `dialect`.
    public func request(_ dialect: Dialect) -> TollgateRequest {
        switch dialect {
        case .openAI(let slug):
            var wire: [[String: String]] = []
            if let system { wire.append(["role": "system", "content": system]) }
            for message in messages { wire.append(["role": message.role, "content": message.content]) }
            var body: [String: Any] = ["model": model, "messages": wire]
            if let maxTokens { body["max_tokens"] = maxTokens }
            if stream { body["stream"] = true }
            return TollgateRequest(method: "POST", endpoint: "\(slug)/v1/chat/completions", body: .json(Self.encode(body)))
        case .anthropic:
            let wire: [[String: String]] = messages.map { ["role": $0.role, "content": $0.content] }
            var body: [String: Any] = ["model": model, "max_tokens": maxTokens ?? 1024, "messages": wire]
            if let system { body["system"] = system }
            if stream { body["stream"] = true }
            return TollgateRequest(method: "POST", endpoint: "anthropic/v1/messages", body: .json(Self.encode(body)),
                                   headers: [(name: "anthropic-version", value: "2023-06-01")])
        case .gemini:
            var contents: [[String: Any]] = []
            for message in messages {
                contents.append(["role": message.role == "assistant" ? "model" : "user", "parts": [["text": message.content]]])
            }
            var body: [String: Any] = ["contents": contents]
            if let system { body["systemInstruction"] = ["parts": [["text": system]]] }
            if let maxTokens { body["generationConfig"] = ["maxOutputTokens": maxTokens] }
            let method = stream ? "streamGenerateContent?alt=sse" : "generateContent"
            return TollgateRequest(method: "POST", endpoint: "gemini/v1beta/models/\(model):\(method)", body: .json(Self.encode(body)))
        }
    }

    private static func encode(_ object: [String: Any]) -> Data {
        // Strings, numbers, booleans, arrays and dictionaries only: serialization cannot fail.
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    }
}

/// The generated text carried by one stream event, for the common streaming formats; nil for events that carry none
/// (role announcements, usage, pings, `[DONE]`):
/// - OpenAI Chat Completions and compatible APIs: `choices[0].delta.content`;
/// - OpenAI Responses: `response.output_text.delta` events' `delta`;
/// - Anthropic Messages: `content_block_delta` events with a `text_delta`;
/// - Gemini: `candidates[0].content.parts[].text` (SSE with `alt=sse`, or the JSON-array stream).
public enum TextDelta {
    public static func text(in event: StreamEvent) -> String? {
        let value: JSONValue
        switch event {
        case .sse(let sse):
            guard sse.data != "[DONE]", let parsed = try? JSONValue.parse(Data(sse.data.utf8)) else { return nil }
            value = parsed
        case .json(let json):
            value = json
        case .bytes:
            return nil
        }
        return text(in: value)
    }

    public static func text(in value: JSONValue) -> String? {
        if let content = value["choices"]?[0]?["delta"]?["content"]?.stringValue { return content }
        switch value["type"]?.stringValue {
        case "response.output_text.delta":
            return value["delta"]?.stringValue
        case "content_block_delta":
            return value["delta"]?["type"]?.stringValue == "text_delta" ? value["delta"]?["text"]?.stringValue : nil
        default:
            break
        }
        if let parts = value["candidates"]?[0]?["content"]?["parts"]?.arrayValue {
            let texts = parts.compactMap { $0["text"]?.stringValue }
            return texts.isEmpty ? nil : texts.joined()
        }
        return nil
    }
}

/// A `multipart/form-data` body (RFC 7578) for uploads: Whisper and other transcriptions, image edits, Deepgram.
///
/// ```swift
/// let form = MultipartBody().field("model", "whisper-1").file("file", data: audio, filename: "clip.m4a", contentType: "audio/mp4")
/// let reply = try await Tollgate.request(endpoint: "openai/v1/audio/transcriptions", method: "POST", body: form.body)
/// ```
public struct MultipartBody: Sendable, Equatable {
    private enum Part: Sendable, Equatable {
        case field(name: String, value: String)
        case file(name: String, data: Data, filename: String, contentType: String)
    }

    public let boundary: String
    private var parts: [Part] = []

    public init(boundary: String = "TollgateBoundary" + UUID().uuidString.replacingOccurrences(of: "-", with: "")) {
        self.boundary = boundary
    }

    public func field(_ name: String, _ value: String) -> MultipartBody {
        var copy = self
        copy.parts.append(.field(name: name, value: value))
        return copy
    }

    public func file(_ name: String, data: Data, filename: String, contentType: String = "application/octet-stream") -> MultipartBody {
        var copy = self
        copy.parts.append(.file(name: name, data: data, filename: filename, contentType: contentType))
        return copy
    }

    /// `multipart/form-data; boundary=…`
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The encoded bytes.
    public var data: Data {
        var out = Data()
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
                .replacingOccurrences(of: "\"", with: "%22") + "\""
        }
        for part in parts {
            switch part {
            case .field(let name, let value):
                out.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\(quoted(name))\r\n\r\n\(value)\r\n".utf8))
            case .file(let name, let data, let filename, let contentType):
                out.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\(quoted(name)); filename=\(quoted(filename))\r\nContent-Type: \(contentType)\r\n\r\n".utf8))
                out.append(data)
                out.append(Data("\r\n".utf8))
            }
        }
        out.append(Data("--\(boundary)--\r\n".utf8))
        return out
    }

    /// The body to send (its Content-Type names the boundary).
    public var body: RequestBody { .bytes(data, contentType: contentType) }
}
