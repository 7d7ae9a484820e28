import Foundation

/// Returns the signed-in user's current ID token, or nil when nobody is signed in (protocol.md, "End users").
/// `forceRefresh` is true when the gateway found the last one expired: pass it on to the sign-in SDK (Firebase
/// `getIDTokenForcingRefresh(true)`, Supabase `refreshSession()`, …).
public typealias UserTokenProvider = @Sendable (_ forceRefresh: Bool) async throws -> String?

/// The user token the SDK sends as `Tollgate-User-Token` (sdk/conformance/README.md, "user-token.json"): the
/// callback's token is reused while its JWT `exp` is more than ``marginMs`` away; a token without a readable `exp`
/// serves one request; the callback is asked again (forced) once when the gateway answers `user_token_expired`.
public actor UserTokenCache {
    /// A cached token is reused while more than this remains before its `exp`.
    public static let marginMs: Int64 = 60_000

    private var provider: UserTokenProvider?
    private var current: (token: String, expiresAtMs: Int64?)?
    private var generation = 0
    private let clock: @Sendable () -> Int64

    public init(clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }) {
        self.clock = clock
    }

    /// Registers the callback; nil signs out (no header from now on). The cached token is dropped either way.
    public func setProvider(_ provider: UserTokenProvider?) {
        self.provider = provider
        current = nil
        generation += 1
    }

    public var hasProvider: Bool { provider != nil }

    /// Seeds the cache with a token the app already holds (tests, restored sessions).
    public func prime(_ token: String) {
        current = (token: token, expiresAtMs: jwsExpiryMs(token))
    }

    /// The gateway found `token` expired: forget it when it is still the cached one.
    public func invalidate(_ token: String?) {
        if let token, current?.token == token { current = nil }
    }

    /// The token to send, or nil (no callback, or signed out). A callback that throws is
    /// ``TollgateError/unauthorized(_:)`` with reason `user_token_unavailable`, before anything is sent.
    public func token(forceRefresh: Bool = false) async throws -> String? {
        guard let provider else { return nil }
        if !forceRefresh, let cached = current {
            guard let expiresAtMs = cached.expiresAtMs else {
                current = nil // a primed token without exp serves one request only
                return cached.token
            }
            if clock() < expiresAtMs - Self.marginMs { return cached.token }
        }
        let generation = self.generation
        let value: String?
        do {
            value = try await provider(forceRefresh)
        } catch {
            throw TollgateError.unauthorized(.init(message: "The user-token callback failed: \(ErrorMapper.describe(error))", reason: "user_token_unavailable"))
        }
        // The actor may have been re-entered while the callback ran (a sign-out): keep nothing then.
        guard let token = value, !token.isEmpty else {
            if generation == self.generation { current = nil }
            return nil
        }
        do {
            try RequestBuilder.checkHeaderValue("Tollgate-User-Token", token)
        } catch {
            throw TollgateError.unauthorized(.init(message: "The user-token callback returned a token that cannot be sent as a header.", reason: "user_token_unavailable"))
        }
        if generation == self.generation {
            // A token without a readable exp is not kept: the callback is asked again for the next request.
            if let expiresAtMs = jwsExpiryMs(token) {
                current = (token: token, expiresAtMs: Optional(expiresAtMs))
            } else {
                current = nil
            }
        }
        return token
    }
}
