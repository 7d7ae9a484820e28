import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import TollgateSDK

/// The realtime, user-token and /v1/me vectors (sdk/conformance/README.md, last four sections): one test per file,
/// each iterating all of its vectors with the vector's name in every failure message.
final class ProtocolConformanceTests: XCTestCase {
    struct MissingField: Error, CustomStringConvertible {
        let description: String
    }

    func vectors(_ file: String, kind: String) throws -> [JSONValue] {
        let document = try JSONValue.parse(Data(contentsOf: ConformanceTests.directory.appendingPathComponent(file)))
        guard document["version"]?.intValue == 1, document["kind"]?.stringValue == kind,
              let vectors = document["vectors"]?.arrayValue, !vectors.isEmpty else {
            throw MissingField(description: "\(file): not a version 1 \(kind) file with vectors")
        }
        return vectors
    }

    func field(_ object: JSONValue?, _ name: String, _ vector: String) throws -> JSONValue {
        guard let value = object?[name] else { throw MissingField(description: "\(vector): missing \(name)") }
        return value
    }

    func optionalString(_ value: JSONValue?) -> String? {
        value?.stringValue
    }

    // MARK: - realtime-close-codes.json

    func testRealtimeCloseCodes() throws {
        for vector in try vectors("realtime-close-codes.json", kind: "realtime-close-codes") {
            let name = try field(vector, "name", "?").stringValue ?? "?"
            let input = try field(vector, "input", name)
            let code = try field(input, "code", name).intValue ?? -1
            let reason = try field(input, "reason", name).stringValue ?? ""
            let reading = RealtimeCloseError.read(code: code, reason: reason)
            let expected = try field(vector, "expected", name)
            if case .null = expected {
                XCTAssertNil(reading, "\(name): a normal end")
                continue
            }
            guard let reading else {
                XCTFail("\(name): expected an error")
                continue
            }
            XCTAssertEqual(reading.kind.rawValue, expected["kind"]?.stringValue, "\(name): kind")
            XCTAssertEqual(reading.errorType, optionalString(expected["errorType"]), "\(name): errorType")
            XCTAssertEqual(reading.closeCode, expected["closeCode"]?.intValue, "\(name): closeCode")
            XCTAssertEqual(reading.reason, optionalString(expected["reason"]), "\(name): reason")
            XCTAssertEqual(reading.message, expected["message"]?.stringValue, "\(name): message")
            XCTAssertEqual(reading.action.rawValue, expected["action"]?.stringValue, "\(name): action")
            XCTAssertEqual(reading.mayReconnect, expected["mayReconnect"]?.boolValue, "\(name): mayReconnect")
            XCTAssertEqual(reading.newKey, expected["newKey"]?.boolValue, "\(name): newKey")
            XCTAssertEqual(reading.tollgateError.kind, reading.kind, "\(name): tollgateError")
        }
    }

    // MARK: - subprotocols.json

    func testSubprotocols() throws {
        for vector in try vectors("subprotocols.json", kind: "subprotocols") {
            let name = try field(vector, "name", "?").stringValue ?? "?"
            let input = try field(vector, "input", name)
            let expected = try field(vector, "expected", name)
            let appToken = try field(input, "appToken", name).stringValue ?? ""
            let mode: RealtimeUpgradeMode = try field(input, "mode", name).stringValue == "subprotocols" ? .subprotocols : .headers
            let protocols = (try field(input, "providerProtocols", name).arrayValue ?? []).compactMap(\.stringValue)
            let build = {
                try RealtimeUpgrade.build(
                    builder: try RequestBuilder(baseURL: try self.field(input, "baseUrl", name).stringValue ?? "", appToken: appToken,
                                                sdk: try self.field(input, "sdk", name).stringValue ?? ""),
                    appToken: appToken, endpoint: try self.field(input, "endpoint", name).stringValue ?? "", mode: mode,
                    deviceToken: try self.field(input, "deviceToken", name).stringValue ?? "", userToken: input["userToken"]?.stringValue,
                    requestTimeMs: Int64(try self.field(input, "requestTimeMs", name).doubleValue ?? 0), protocols: protocols)
            }
            if let error = expected["error"]?.stringValue {
                XCTAssertThrowsError(try build(), "\(name): refused") { thrown in
                    XCTAssertEqual((thrown as? TollgateError)?.kind.rawValue, error, "\(name): kind")
                }
                continue
            }
            let upgrade = try build()
            XCTAssertEqual(upgrade.url, expected["url"]?.stringValue, "\(name): url")
            XCTAssertEqual(upgrade.pathWithQuery, expected["pathWithQuery"]?.stringValue, "\(name): pathWithQuery")
            var sent: [String: String] = [:]
            for header in upgrade.headers { sent[header.name.lowercased()] = header.value }
            var wanted: [String: String] = [:]
            for (key, value) in expected["headers"]?.objectValue ?? [:] { wanted[key.lowercased()] = value.stringValue }
            XCTAssertEqual(sent, wanted, "\(name): headers")
            XCTAssertEqual(upgrade.protocols, (expected["protocols"]?.arrayValue ?? []).compactMap(\.stringValue), "\(name): protocols")
            XCTAssertEqual(upgrade.protocols.isEmpty ? nil : upgrade.protocols.joined(separator: ", "), optionalString(expected["secWebSocketProtocol"]), "\(name): header")
            if let digest = expected["digest"]?.stringValue {
                XCTAssertEqual(upgrade.digest, digest, "\(name): digest")
                XCTAssertEqual(upgrade.canonicalRequest, expected["canonicalRequest"]?.stringValue, "\(name): canonical")
            }
        }
    }

    // MARK: - user-token.json

    /// Records the callback's calls; answers from the vector's list.
    final class Callback: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [JSONValue]
        private(set) var forced: [Bool] = []

        init(_ results: [JSONValue]) {
            self.results = results
        }

        func call(_ forceRefresh: Bool) throws -> String? {
            lock.lock()
            defer { lock.unlock() }
            forced.append(forceRefresh)
            guard !results.isEmpty else { throw MissingField(description: "the callback was called more often than the vector allows") }
            let next = results.removeFirst()
            if let message = next["throws"]?.stringValue { throw MissingField(description: message) }
            return next.stringValue
        }
    }

    func testUserToken() async throws {
        for vector in try vectors("user-token.json", kind: "user-token") {
            let name = try field(vector, "name", "?").stringValue ?? "?"
            let input = try field(vector, "input", name)
            let expected = try field(vector, "expected", name)
            let nowMs = Int64(try field(input, "nowMs", name).doubleValue ?? 0)
            var answers: [ClientTests.ScriptedTransport.Answer] = []
            for answer in try field(input, "answers", name).arrayValue ?? [] {
                let status = answer["status"]?.intValue ?? 0
                if status == 200 {
                    answers.append(.init(status: 200, headers: [(name: "Content-Type", value: "application/json")], body: Data("{}".utf8)))
                } else {
                    let type = answer["errorType"]?.stringValue ?? ""
                    let reason = answer["reason"]?.stringValue.map { ",\"reason\":\"\($0)\"" } ?? ""
                    answers.append(.init(status: status, headers: [(name: "Tollgate-Error", value: type)],
                                         body: Data("{\"error\":{\"type\":\"\(type)\"\(reason),\"message\":\"refused\"}}".utf8)))
                }
            }
            let transport = ClientTests.ScriptedTransport(answers)
            let client = try TollgateClient(baseURL: URL(string: "https://gateway.example.com")!, appToken: "at_0123456789abcdefghijABCDEFGHIJkl",
                                            deviceTokens: StaticDeviceToken("e30.e30.c2ln"), transport: transport, clock: { nowMs })
            let results = try field(input, "callbackResults", name)
            var callback: Callback?
            if let list = results.arrayValue {
                let recorder = Callback(list)
                callback = recorder
                try await client.setUserTokenProvider { forceRefresh in try recorder.call(forceRefresh) }
            }
            if let cached = input["cached"]?.stringValue { try await client.resolve().userTokens.prime(cached) }
            var outcome: TollgateError?
            let requests = try field(input, "requests", name).intValue ?? 1
            for _ in 0..<requests {
                do {
                    _ = try await client.request(endpoint: "openai/v1/chat/completions", method: "POST", body: Data("{}".utf8))
                } catch let error as TollgateError {
                    outcome = error
                    break
                }
            }
            XCTAssertEqual(callback?.forced.count ?? 0, expected["callbackCalls"]?.intValue, "\(name): callback calls")
            XCTAssertEqual(callback?.forced ?? [], (expected["callbackForced"]?.arrayValue ?? []).compactMap(\.boolValue), "\(name): forced")
            let sentTokens = transport.calls.map { call in call.headers.first { $0.name == "Tollgate-User-Token" }?.value }
            let wantedTokens: [String?] = (expected["sentUserTokens"]?.arrayValue ?? []).map(\.stringValue)
            XCTAssertEqual(sentTokens, wantedTokens, "\(name): Tollgate-User-Token sent")
            if let want = expected["outcome"], case .object = want {
                XCTAssertEqual(outcome?.kind.rawValue, want["kind"]?.stringValue, "\(name): outcome kind")
                XCTAssertEqual(outcome?.reason, want["reason"]?.stringValue, "\(name): outcome reason")
            } else {
                XCTAssertNil(outcome, "\(name): no failure")
            }
        }
    }

    // MARK: - me.json

    func testMe() throws {
        for vector in try vectors("me.json", kind: "me") {
            let name = try field(vector, "name", "?").stringValue ?? "?"
            let input = try field(vector, "input", name)
            let expected = try field(vector, "expected", name)
            let status = try field(input, "status", name).intValue ?? 0
            let body = Data((try field(input, "body", name).stringValue ?? "").utf8)
            if status != 200 {
                let error = ErrorMapper.map(status: status, headers: [(name: "Tollgate-Error", value: "unauthorized")], body: body, nowMs: 0)
                XCTAssertEqual(error?.kind.rawValue, expected["error"]?.stringValue, "\(name): kind")
                XCTAssertEqual(error?.reason, expected["reason"]?.stringValue, "\(name): reason")
                continue
            }
            if let kind = expected["error"]?.stringValue {
                XCTAssertThrowsError(try Me.parse(body), "\(name)") { thrown in
                    XCTAssertEqual((thrown as? TollgateError)?.kind.rawValue, kind, "\(name): kind")
                }
                continue
            }
            let me = try Me.parse(body)
            XCTAssertEqual(me.deviceId, optionalString(expected["deviceId"]), "\(name): deviceId")
            XCTAssertEqual(me.userId, optionalString(expected["userId"]), "\(name): userId")
            XCTAssertEqual(me.signedIn, expected["signedIn"]?.boolValue, "\(name): signedIn")
            let limits = expected["limits"]?.arrayValue ?? []
            XCTAssertEqual(me.limits.count, limits.count, "\(name): limits")
            for (got, want) in zip(me.limits, limits) {
                XCTAssertEqual(got.name, want["name"]?.stringValue, "\(name): limit name")
                XCTAssertEqual(got.scope, optionalString(want["scope"]), "\(name): scope")
                XCTAssertEqual(got.unit, optionalString(want["unit"]), "\(name): unit")
                XCTAssertEqual(got.limit, want["limit"]?.doubleValue, "\(name): limit")
                XCTAssertEqual(got.remaining, want["remaining"]?.doubleValue, "\(name): remaining")
                XCTAssertEqual(got.window, optionalString(want["window"]), "\(name): window")
                XCTAssertEqual(got.resetsAtMs, want["resetsAtMs"]?.doubleValue.map { Int64($0) }, "\(name): resetsAtMs")
            }
        }
    }
}
