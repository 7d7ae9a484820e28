import Foundation

/// What the SDK does when the gateway refuses a request with `attestationFailed` and a `reason` (protocol.md,
/// "Errors"; sdk/conformance/client-behaviour.json, rule `reason-action`). The raw values are the bridge's strings.
public enum ReasonAction: String, Sendable, CaseIterable {
    /// `device_revoked`: surface `attestationFailed`, attest no new key, refresh nothing until the app restarts.
    case stop = "stop"
    /// `device_token_expired` / `_invalid` / `_missing`, or no reason (an older gateway): refresh the device token
    /// with the existing key, then retry once.
    case refresh = "refresh"
    /// `device_key_unknown`: the gateway no longer knows the key; attest a new one, then retry once.
    case attest = "attest"
    /// `assertion_required`: send `Tollgate-Assertion` on every request from now on, then retry once.
    case assert = "assert"
    /// Any other reason, or another error kind: surface the error, change nothing.
    case noAction = "none"

    /// The action for an `attestationFailed` refusal with `reason` (nil: the gateway sent none).
    public static func forAttestationFailure(reason: String?) -> ReasonAction {
        guard let reason else { return .refresh }
        switch reason {
        case "device_revoked": return .stop
        case "device_token_expired", "device_token_invalid", "device_token_missing": return .refresh
        case "device_key_unknown": return .attest
        case "assertion_required": return .assert
        default: return .noAction
        }
    }

    /// The action for any error: only `attestationFailed` touches the device token.
    public static func forError(_ error: TollgateError) -> ReasonAction {
        error.kind == .attestationFailed ? forAttestationFailure(reason: error.reason) : .noAction
    }

    /// The action for a gateway answer: `Tollgate-Error` type and status decide the kind (error-mapping rule 3).
    public static func forGatewayError(errorType: String, status: Int, reason: String?) -> ReasonAction {
        ErrorMapper.kindOf(type: errorType, status: status) == .attestationFailed ? forAttestationFailure(reason: reason) : .noAction
    }

    /// True when the request is sent once more after the action.
    public var retriesOnce: Bool { self == .refresh || self == .attest || self == .assert }

    /// True when the action attests a new key.
    public var attestsNewKey: Bool { self == .attest }
}

/// The platform's key attestation (App Attest on Apple devices: ``AppAttestKeyAttestor``). Errors are
/// ``TollgateError/attestationFailed(_:)``; a key the platform no longer accepts has reason `app_attest_key_invalid`.
public protocol KeyAttestor: Sendable {
    /// A new hardware key; its id.
    func generateKey() async throws -> String
    /// The platform attestation of `keyId` over `clientDataHash`.
    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data
    /// An assertion by `keyId` over `clientDataHash`.
    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
}

/// The `Tollgate-Assertion` header value (client-behaviour.json, `assertion-encoding`).
public enum AssertionEncoding {
    /// Base64url without padding of the proof bytes; empty bytes are refused (`invalidRequest`).
    public static func header(_ proof: Data) throws -> String {
        guard !proof.isEmpty else { throw TollgateError.invalid("An empty assertion cannot be sent.", reason: "assertion_empty") }
        return Base64URL.encode(proof)
    }
}

/// Revocations seen in this process, per gateway and app token: a revoked device stays refused until the app restarts,
/// even if the SDK is configured again (a Flutter hot restart, a new `Tollgate.configure`).
private final class RevocationMemory: @unchecked Sendable {
    static let shared = RevocationMemory()
    private let lock = NSLock()
    private var revoked: Set<String> = []

    func contains(_ account: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return revoked.contains(account)
    }

    func insert(_ account: String) {
        lock.lock()
        revoked.insert(account)
        lock.unlock()
    }

    func removeAll() {
        lock.lock()
        revoked.removeAll()
        lock.unlock()
    }
}

/// The device's identity and device token for one gateway and app token: the one implementation of the token
/// lifecycle that ``Tollgate``, the Flutter plugin and the React Native module all use.
///
/// - ``token(forceRefresh:)``: the persisted token (Keychain) while it is not due for refresh (client-behaviour.json,
///   `refresh-due`: less than min(60 s, lifetime / 5) left); else a refresh by an assertion of the attested key over a
///   fresh challenge (the device keeps its id); else, only when there is no attested key or the gateway answered
///   `device_key_unknown`, a new App Attest key. A key is remembered as the device's key only after the gateway accepted
///   its attestation. With a development token (simulators, DEBUG builds), `POST /v1/attest/development` instead.
/// - ``report(deviceToken:reason:)``: applies the reason → action rule (``ReasonAction``) after a refusal.
/// - After `device_revoked` (from a refresh or a proxied call) every call fails with `attestationFailed`, reason
///   `device_revoked`, and nothing is attested until the app restarts. No new key ever replaces a revoked one.
///
/// Concurrent callers share one exchange; a failed exchange is not cached.
public actor TollgateDeviceSession: DeviceTokenSource {
    /// The gateway, e.g. `https://gateway.example.com`.
    public nonisolated let gatewayURL: String
    private let api: AttestationAPI
    private let store: TollgateSecureStore
    private let tokenStore: SecureDeviceTokenStore
    private let attestor: KeyAttestor?
    private let developmentToken: String?
    private let clock: @Sendable () -> Int64
    private let account: String
    private var current: DeviceToken?
    private var loaded = false
    private var pending: Task<DeviceToken, Error>?

    /// True once the gateway asked for per-request assertions (`assertion_required`) in this process.
    public private(set) var assertionsRequired = false
    /// Exchanges with `POST /v1/attest/{method}` started by this session (diagnostics and tests).
    public private(set) var exchangeCount = 0
    /// Keys generated by this session (diagnostics and tests).
    public private(set) var generatedKeyCount = 0

    /// - Parameters:
    ///   - gatewayURL: `http(s)://host[:port][/path]`; anything else throws `invalidRequest` (reason `gateway_url_missing`).
    ///   - appToken: the app token (`at_…`).
    ///   - developmentToken: a development token (`dt_…`): attest with `POST /v1/attest/development` instead of App Attest.
    ///     The caller decides when (``Tollgate`` only in DEBUG builds on a simulator; the plugins only in debug builds).
    ///   - transport: HTTP (default: `URLSession` on Apple platforms).
    ///   - store: where the token and the key id persist (default: the Keychain; memory where there is none).
    ///   - attestor: the platform key attestation (default: App Attest where DeviceCheck exists).
    public init(gatewayURL: String, appToken: String, developmentToken: String? = nil, transport: HTTPTransport? = nil,
                store: TollgateSecureStore? = nil, attestor: KeyAttestor? = nil,
                clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }) throws {
        let trimmed = gatewayURL.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, RequestBuilder.isValidBaseURL(trimmed) else {
            throw TollgateError.invalid(
                "The gateway address must be http(s)://host[:port][/path] (Info.plist key TollgateGatewayURL, or configure(appToken:gatewayURL:)): \"\(gatewayURL)\".",
                reason: "gateway_url_missing")
        }
        let secureStore = store ?? defaultSecureStore()
        self.gatewayURL = trimmed
        self.api = try AttestationAPI(baseURL: trimmed, appToken: appToken, transport: transport ?? defaultTransport(), clock: clock)
        self.store = secureStore
        self.tokenStore = SecureDeviceTokenStore(appToken: appToken, gatewayURL: trimmed, store: secureStore)
        self.attestor = attestor ?? defaultKeyAttestor()
        let development = developmentToken?.trimmingCharacters(in: .whitespacesAndNewlines)
        self.developmentToken = (development?.isEmpty ?? true) ? nil : development
        self.clock = clock
        // The device's identity (its App Attest key) belongs to the device and the gateway, not to an app token: a
        // rotated app token must not re-key every phone (and bring revoked devices back unrevoked). The device token,
        // which is bound to the app, stays keyed by gateway and app token (SecureDeviceTokenStore).
        self.account = String(Digest.sha256Hex(Data(trimmed.utf8)).prefix(16))
        self.legacyAccount = String(Digest.sha256Hex(Data((trimmed + "\n" + appToken).utf8)).prefix(16))
    }

    /// Where versions before 1.2.1 kept the key id (keyed by gateway and app token): moved on first read.
    private let legacyAccount: String
    private var keyAccount: String { "appAttest.keyId." + account }
    private var pendingKeyAccount: String { "appAttest.pendingKeyId." + account }

    /// The attested key id: nil only when the store says there is none. A store that cannot answer is an error
    /// (`keychain_unavailable`), never "no key": the SDK must not mint a new identity over a transient failure.
    private func storedKeyId(_ account: String) throws -> String? {
        do {
            if let data = try store.read(account) { return String(decoding: data, as: UTF8.self) }
            let legacy = account.replacingOccurrences(of: self.account, with: legacyAccount)
            guard legacy != account, let old = try store.read(legacy) else { return nil }
            try store.write(old, account)
            store.delete(legacy)
            return String(decoding: old, as: UTF8.self)
        } catch let error as TollgateError {
            throw error
        } catch {
            throw TollgateError.attestation("The Keychain could not be read (\(error)); try again.", reason: "keychain_unavailable")
        }
    }

    /// Keeps a key id; a failed write is an error (`keychain_write_failed`), so that the key is not silently lost.
    private func storeKeyId(_ keyId: String, _ account: String) throws {
        do {
            try store.write(Data(keyId.utf8), account)
        } catch {
            throw TollgateError.attestation("The Keychain could not store the device key (\(error)).", reason: "keychain_write_failed")
        }
    }

    /// True after `device_revoked`, until the app restarts.
    public var isRevoked: Bool { RevocationMemory.shared.contains(account) }

    /// The id of the key the gateway accepted for this device, if any.
    public var attestedKeyId: String? { (try? storedKeyId(keyAccount)) ?? nil }

    // MARK: Token

    /// A device token valid for at least the refresh margin (see the type's documentation). `forceRefresh` skips the
    /// persisted token. Throws ``TollgateError`` (`attestationFailed` with reason `device_revoked` after revocation).
    public func token(forceRefresh: Bool = false) async throws -> DeviceToken {
        try checkNotRevoked()
        if !loaded {
            loaded = true
            if current == nil { current = tokenStore.load() }
        }
        if !forceRefresh, let cached = current, !cached.needsRefresh(nowMs: clock()) { return cached }
        if let pending { return try await pending.value }
        let flight = Task { try await self.obtain() }
        pending = flight
        do {
            let fresh = try await flight.value
            if pending == flight { pending = nil }
            try checkNotRevoked()
            current = fresh
            tokenStore.save(fresh)
            return fresh
        } catch {
            if pending == flight { pending = nil }
            throw error
        }
    }

    /// ``DeviceTokenSource``: the token string.
    public func deviceToken() async throws -> String {
        try await token().token
    }

    /// ``DeviceTokenSource``: forget `token` (the next call refreshes with the existing key).
    public func invalidate(_ token: String) {
        if current?.token == token || (current == nil && tokenStore.load()?.token == token) { forgetToken() }
    }

    /// Applies the reason → action rule to an `attestationFailed` refusal of a request made with `token`:
    /// `stop` marks the device revoked for this launch and deletes the stored token; `refresh` invalidates the token;
    /// `attest` also forgets the key; `assert` turns per-request assertions on; `none` changes nothing.
    @discardableResult
    public func report(deviceToken token: String, reason: String?) -> ReasonAction {
        let action = ReasonAction.forAttestationFailure(reason: reason)
        switch action {
        case .stop:
            markRevoked()
        case .refresh:
            invalidate(token)
        case .attest:
            let matches = current == nil || current?.token == token
            invalidate(token)
            if matches { store.delete(keyAccount) }
        case .assert:
            assertionsRequired = true
        case .noAction:
            break
        }
        return action
    }

    /// Forgets the device token (sign-out, a new app token). The key, and a revocation, stay.
    public func clear() {
        forgetToken()
    }

    // MARK: Assertions

    /// The `Tollgate-Assertion` value for a request `digest` (32 bytes), or nil while the gateway has not asked for
    /// assertions (``assertionsRequired``) or when there is no attested key (development tokens).
    public func assertion(digest: Data) async throws -> String? {
        guard assertionsRequired else { return nil }
        return try await sign(digest: digest)
    }

    /// Signs a request `digest` (32 bytes) with the attested key whatever ``assertionsRequired`` says; nil when there
    /// is no attested key (development tokens, not attested yet).
    public func sign(digest: Data) async throws -> String? {
        guard digest.count == 32 else {
            throw TollgateError.invalid("The request digest must be 32 bytes (SHA-256).", reason: "digest_invalid")
        }
        try checkNotRevoked()
        guard developmentToken == nil, let attestor, let keyId = try storedKeyId(keyAccount) else { return nil }
        do {
            return try AssertionEncoding.header(try await attestor.generateAssertion(keyId, clientDataHash: digest))
        } catch let error as TollgateError where error.reason == "app_attest_key_invalid" {
            // The key is gone (a reinstall, a restored phone): the next token attests a new one.
            store.delete(keyAccount)
            forgetToken()
            throw error
        }
    }

    // MARK: Exchanges

    private func obtain() async throws -> DeviceToken {
        if let developmentToken {
            let body = AttestationAPI.developmentBody(developmentToken: developmentToken, deviceId: TollgateDeviceSession.developmentDeviceId())
            return try await exchange("development", body)
        }
        guard let attestor else {
            throw TollgateError.attestation(
                "App Attest is not available on this platform. On a simulator, use a development token in a DEBUG build.",
                reason: "app_attest_unsupported")
        }
        if let keyId = try storedKeyId(keyAccount) {
            do {
                let challenge = try await api.challenge()
                let assertion = try await attestor.generateAssertion(keyId, clientDataHash: challenge.clientDataHash)
                return try await exchange("apple-app-attest", AttestationAPI.appAssertionBody(keyId: keyId, assertion: assertion, challenge: challenge.value))
            } catch let error as TollgateError where error.reason == "device_key_unknown" || error.reason == "app_attest_key_invalid" {
                // The gateway (or this device) no longer knows the key: only now is a new key attested.
                store.delete(keyAccount)
            }
        }
        return try await attestNewKey(attestor)
    }

    private func attestNewKey(_ attestor: KeyAttestor) async throws -> DeviceToken {
        let challenge = try await api.challenge()
        var keyId = try await unattestedKey(attestor)
        let attestation: Data
        do {
            attestation = try await attestor.attestKey(keyId, clientDataHash: challenge.clientDataHash)
        } catch let error as TollgateError where error.reason == "app_attest_key_invalid" {
            // The kept key was attested already or belongs to a previous installation: a new key.
            store.delete(pendingKeyAccount)
            keyId = try await unattestedKey(attestor)
            attestation = try await attestor.attestKey(keyId, clientDataHash: challenge.clientDataHash)
        }
        let token = try await exchange("apple-app-attest", AttestationAPI.appAttestBody(keyId: keyId, attestation: attestation, challenge: challenge.value))
        // Accepted by the gateway: from now on this key is the device's key.
        try storeKeyId(keyId, keyAccount)
        store.delete(pendingKeyAccount)
        return token
    }

    /// The key generated earlier and not accepted yet (Apple: retry with the same key), else a new one.
    private func unattestedKey(_ attestor: KeyAttestor) async throws -> String {
        if let kept = try storedKeyId(pendingKeyAccount) { return kept }
        let keyId = try await attestor.generateKey()
        generatedKeyCount += 1
        try storeKeyId(keyId, pendingKeyAccount)
        return keyId
    }

    private func exchange(_ method: String, _ body: JSONValue) async throws -> DeviceToken {
        try checkNotRevoked()
        exchangeCount += 1
        do {
            return try await api.exchange(method: method, body: body)
        } catch let error as TollgateError where error.reason == "device_revoked" {
            markRevoked()
            throw error
        }
    }

    // MARK: State

    private func checkNotRevoked() throws {
        if isRevoked {
            throw TollgateError.attestation(
                "This device was revoked by the gateway's operator; Tollgate attests nothing more until the app restarts.",
                reason: "device_revoked")
        }
    }

    private func markRevoked() {
        RevocationMemory.shared.insert(account)
        forgetToken()
    }

    private func forgetToken() {
        current = nil
        loaded = true
        tokenStore.save(nil)
    }

    /// Forgets every revocation of this process (tests only).
    static func resetRevocationsForTesting() {
        RevocationMemory.shared.removeAll()
    }

    /// A random id for development attestation, stable per installation (`dev-<UUID>`; the gateway accepts 1–128 of
    /// `A-Z a-z 0-9 . _ : -`). Kept in `UserDefaults` (required-reason API, declared in PrivacyInfo.xcprivacy as CA92.1).
    static func developmentDeviceId() -> String {
        let key = "dev.tollgate.developmentDeviceId"
        if let id = UserDefaults.standard.string(forKey: key) { return id }
        let id = "dev-" + UUID().uuidString
        UserDefaults.standard.set(id, forKey: key)
        return id
    }
}
