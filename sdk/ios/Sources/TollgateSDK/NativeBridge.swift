import Foundation

/// The operations the Flutter plugin (MethodChannel `dev.tollgate/native`) and the React Native module
/// (`TollgateNative`) expose to Dart and TypeScript, over one ``TollgateDeviceSession``: the native SDK owns the
/// device-token lifecycle (Keychain persistence, App Attest refresh, the reason → action rule, revocation), the Dart and
/// TypeScript cores own requests and streams.
///
/// | bridge method | arguments | result |
/// |---|---|---|
/// | `getConfiguration` | – | `{gatewayUrl: String?}` (Info.plist `TollgateGatewayURL`) |
/// | `configure` | `{appToken, gatewayUrl, developmentToken?}` | null |
/// | `deviceToken` | `{forceRefresh}` | `{deviceToken, expiresAtMs, deviceId}` |
/// | `reportError` | `{deviceToken, reason?}` | `{action: "stop" \| "refresh" \| "attest" \| "assert" \| "none"}` |
/// | `assertion` | `{digest}` (base64 of the 32-byte request digest) | `{assertion: String?}` (base64url, no padding) |
/// | `clear` | – | null |
///
/// Errors are ``TollgateError``s: the plugins pass `kind.rawValue` as the error code and `reason` in the details.
public final class TollgateNativeBridge: @unchecked Sendable {
    /// The instance both plugins use.
    public static let shared = TollgateNativeBridge()

    private let lock = NSLock()
    private var session: TollgateDeviceSession?
    private let makeSession: @Sendable (String, String, String?) throws -> TollgateDeviceSession

    public convenience init() {
        self.init(makeSession: { gatewayURL, appToken, developmentToken in
            try TollgateDeviceSession(gatewayURL: gatewayURL, appToken: appToken, developmentToken: developmentToken)
        })
    }

    /// With a session factory (tests: a scripted transport and attestor).
    public init(makeSession: @escaping @Sendable (_ gatewayURL: String, _ appToken: String, _ developmentToken: String?) throws -> TollgateDeviceSession) {
        self.makeSession = makeSession
    }

    /// `getConfiguration`: the gateway address from Info.plist, or nil.
    public func gatewayURLFromInfoPlist() -> String? {
        Tollgate.infoPlistGatewayURL
    }

    /// `configure`: a session for this gateway and app token. A nil or empty `gatewayURL` falls back to Info.plist;
    /// neither gives `invalidRequest` (reason `gateway_url_missing`). `developmentToken`, when not nil, makes the session
    /// attest with `POST /v1/attest/development` (the Dart / TypeScript side passes one only in debug builds).
    public func configure(appToken: String, gatewayURL: String?, developmentToken: String?) throws {
        let explicit = gatewayURL?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard let address = explicit.isEmpty ? Tollgate.infoPlistGatewayURL : explicit else {
            throw TollgateError.invalid(
                "No gateway address: pass one, or add the key \(Tollgate.gatewayURLInfoPlistKey) to the app's Info.plist.",
                reason: "gateway_url_missing")
        }
        let fresh = try makeSession(address, appToken, developmentToken)
        lock.lock()
        session = fresh
        lock.unlock()
    }

    /// `deviceToken`: see ``TollgateDeviceSession/token(forceRefresh:)``.
    public func deviceToken(forceRefresh: Bool) async throws -> DeviceToken {
        try await current().token(forceRefresh: forceRefresh)
    }

    /// `reportError`: see ``TollgateDeviceSession/report(deviceToken:reason:)``.
    public func reportError(deviceToken: String, reason: String?) async throws -> ReasonAction {
        let session = try current()
        return await session.report(deviceToken: deviceToken, reason: reason)
    }

    /// `assertion`: the `Tollgate-Assertion` value for a request digest given as base64 (32 bytes), or nil while
    /// per-request assertions are not enabled.
    public func assertion(digestBase64: String) async throws -> String? {
        guard let digest = Data(base64Encoded: digestBase64), digest.count == 32 else {
            throw TollgateError.invalid("The digest must be the base64 of the 32-byte request digest.", reason: "digest_invalid")
        }
        return try await current().assertion(digest: digest)
    }

    /// `clear`: forgets the device token (the key and a revocation stay). Nothing to do before `configure`.
    public func clear() async {
        await configuredSession()?.clear()
    }

    // Synchronous, so that the lock is never held across a suspension point (NSLock is not for async contexts).
    private func configuredSession() -> TollgateDeviceSession? {
        lock.lock()
        defer { lock.unlock() }
        return session
    }

    private func current() throws -> TollgateDeviceSession {
        guard let session = configuredSession() else {
            throw TollgateError.invalid("Call Tollgate.initialize(appToken) at app start.", reason: "not_initialized")
        }
        return session
    }
}
