import Foundation

/// What the SDK does after a realtime session closed (sdk/conformance/README.md, "realtime-close-codes.json").
public enum RealtimeCloseAction: String, Sendable, Equatable {
    /// 4503 `draining`: the gateway node is shutting down; open a new session at once.
    case reconnect
    /// 4403 `device_revoked`: as for an HTTP refusal, no new key and no refresh until the app restarts.
    case stop
    /// Surface the error; change nothing.
    case noAction = "none"
}

/// A realtime session that ended with an error: a gateway close (4400–4599), a transport close (1001, 1006, 1011–1014)
/// or the provider's own close code, passed through. Thrown by ``RealtimeSession/messages``.
///
/// ``TollgateError/rateLimited(retryAfter:)`` has no room for a reason, so a session's failure is this type, which
/// carries the ``kind``, the close ``reason`` and ``closeCode``; ``tollgateError`` gives the matching
/// ``TollgateError`` for code that handles both.
public struct RealtimeCloseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let kind: TollgateError.Kind
    /// The gateway type the code stands for (`rateLimited`, `serviceUnavailable`, …), nil for other codes.
    public let errorType: String?
    public let closeCode: Int
    /// The close reason when it is snake_case (the gateway's error reason: `token_budget`, `draining`, …), else nil.
    public let reason: String?
    /// The close reason text, trimmed.
    public let message: String
    public let action: RealtimeCloseAction

    public init(kind: TollgateError.Kind, errorType: String?, closeCode: Int, reason: String?, message: String, action: RealtimeCloseAction) {
        self.kind = kind
        self.errorType = errorType
        self.closeCode = closeCode
        self.reason = reason
        self.message = message
        self.action = action
    }

    /// True when the app may open a new session at once (4503 `draining`).
    public var mayReconnect: Bool { action == .reconnect }

    /// No close ever makes the SDK attest a new key or refresh the device token.
    public var newKey: Bool { false }

    public var description: String {
        "RealtimeCloseError.\(kind.rawValue) (\(closeCode)\(reason.map { " \($0)" } ?? "")): \(message)"
    }

    /// The same failure as a ``TollgateError``.
    public var tollgateError: TollgateError {
        let text = message.isEmpty ? "The realtime session was closed with code \(closeCode)." : message
        let details = TollgateError.Details(message: text, errorType: errorType, reason: reason)
        switch kind {
        case .attestationFailed: return .attestationFailed(details)
        case .unauthorized: return .unauthorized(details)
        case .rateLimited: return .rateLimited(retryAfter: nil)
        case .secretNotFound: return .secretNotFound(details)
        case .networkError: return .networkError(details)
        case .invalidRequest: return .invalidRequest(details)
        case .providerError: return .providerError(status: closeCode, body: message)
        }
    }

    /// Rule of realtime-close-codes.json: a close with `code` and `reason` → the error, or nil for a normal end (1000).
    public static func read(code: Int, reason: String) -> RealtimeCloseError? {
        let message = reason.trimmingCharacters(in: .whitespacesAndNewlines)
        let snake = isSnakeCase(message) ? message : nil
        if code == 1000 { return nil }
        let kind: TollgateError.Kind
        var errorType: String?
        switch code {
        case 4400: kind = .invalidRequest; errorType = "invalidRequest"
        case 4401: kind = .unauthorized; errorType = "unauthorized"
        case 4403: kind = .attestationFailed; errorType = "attestationFailed"
        case 4429: kind = .rateLimited; errorType = "rateLimited"
        case 4502: kind = .networkError; errorType = "upstreamUnavailable"
        case 4503: kind = .networkError; errorType = "serviceUnavailable"
        case 4504: kind = .networkError; errorType = "upstreamTimeout"
        case 4400...4499: kind = .invalidRequest
        case 4500...4599: kind = .networkError
        case 1001, 1006, 1011, 1012, 1013, 1014: kind = .networkError
        default:
            return RealtimeCloseError(kind: .providerError, errorType: nil, closeCode: code, reason: nil, message: message, action: .noAction)
        }
        let action: RealtimeCloseAction = code == 4503 ? .reconnect : (code == 4403 && snake == "device_revoked" ? .stop : .noAction)
        return RealtimeCloseError(kind: kind, errorType: errorType, closeCode: code, reason: snake, message: message, action: action)
    }

    static func isSnakeCase(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }
}

/// How the tokens travel on a realtime upgrade.
public enum RealtimeUpgradeMode: String, Sendable {
    /// As headers (URLSessionWebSocketTask sets them): the default of the native SDKs.
    case headers
    /// As `tollgate-app.…` / `tollgate-device.…` subprotocols, for WebSockets that cannot set headers.
    case subprotocols
}

/// The upgrade request of a realtime session (sdk/conformance/README.md, "subprotocols.json").
public struct RealtimeUpgrade: Sendable {
    /// `ws://` or `wss://`.
    public let url: String
    public let pathWithQuery: String
    /// Headers besides the WebSocket handshake's own, in the case sent.
    public let headers: [(name: String, value: String)]
    /// Subprotocols to offer, in order (`Sec-WebSocket-Protocol`).
    public let protocols: [String]
    public let canonicalRequest: String
    /// The upgrade's digest (GET, empty body): what a `Tollgate-Assertion` on the upgrade signs.
    public let digest: String

    /// A copy with one more header (the upgrade's `Tollgate-Assertion`).
    func adding(header name: String, value: String) -> RealtimeUpgrade {
        RealtimeUpgrade(url: url, pathWithQuery: pathWithQuery, headers: headers + [(name: name, value: value)], protocols: protocols,
                        canonicalRequest: canonicalRequest, digest: digest)
    }

    /// Builds the upgrade for `endpoint`; refusals are ``TollgateError/invalidRequest(_:)``, before anything is sent.
    public static func build(builder: RequestBuilder, appToken: String, endpoint: String, mode: RealtimeUpgradeMode,
                             deviceToken: String, userToken: String?, requestTimeMs: Int64,
                             protocols providerProtocols: [String] = []) throws -> RealtimeUpgrade {
        for proto in providerProtocols {
            guard !proto.isEmpty, proto.unicodeScalars.allSatisfy(RequestBuilder.isTokenCharacter) else {
                throw TollgateError.invalid("Not a valid WebSocket subprotocol: \"\(proto)\".", reason: "bad_protocol")
            }
            if proto.lowercased().hasPrefix("tollgate") {
                throw TollgateError.invalid("Subprotocols starting with \"tollgate\" are the SDK's: \"\(proto)\".", reason: "bad_protocol")
            }
        }
        let built = try builder.build(TollgateRequest(method: "GET", endpoint: endpoint), deviceToken: deviceToken, requestTimeMs: requestTimeMs)
        // http → ws, https → wss (the scheme is checked by RequestBuilder: http or https, any case).
        let url = "ws" + String(built.url.dropFirst(4))
        var headers: [(name: String, value: String)] = []
        var protocols: [String]
        switch mode {
        case .headers:
            headers = built.headers
            if let userToken, !userToken.isEmpty {
                try RequestBuilder.checkHeaderValue("Tollgate-User-Token", userToken)
                headers.append((name: "Tollgate-User-Token", value: userToken))
            }
            protocols = providerProtocols
        case .subprotocols:
            protocols = ["tollgate.v1", "tollgate-app." + appToken, "tollgate-device." + deviceToken] + providerProtocols
        }
        return RealtimeUpgrade(url: url, pathWithQuery: built.pathWithQuery, headers: headers, protocols: protocols,
                               canonicalRequest: built.canonicalRequest, digest: built.digest)
    }
}

/// A first-come, first-served async lock: `acquire` waits until every earlier holder released it. Used to keep
/// App Attest assertions (whose counter must increase at the gateway) in the order they reach the gateway.
actor AsyncSerialQueue {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiters.append(continuation)
        }
    }

    func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            // Ownership passes to the next waiter directly: `busy` stays true.
            waiters.removeFirst().resume()
        }
    }
}

/// Internal signal: the assertion failed for a key that is gone; get a new token and sign again.
struct RetryWithNewToken: Error {}
