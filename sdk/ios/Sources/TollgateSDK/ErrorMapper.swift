import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Response header pairs, names in any case, repeated names kept.
public typealias HeaderPairs = [(name: String, value: String)]

/// Case-insensitive header look-up (RFC 9110 §5.1: field names are case-insensitive).
public enum Headers {
    /// The first value of header `name` (any case), or nil.
    public static func first(_ headers: HeaderPairs, _ name: String) -> String? {
        let wanted = name.lowercased()
        for header in headers where header.name.lowercased() == wanted {
            return header.value
        }
        return nil
    }

    /// The header pairs of an `HTTPURLResponse` (Foundation has already joined repeated names with ", ").
    public static func of(_ response: HTTPURLResponse) -> HeaderPairs {
        var pairs: HeaderPairs = []
        for (key, value) in response.allHeaderFields {
            pairs.append((name: (key as? String) ?? String(describing: key), value: (value as? String) ?? String(describing: value)))
        }
        return pairs
    }
}

/// Everything the error mapping derives from one response: the fields the conformance vectors assert
/// (sdk/conformance/README.md, "error-mapping.json"), and the ``TollgateError`` the SDK throws.
///
/// ``TollgateError`` keeps the payload shapes of the generated integration code (`.rateLimited(retryAfter:)`,
/// `.invalidRequest(message)`, `.providerError(status, body)`), so a few fields (for example the raw `errorType` of a
/// `providerNotFound`) live here rather than in the thrown error.
public struct ErrorReport: Sendable, Equatable {
    public var kind: TollgateError.Kind
    /// The `Tollgate-Error` header value, trimmed (nil for a provider's error or no response).
    public var errorType: String?
    /// The gateway's `error.message`, or the SDK's own sentence.
    public var message: String
    /// Body `error.requestId`, else the `Tollgate-Request-Id` header.
    public var requestId: String?
    /// Body `error.reason` when it is a snake_case string (`^[a-z][a-z0-9_]*$`), else nil; nil for a provider's error.
    public var reason: String?
    /// With `rateLimited`: `Retry-After` in whole seconds, nil when absent or unreadable.
    public var retryAfterSeconds: Int?
    /// With `providerError`: the status, and the body as received (UTF-8 text).
    public var status: Int?
    public var body: String?

    /// The error the SDK throws for this report.
    public var error: TollgateError {
        let details = TollgateError.Details(message: message, errorType: errorType, requestId: requestId, reason: reason)
        switch kind {
        case .attestationFailed: return .attestationFailed(details)
        case .unauthorized: return .unauthorized(details)
        case .rateLimited: return .rateLimited(retryAfter: retryAfterSeconds)
        case .secretNotFound: return .secretNotFound(details)
        case .networkError: return .networkError(details)
        case .invalidRequest: return .invalidRequest(details)
        case .providerError: return .providerError(status: status ?? 0, body: body ?? "")
        }
    }
}

/// Turns an HTTP response into a ``TollgateError`` (protocol.md, "Errors"; sdk/conformance/README.md,
/// "error-mapping.json"), in this order:
///
/// 1. no response at all → `networkError`;
/// 2. a 2xx is never an error, whatever its headers (the status is checked first);
/// 3. a non-2xx with a `Tollgate-Error` header is the gateway's error and the **header** decides the kind; the body may
///    be missing, not JSON, or even name another type (vector `header-wins-over-body`);
/// 4. a non-2xx without it is the provider's own answer, passed through as `providerError(status, body)`: also a 401,
///    429, 5xx or 3xx (a provider's 429 is not the gateway's limit; redirects are never followed).
public enum ErrorMapper {
    /// The mapped error, or nil for a 2xx.
    public static func map(status: Int, headers: HeaderPairs, body: Data?, nowMs: Int64) -> TollgateError? {
        report(status: status, headers: headers, body: body, nowMs: nowMs)?.error
    }

    /// No response at all (offline, DNS, TLS, reset, timeout before the status line).
    public static func noResponse(_ cause: Error?) -> TollgateError {
        let detail = cause.map { ": \(describe($0))" } ?? "."
        return .network("No response from the gateway\(detail)", reason: "unreachable")
    }

    /// The full report behind ``map(status:headers:body:nowMs:)``; nil for a 2xx.
    public static func report(status: Int, headers: HeaderPairs, body: Data?, nowMs: Int64) -> ErrorReport? {
        if (200...299).contains(status) { return nil }
        // Invalid UTF-8 in a provider's body is replaced (U+FFFD) rather than dropped.
        let text = body.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let headerRequestId = Headers.first(headers, "Tollgate-Request-Id")?.trimmingCharacters(in: .whitespaces)
        guard let type = Headers.first(headers, "Tollgate-Error")?.trimmingCharacters(in: .whitespaces) else {
            return ErrorReport(kind: .providerError, errorType: nil, message: "The provider answered HTTP \(status).",
                               requestId: headerRequestId, reason: nil, retryAfterSeconds: nil, status: status, body: text)
        }
        let error = errorObject(text)
        let kind = kindOf(type: type, status: status)
        let retryAfter = kind == .rateLimited ? parseRetryAfter(Headers.first(headers, "Retry-After"), nowMs: nowMs) : nil
        let message = (error?["message"] as? String) ?? defaultMessage(kind: kind, type: type, status: status, retryAfter: retryAfter)
        let requestId = (error?["requestId"] as? String) ?? headerRequestId
        let reason = (error?["reason"] as? String).flatMap { isSnakeCase($0) ? $0 : nil }
        return ErrorReport(kind: kind, errorType: type, message: message, requestId: requestId, reason: reason,
                           retryAfterSeconds: retryAfter, status: status, body: nil)
    }

    /// `^[a-z][a-z0-9_]*$`, the shape of every gateway reason (test/core/error-reasons.test.ts).
    static func isSnakeCase(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z") else { return false }
        return bytes.allSatisfy { ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_") }
    }

    /// The kind for a `Tollgate-Error` type (conformance README, error-mapping rule 3).
    static func kindOf(type: String, status: Int) -> TollgateError.Kind {
        switch type {
        case "unauthorized": return .unauthorized
        case "attestationFailed": return .attestationFailed
        case "rateLimited": return .rateLimited
        case "secretNotFound": return .secretNotFound
        case "providerNotFound", "invalidRequest": return .invalidRequest
        case "upstreamUnavailable", "upstreamTimeout": return .networkError
        default:
            // A type this SDK does not know (internalError, or one added later): decide by status so that nothing is
            // silent. Vectors internal-error-500 / -503 → networkError, unknown-type-fallback-403 → attestationFailed,
            // unknown-type-fallback-4xx (409) → invalidRequest.
            switch status {
            case 401: return .unauthorized
            case 403: return .attestationFailed
            case 424: return .secretNotFound
            case 429: return .rateLimited
            case 500...599: return .networkError
            default: return .invalidRequest
            }
        }
    }

    /// `{"error": {...}}` of a gateway error body, or nil when the body is not that shape.
    private static func errorObject(_ text: String) -> [String: Any]? {
        guard let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any]
        else { return nil }
        return object["error"] as? [String: Any]
    }

    private static func defaultMessage(kind: TollgateError.Kind, type: String, status: Int, retryAfter: Int?) -> String {
        switch kind {
        case .attestationFailed: return "The gateway refused this device (\(type), HTTP \(status))."
        case .unauthorized: return "The gateway refused the app token (\(type), HTTP \(status))."
        case .rateLimited:
            return retryAfter.map { "Rate limited by the gateway; retry after \($0) s." } ?? "Rate limited by the gateway."
        case .secretNotFound: return "The gateway has no secret for this provider (\(type), HTTP \(status))."
        case .networkError: return "The gateway could not reach the provider (\(type), HTTP \(status))."
        case .invalidRequest, .providerError: return "The gateway refused the request (\(type), HTTP \(status))."
        }
    }

    /// `Retry-After` (RFC 9110 §10.2.3) in whole seconds: delay-seconds, or an HTTP-date counted from `nowMs`, rounded
    /// up and at least 0. Nil when absent or unreadable.
    ///
    /// Walkthrough of the vectors: `" 7 "` → trimmed `7` → 7; `"Mon, 24 Nov 2025 16:01:30 GMT"` is
    /// 1764000090000 ms, so with nowMs 1764000000000 → 90 s, with nowMs 1764000000500 → 89.5 s rounded up → 90, and
    /// `"… 15:59:00 GMT"` (in the past) → 0; `"soon"` → nil.
    public static func parseRetryAfter(_ value: String?, nowMs: Int64) -> Int? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return nil }
        if trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Huge values saturate rather than fail.
            return Int(trimmed) ?? Int.max
        }
        guard let dateMs = HTTPDate.parse(trimmed) else { return nil }
        let delta = dateMs - nowMs
        if delta <= 0 { return 0 }
        return Int((delta + 999) / 1000)
    }

    static func describe(_ error: Error) -> String {
        if let error = error as? URLError { return error.localizedDescription + " (URLError \(error.code.rawValue))" }
        // `Error.localizedDescription` (Foundation, on every platform) rather than `as NSError`: the coercion is an
        // Objective-C bridge, which swift-corelibs-foundation on Linux does not promise for every error type.
        return error.localizedDescription
    }
}

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms, parsed by hand so that the
/// result depends on neither the locale nor the time zone of the device.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    /// Unix ms, or nil.
    static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        if parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), shortDays.contains(String(parts[0].dropLast())),
           parts[1].count == 2, let day = Int(digits: parts[1]), let month = months.firstIndex(of: parts[2]),
           parts[3].count == 4, let year = Int(digits: parts[3]), parts[5] == "GMT", let time = clock(parts[4]) {
            return utcMs(year: year, month: month + 1, day: day, time: time)
        }
        // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
        if parts.count == 4, parts[0].hasSuffix(","), longDays.contains(String(parts[0].dropLast())), parts[3] == "GMT",
           let time = clock(parts[2]) {
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            if date.count == 3, date[0].count == 2, let day = Int(digits: date[0]), let month = months.firstIndex(of: date[1]),
               date[2].count == 2, let twoDigits = Int(digits: date[2]) {
                // RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is in the past century.
                let nowYear = Calendar(identifier: .gregorian).component(.year, from: Date())
                var year = nowYear / 100 * 100 + twoDigits
                if year > nowYear + 50 { year -= 100 }
                return utcMs(year: year, month: month + 1, day: day, time: time)
            }
        }
        // asctime: "Sun Nov  6 08:49:37 1994" (a one-digit day is padded with a space, hence the empty part)
        let compact = parts.filter { !$0.isEmpty }
        if compact.count == 5, shortDays.contains(compact[0]), let month = months.firstIndex(of: compact[1]),
           (1...2).contains(compact[2].count), let day = Int(digits: compact[2]), let time = clock(compact[3]),
           compact[4].count == 4, let year = Int(digits: compact[4]) {
            return utcMs(year: year, month: month + 1, day: day, time: time)
        }
        return nil
    }

    private static func clock(_ text: String) -> (Int, Int, Int)? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3, fields.allSatisfy({ $0.count == 2 }),
              let hour = Int(digits: fields[0]), let minute = Int(digits: fields[1]), let second = Int(digits: fields[2]),
              hour <= 23, minute <= 59, second <= 60
        else { return nil }
        return (hour, minute, min(second, 59))
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func utcMs(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Int64? {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), day >= 1, day <= lengths[month - 1] else { return nil }
        let days = Int64(daysFromCivil(year: year, month: month, day: day))
        let seconds = days * 86_400 + Int64(time.0 * 3600 + time.1 * 60 + time.2)
        return seconds * 1000
    }
}

extension Int {
    /// Only ASCII digits (no sign, no spaces), unlike `Int(_:)` which accepts a leading `+` or `-`.
    init?(digits text: String) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        self.init(text)
    }
}
