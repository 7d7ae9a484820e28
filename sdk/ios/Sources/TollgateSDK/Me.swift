import Foundation

/// One limit or budget that applies to this device or user (`GET /v1/me`, protocol.md).
public struct MeLimit: Sendable, Equatable {
    /// e.g. `requests_per_day`, `tokens_per_day`, `session_seconds_per_day`.
    public let name: String
    /// `device`, `user`, … (nil when the gateway did not say).
    public let scope: String?
    /// `requests`, `tokens`, `seconds`, …
    public let unit: String?
    public let limit: Double
    public let remaining: Double
    /// e.g. `1m`, `1d`.
    public let window: String?
    /// When `remaining` goes back to `limit`, unix ms; nil when unknown.
    public let resetsAtMs: Int64?

    /// Public so that an app can build one (a fake `me()` in its own tests); the SDK reads them with ``Me/parse(_:)``.
    public init(name: String, scope: String?, unit: String?, limit: Double, remaining: Double, window: String?, resetsAtMs: Int64?) {
        self.name = name
        self.scope = scope
        self.unit = unit
        self.limit = limit
        self.remaining = remaining
        self.window = window
        self.resetsAtMs = resetsAtMs
    }
}

/// What the calling device (and signed-in user) may still spend: `GET /v1/me` (sdk/conformance/README.md, "me.json").
public struct Me: Sendable, Equatable {
    public let deviceId: String?
    /// The signed-in user's id, nil when no user token was sent or accepted.
    public let userId: String?
    public let signedIn: Bool
    public let limits: [MeLimit]

    /// Public so that an app can build one (a fake `me()` in its own tests).
    public init(deviceId: String?, userId: String?, signedIn: Bool, limits: [MeLimit]) {
        self.deviceId = deviceId
        self.userId = userId
        self.signedIn = signedIn
        self.limits = limits
    }

    /// Reads a 200 answer; a body that is not such a document is ``TollgateError/networkError(_:)``
    /// (`malformed_response`). Entries this version cannot read are skipped, for newer gateways.
    public static func parse(_ body: Data) throws -> Me {
        let malformed = TollgateError.network("The /v1/me answer has no device or limits.", reason: "malformed_response")
        guard let document = try? JSONValue.parse(body), case .object = document,
              let device = document["device"], case .object = device,
              let entries = document["limits"]?.arrayValue else { throw malformed }
        var limits: [MeLimit] = []
        for entry in entries {
            guard case .object = entry, let name = entry["name"]?.stringValue,
                  case .number(let limit)? = entry["limit"], case .number(let remaining)? = entry["remaining"] else { continue }
            limits.append(MeLimit(name: name, scope: entry["scope"]?.stringValue, unit: entry["unit"]?.stringValue,
                                  limit: limit, remaining: remaining, window: entry["window"]?.stringValue,
                                  resetsAtMs: entry["resetsAt"]?.stringValue.flatMap(parseInstant)))
        }
        var userId: String?
        var signedIn = false
        if let user = document["user"], case .object = user {
            signedIn = true
            userId = user["id"]?.stringValue
        }
        return Me(deviceId: device["id"]?.stringValue, userId: userId, signedIn: signedIn, limits: limits)
    }
}
