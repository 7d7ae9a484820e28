import Foundation

/// A one-time challenge from `POST /v1/attest/challenge` (docs/guides/attestation.md): base64url of 32 bytes, single
/// use, bound to the app, valid 5 minutes.
public struct Challenge: Sendable, Equatable {
    public let value: String
    public let expiresAtMs: Int64?

    public init(value: String, expiresAtMs: Int64?) {
        self.value = value
        self.expiresAtMs = expiresAtMs
    }

    /// The raw challenge bytes (base64url-decoded).
    public var bytes: Data? { Base64URL.decode(value) }

    /// What App Attest signs for this challenge: SHA-256 of the challenge string's UTF-8 bytes, as the gateway
    /// computes it (client-behaviour.json, `attestation-request`, `clientDataHashHex`).
    public var clientDataHash: Data { Digest.sha256(Data(value.utf8)) }
}

/// The attestation exchange over HTTP, platform-free (protocol.md, "Addresses"; client-behaviour.json,
/// `attestation-request` and `attestation-response`): get a challenge, then trade a platform artifact for a device
/// token. One challenge per exchange. The platform part (App Attest) is a ``KeyAttestor``.
public struct AttestationAPI: Sendable {
    private let builder: RequestBuilder
    private let transport: HTTPTransport
    private let clock: @Sendable () -> Int64

    public init(baseURL: String, appToken: String, transport: HTTPTransport,
                clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }) throws {
        builder = try RequestBuilder(baseURL: baseURL, appToken: appToken, sdk: Tollgate.sdkHeader)
        self.transport = transport
        self.clock = clock
    }

    // MARK: Bodies (standard base64 for bytes, as the vectors fix)

    /// `POST /v1/attest/apple-app-attest` for a new key: `{"keyId", "attestation": base64, "challenge"}`.
    public static func appAttestBody(keyId: String, attestation: Data, challenge: String) -> JSONValue {
        .object(["keyId": .string(keyId), "attestation": .string(attestation.base64EncodedString()), "challenge": .string(challenge)])
    }

    /// `POST /v1/attest/apple-app-attest` for a refresh by the attested key: `{"keyId", "assertion": base64, "challenge"}`.
    public static func appAssertionBody(keyId: String, assertion: Data, challenge: String) -> JSONValue {
        .object(["keyId": .string(keyId), "assertion": .string(assertion.base64EncodedString()), "challenge": .string(challenge)])
    }

    /// `POST /v1/attest/development`: `{"developmentToken", "deviceId"}` (no challenge).
    public static func developmentBody(developmentToken: String, deviceId: String) -> JSONValue {
        .object(["developmentToken": .string(developmentToken), "deviceId": .string(deviceId)])
    }

    // MARK: Calls

    /// The HTTP call of `POST /v1/attest/{method}`; `body` nil for the challenge (no body, no `Content-Type`).
    func call(_ method: String, body: JSONValue?) throws -> HTTPCall {
        var headers = builder.attestHeaders
        var payload = Data()
        if let body {
            headers.insert((name: "Content-Type", value: "application/json"), at: 0)
            payload = Data(body.jsonString.utf8)
        }
        return HTTPCall(method: "POST", url: try builder.attestURL(method), headers: headers, body: payload)
    }

    /// `POST /v1/attest/challenge`.
    public func challenge() async throws -> Challenge {
        let (_, data) = try await send(try call("challenge", body: nil))
        guard let answer = try? JSONValue.parse(data), let value = answer["challenge"]?.stringValue, !value.isEmpty else {
            throw AttestationAPI.malformed("challenge")
        }
        return Challenge(value: value, expiresAtMs: answer["expiresAt"]?.stringValue.flatMap(parseInstant))
    }

    /// `POST /v1/attest/{method}` with `body` (a JSON object); answers the device token. A refusal is the mapped
    /// ``TollgateError`` with the gateway's reason (`device_revoked`, `device_key_unknown`, …).
    public func exchange(method: String, body: JSONValue) async throws -> DeviceToken {
        let (head, data) = try await send(try call(method, body: body))
        return try AttestationAPI.parseAnswer(status: head.status, body: data, receivedAtMs: clock(), method: method,
                                              serverOffsetMs: ServerClock.forGateway(builder.baseValue).offsetMs)
    }

    /// A 2xx attestation answer → the device token, its expiry (``TokenTiming/expiresAtMs(deviceToken:expiresAt:receivedAtMs:)``)
    /// and device id; a 200 that breaks the protocol (no string `deviceToken`, not JSON) is `networkError`.
    /// The expiry is on the device clock: `receivedAtMs + expiresIn` when the gateway says `expiresIn` (seconds; immune
    /// to a wrong device clock), else the absolute times moved to the device clock by `serverOffsetMs`.
    static func parseAnswer(status: Int, body: Data, receivedAtMs: Int64, method: String, serverOffsetMs: Int64 = 0) throws -> DeviceToken {
        guard let answer = try? JSONValue.parse(body), case .object = answer else {
            throw TollgateError.network("The gateway's attestation answer (HTTP \(status)) is not a JSON object.", reason: "malformed_response")
        }
        guard let token = answer["deviceToken"]?.stringValue, !token.isEmpty else { throw malformed("deviceToken") }
        let expiresAt: Int64
        if case .number(let seconds)? = answer["expiresIn"], seconds.isFinite, seconds >= 0, seconds < 1e9 {
            expiresAt = receivedAtMs + Int64(seconds * 1000)
        } else {
            expiresAt = TokenTiming.expiresAtMs(deviceToken: token, expiresAt: answer["expiresAt"]?.stringValue,
                                                receivedAtMs: receivedAtMs + serverOffsetMs) - serverOffsetMs
        }
        return DeviceToken(token: token, expiresAtMs: expiresAt, receivedAtMs: receivedAtMs,
                           method: answer["method"]?.stringValue ?? method, deviceId: answer["deviceId"]?.stringValue)
    }

    private func send(_ call: HTTPCall) async throws -> (HTTPResponseHead, Data) {
        let response: (HTTPResponseHead, Data)
        do {
            response = try await transport.data(for: call)
        } catch let error as TollgateError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw ErrorMapper.noResponse(error)
        }
        let (head, data) = response
        ServerClock.forGateway(builder.baseValue).observe(head.header("Date"), receivedAtMs: clock())
        if let error = ErrorMapper.map(status: head.status, headers: head.headers, body: data, nowMs: clock()) { throw error }
        return response
    }

    private static func malformed(_ field: String) -> TollgateError {
        .network("The gateway's attestation answer has no usable \"\(field)\".", reason: "malformed_response")
    }
}

/// An ISO 8601 instant in unix ms: `2025-11-24T16:01:30.123Z` (as the gateway's `Date.toISOString()` writes it),
/// with or without fractional seconds, `Z` or a `±hh:mm` offset; nil for anything else. Parsed by hand, so that the
/// result depends on neither locale nor platform (Foundation's formatters differ on Linux).
func parseInstant(_ text: String) -> Int64? {
    let bytes = Array(text.utf8)
    func number(_ from: Int, _ count: Int) -> Int? {
        guard from + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[from..<from + count] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
    guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
          bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
          let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
          let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
          hour <= 23, minute <= 59, second <= 60
    else { return nil }
    var index = 19
    var fractionMs = 0
    if bytes[index] == UInt8(ascii: ".") {
        index += 1
        var digits = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            if digits < 3 { fractionMs = fractionMs * 10 + Int(bytes[index] - UInt8(ascii: "0")) }
            digits += 1
            index += 1
        }
        guard digits > 0 else { return nil }
        for _ in digits..<max(digits, 3) { fractionMs *= 10 }
    }
    guard index < bytes.count else { return nil }
    var offsetSeconds = 0
    if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
        index += 1
    } else if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
        guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
              let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours <= 23, minutes <= 59
        else { return nil }
        offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        index += 6
    } else {
        return nil
    }
    guard index == bytes.count,
          let utc = HTTPDate.utcMs(year: year, month: month, day: day, time: (hour, minute, min(second, 59)))
    else { return nil }
    return utc + Int64(fractionMs) - Int64(offsetSeconds) * 1000
}
