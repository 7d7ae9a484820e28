import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import TollgateSDK

/// Runs every vector of sdk/conformance/*.json (sdk/conformance/README.md): one test per file, each iterating all of
/// its vectors, with every failure message naming the vector. Stream vectors are fed three ways: as chunked in the
/// vector, as one whole chunk, and one byte at a time.
final class ConformanceTests: XCTestCase {
    /// `sdk/conformance`, found from this file: Tests/TollgateSDKTests/ConformanceTests.swift → sdk/ios → sdk.
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent() // TollgateSDKTests
        .deletingLastPathComponent() // Tests
        .deletingLastPathComponent() // ios
        .deletingLastPathComponent() // sdk
        .appendingPathComponent("conformance", isDirectory: true)

    struct MissingField: Error, CustomStringConvertible {
        let description: String
    }

    // MARK: - Files

    /// Every JSON file in the folder has format version 1 and a kind this runner knows; the four expected files exist.
    func testEveryFileIsKnown() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".json") }.sorted()
        for required in ["error-mapping.json", "request-building.json", "stream-parsing.json", "client-behaviour.json"] {
            XCTAssertTrue(names.contains(required), "\(required) missing in \(Self.directory.path)")
        }
        for name in names {
            let document = try JSONValue.parse(Data(contentsOf: Self.directory.appendingPathComponent(name)))
            XCTAssertEqual(document["version"]?.intValue, 1, "\(name): unknown format version")
            let kind = document["kind"]?.stringValue ?? ""
            XCTAssertTrue(["request-building", "error-mapping", "stream-parsing", "client-behaviour",
                           "realtime-close-codes", "subprotocols", "user-token", "me"].contains(kind), "\(name): unknown vector kind \"\(kind)\"")
            XCTAssertFalse((document["vectors"]?.arrayValue ?? []).isEmpty, "\(name) has no vectors")
        }
    }

    func vectors(_ file: String, kind: String) throws -> [JSONValue] {
        let document = try JSONValue.parse(Data(contentsOf: Self.directory.appendingPathComponent(file)))
        guard document["version"]?.intValue == 1 else { throw MissingField(description: "\(file): unknown format version") }
        guard document["kind"]?.stringValue == kind else { throw MissingField(description: "\(file): kind is not \(kind)") }
        guard let vectors = document["vectors"]?.arrayValue, !vectors.isEmpty else { throw MissingField(description: "\(file): no vectors") }
        var seen = Set<String>()
        for vector in vectors {
            let name = try string(vector, "name")
            XCTAssertTrue(seen.insert(name).inserted, "\(file): duplicate vector name \(name)")
        }
        return vectors
    }

    // MARK: - request-building.json

    func testRequestBuilding() throws {
        let all = try vectors("request-building.json", kind: "request-building")
        for vector in all {
            let name = try string(vector, "name")
            do {
                try checkRequestBuilding(vector)
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
    }

    private func checkRequestBuilding(_ vector: JSONValue) throws {
        let name = try string(vector, "name")
        let input = try field(vector, "input")
        let expected = try field(vector, "expected")
        let requestTimeMs = Int64(try integer(input, "requestTimeMs"))
        let build: () throws -> BuiltRequest = {
            let builder = try RequestBuilder(baseURL: try self.string(input, "baseUrl"), appToken: try self.string(input, "appToken"),
                                             sdk: try self.string(input, "sdk"))
            var body: RequestBody?
            if let bodyField = input["body"] {
                if let text = bodyField["text"]?.stringValue {
                    body = .text(text)
                } else {
                    body = .bytes(try self.bytes(bodyField))
                }
            }
            let query = try (input["query"]?.arrayValue ?? []).map { pair -> (name: String, value: String) in
                guard let items = pair.arrayValue, items.count == 2, let key = items[0].stringValue, let value = items[1].stringValue else {
                    throw MissingField(description: "query pair is not [name, value]")
                }
                return (name: key, value: value)
            }
            let headers = (input["headers"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value.stringValue ?? "") }
            let request = TollgateRequest(method: try self.string(input, "method"), endpoint: try self.string(input, "endpoint"),
                                          body: body, query: query, headers: headers)
            return try builder.build(request, deviceToken: try self.string(input, "deviceToken"), requestTimeMs: requestTimeMs)
        }
        if let error = expected["error"] {
            XCTAssertEqual(error.stringValue, "invalidRequest", "\(name): expected error kind")
            do {
                let built = try build()
                XCTFail("\(name): expected invalidRequest, built \(built.url)")
            } catch let error as TollgateError {
                XCTAssertEqual(error.kind, .invalidRequest, "\(name): error kind")
            }
            return
        }
        let built = try build()
        XCTAssertEqual(built.method, try string(expected, "method"), "\(name): method")
        XCTAssertEqual(built.url, try string(expected, "url"), "\(name): url")
        XCTAssertEqual(built.pathWithQuery, try string(expected, "pathWithQuery"), "\(name): pathWithQuery")
        var expectedHeaders: [String: String] = [:]
        for (key, value) in try object(expected, "headers") {
            expectedHeaders[key.lowercased()] = value.stringValue
        }
        var actualHeaders: [String: String] = [:]
        for header in built.headers {
            XCTAssertNil(actualHeaders[header.name.lowercased()], "\(name): header \(header.name) set twice")
            actualHeaders[header.name.lowercased()] = header.value
        }
        XCTAssertEqual(actualHeaders, expectedHeaders, "\(name): headers")
        XCTAssertEqual(built.bodySha256, try string(expected, "bodySha256"), "\(name): bodySha256")
        XCTAssertEqual(built.canonicalRequest, try string(expected, "canonicalRequest"), "\(name): canonicalRequest")
        XCTAssertEqual(built.digest, try string(expected, "digest"), "\(name): digest")
        XCTAssertEqual(Digest.requestDigest(method: built.method, pathWithQuery: built.pathWithQuery, requestTimeMs: requestTimeMs, body: built.body),
                       try string(expected, "digest"), "\(name): Digest.requestDigest")
    }

    // MARK: - error-mapping.json

    func testErrorMapping() throws {
        let all = try vectors("error-mapping.json", kind: "error-mapping")
        for vector in all {
            let name = try string(vector, "name")
            do {
                try checkErrorMapping(vector)
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
    }

    private func checkErrorMapping(_ vector: JSONValue) throws {
        let name = try string(vector, "name")
        let input = try field(vector, "input")
        let expected = try field(vector, "expected")
        let nowMs = Int64(try integer(input, "nowMs"))
        let status = try field(input, "status")

        let report: ErrorReport?
        let error: TollgateError?
        if status == .null {
            let cause = URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: input["transportError"]?.stringValue ?? "no response"])
            error = ErrorMapper.noResponse(cause)
            report = nil
        } else {
            guard let code = status.intValue else { throw MissingField(description: "status is not an integer") }
            let headers: HeaderPairs = try (try field(input, "headers").arrayValue ?? []).map { pair in
                guard let items = pair.arrayValue, items.count == 2, let key = items[0].stringValue, let value = items[1].stringValue else {
                    throw MissingField(description: "header pair is not [name, value]")
                }
                return (name: key, value: value)
            }
            let bodyField = try field(input, "body")
            let body = bodyField == .null ? nil : Data((bodyField.stringValue ?? "").utf8)
            report = ErrorMapper.report(status: code, headers: headers, body: body, nowMs: nowMs)
            error = ErrorMapper.map(status: code, headers: headers, body: body, nowMs: nowMs)
            XCTAssertEqual(report?.error, error, "\(name): report and map disagree")
        }
        if expected == .null {
            XCTAssertNil(error, "\(name): a 2xx is not an error")
            return
        }
        guard let error else {
            XCTFail("\(name): expected \(expected["kind"]?.stringValue ?? "?"), got no error")
            return
        }
        let kind = try string(expected, "kind")
        XCTAssertEqual(error.kind.rawValue, kind, "\(name): kind")
        // The fields below live in the report (the thrown error keeps the generated code's payload shapes); where the
        // thrown error carries a field too, it must agree.
        if let errorType = expected["errorType"] {
            XCTAssertEqual(report?.errorType, errorType.stringValue, "\(name): errorType")
            if error.details != nil { XCTAssertEqual(error.errorType, errorType.stringValue, "\(name): error.errorType") }
        }
        if let message = expected["message"] {
            XCTAssertEqual(report?.message, message.stringValue, "\(name): message")
            XCTAssertEqual(error.message, message.stringValue, "\(name): error.message")
        }
        if let reason = expected["reason"] {
            let value = reason == .null ? nil : reason.stringValue
            XCTAssertEqual(report?.reason, value, "\(name): reason")
            XCTAssertEqual(error.reason, value, "\(name): error.reason")
        }
        if let requestId = expected["requestId"] {
            XCTAssertEqual(report?.requestId, requestId.stringValue, "\(name): requestId")
            if error.details != nil { XCTAssertEqual(error.requestId, requestId.stringValue, "\(name): error.requestId") }
        }
        if let retryAfter = expected["retryAfterSeconds"] {
            let value = retryAfter == .null ? nil : retryAfter.intValue
            XCTAssertEqual(report?.retryAfterSeconds, value, "\(name): retryAfterSeconds")
            XCTAssertEqual(error, .rateLimited(retryAfter: value), "\(name): rateLimited(retryAfter:)")
        }
        if let expectedStatus = expected["status"] {
            guard case .providerError(let status, _) = error else { return XCTFail("\(name): not providerError") }
            XCTAssertEqual(status, expectedStatus.intValue, "\(name): status")
        }
        if let expectedBody = expected["body"] {
            guard case .providerError(_, let body) = error else { return XCTFail("\(name): not providerError") }
            XCTAssertEqual(body, expectedBody.stringValue, "\(name): body")
        }
        if kind == "invalidRequest", case .invalidRequest(let details) = error {
            XCTAssertEqual(details.message, report?.message, "\(name): invalidRequest(details.message)")
        }
    }

    // MARK: - stream-parsing.json

    func testStreamParsing() throws {
        let all = try vectors("stream-parsing.json", kind: "stream-parsing")
        for vector in all {
            let name = try string(vector, "name")
            do {
                try checkStreamParsing(vector)
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
    }

    private func checkStreamParsing(_ vector: JSONValue) throws {
        let name = try string(vector, "name")
        let formatName = try string(vector, "format")
        guard let format = StreamFormat(rawValue: formatName) else { throw MissingField(description: "unknown format \(formatName)") }
        let input = try field(vector, "input")
        let expected = try field(vector, "expected")
        let chunks = try (try field(input, "chunks").arrayValue ?? []).map { try bytes($0) }
        guard let whole = Data(base64Encoded: try string(input, "base64")) else { throw MissingField(description: "input.base64 is not base64") }
        if let text = input["text"] {
            XCTAssertEqual(String(decoding: whole, as: UTF8.self), text.stringValue, "\(name): input.text and input.base64 differ")
        }
        XCTAssertEqual(chunks.reduce(Data(), +), whole, "\(name): chunks do not add up to input.base64")
        let cut: Bool
        switch try string(input, "end") {
        case "clean": cut = false
        case "cut": cut = true
        case let other: throw MissingField(description: "unknown end \(other)")
        }
        let errorField = try field(expected, "error")
        let expectedError = errorField == .null ? nil : errorField.stringValue
        let ways: [(String, [Data])] = [
            ("as given", chunks),
            ("whole", [whole]),
            ("byte by byte", whole.map { Data([$0]) }),
        ]
        for (way, feed) in ways {
            let (events, error) = runParser(format, feed, cut: cut)
            XCTAssertEqual(error, expectedError, "\(name) (\(way)): error")
            if format == .raw {
                var delivered = Data()
                for event in events {
                    guard case .bytes(let chunk) = event else { return XCTFail("\(name) (\(way)): raw delivered \(event)") }
                    delivered += chunk
                }
                XCTAssertEqual(delivered.base64EncodedString(), try string(expected, "bytes"), "\(name) (\(way)): bytes")
            } else {
                let expectedEvents = try (try field(expected, "events").arrayValue ?? []).map(expectedEvent)
                XCTAssertEqual(events, expectedEvents, "\(name) (\(way)): events")
            }
        }
    }

    /// Feeds `chunks` as the client does; a cut is the transport failing after the last chunk (no finish).
    private func runParser(_ format: StreamFormat, _ chunks: [Data], cut: Bool) -> ([StreamEvent], String?) {
        let parser = format.makeParser()
        var events: [StreamEvent] = []
        for chunk in chunks {
            let result = parser.feed(chunk)
            events += result.events
            if result.error != nil { return (events, "networkError") }
        }
        if cut { return (events, "networkError") }
        let result = parser.finish()
        events += result.events
        return (events, result.error == nil ? nil : "networkError")
    }

    private func expectedEvent(_ value: JSONValue) throws -> StreamEvent {
        if let json = value["json"] { return .json(json) }
        return .sse(ServerSentEvent(
            event: try string(value, "event"),
            data: try string(value, "data"),
            id: value["id"]?.stringValue,
            retry: value["retry"]?.intValue
        ))
    }

    // MARK: - Field access that fails loudly on a missing field

    func field(_ object: JSONValue, _ name: String) throws -> JSONValue {
        guard let value = object[name] else { throw MissingField(description: "missing field \"\(name)\"") }
        return value
    }

    func string(_ object: JSONValue, _ name: String) throws -> String {
        guard let value = try field(object, name).stringValue else { throw MissingField(description: "field \"\(name)\" is not a string") }
        return value
    }

    func integer(_ object: JSONValue, _ name: String) throws -> Int {
        guard let value = try field(object, name).intValue else { throw MissingField(description: "field \"\(name)\" is not an integer") }
        return value
    }

    func object(_ object: JSONValue, _ name: String) throws -> [String: JSONValue] {
        guard let value = try field(object, name).objectValue else { throw MissingField(description: "field \"\(name)\" is not an object") }
        return value
    }

    /// `{"text": …}` (UTF-8) or `{"base64": …}`.
    func bytes(_ value: JSONValue) throws -> Data {
        if let text = value["text"]?.stringValue { return Data(text.utf8) }
        if let base64 = value["base64"]?.stringValue, let data = Data(base64Encoded: base64) { return data }
        throw MissingField(description: "bytes need text or base64")
    }
}
