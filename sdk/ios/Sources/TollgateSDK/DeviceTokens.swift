import Foundation

/// Unix milliseconds from the system clock. Public because public initializers default their `clock` parameter to
/// `{ SystemClock.nowMs() }`, and a public default argument may only reference public declarations.
public enum SystemClock {
    public static func nowMs() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// A device token from `POST /v1/attest/{method}` (protocol.md, "Device tokens").
public struct DeviceToken: Sendable, Codable, Equatable, CustomStringConvertible {
    public let token: String
    /// Unix ms after which the gateway refuses it.
    public let expiresAtMs: Int64
    /// Unix ms when it was received (to size the refresh margin).
    public let receivedAtMs: Int64
    /// The attestation method that earned it (`apple-app-attest`, `development`).
    public let method: String
    /// The gateway's id for this device (`deviceId` of the attestation answer), when it said.
    public let deviceId: String?

    public init(token: String, expiresAtMs: Int64, receivedAtMs: Int64, method: String, deviceId: String? = nil) {
        self.token = token
        self.expiresAtMs = expiresAtMs
        self.receivedAtMs = receivedAtMs
        self.method = method
        self.deviceId = deviceId
    }

    /// True when this token should be replaced at `nowMs` (``TokenTiming/refreshDue(receivedAtMs:expiresAtMs:nowMs:marginMs:)``).
    public func needsRefresh(nowMs: Int64, marginMs: Int64 = TokenTiming.refreshMarginMs) -> Bool {
        TokenTiming.refreshDue(receivedAtMs: receivedAtMs, expiresAtMs: expiresAtMs, nowMs: nowMs, marginMs: marginMs)
    }

    /// Never prints the token itself.
    public var description: String { "DeviceToken(method: \(method), expiresAtMs: \(expiresAtMs))" }
}

/// The timing rules every Tollgate SDK shares (sdk/conformance/client-behaviour.json, `token-expiry`, `refresh-due`).
public enum TokenTiming {
    /// One refresh margin for all SDKs: 60 s (or a fifth of the lifetime, if shorter).
    public static let refreshMarginMs: Int64 = 60_000

    /// `nowMs >= expiresAtMs - min(marginMs, (expiresAtMs - receivedAtMs) / 5)`.
    public static func refreshDue(receivedAtMs: Int64, expiresAtMs: Int64, nowMs: Int64, marginMs: Int64 = refreshMarginMs) -> Bool {
        let lifetime = max(0, expiresAtMs - receivedAtMs)
        return nowMs >= expiresAtMs - min(marginMs, lifetime / 5)
    }

    /// The expiry of a device token: the earlier of `expiresAt` (ISO 8601) and the JWS `exp` claim, whichever are
    /// readable; neither → `receivedAtMs` (the token serves this call only and is never reused).
    public static func expiresAtMs(deviceToken: String, expiresAt: String?, receivedAtMs: Int64) -> Int64 {
        let candidates = [expiresAt.flatMap(parseInstant), jwsExpiryMs(deviceToken)].compactMap { $0 }
        return candidates.min() ?? receivedAtMs
    }
}

/// Where the client gets its `Tollgate-Device-Token`.
public protocol DeviceTokenSource: Sendable {
    /// A token valid for at least the refresh margin; attests when needed. Throws ``TollgateError``.
    func deviceToken() async throws -> String
    /// The gateway refused `token` (attestationFailed): forget it so that the next call gets a new one.
    func invalidate(_ token: String) async
    /// The gateway refused a request made with `token` with `reason` (attestationFailed): apply the reason → action
    /// rule (``ReasonAction``) and say what was done. The default invalidates the token for `refresh` and `attest`.
    func report(deviceToken token: String, reason: String?) async -> ReasonAction
}

extension DeviceTokenSource {
    public func report(deviceToken token: String, reason: String?) async -> ReasonAction {
        let action = ReasonAction.forAttestationFailure(reason: reason)
        if action == .refresh || action == .attest { await invalidate(token) }
        return action
    }
}

/// A fixed token (tests, tools).
public struct StaticDeviceToken: DeviceTokenSource {
    private let token: String
    public init(_ token: String) { self.token = token }
    public func deviceToken() async throws -> String { token }
    public func invalidate(_ token: String) async {}
}

/// Keeps a device token across launches (by default the Keychain, see ``SecureDeviceTokenStore``).
public protocol DeviceTokenStore: Sendable {
    func load() -> DeviceToken?
    func save(_ token: DeviceToken?)
}

/// Caches the device token and attests again shortly before it expires: when less than `refreshMarginMs` (default
/// 60 s, ``TokenTiming/refreshMarginMs``), or a fifth of the token's lifetime if that is shorter, remains. Concurrent callers share one
/// attestation (single flight); a failed attestation is not cached, so the next call tries again.
public actor DeviceTokenCache: DeviceTokenSource {
    private let clock: @Sendable () -> Int64
    private let refreshMarginMs: Int64
    private let store: DeviceTokenStore?
    private let attest: @Sendable () async throws -> DeviceToken
    private var current: DeviceToken?
    private var loaded = false
    private var pending: Task<DeviceToken, Error>?
    /// How many attestations were started (diagnostics and tests).
    public private(set) var attestationCount = 0

    public init(clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }, refreshMarginMs: Int64 = TokenTiming.refreshMarginMs,
                store: DeviceTokenStore? = nil, attest: @escaping @Sendable () async throws -> DeviceToken) {
        self.clock = clock
        self.refreshMarginMs = refreshMarginMs
        self.store = store
        self.attest = attest
    }

    public func deviceToken() async throws -> String {
        if !loaded {
            loaded = true
            if current == nil { current = store?.load() }
        }
        if let cached = current, !needsRefresh(cached, nowMs: clock()) { return cached.token }
        if let pending = pending { return try await pending.value.token }
        attestationCount += 1
        let attest = self.attest
        let flight = Task { try await attest() }
        pending = flight
        do {
            let fresh = try await flight.value
            // The actor may have run other calls while this one waited; the flight is still ours to settle.
            if pending == flight { pending = nil }
            current = fresh
            store?.save(fresh)
            return fresh.token
        } catch {
            if pending == flight { pending = nil }
            throw error
        }
    }

    /// The cached token, if any (even one due for refresh).
    public var cached: DeviceToken? { current }

    public func invalidate(_ token: String) async {
        if current?.token == token {
            current = nil
            store?.save(nil)
        }
    }

    /// Forgets the token (sign-out, a new app token).
    public func clear() {
        current = nil
        store?.save(nil)
    }

    /// True when `token` should be replaced at `nowMs`.
    public nonisolated func needsRefresh(_ token: DeviceToken, nowMs: Int64) -> Bool {
        token.needsRefresh(nowMs: nowMs, marginMs: refreshMarginMs)
    }
}

/// The `exp` claim of a compact JWS, in unix ms, read without verifying the signature; nil when unreadable.
func jwsExpiryMs(_ token: String) -> Int64? {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
          case .number(let exp)? = (try? JSONValue.parse(payload))?["exp"], exp.isFinite, abs(exp) < 9e12
    else { return nil }
    return Int64(exp * 1000)
}

/// Keeps the device token in a ``TollgateSecureStore`` (by default the Keychain: this device only, readable after the
/// first unlock), one item per gateway and app token, so that a cold start does not attest again. A device token is
/// short-lived (1 hour by default) and bound to the app.
public struct SecureDeviceTokenStore: DeviceTokenStore {
    private let store: TollgateSecureStore
    private let account: String

    public init(appToken: String, gatewayURL: String = "", store: TollgateSecureStore? = nil) {
        self.store = store ?? defaultSecureStore()
        // Keyed by a hash of the gateway and app token, so that switching apps or gateways never reuses another token.
        account = "deviceToken." + String(Digest.sha256Hex(Data((gatewayURL + "\n" + appToken).utf8)).prefix(16))
    }

    public func load() -> DeviceToken? {
        guard let data = store.data(account) else { return nil }
        return try? JSONDecoder().decode(DeviceToken.self, from: data)
    }

    public func save(_ token: DeviceToken?) {
        guard let token, let data = try? JSONEncoder().encode(token) else {
            store.delete(account)
            return
        }
        store.set(data, account)
    }
}
