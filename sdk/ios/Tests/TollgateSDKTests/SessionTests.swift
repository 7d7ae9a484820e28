import Foundation
import XCTest
@testable import TollgateSDK

/// ``TollgateDeviceSession`` against a scripted gateway (``ClientTests/ScriptedTransport``) and a scripted key
/// attestor: what crosses the wire, which keys are generated, and the revocation rule (a review: never a new key after
/// `device_revoked`).
final class SessionTests: XCTestCase {
    typealias Transport = ClientTests.ScriptedTransport
    typealias Answer = ClientTests.ScriptedTransport.Answer

    static let base = "https://gateway.example.com"
    static let t0: Int64 = 1_764_000_000_000

    /// Hands out numbered keys and fixed proofs, and records what it was asked to sign.
    actor ScriptedKeyAttestor: KeyAttestor {
        private(set) var generated: [String] = []
        private(set) var attestHashes: [Data] = []
        private(set) var assertHashes: [Data] = []

        func generateKey() async throws -> String {
            let keyId = "key-\(generated.count + 1)"
            generated.append(keyId)
            return keyId
        }

        func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
            attestHashes.append(clientDataHash)
            return Data("attestation-of-\(keyId)".utf8)
        }

        func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
            assertHashes.append(clientDataHash)
            return Data("assertion-by-\(keyId)".utf8)
        }
    }

    override func setUp() {
        super.setUp()
        TollgateDeviceSession.resetRevocationsForTesting()
    }

    // MARK: Scripted answers

    static func challenge(_ value: String) -> Answer {
        Answer(status: 200, headers: [(name: "Content-Type", value: "application/json")],
               body: Data(#"{"challenge":"\#(value)","expiresAt":"2025-11-24T16:05:00.000Z"}"#.utf8))
    }

    static func jws(_ name: String, expMs: Int64) -> String {
        Base64URL.encode(Data(#"{"alg":"EdDSA","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Data(#"{"exp":\#(expMs / 1000),"jti":"\#(name)"}"#.utf8))
            + "." + Base64URL.encode(Data("signature".utf8))
    }

    static func token(_ name: String, deviceId: String, expMs: Int64) -> Answer {
        Answer(status: 200, headers: [(name: "Content-Type", value: "application/json")],
               body: Data(#"{"deviceToken":"\#(jws(name, expMs: expMs))","deviceId":"\#(deviceId)","method":"apple-app-attest"}"#.utf8))
    }

    static func refused(_ reason: String) -> Answer {
        Answer(status: 403, headers: [(name: "Tollgate-Error", value: "attestationFailed"), (name: "Content-Type", value: "application/json")],
               body: Data(#"{"error":{"type":"attestationFailed","reason":"\#(reason)","message":"refused: \#(reason)","requestId":"req_1"}}"#.utf8))
    }

    private func paths(_ transport: Transport) -> [String] {
        transport.calls.map { String($0.url.dropFirst(Self.base.count)) }
    }

    private func body(_ transport: Transport, _ index: Int) throws -> JSONValue {
        try JSONValue.parse(transport.calls[index].body)
    }

    private func makeSession(_ transport: Transport, appToken: String, store: TollgateSecureStore, attestor: KeyAttestor,
                         clock: ClientTests.TestClock, developmentToken: String? = nil) throws -> TollgateDeviceSession {
        try TollgateDeviceSession(gatewayURL: Self.base, appToken: appToken, developmentToken: developmentToken, transport: transport,
                                  store: store, attestor: attestor, clock: { clock.value })
    }

    private func expectRevoked(_ operation: () async throws -> Void, _ message: String, line: UInt = #line) async {
        do {
            try await operation()
            XCTFail("\(message): expected attestationFailed", line: line)
        } catch let error as TollgateError {
            XCTAssertEqual(error.kind, .attestationFailed, message, line: line)
            XCTAssertEqual(error.reason, "device_revoked", message, line: line)
        } catch {
            XCTFail("\(message): unexpected \(error)", line: line)
        }
    }

    // MARK: Revocation

    func testDeviceRevokedOnAProxiedCallAttestsNoNewKey() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000),
                                   Self.refused("device_revoked")])
        let attestor = ScriptedKeyAttestor()
        let store = InMemoryStore()
        let session = try makeSession(transport, appToken: "at_revoked_on_proxy", store: store, attestor: attestor, clock: now)
        let client = try TollgateClient(baseURL: URL(string: Self.base)!, appToken: "at_revoked_on_proxy", deviceTokens: session,
                                        transport: transport, clock: { now.value })

        await expectRevoked({ _ = try await client.request(endpoint: "openai/v1/models", method: "GET") }, "the refused call")
        XCTAssertEqual(paths(transport), ["/v1/attest/challenge", "/v1/attest/apple-app-attest", "/v1/proxy/openai/v1/models"])

        // From now on nothing is attested and nothing is sent: not by the client, not by a forced refresh.
        await expectRevoked({ _ = try await client.request(endpoint: "openai/v1/models", method: "GET") }, "the next call")
        await expectRevoked({ _ = try await session.token(forceRefresh: true) }, "a forced refresh")
        // A new configuration in the same process (a new Tollgate.configure, a Flutter hot restart) stays refused.
        let again = try self.makeSession(transport, appToken: "at_revoked_on_proxy", store: store, attestor: attestor, clock: now)
        await expectRevoked({ _ = try await again.token() }, "a new session")

        XCTAssertEqual(transport.calls.count, 3, "nothing sent after device_revoked")
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1"], "no new key after device_revoked")
        let revoked = await session.isRevoked
        XCTAssertTrue(revoked)
        XCTAssertNil(SecureDeviceTokenStore(appToken: "at_revoked_on_proxy", gatewayURL: Self.base, store: store).load(), "stored token deleted")
    }

    func testDeviceRevokedDuringRefreshAttestsNoNewKey() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000),
                                   Self.challenge("c2"), Self.refused("device_revoked")])
        let attestor = ScriptedKeyAttestor()
        let session = try makeSession(transport, appToken: "at_revoked_on_refresh", store: InMemoryStore(), attestor: attestor, clock: now)

        let first = try await session.token()
        XCTAssertEqual(first.deviceId, "key-1")
        now.value += 3_590_000 // 10 s left: less than the 60 s margin, so the next call refreshes
        await expectRevoked({ _ = try await session.token() }, "the refresh")
        await expectRevoked({ _ = try await session.token() }, "after the refresh")

        XCTAssertEqual(paths(transport), ["/v1/attest/challenge", "/v1/attest/apple-app-attest", "/v1/attest/challenge", "/v1/attest/apple-app-attest"])
        // The refresh was an assertion by the attested key over SHA-256 of the new challenge, not a new attestation.
        let refresh = try body(transport, 3)
        XCTAssertEqual(refresh["keyId"], .string("key-1"))
        XCTAssertEqual(refresh["challenge"], .string("c2"))
        XCTAssertEqual(refresh["assertion"], .string(Data("assertion-by-key-1".utf8).base64EncodedString()))
        XCTAssertNil(refresh["attestation"])
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1"])
        let assertHashes = await attestor.assertHashes
        XCTAssertEqual(assertHashes, [Digest.sha256(Data("c2".utf8))])
    }

    // MARK: Keys

    func testKeyUnknownDuringRefreshAttestsANewKey() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000),
                                   Self.challenge("c2"), Self.refused("device_key_unknown"),
                                   Self.challenge("c3"), Self.token("t2", deviceId: "key-2", expMs: Self.t0 + 7_200_000)])
        let attestor = ScriptedKeyAttestor()
        let session = try makeSession(transport, appToken: "at_key_unknown", store: InMemoryStore(), attestor: attestor, clock: now)

        _ = try await session.token()
        now.value += 3_590_000
        let fresh = try await session.token()
        XCTAssertEqual(fresh.deviceId, "key-2")
        XCTAssertEqual(paths(transport), ["/v1/attest/challenge", "/v1/attest/apple-app-attest", "/v1/attest/challenge",
                                          "/v1/attest/apple-app-attest", "/v1/attest/challenge", "/v1/attest/apple-app-attest"])
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1", "key-2"])
        let keyId = await session.attestedKeyId
        XCTAssertEqual(keyId, "key-2")
        XCTAssertEqual(try body(transport, 5)["challenge"], .string("c3"), "one challenge per exchange")
    }

    func testKeyBecomesTheDevicesKeyOnlyAfterTheGatewayAccepts() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.refused("attestation_invalid"),
                                   Self.challenge("c2"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000)])
        let attestor = ScriptedKeyAttestor()
        let session = try makeSession(transport, appToken: "at_accept_first", store: InMemoryStore(), attestor: attestor, clock: now)

        do {
            _ = try await session.token()
            XCTFail("expected attestationFailed")
        } catch let error as TollgateError {
            XCTAssertEqual(error.reason, "attestation_invalid")
        }
        let notYet = await session.attestedKeyId
        XCTAssertNil(notYet, "a refused key is not the device's key")

        let token = try await session.token()
        XCTAssertEqual(token.deviceId, "key-1")
        let accepted = await session.attestedKeyId
        XCTAssertEqual(accepted, "key-1")
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1"], "the unaccepted key is tried again, not replaced")
        XCTAssertEqual(paths(transport), ["/v1/attest/challenge", "/v1/attest/apple-app-attest", "/v1/attest/challenge", "/v1/attest/apple-app-attest"])
        // Bodies as the attestation-request vectors fix: standard base64, the challenge as received.
        XCTAssertEqual(try body(transport, 1), .object(["keyId": .string("key-1"), "challenge": .string("c1"),
                                                        "attestation": .string(Data("attestation-of-key-1".utf8).base64EncodedString())]))
        XCTAssertEqual(try body(transport, 3)["challenge"], .string("c2"))
        XCTAssertTrue(transport.calls[0].body.isEmpty, "the challenge request has no body")
        XCTAssertEqual(Headers.first(transport.calls[1].headers, "Content-Type"), "application/json")
        XCTAssertEqual(Headers.first(transport.calls[1].headers, "Tollgate-App-Token"), "at_accept_first")
        let hashes = await attestor.attestHashes
        XCTAssertEqual(hashes, [Digest.sha256(Data("c1".utf8)), Digest.sha256(Data("c2".utf8))])
    }

    // MARK: Persistence and the bridge operations

    func testStoredTokenServesAColdStart() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let store = InMemoryStore()
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000)])
        let attestor = ScriptedKeyAttestor()
        let first = try await makeSession(transport, appToken: "at_cold_start", store: store, attestor: attestor, clock: now).token()
        now.value += 600_000
        let coldStart = try await makeSession(transport, appToken: "at_cold_start", store: store, attestor: attestor, clock: now).token()
        XCTAssertEqual(coldStart, first)
        XCTAssertEqual(transport.calls.count, 2, "a cold start with a stored token makes no attestation call")
    }

    func testReportedReasonsApplyTheirActions() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000)])
        let attestor = ScriptedKeyAttestor()
        let session = try makeSession(transport, appToken: "at_report", store: InMemoryStore(), attestor: attestor, clock: now)
        let t1 = try await session.token()
        let digest = Digest.sha256(Data("request".utf8))

        // assertion_required: assertions from now on (none before).
        let before = try await session.assertion(digest: digest)
        XCTAssertNil(before)
        let assertAction = await session.report(deviceToken: t1.token, reason: "assertion_required")
        XCTAssertEqual(assertAction, .assert)
        let after = try await session.assertion(digest: digest)
        XCTAssertEqual(after, Base64URL.encode(Data("assertion-by-key-1".utf8)))

        // An unknown reason changes nothing.
        let unknown = await session.report(deviceToken: t1.token, reason: "request_time_skew")
        XCTAssertEqual(unknown, .noAction)
        let same = try await session.token()
        XCTAssertEqual(same, t1)
        XCTAssertEqual(transport.calls.count, 2)

        // device_token_expired: refresh with the existing key.
        transport.enqueue([Self.challenge("c2"), Self.token("t2", deviceId: "key-1", expMs: Self.t0 + 3_600_000)])
        let refresh = await session.report(deviceToken: t1.token, reason: "device_token_expired")
        XCTAssertEqual(refresh, .refresh)
        let t2 = try await session.token()
        XCTAssertNotEqual(t2.token, t1.token)
        XCTAssertNotNil(try body(transport, 3)["assertion"])

        // device_key_unknown: forget the key; the next token attests a new one.
        transport.enqueue([Self.challenge("c3"), Self.token("t3", deviceId: "key-2", expMs: Self.t0 + 3_600_000)])
        let attest = await session.report(deviceToken: t2.token, reason: "device_key_unknown")
        XCTAssertEqual(attest, .attest)
        let t3 = try await session.token()
        XCTAssertEqual(t3.deviceId, "key-2")
        XCTAssertNotNil(try body(transport, 5)["attestation"])

        // device_revoked: stop.
        let stop = await session.report(deviceToken: t3.token, reason: "device_revoked")
        XCTAssertEqual(stop, .stop)
        await expectRevoked({ _ = try await session.token() }, "after stop")
        await expectRevoked({ _ = try await session.assertion(digest: digest) }, "no assertion after stop")
        XCTAssertEqual(transport.calls.count, 6)
        let generated = await attestor.generated
        XCTAssertEqual(generated, ["key-1", "key-2"])
    }

    func testDevelopmentTokenAttestsWithoutAChallenge() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.token("t1", deviceId: "dev-1", expMs: Self.t0 + 3_600_000)])
        let attestor = ScriptedKeyAttestor()
        let session = try makeSession(transport, appToken: "at_development", store: InMemoryStore(), attestor: attestor, clock: now,
                                  developmentToken: "dt_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD")
        _ = try await session.token()
        XCTAssertEqual(paths(transport), ["/v1/attest/development"])
        let sent = try body(transport, 0)
        XCTAssertEqual(sent["developmentToken"], .string("dt_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD"))
        XCTAssertNotNil(sent["deviceId"]?.stringValue)
        let generated = await attestor.generated
        XCTAssertEqual(generated, [])
        let signature = try await session.sign(digest: Digest.sha256(Data()))
        XCTAssertNil(signature, "a development token has no key to sign with")
    }

    func testNativeBridgeOperations() async throws {
        let now = ClientTests.TestClock(Self.t0)
        let transport = Transport([Self.challenge("c1"), Self.token("t1", deviceId: "key-1", expMs: Self.t0 + 3_600_000)])
        let attestor = ScriptedKeyAttestor()
        let store = InMemoryStore()
        let bridge = TollgateNativeBridge(makeSession: { gatewayURL, appToken, developmentToken in
            try TollgateDeviceSession(gatewayURL: gatewayURL, appToken: appToken, developmentToken: developmentToken, transport: transport,
                                      store: store, attestor: attestor, clock: { now.value })
        })
        do {
            _ = try await bridge.deviceToken(forceRefresh: false)
            XCTFail("expected not_initialized")
        } catch let error as TollgateError {
            XCTAssertEqual(error.kind, .invalidRequest)
            XCTAssertEqual(error.reason, "not_initialized")
        }
        XCTAssertThrowsError(try bridge.configure(appToken: "at_bridge", gatewayURL: nil, developmentToken: nil)) { error in
            XCTAssertEqual((error as? TollgateError)?.reason, "gateway_url_missing", "no address and no Info.plist key")
        }
        try bridge.configure(appToken: "at_bridge", gatewayURL: Self.base, developmentToken: nil)
        let token = try await bridge.deviceToken(forceRefresh: false)
        XCTAssertEqual(token.deviceId, "key-1")
        XCTAssertEqual(token.expiresAtMs, Self.t0 + 3_600_000)
        let digest = Digest.sha256(Data("request".utf8)).base64EncodedString()
        let none = try await bridge.assertion(digestBase64: digest)
        XCTAssertNil(none, "no assertion before assertion_required")
        let action = try await bridge.reportError(deviceToken: token.token, reason: "assertion_required")
        XCTAssertEqual(action.rawValue, "assert")
        let assertion = try await bridge.assertion(digestBase64: digest)
        XCTAssertEqual(assertion, Base64URL.encode(Data("assertion-by-key-1".utf8)))
        do {
            _ = try await bridge.assertion(digestBase64: "AAAA")
            XCTFail("expected invalidRequest")
        } catch let error as TollgateError {
            XCTAssertEqual(error.reason, "digest_invalid")
        }
        let stop = try await bridge.reportError(deviceToken: token.token, reason: "device_revoked")
        XCTAssertEqual(stop.rawValue, "stop")
        await expectRevoked({ _ = try await bridge.deviceToken(forceRefresh: false) }, "bridge after stop")
        await bridge.clear()
        XCTAssertEqual(transport.calls.count, 2)
    }

    func testMissingGatewayURLIsRefusedAtOnce() {
        XCTAssertThrowsError(try TollgateDeviceSession(gatewayURL: "  ", appToken: "at_x", store: InMemoryStore())) { error in
            XCTAssertEqual((error as? TollgateError)?.kind, .invalidRequest)
            XCTAssertEqual((error as? TollgateError)?.reason, "gateway_url_missing")
        }
    }
}
