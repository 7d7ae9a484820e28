import Foundation
import XCTest
@testable import TollgateSDK

/// Runs every vector of sdk/conformance/client-behaviour.json (sdk/conformance/README.md, "client-behaviour.json"),
/// dispatching on `rule` and failing on a rule it does not know. Each vector goes through the SDK's own code: the
/// assertion encoder, the attestation request builders, the answer parser, the expiry and refresh rules, the stream
/// format choice, the retry decision, the not-configured errors of `Tollgate`, and the reason → action rule.
final class ClientBehaviourTests: XCTestCase {
    struct VectorError: Error, CustomStringConvertible {
        let description: String
    }

    static let file = ConformanceTests.directory.appendingPathComponent("client-behaviour.json")
    static let base = "https://gateway.example.com"

    func testClientBehaviour() async throws {
        let document = try JSONValue.parse(Data(contentsOf: Self.file))
        XCTAssertEqual(document["version"]?.intValue, 1, "unknown format version")
        XCTAssertEqual(document["kind"]?.stringValue, "client-behaviour")
        let constants = try field(document, "constants")
        XCTAssertEqual(constants["refreshMarginMs"]?.intValue.map { Int64($0) }, TokenTiming.refreshMarginMs, "refresh margin")
        XCTAssertEqual(constants["retryDefaults"]?["maxRetries"]?.intValue, RetryPolicy.standard.maxRetries, "retry defaults")
        XCTAssertEqual(constants["retryDefaults"]?["maxWaitSeconds"]?.doubleValue, RetryPolicy.standard.maxWaitSeconds, "retry defaults")
        guard let vectors = document["vectors"]?.arrayValue, !vectors.isEmpty else { return XCTFail("no vectors") }
        var names = Set<String>()
        var counts: [String: Int] = [:]
        for vector in vectors {
            let name = (try? string(vector, "name")) ?? "?"
            XCTAssertTrue(names.insert(name).inserted, "duplicate vector \(name)")
            do {
                let rule = try string(vector, "rule")
                counts[rule, default: 0] += 1
                try await check(rule: rule, name: name, input: try field(vector, "input"), expected: try field(vector, "expected"))
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
        // Every rule of the README ran at least once.
        for rule in ["assertion-encoding", "attestation-request", "attestation-response", "token-expiry", "refresh-due",
                     "stream-format", "retry", "not-initialized", "reason-action"] {
            XCTAssertGreaterThan(counts[rule] ?? 0, 0, "no vector ran for rule \(rule)")
        }
    }

    private func check(rule: String, name: String, input: JSONValue, expected: JSONValue) async throws {
        switch rule {
        case "assertion-encoding": try assertionEncoding(name, input, expected)
        case "attestation-request": try attestationRequest(name, input, expected)
        case "attestation-response": try attestationResponse(name, input, expected)
        case "token-expiry":
            let expiresAt = try field(input, "expiresAt")
            let actual = TokenTiming.expiresAtMs(deviceToken: try string(input, "deviceToken"),
                                                 expiresAt: expiresAt == .null ? nil : expiresAt.stringValue,
                                                 receivedAtMs: try int64(input, "receivedAtMs"))
            XCTAssertEqual(actual, try int64(expected, "expiresAtMs"), "\(name): expiresAtMs")
        case "refresh-due":
            let due = TokenTiming.refreshDue(receivedAtMs: try int64(input, "receivedAtMs"), expiresAtMs: try int64(input, "expiresAtMs"),
                                             nowMs: try int64(input, "nowMs"))
            XCTAssertEqual(due, try field(expected, "refresh").boolValue, "\(name): refresh")
            let token = DeviceToken(token: "t", expiresAtMs: try int64(input, "expiresAtMs"), receivedAtMs: try int64(input, "receivedAtMs"), method: "m")
            XCTAssertEqual(token.needsRefresh(nowMs: try int64(input, "nowMs")), due, "\(name): DeviceToken.needsRefresh")
        case "stream-format":
            let contentType = try field(input, "contentType")
            let format = StreamFormat.forContentType(contentType == .null ? nil : contentType.stringValue)
            XCTAssertEqual(format.rawValue, try string(expected, "format"), "\(name): format")
        case "retry": try retry(name, input, expected)
        case "not-initialized": try await notInitialized(name, input, expected)
        case "reason-action":
            let reason = try field(input, "reason")
            let action = ReasonAction.forGatewayError(errorType: try string(input, "errorType"), status: try int(input, "status"),
                                                      reason: reason == .null ? nil : reason.stringValue)
            XCTAssertEqual(action.rawValue, try string(expected, "action"), "\(name): action")
            XCTAssertEqual(action.retriesOnce, try field(expected, "retryOnce").boolValue, "\(name): retryOnce")
            XCTAssertEqual(action.attestsNewKey, try field(expected, "newKey").boolValue, "\(name): newKey")
        default:
            throw VectorError(description: "unknown rule \"\(rule)\"")
        }
    }

    private func assertionEncoding(_ name: String, _ input: JSONValue, _ expected: JSONValue) throws {
        guard let proof = Digest.bytes(fromHex: try string(input, "bytesHex")) else { throw VectorError(description: "bytesHex is not hex") }
        if let error = expected["error"] {
            XCTAssertEqual(error.stringValue, "invalidRequest")
            XCTAssertThrowsError(try AssertionEncoding.header(proof), "\(name): expected invalidRequest") { thrown in
                XCTAssertEqual((thrown as? TollgateError)?.kind, .invalidRequest, "\(name): kind")
            }
            return
        }
        XCTAssertEqual(try AssertionEncoding.header(proof), try string(expected, "header"), "\(name): header")
    }

    private func attestationRequest(_ name: String, _ input: JSONValue, _ expected: JSONValue) throws {
        let method = try string(input, "method")
        let fields = try field(input, "fields")
        let api = try AttestationAPI(baseURL: Self.base, appToken: try string(input, "appToken"), transport: UnavailableTransport())
        let body: JSONValue?
        switch method {
        case "challenge":
            body = nil
        case "apple-app-attest":
            let challenge = Challenge(value: try string(fields, "challenge"), expiresAtMs: nil)
            guard let proof = Digest.bytes(fromHex: try string(fields, "proofHex")) else { throw VectorError(description: "proofHex") }
            let keyId = try string(fields, "keyId")
            if fields["refresh"]?.boolValue == true {
                body = AttestationAPI.appAssertionBody(keyId: keyId, assertion: proof, challenge: challenge.value)
            } else {
                body = AttestationAPI.appAttestBody(keyId: keyId, attestation: proof, challenge: challenge.value)
            }
            XCTAssertEqual(Digest.hex(challenge.clientDataHash), try string(expected, "clientDataHashHex"), "\(name): clientDataHash")
            XCTAssertEqual(Digest.hex(PortableSHA256.hash(Array(challenge.value.utf8))), try string(expected, "clientDataHashHex"),
                           "\(name): portable SHA-256")
        case "development":
            body = AttestationAPI.developmentBody(developmentToken: try string(fields, "developmentToken"), deviceId: try string(fields, "deviceId"))
        case "android-key-attestation", "android-play-integrity":
            // Android's bodies are built by the Android SDK; here the iOS SDK's shared request shape (method, path,
            // exact headers, JSON serialization) is checked with the expected body.
            body = try field(expected, "body")
        default:
            throw VectorError(description: "unknown attestation method \(method)")
        }
        let call = try api.call(method, body: body)
        XCTAssertEqual(call.method, try string(expected, "method"), "\(name): method")
        XCTAssertTrue(call.url.hasPrefix(Self.base), "\(name): url")
        XCTAssertEqual(String(call.url.dropFirst(Self.base.count)), try string(expected, "path"), "\(name): path")
        let expectedHeaders = try (try field(expected, "headers").arrayValue ?? []).map { pair -> String in
            guard let items = pair.arrayValue, items.count == 2, let key = items[0].stringValue, let value = items[1].stringValue else {
                throw VectorError(description: "header pair is not [name, value]")
            }
            return key.lowercased() + ": " + value
        }
        XCTAssertEqual(call.headers.map { $0.name.lowercased() + ": " + $0.value }.sorted(), expectedHeaders.sorted(), "\(name): headers")
        let expectedBody = try field(expected, "body")
        if expectedBody == .null {
            XCTAssertTrue(call.body.isEmpty, "\(name): no body")
        } else {
            XCTAssertEqual(try JSONValue.parse(call.body), expectedBody, "\(name): body")
        }
    }

    private func attestationResponse(_ name: String, _ input: JSONValue, _ expected: JSONValue) throws {
        let status = try int(input, "status")
        let body = Data(try string(input, "body").utf8)
        let receivedAtMs = try int64(input, "receivedAtMs")
        if let error = expected["error"] {
            XCTAssertThrowsError(try AttestationAPI.parseAnswer(status: status, body: body, receivedAtMs: receivedAtMs, method: "development"),
                                 "\(name): expected \(error)") { thrown in
                XCTAssertEqual((thrown as? TollgateError)?.kind.rawValue, error.stringValue, "\(name): kind")
            }
            return
        }
        let token = try AttestationAPI.parseAnswer(status: status, body: body, receivedAtMs: receivedAtMs, method: "development")
        XCTAssertEqual(token.token, try string(expected, "deviceToken"), "\(name): deviceToken")
        XCTAssertEqual(token.deviceId, try string(expected, "deviceId"), "\(name): deviceId")
        XCTAssertEqual(token.expiresAtMs, try int64(expected, "expiresAtMs"), "\(name): expiresAtMs")
    }

    private func retry(_ name: String, _ input: JSONValue, _ expected: JSONValue) throws {
        let options = try field(input, "options")
        let policy: RetryPolicy
        if options == .null {
            policy = RetryPolicy.none
        } else {
            policy = RetryPolicy(maxRetries: try int(options, "maxRetries"), maxWaitSeconds: try field(options, "maxWaitSeconds").doubleValue ?? -1)
        }
        guard let kind = TollgateError.Kind(rawValue: try string(input, "errorKind")) else { throw VectorError(description: "unknown errorKind") }
        let retryAfter = try field(input, "retryAfterSeconds")
        let delay = policy.delaySeconds(errorKind: kind, retryAfterSeconds: retryAfter == .null ? nil : retryAfter.intValue,
                                        retriesDone: try int(input, "retriesDone"),
                                        waitedSeconds: try field(input, "waitedSeconds").doubleValue ?? -1)
        XCTAssertEqual(delay != nil, try field(expected, "retry").boolValue, "\(name): retry")
        let expectedDelay = try field(expected, "delaySeconds")
        XCTAssertEqual(delay, expectedDelay == .null ? nil : expectedDelay.doubleValue, "\(name): delaySeconds")
    }

    private func notInitialized(_ name: String, _ input: JSONValue, _ expected: JSONValue) async throws {
        Tollgate.reset()
        defer { Tollgate.reset() }
        let wantedReason = try string(expected, "reason")
        XCTAssertEqual(try string(expected, "kind"), "invalidRequest")
        switch try string(input, "state") {
        case "not-initialized":
            break
        case "no-gateway-url":
            // The test runner's Info.plist has no TollgateGatewayURL: configure(appToken:) refuses at once.
            XCTAssertNil(Tollgate.infoPlistGatewayURL)
            XCTAssertThrowsError(try Tollgate.configure(appToken: "at_0123456789abcdefghijABCDEFGHIJkl"), "\(name): configure") { thrown in
                XCTAssertEqual((thrown as? TollgateError)?.kind, .invalidRequest, "\(name): configure kind")
                XCTAssertEqual((thrown as? TollgateError)?.reason, wantedReason, "\(name): configure reason")
            }
        case let other:
            throw VectorError(description: "unknown state \(other)")
        }
        var thrown: Error?
        switch try string(input, "call") {
        case "request":
            do { _ = try await Tollgate.request(endpoint: "openai/v1/models", method: "GET") } catch { thrown = error }
        case "stream":
            do { for try await _ in Tollgate.stream(endpoint: "openai/v1/chat/completions", method: "POST") {} } catch { thrown = error }
        case let other:
            throw VectorError(description: "unknown call \(other)")
        }
        let error = thrown as? TollgateError
        XCTAssertEqual(error?.kind, .invalidRequest, "\(name): kind")
        XCTAssertEqual(error?.reason, wantedReason, "\(name): reason")
    }

    // MARK: Fields

    private func field(_ object: JSONValue, _ name: String) throws -> JSONValue {
        guard let value = object[name] else { throw VectorError(description: "missing field \"\(name)\"") }
        return value
    }

    private func string(_ object: JSONValue, _ name: String) throws -> String {
        guard let value = try field(object, name).stringValue else { throw VectorError(description: "field \"\(name)\" is not a string") }
        return value
    }

    private func int(_ object: JSONValue, _ name: String) throws -> Int {
        guard let value = try field(object, name).intValue else { throw VectorError(description: "field \"\(name)\" is not an integer") }
        return value
    }

    private func int64(_ object: JSONValue, _ name: String) throws -> Int64 {
        Int64(try int(object, name))
    }
}
