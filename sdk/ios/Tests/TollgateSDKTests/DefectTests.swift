import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import TollgateSDK

/// The defects a platform review found, each pinned: the device identity survives an app-token rotation; a Keychain
/// that cannot answer never mints a new identity, and a failed write surfaces; assertions reach the gateway in the
/// order they were signed.
final class DefectTests: XCTestCase {
    typealias Transport = ClientTests.ScriptedTransport
    typealias Answer = ClientTests.ScriptedTransport.Answer

    override func setUp() {
        super.setUp()
        TollgateDeviceSession.resetRevocationsForTesting()
    }

    /// Reads and writes fail as a locked Keychain does (errSecInteractionNotAllowed, -25308).
    final class FailingStore: TollgateSecureStore, @unchecked Sendable {
        let failReads: Bool
        let failWrites: Bool
        let inner = InMemoryStore()

        init(failReads: Bool, failWrites: Bool) {
            self.failReads = failReads
            self.failWrites = failWrites
        }

        func data(_ account: String) -> Data? { inner.data(account) }
        func set(_ data: Data, _ account: String) { inner.set(data, account) }
        func delete(_ account: String) { inner.delete(account) }

        func read(_ account: String) throws -> Data? {
            if failReads { throw SecureStoreError(status: -25308, operation: "read") }
            return inner.data(account)
        }

        func write(_ data: Data, _ account: String) throws {
            if failWrites { throw SecureStoreError(status: -25308, operation: "add") }
            inner.set(data, account)
        }
    }

    private func session(_ transport: Transport, appToken: String, store: TollgateSecureStore,
                         attestor: SessionTests.ScriptedKeyAttestor) throws -> TollgateDeviceSession {
        try TollgateDeviceSession(gatewayURL: SessionTests.base, appToken: appToken, transport: transport, store: store,
                                  attestor: attestor, clock: { SessionTests.t0 })
    }

    func testIdentitySurvivesAppTokenRotation() async throws {
        let store = InMemoryStore()
        let attestor = SessionTests.ScriptedKeyAttestor()
        let exp = SessionTests.t0 + 3_600_000
        let transport = Transport([
            SessionTests.challenge("c1"), SessionTests.token("t1", deviceId: "d1", expMs: exp),
            SessionTests.challenge("c2"), SessionTests.token("t2", deviceId: "d1", expMs: exp),
        ])
        _ = try await session(transport, appToken: "at_old_token", store: store, attestor: attestor).token()
        // The operator rotated the app token: the same device key refreshes (an assertion), no new key is attested.
        _ = try await session(transport, appToken: "at_new_token", store: store, attestor: attestor).token()
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1"], "one device identity across app tokens")
        let second = try JSONValue.parse(transport.calls[3].body)
        XCTAssertEqual(second["keyId"]?.stringValue, "key-1")
        XCTAssertNotNil(second["assertion"]?.stringValue, "refreshed by assertion, not attested again")
    }

    func testKeychainReadErrorNeverMintsANewIdentity() async throws {
        let attestor = SessionTests.ScriptedKeyAttestor()
        let transport = Transport([SessionTests.challenge("c1")])
        let device = try session(transport, appToken: "at_locked_keychain", store: FailingStore(failReads: true, failWrites: false), attestor: attestor)
        do {
            _ = try await device.token()
            XCTFail("a Keychain that cannot answer must fail the call")
        } catch let error as TollgateError {
            XCTAssertEqual(error.kind, .attestationFailed)
            XCTAssertEqual(error.reason, "keychain_unavailable")
        }
        let generated = await attestor.generated
        XCTAssertEqual(generated, [], "no key generated")
        XCTAssertTrue(transport.calls.isEmpty, "nothing sent")
    }

    func testKeychainWriteFailureSurfaces() async throws {
        let attestor = SessionTests.ScriptedKeyAttestor()
        let transport = Transport([SessionTests.challenge("c1"), SessionTests.token("t1", deviceId: "d1", expMs: SessionTests.t0 + 3_600_000)])
        let device = try session(transport, appToken: "at_full_keychain", store: FailingStore(failReads: false, failWrites: true), attestor: attestor)
        do {
            _ = try await device.token()
            XCTFail("a key that cannot be kept must fail the call")
        } catch let error as TollgateError {
            XCTAssertEqual(error.reason, "keychain_write_failed")
        }
    }

    /// Hands out increasing assertion numbers, as App Attest's counter does.
    final class CountingSigner: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0

        func sign() -> String {
            lock.lock()
            defer { lock.unlock() }
            count += 1
            return "a\(count)"
        }
    }

    /// Lets other tasks run between receiving a call and answering it, so that unordered sends would interleave.
    final class YieldingTransport: HTTPTransport, @unchecked Sendable {
        let inner = Transport([])

        func data(for call: HTTPCall) async throws -> (HTTPResponseHead, Data) {
            inner.enqueue([Answer(status: 200, headers: [(name: "Content-Type", value: "application/json")], body: Data("{}".utf8))])
            for _ in 0..<3 { await Task.yield() }
            return try await inner.data(for: call)
        }

        func bytes(for call: HTTPCall) async throws -> (HTTPResponseHead, HTTPBodyStream) {
            try await inner.bytes(for: call)
        }
    }

    func testAssertionsReachTheGatewayInTheOrderTheyWereSigned() async throws {
        let signer = CountingSigner()
        let transport = YieldingTransport()
        let client = try TollgateClient(baseURL: URL(string: SessionTests.base)!, appToken: "at_0123456789abcdefghijABCDEFGHIJkl",
                                        deviceTokens: StaticDeviceToken("e30.e30.c2ln"), transport: transport, assertions: .always,
                                        assertionSigner: { _ in
                                            for _ in 0..<2 { await Task.yield() }
                                            return signer.sign()
                                        })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { _ = try await client.request(endpoint: "openai/v1/models", method: "GET") }
            }
            try await group.waitForAll()
        }
        let arrived = transport.inner.calls.compactMap { call in call.headers.first { $0.name == "Tollgate-Assertion" }?.value }
        XCTAssertEqual(arrived, (1...8).map { "a\($0)" }, "counters arrive in increasing order")
    }

    // MARK: Clocks

    func testExpiryComesFromExpiresInOnAClockAnHourAhead() throws {
        // The gateway's time is t0 (2025-11-24T16:00:00Z); the phone's clock says t0 + 1 h.
        let received = SessionTests.t0 + 3_600_000
        let body = Data(#"{"deviceToken":"x.y.z","expiresAt":"2025-11-24T17:00:00.000Z","expiresIn":3600,"deviceId":"d1"}"#.utf8)
        let token = try AttestationAPI.parseAnswer(status: 200, body: body, receivedAtMs: received, method: "development")
        XCTAssertEqual(token.expiresAtMs, received + 3_600_000, "an hour from receipt, on the device clock")
        XCTAssertFalse(token.needsRefresh(nowMs: received + 60_000), "not due at once")
        // Without expiresIn, the absolute time is moved to the device clock by the measured offset.
        let absolute = Data(#"{"deviceToken":"x.y.z","expiresAt":"2025-11-24T17:00:00.000Z"}"#.utf8)
        let shifted = try AttestationAPI.parseAnswer(status: 200, body: absolute, receivedAtMs: received, method: "development",
                                                     serverOffsetMs: -3_600_000)
        XCTAssertEqual(shifted.expiresAtMs, received + 3_600_000)
    }

    func testRequestTimeFollowsTheGatewayDateHeader() async throws {
        let base = "https://clock-skew.example.com"
        let device = SessionTests.t0 + 3_600_000
        let dated = Answer(status: 200, headers: [(name: "Date", value: "Mon, 24 Nov 2025 16:00:00 GMT"), (name: "Content-Type", value: "application/json")],
                           body: Data("{}".utf8))
        let transport = Transport([dated, dated])
        let client = try TollgateClient(baseURL: URL(string: base)!, appToken: "at_0123456789abcdefghijABCDEFGHIJkl",
                                        deviceTokens: StaticDeviceToken("e30.e30.c2ln"), transport: transport, clock: { device })
        _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
        _ = try await client.request(endpoint: "openai/v1/models", method: "GET")
        let times = transport.calls.map { call in call.headers.first { $0.name == "Tollgate-Request-Time" }?.value }
        XCTAssertEqual(times, [String(device), String(SessionTests.t0 + 500)], "the second request is stamped with the gateway's time")
    }

    // MARK: Bounded stream buffer

    func testAStreamLargerThanTheBufferArrivesWholeAndInOrderToASlowReader() async throws {
        let count = ClientEngine.maxBufferedEvents * 3
        let body = (0..<count).map { "data: \($0)\n\n" }.joined()
        let transport = Transport([Answer(status: 200, headers: [(name: "Content-Type", value: "text/event-stream")], body: Data(body.utf8))])
        let client = try TollgateClient(baseURL: URL(string: SessionTests.base)!, appToken: "at_0123456789abcdefghijABCDEFGHIJkl",
                                        deviceTokens: StaticDeviceToken("e30.e30.c2ln"), transport: transport)
        var received: [String] = []
        for try await event in client.stream(endpoint: "openai/v1/chat/completions", method: "POST", body: Data("{}".utf8)) {
            if case .sse(let sse) = event { received.append(sse.data) }
            if received.count % 50 == 0 { await Task.yield() }   // a reader slower than the parser
        }
        XCTAssertEqual(received, (0..<count).map(String.init), "nothing dropped by the bounded buffer")
    }
}
