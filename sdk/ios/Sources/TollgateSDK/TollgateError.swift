import Foundation

/// Every failure the SDK reports (protocol.md, "Errors"): the five errors of the product brief (`attestationFailed`,
/// `unauthorized`, `rateLimited`, `secretNotFound`, `networkError`) plus `invalidRequest` and `providerError`, so that
/// no failure is silent. Every error the SDK throws is one of these seven cases, except task cancellation
/// (`CancellationError`) and, from a realtime session's messages, ``RealtimeCloseError``. Swift's `throws` is untyped,
/// so a `do`/`catch` always needs a final `catch` besides the seven cases:
///
/// ```swift
/// do {
///     let response = try await Tollgate.request(endpoint: "openai/v1/chat/completions", method: "POST", body: json)
/// } catch TollgateError.attestationFailed {
///     // not the genuine app on a real device, or revoked
/// } catch TollgateError.unauthorized {
///     // wrong, rotated or disabled app token
/// } catch TollgateError.rateLimited(let retryAfter) {
///     // wait retryAfter seconds (nil when the gateway did not say)
/// } catch TollgateError.secretNotFound {
///     // no key for this provider on the gateway yet
/// } catch TollgateError.networkError {
///     // offline, gateway or provider unreachable, cut stream
/// } catch TollgateError.invalidRequest(let details) {
///     // a bug in the request (or no configuration): log details.message; details.reason names it
/// } catch TollgateError.providerError(let status, let body) {
///     // the provider's own error, passed through unchanged
/// } catch {
///     // CancellationError (the task was cancelled); the compiler requires this clause
/// }
/// ```
///
/// The payload shapes of `rateLimited` and `providerError` are fixed by the integration code the dashboard generates
/// (core/integration/code-generator.ts), so those cases carry exactly those values; the other five carry ``Details``
/// (the gateway's message, raw error type, request id and machine-readable ``Details/reason``). Every case also answers
/// ``kind``, ``message``, ``errorType``, ``requestId`` and ``reason``.
///
/// ``reason`` is the gateway's `error.reason` (protocol.md, "Errors"; docs/reference/errors.md), e.g. `device_revoked`,
/// `device_token_expired`, `app_token_unknown`, `route_not_allowed`, or one of the SDK's own (`not_initialized`,
/// `gateway_url_missing`, `app_attest_unsupported`, `stream_cut`, …); nil when nobody gave one.
public enum TollgateError: Error, Sendable, Equatable {
    /// 403 from the gateway (device token refused, attestation or assertion rejected), or a failure of this device's
    /// own attestation step (App Attest unavailable, development token in a release build, …); see ``Details/reason``.
    case attestationFailed(Details)
    /// 401: the app token is missing, malformed, unknown, revoked, or the app is disabled.
    case unauthorized(Details)
    /// 429 from the gateway: a limit was exceeded. `retryAfter` is `Retry-After` in whole seconds (delay-seconds or an
    /// HTTP-date), nil when the gateway did not say. A provider's own 429 is ``providerError(status:body:)`` instead.
    case rateLimited(retryAfter: Int?)
    /// 424: the gateway has no secret (provider key) for this provider on this app.
    case secretNotFound(Details)
    /// No usable response: offline, DNS, TLS, reset, a cut or malformed stream, or the gateway could not reach the
    /// provider (502/504, raw type `upstreamUnavailable` / `upstreamTimeout`).
    case networkError(Details)
    /// The request was refused: by the SDK before anything was sent (unsafe endpoint, bad header, not configured:
    /// reason `not_initialized`, no gateway address: `gateway_url_missing`), or by the gateway (400/404/405/413).
    case invalidRequest(Details)
    /// The provider answered non-2xx (without `Tollgate-Error`); its body passes through unchanged, as UTF-8 text.
    case providerError(status: Int, body: String)

    /// What the gateway (or the SDK) said about an error.
    public struct Details: Sendable, Equatable, CustomStringConvertible {
        /// A human sentence: the gateway's `error.message`, or the SDK's own.
        public var message: String
        /// The raw `Tollgate-Error` type when the gateway made the error (`providerNotFound`, `upstreamTimeout`, …).
        public var errorType: String?
        /// The gateway's request id (body `error.requestId`, else the `Tollgate-Request-Id` header), to match its logs.
        public var requestId: String?
        /// The gateway's `error.reason` (snake_case), or the SDK's own (`app_attest_unsupported`, `stream_cut`,
        /// `not_initialized`, …); nil when none is known.
        public var reason: String?

        public init(message: String, errorType: String? = nil, requestId: String? = nil, reason: String? = nil) {
            self.message = message
            self.errorType = errorType
            self.requestId = requestId
            self.reason = reason
        }

        public var description: String { message }
    }

    /// The kinds, named as in the conformance vectors (sdk/conformance/README.md).
    public enum Kind: String, Sendable, CaseIterable {
        case attestationFailed, unauthorized, rateLimited, secretNotFound, networkError, invalidRequest, providerError
    }

    /// This error's kind.
    public var kind: Kind {
        switch self {
        case .attestationFailed: return .attestationFailed
        case .unauthorized: return .unauthorized
        case .rateLimited: return .rateLimited
        case .secretNotFound: return .secretNotFound
        case .networkError: return .networkError
        case .invalidRequest: return .invalidRequest
        case .providerError: return .providerError
        }
    }

    /// A human sentence describing the error.
    public var message: String {
        switch self {
        case .attestationFailed(let details), .unauthorized(let details), .secretNotFound(let details), .networkError(let details),
             .invalidRequest(let details):
            return details.message
        case .rateLimited(let retryAfter):
            return retryAfter.map { "Rate limited by the gateway; retry after \($0) s." } ?? "Rate limited by the gateway."
        case .providerError(let status, _):
            return "The provider answered HTTP \(status)."
        }
    }

    /// The ``Details`` of the five cases that carry them, else nil.
    public var details: Details? {
        switch self {
        case .attestationFailed(let details), .unauthorized(let details), .secretNotFound(let details), .networkError(let details),
             .invalidRequest(let details):
            return details
        case .rateLimited, .providerError:
            return nil
        }
    }

    /// The raw `Tollgate-Error` type, when the case carries ``Details``.
    public var errorType: String? { details?.errorType }

    /// The gateway's request id, when the case carries ``Details``.
    public var requestId: String? { details?.requestId }

    /// The machine-readable reason (gateway `error.reason` or the SDK's own), when the case carries ``Details``.
    public var reason: String? { details?.reason }

    /// `retryAfter` of ``rateLimited(retryAfter:)``, else nil.
    public var retryAfter: Int? {
        if case .rateLimited(let retryAfter) = self { return retryAfter }
        return nil
    }

    // Convenience constructors used across the SDK.

    static func network(_ message: String, reason: String? = nil, errorType: String? = nil, requestId: String? = nil) -> TollgateError {
        .networkError(Details(message: message, errorType: errorType, requestId: requestId, reason: reason))
    }

    static func attestation(_ message: String, reason: String? = nil, errorType: String? = nil, requestId: String? = nil) -> TollgateError {
        .attestationFailed(Details(message: message, errorType: errorType, requestId: requestId, reason: reason))
    }

    static func invalid(_ message: String, reason: String? = nil, errorType: String? = nil, requestId: String? = nil) -> TollgateError {
        .invalidRequest(Details(message: message, errorType: errorType, requestId: requestId, reason: reason))
    }
}

extension TollgateError: LocalizedError {
    public var errorDescription: String? { message }
}

extension TollgateError: CustomStringConvertible {
    public var description: String { "TollgateError.\(kind.rawValue): \(message)" }
}
