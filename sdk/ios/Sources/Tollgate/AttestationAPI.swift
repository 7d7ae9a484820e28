import Foundation

/// A one-time challenge from `POST /v1/attest/challenge` (docs/guides/attestation.md): base64url of 32 bytes, single
/// use, bound to the app, valid 5 minutes.
public struct Challenge: Sendable, Equatable {
    public let value: String
    public let expiresAtMs: Int64?

    /// The raw challenge bytes (base64url-decoded), as the platform attestation APIs want them.
    public var bytes: Data? { Base64URL.decode(value) }
}

/// The attestation exchange over HTTP, platform-free: get a challenge, then trade a platform artifact for a device
/// token. The platform part (App Attest, development token) is ``PlatformAttestor``.
public struct AttestationAPI: Sendable {
    private let builder: RequestBuilder
    private let transport: HTTPTransport
    private let clock: @Sendable () -> Int64

    public init(baseURL: String, appToken: String, sdk: String, transport: HTTPTransport,
                clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }) throws {
        builder = try RequestBuilder(baseURL: baseURL, appToken: appToken, sdk: sdk)
        self.transport = transport
        self.clock = clock
    }

    /// `POST /v1/attest/challenge`.
    public func challenge() async throws -> Challenge {
        let answer = try await post("challenge", payload: Data())
        guard let value = answer["challenge"]?.stringValue, !value.isEmpty else { throw malformed("challenge") }
        return Challenge(value: value, expiresAtMs: answer["expiresAt"]?.stringValue.flatMap(parseInstant))
    }

    /// `POST /v1/attest/{method}` with `body` (a JSON object), e.g. for `apple-app-attest`
    /// `{"keyId": "…", "attestation": "<base64>", "challenge": "…"}`; answers the device token.
    public func exchange(method: String, body: JSONValue) async throws -> DeviceToken {
        let received = clock()
        let answer = try await post(method, payload: Data(body.jsonString.utf8))
        guard let token = answer["deviceToken"]?.stringValue, !token.isEmpty else { throw malformed("deviceToken") }
        let expiresAt = answer["expiresAt"]?.stringValue.flatMap(parseInstant)
            ?? answer["expiresIn"]?.doubleValue.map { received + Int64($0 * 1000) }
            ?? jwsExpiryMs(token)
        guard let expiresAt else { throw malformed("expiresAt") }
        return DeviceToken(token: token, expiresAtMs: expiresAt, receivedAtMs: received, method: method)
    }

    private func post(_ method: String, payload: Data) async throws -> JSONValue {
        var headers = builder.attestHeaders
        if !payload.isEmpty { headers.append((name: "Content-Type", value: "application/json")) }
        let call = HTTPCall(method: "POST", url: try builder.attestURL(method), headers: headers, body: payload)
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
        if let error = ErrorMapper.map(status: head.status, headers: head.headers, body: data, nowMs: clock()) { throw error }
        guard let answer = try? JSONValue.parse(data), case .object = answer else {
            throw TollgateError.network("The gateway's attestation answer is not a JSON object.", reason: "malformed_response")
        }
        return answer
    }

    private func malformed(_ field: String) -> TollgateError {
        .network("The gateway's attestation answer has no \"\(field)\".", reason: "malformed_response")
    }
}

/// An ISO 8601 instant (`2025-11-24T16:01:30.123Z`, as the gateway's `Date.toISOString()` writes it) in unix ms.
func parseInstant(_ text: String) -> Int64? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    formatter.formatOptions = [.withInternetDateTime]
    if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    return nil
}
