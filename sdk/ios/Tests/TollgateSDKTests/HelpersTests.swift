import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import TollgateSDK

/// The typed helpers: chat bodies in each provider's documented shape, text deltas from each streaming format, and
/// multipart bodies. Formats: https://platform.openai.com/docs/api-reference/chat-streaming,
/// https://docs.anthropic.com/en/docs/build-with-claude/streaming, https://ai.google.dev/api/generate-content.
final class HelpersTests: XCTestCase {
    func testChatRequestPerDialect() throws {
        let chat = ChatRequest(model: "m", messages: [.user("Hi")], system: "Be brief", maxTokens: 50, stream: true)
        let openAI = chat.request(.openAI())
        XCTAssertEqual(openAI.endpoint, "openai/v1/chat/completions")
        let openAIBody = try JSONValue.parse(openAI.body?.data ?? Data())
        XCTAssertEqual(openAIBody["messages"]?[0]?["role"]?.stringValue, "system")
        XCTAssertEqual(openAIBody["messages"]?[1]?["content"]?.stringValue, "Hi")
        XCTAssertEqual(openAIBody["stream"]?.boolValue, true)
        let anthropic = chat.request(.anthropic)
        XCTAssertEqual(anthropic.endpoint, "anthropic/v1/messages")
        XCTAssertEqual(anthropic.headers.first?.name, "anthropic-version")
        XCTAssertEqual(try JSONValue.parse(anthropic.body?.data ?? Data())["system"]?.stringValue, "Be brief")
        let gemini = chat.request(.gemini)
        XCTAssertEqual(gemini.endpoint, "gemini/v1beta/models/m:streamGenerateContent?alt=sse")
        XCTAssertEqual(try JSONValue.parse(gemini.body?.data ?? Data())["contents"]?[0]?["parts"]?[0]?["text"]?.stringValue, "Hi")
        XCTAssertNoThrow(try RequestBuilder(baseURL: "https://g.example", appToken: "at_x", sdk: "ios/1.2.0").build(gemini, deviceToken: "t", requestTimeMs: 1))
    }

    func testTextDeltas() {
        func sse(_ data: String, _ event: String = "message") -> StreamEvent { .sse(ServerSentEvent(event: event, data: data)) }
        XCTAssertEqual(TextDelta.text(in: sse(#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#)), "Hel")
        XCTAssertNil(TextDelta.text(in: sse(#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#)))
        XCTAssertNil(TextDelta.text(in: sse("[DONE]")))
        XCTAssertEqual(TextDelta.text(in: sse(#"{"type":"response.output_text.delta","delta":"lo"}"#)), "lo")
        XCTAssertEqual(TextDelta.text(in: sse(#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"!"}}"#, "content_block_delta")), "!")
        XCTAssertNil(TextDelta.text(in: sse(#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#)))
        XCTAssertEqual(TextDelta.text(in: .json(try! JSONValue.parse(Data(#"{"candidates":[{"content":{"parts":[{"text":"a"},{"text":"b"}]}}]}"#.utf8)))), "ab")
        XCTAssertNil(TextDelta.text(in: .bytes(Data([1, 2]))))
    }

    func testMultipartBody() {
        let form = MultipartBody(boundary: "B").field("model", "whisper-1").file("file", data: Data([0, 255]), filename: "a.m4a", contentType: "audio/mp4")
        var expected = Data("--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n".utf8)
        expected.append(Data("--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.m4a\"\r\nContent-Type: audio/mp4\r\n\r\n".utf8))
        expected.append(Data([0, 255]))
        expected.append(Data("\r\n--B--\r\n".utf8))
        XCTAssertEqual(form.data, expected)
        XCTAssertEqual(form.contentType, "multipart/form-data; boundary=B")
        XCTAssertEqual(form.body.defaultContentType, "multipart/form-data; boundary=B")
    }

    #if canImport(Darwin)
    /// A provider SDK's URLSession (MacPaw OpenAI, SwiftOpenAI take one) routed through Tollgate: the Tollgate headers
    /// replace the SDK's placeholder key, the body is sent as given, and the streamed answer comes back.
    func testURLProtocolRoutesAProviderSessionThroughTollgate() async throws {
        let base = "https://urlprotocol.example.com"
        let answer = ClientTests.ScriptedTransport.Answer(status: 200, headers: [(name: "Content-Type", value: "text/event-stream")],
                                                          body: Data("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n".utf8))
        let transport = ClientTests.ScriptedTransport([answer])
        let client = try TollgateClient(baseURL: URL(string: base)!, appToken: "at_0123456789abcdefghijABCDEFGHIJkl",
                                        deviceTokens: StaticDeviceToken("e30.e30.c2ln"), transport: transport)
        let session = URLSession(configuration: TollgateURLProtocol.configuration(client: client, gatewayURL: base))
        var request = URLRequest(url: URL(string: base + "/v1/proxy/openai/v1/chat/completions")!)
        request.httpMethod = "POST"
        request.setValue("Bearer unused", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"stream":true}"#.utf8)
        let (data, response) = try await session.data(for: request)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertTrue(String(decoding: data, as: UTF8.self).contains("Hi"))
        let sent = try XCTUnwrap(transport.calls.first)
        XCTAssertEqual(sent.url, base + "/v1/proxy/openai/v1/chat/completions")
        XCTAssertNil(sent.headers.first { $0.name.lowercased() == "authorization" }, "the placeholder key never travels")
        XCTAssertEqual(sent.headers.first { $0.name == "Tollgate-App-Token" }?.value, "at_0123456789abcdefghijABCDEFGHIJkl")
        XCTAssertEqual(sent.body, Data(#"{"stream":true}"#.utf8))
    }
    #endif
}
