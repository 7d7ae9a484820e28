import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import TollgateSDK

/// The client against a scripted transport: configuration, headers on the wire, token refresh, retries, streams.
final class ClientTests: XCTestCase {
    /// Answers each call with the next scripted response and records what was sent.
    final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
        struct Answer {
            var status: Int
            var headers: HeaderPairs = []
            var body: Data = Data()
            /// Bytes after which the body fails (a cut), for streams.
            var cutAfter: Int?
        }

        private let lock = NSLock()
        private var answers: [Answer]
        private var sent: [HTTPCall] = []

        init(_ answers: [Answer]) {
            self.answers = answers
        }

        /// What was sent, in order.
        var calls: [HTTPCall] {
            lock.lock()
            defer { lock.unlock() }
            return sent
        }

        /// Adds answers for later calls.
        func enqueue(_ more: [Answer]) {
            lock.lock()
            answers += more
            lock.unlock()
        }

        private func next(_ call: HTTPCall) -> Answer {
            lock.lock()
            defer { lock.unlock() }
            sent.append(call)
            return answers.isEmpty ? Answer(status: 500, body: Data("no more answers".utf8)) : answers.removeFirst()
        }

        func data(for call: HTTPCall) async throws -> (HTTPResponseHead, Data) {
            let answer = next(call)
            return (HTTPResponseHead(status: answer.status, headers: answer.headers), answer.body)
        }

        func bytes(for call: HTTPCall) async throws -> (HTTPResponseHead, HTTPBodyStream) {
            let answer = next(call)
            let cursor = CuttingCursor(Array(answer.body), cutAfter: answer.cutAfter)
            let body = HTTPBodyStream(next: { try cursor.next() })
            return (HTTPResponseHead(status: answer.status, headers: answer.headers), body)
        }
    }

    /// Hands out bytes, then fails (a cut) after `cutAfter` bytes when set.
    final class CuttingCursor: @unchecked Sendable {
        private let lock = NSLock()
        private let bytes: [UInt8]
        private let cutAfter: Int?
        private var index = 0

        init(_ bytes: [UInt8], cutAfter: Int?) {
            self.bytes = bytes
            self.cutAfter = cutAfter
        }

        func next() throws -> UInt8? {
            lock.lock()
            defer { lock.unlock() }
            if let cutAfter = cutAfter, index >= cutAfter { throw URLError(.networkConnectionLost) }
            guard index < bytes.count else { return nil }
            index += 1
            return bytes[index - 1]
        }
    }

    /// Counts attestations and hands out numbered tokens.
    actor CountingTokens: DeviceTokenSource {
        private(set) var issued = 0
        private(set) var invalidated: [String] = []
        private var current: String?

        func deviceToken() async throws -> String {
            if let current = current { return current }
            issued += 1
            let token = "dt-\(issued)"
            current = token
            return token
        }

        func invalidate(_ token: String) async {
            invalidated.append(token)
            if current == token { current = nil }
        }
    }

    private func client(_ transport: ScriptedTransport, tokens: DeviceTokenSource = StaticDeviceToken("device-token"),
                        retry: RetryPolicy = .none) throws -> TollgateClient {
        try TollgateClient(baseURL: URL(string: "https://gateway.example.com")!, appToken: "at_test", deviceTokens: tokens,
                           transport: transport, retry: retry, clock: { 1_764_000_000_000 })
    }

    func testCallBeforeConfigureThrowsInvalidRequest() async {
        Tollgate.reset()
        do {
            _ = try await Tollgate.request(endpoint: "openai/v1/chat/completions", method: "POST", body: Data("{}".utf8))
            XCTFail("expected invalidRequest")
        } catch TollgateError.invalidRequest(let details) {
            XCTAssertEqual(details.message, "call Tollgate.configure(appToken:) at app start")
            XCTAssertEqual(details.reason, "not_initialized")
        } catch {
            XCTFail("unexpected \(error)")
        }
        var failed = false
        do {
            for try await _ in Tollgate.shared.stream(endpoint: "openai/v1/chat/completions", method: "POST") {}
        } catch TollgateError.invalidRequest {
            failed = true
        } catch {
            XCTFail("unexpected \(error)")
        }
        XCTAssertTrue(failed)
    }

    func testConfigureWithBadGatewayURLThrowsAndReportsOnEachCall() async {
        defer { Tollgate.reset() }
        XCTAssertThrowsError(try Tollgate.configure(appToken: "at_test", gatewayURL: "ftp://gateway.example.com")) { error in
            XCTAssertEqual((error as? TollgateError)?.kind, .invalidRequest)
            XCTAssertEqual((error as? TollgateError)?.reason, "gateway_url_missing")
        }
        XCTAssertFalse(Tollgate.isConfigured)
        do {
            _ = try await Tollgate.request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected invalidRequest")
        } catch TollgateError.invalidRequest(let details) {
            XCTAssertEqual(details.reason, "gateway_url_missing")
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testConfigureWithExplicitGatewayURL() async throws {
        defer { Tollgate.reset() }
        let transport = ScriptedTransport([])
        try Tollgate.configure(appToken: "at_configured", gatewayURL: "https://gateway.example.com/", transport: transport)
        XCTAssertTrue(Tollgate.isConfigured)
    }

    func testRequestSendsTheTollgateHeaders() async throws {
        let transport = ScriptedTransport([.init(status: 200, headers: [(name: "Tollgate-Request-Id", value: "req_1")], body: Data(#"{"ok":true}"#.utf8))])
        let response = try await client(transport).request(endpoint: "openai/v1/chat/completions", method: "POST", body: Data("{}".utf8),
                                                           headers: ["x-title": "demo"])
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(try response.json()["ok"], .bool(true))
        XCTAssertEqual(response.requestId, "req_1")
        let call = try XCTUnwrap(transport.calls.first)
        XCTAssertEqual(call.url, "https://gateway.example.com/v1/proxy/openai/v1/chat/completions")
        XCTAssertEqual(call.method, "POST")
        let headers = Dictionary(uniqueKeysWithValues: call.headers.map { ($0.name.lowercased(), $0.value) })
        XCTAssertEqual(headers["tollgate-app-token"], "at_test")
        XCTAssertEqual(headers["tollgate-device-token"], "device-token")
        XCTAssertEqual(headers["tollgate-request-time"], "1764000000000")
        XCTAssertEqual(headers["tollgate-sdk"], "ios/1.2.0")
        XCTAssertEqual(headers["content-type"], "application/json")
        XCTAssertEqual(headers["x-title"], "demo")
        XCTAssertNil(headers["tollgate-assertion"])
    }

    func testUnsafeEndpointIsRefusedBeforeSending() async throws {
        let transport = ScriptedTransport([])
        do {
            _ = try await client(transport).request(endpoint: "openai/v1/%2e%2e/admin", method: "POST")
            XCTFail("expected invalidRequest")
        } catch TollgateError.invalidRequest {
        }
        XCTAssertTrue(transport.calls.isEmpty)
    }

    func testUnrelatedRefusalNeitherRetriesNorTurnsAssertionsOn() async throws {
        let refused = ScriptedTransport.Answer(status: 403, headers: [(name: "Tollgate-Error", value: "attestationFailed")],
                                               body: Data(#"{"error":{"type":"attestationFailed","reason":"signature_invalid","message":"bad","requestId":"r"}}"#.utf8))
        let transport = ScriptedTransport([refused, .init(status: 200, body: Data("{}".utf8))])
        let tokens = CountingTokens()
        let signed = SignCounter()
        let client = try TollgateClient(baseURL: URL(string: "https://gateway.example.com")!, appToken: "at_test", deviceTokens: tokens,
                                        transport: transport, assertions: .whenRequired,
                                        assertionSigner: { _ in signed.increment(); return "sig" }, clock: { 1_764_000_000_000 })
        do {
            _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected attestationFailed")
        } catch TollgateError.attestationFailed(let details) {
            XCTAssertEqual(details.reason, "signature_invalid")
        }
        XCTAssertEqual(transport.calls.count, 1, "no retry for an unrelated reason")
        _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
        XCTAssertNil(Headers.first(transport.calls[1].headers, "Tollgate-Assertion"), "assertions stay off")
        XCTAssertEqual(signed.value, 0)
        let invalidated = await tokens.invalidated
        XCTAssertEqual(invalidated, [])
    }

    func testAssertionRequiredTurnsAssertionsOnAndRetriesOnce() async throws {
        let required = ScriptedTransport.Answer(status: 403, headers: [(name: "Tollgate-Error", value: "attestationFailed")],
                                                body: Data(#"{"error":{"type":"attestationFailed","reason":"assertion_required","message":"m","requestId":"r"}}"#.utf8))
        let transport = ScriptedTransport([required, .init(status: 200, body: Data("{}".utf8)), .init(status: 200, body: Data("{}".utf8))])
        let client = try TollgateClient(baseURL: URL(string: "https://gateway.example.com")!, appToken: "at_test", deviceTokens: CountingTokens(),
                                        transport: transport, assertions: .whenRequired,
                                        assertionSigner: { digest in "sig-" + String(digest.prefix(8)) }, clock: { 1_764_000_000_000 })
        _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
        _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
        XCTAssertEqual(transport.calls.count, 3)
        XCTAssertNil(Headers.first(transport.calls[0].headers, "Tollgate-Assertion"))
        XCTAssertNotNil(Headers.first(transport.calls[1].headers, "Tollgate-Assertion"))
        XCTAssertNotNil(Headers.first(transport.calls[2].headers, "Tollgate-Assertion"), "every later request carries one")
        // The same device token: assertion_required does not refresh it.
        XCTAssertEqual(Headers.first(transport.calls[0].headers, "Tollgate-Device-Token"), Headers.first(transport.calls[1].headers, "Tollgate-Device-Token"))
    }

    final class SignCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func increment() {
            lock.lock()
            count += 1
            lock.unlock()
        }
        var value: Int {
            lock.lock()
            defer { lock.unlock() }
            return count
        }
    }

    func testRefusedDeviceTokenIsReplacedOnce() async throws {
        let refused = ScriptedTransport.Answer(status: 403, headers: [(name: "Tollgate-Error", value: "attestationFailed")],
                                               body: Data(#"{"error":{"type":"attestationFailed","message":"expired","requestId":"r"}}"#.utf8))
        let transport = ScriptedTransport([refused, .init(status: 200, body: Data("{}".utf8))])
        let tokens = CountingTokens()
        _ = try await client(transport, tokens: tokens).request(endpoint: "openai/v1/models", method: "GET")
        XCTAssertEqual(transport.calls.count, 2)
        let invalidated = await tokens.invalidated
        XCTAssertEqual(invalidated, ["dt-1"])
        XCTAssertEqual(Headers.first(transport.calls[1].headers, "Tollgate-Device-Token"), "dt-2")

        // A second refusal in a row reaches the caller.
        let twice = ScriptedTransport([refused, refused])
        do {
            _ = try await client(twice, tokens: CountingTokens()).request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected attestationFailed")
        } catch TollgateError.attestationFailed(let details) {
            XCTAssertEqual(details.message, "expired")
            XCTAssertEqual(details.requestId, "r")
        }
    }

    func testRateLimitedIsRetriedWithinTheBudget() async throws {
        let limited = ScriptedTransport.Answer(status: 429, headers: [(name: "Tollgate-Error", value: "rateLimited"), (name: "Retry-After", value: "0")])
        let transport = ScriptedTransport([limited, .init(status: 200, body: Data("{}".utf8))])
        _ = try await client(transport, retry: .standard).request(endpoint: "openai/v1/models", method: "GET")
        XCTAssertEqual(transport.calls.count, 2)

        // Off by default: the caller gets rateLimited at once.
        let off = ScriptedTransport([limited, .init(status: 200, body: Data("{}".utf8))])
        do {
            _ = try await client(off).request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected rateLimited")
        } catch TollgateError.rateLimited(let retryAfter) {
            XCTAssertEqual(retryAfter, 0)
        }
        XCTAssertEqual(off.calls.count, 1)

        // Beyond the budget: the caller gets rateLimited(retryAfter:) at once.
        let long = ScriptedTransport.Answer(status: 429, headers: [(name: "Tollgate-Error", value: "rateLimited"), (name: "Retry-After", value: "60")])
        let slow = ScriptedTransport([long])
        do {
            _ = try await client(slow, retry: .standard).request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected rateLimited")
        } catch TollgateError.rateLimited(let retryAfter) {
            XCTAssertEqual(retryAfter, 60)
        }
        XCTAssertEqual(slow.calls.count, 1)
    }

    func testProviderErrorPassesThrough() async throws {
        let transport = ScriptedTransport([.init(status: 429, body: Data(#"{"error":"slow down"}"#.utf8))])
        do {
            _ = try await client(transport, retry: .standard).request(endpoint: "openai/v1/models", method: "GET")
            XCTFail("expected providerError")
        } catch TollgateError.providerError(let status, let body) {
            XCTAssertEqual(status, 429)
            XCTAssertEqual(body, #"{"error":"slow down"}"#)
        }
        XCTAssertEqual(transport.calls.count, 1, "a provider's 429 is not retried")
    }

    func testStreamFormatFollowsContentType() async throws {
        let body = Data("{\"n\":1}\n{\"n\":2}\n".utf8)
        let transport = ScriptedTransport([.init(status: 200, headers: [(name: "Content-Type", value: "application/x-ndjson")], body: body)])
        var events: [StreamEvent] = []
        for try await event in try client(transport).stream(endpoint: "ollama/v1/api/chat", method: "POST", body: Data("{}".utf8)) {
            events.append(event)
        }
        XCTAssertEqual(events, [.json(.object(["n": .number(1)])), .json(.object(["n": .number(2)]))])
    }

    func testStreamParsesServerSentEvents() async throws {
        let body = Data("data: {\"a\":1}\n\nevent: done\ndata: [DONE]\n\n".utf8)
        let transport = ScriptedTransport([.init(status: 200, headers: [(name: "Content-Type", value: "text/event-stream")], body: body)])
        var events: [StreamEvent] = []
        for try await event in try client(transport).stream(endpoint: "openai/v1/chat/completions", method: "POST", body: Data("{}".utf8)) {
            events.append(event)
        }
        XCTAssertEqual(events, [
            .sse(ServerSentEvent(event: "message", data: #"{"a":1}"#)),
            .sse(ServerSentEvent(event: "done", data: "[DONE]")),
        ])
    }

    func testCutStreamEndsWithNetworkErrorAfterCompleteEvents() async throws {
        let body = Data("{\"n\":1}\n{\"n\":2}\n{\"n\":".utf8)
        let transport = ScriptedTransport([.init(status: 200, body: body, cutAfter: body.count)])
        var events: [StreamEvent] = []
        do {
            for try await event in try client(transport).stream(endpoint: "ollama/v1/api/chat", method: "POST", format: .ndjson) {
                events.append(event)
            }
            XCTFail("expected networkError")
        } catch TollgateError.networkError(let details) {
            XCTAssertEqual(details.reason, "stream_cut")
        }
        XCTAssertEqual(events, [.json(.object(["n": .number(1)])), .json(.object(["n": .number(2)]))])
    }

    func testDeviceTokenCacheRefreshesBeforeExpiry() async throws {
        let now = TestClock(1_000_000)
        let cache = DeviceTokenCache(clock: { now.value }, refreshMarginMs: 300_000) {
            DeviceToken(token: "t\(now.value)", expiresAtMs: now.value + 3_600_000, receivedAtMs: now.value, method: "development")
        }
        let first = try await cache.deviceToken()
        XCTAssertEqual(first, "t1000000")
        now.value += 3_000_000 // 10 minutes left: still fine
        let same = try await cache.deviceToken()
        XCTAssertEqual(same, first)
        now.value += 400_000 // less than 5 minutes left: refreshed
        let fresh = try await cache.deviceToken()
        XCTAssertNotEqual(fresh, first)
        let count = await cache.attestationCount
        XCTAssertEqual(count, 2)
    }

    final class TestClock: @unchecked Sendable {
        private let lock = NSLock()
        private var current: Int64
        init(_ value: Int64) { current = value }
        var value: Int64 {
            get { lock.lock(); defer { lock.unlock() }; return current }
            set { lock.lock(); current = newValue; lock.unlock() }
        }
    }
}
