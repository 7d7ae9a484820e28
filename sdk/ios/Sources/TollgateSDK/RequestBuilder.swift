import Foundation

/// A request body. A zero-length body is the same as none (no `Content-Type`, digest over zero bytes).
public struct RequestBody: Sendable, Equatable {
    /// The bytes sent.
    public let data: Data
    /// `Content-Type` sent when the caller gives none.
    public let defaultContentType: String

    public init(data: Data, defaultContentType: String) {
        self.data = data
        self.defaultContentType = defaultContentType
    }

    /// JSON text as bytes (`application/json`), e.g. `"{…}".data(using: .utf8)!`.
    public static func json(_ data: Data) -> RequestBody {
        RequestBody(data: data, defaultContentType: "application/json")
    }

    /// An `Encodable` value encoded as JSON (`application/json`).
    public static func json<T: Encodable>(encoding value: T, encoder: JSONEncoder = JSONEncoder()) throws -> RequestBody {
        RequestBody(data: try encoder.encode(value), defaultContentType: "application/json")
    }

    /// UTF-8 text, by default `application/json` (the conformance vectors' `{"text": …}` bodies).
    public static func text(_ text: String, contentType: String = "application/json") -> RequestBody {
        RequestBody(data: Data(text.utf8), defaultContentType: contentType)
    }

    /// Raw bytes, by default `application/octet-stream` (audio uploads and the like).
    public static func bytes(_ data: Data, contentType: String = "application/octet-stream") -> RequestBody {
        RequestBody(data: data, defaultContentType: contentType)
    }
}

/// One call as the app makes it. `endpoint` is `{slug}/{version}[/{path}][?{query}]`, e.g. `openai/v1/chat/completions`.
public struct TollgateRequest: Sendable {
    public var method: String
    public var endpoint: String
    public var body: RequestBody?
    /// Query parameters, appended (percent-encoded) after any query written in the endpoint.
    public var query: [(name: String, value: String)]
    /// Extra headers for the provider (e.g. `anthropic-version`). `Tollgate-*` names are refused.
    public var headers: [(name: String, value: String)]

    public init(method: String = "POST", endpoint: String, body: RequestBody? = nil,
                query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = []) {
        self.method = method
        self.endpoint = endpoint
        self.body = body
        self.query = query
        self.headers = headers
    }
}

/// What goes on the wire, with the digest an assertion would sign.
public struct BuiltRequest: Sendable {
    /// Upper-cased.
    public let method: String
    public let url: String
    /// `/v1/proxy/…?query`: the path used in the digest (never the base URL's path prefix).
    public let pathWithQuery: String
    /// In the case sent, in the order added.
    public let headers: [(name: String, value: String)]
    public let body: Data
    /// Lowercase hex SHA-256 of `body`.
    public let bodySha256: String
    /// `METHOD\npathWithQuery\nrequestTime\nbodySha256`.
    public let canonicalRequest: String
    /// Lowercase hex SHA-256 of `canonicalRequest`: what a `Tollgate-Assertion` signs.
    public let digest: String
}

/// Validates an endpoint and builds URL, headers and request digest (sdk/conformance/README.md,
/// "request-building.json"). Every refusal is ``TollgateError/invalidRequest(_:)``, thrown before anything is sent.
///
/// The Swift twin of the Kotlin `dev.tollgate.core.RequestBuilder`. Everything is checked on bytes or Unicode scalars,
/// never on `Character`s: Swift treats `"\r\n"` as one `Character`, so `"a\r\nb".contains("\r")` is false.
public struct RequestBuilder: Sendable {
    private let base: String
    private let appToken: String
    private let sdk: String

    /// - Parameters:
    ///   - baseURL: the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed; it is not in the digest).
    ///   - sdk: the `Tollgate-SDK` value, e.g. `ios/1.2.0`.
    public init(baseURL: String, appToken: String, sdk: String) throws {
        guard RequestBuilder.isValidBaseURL(baseURL) else {
            throw invalid("The base URL must be http(s)://host[:port][/path], without query, fragment or user info: \"\(baseURL)\".")
        }
        var trimmed = baseURL
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        base = trimmed
        try RequestBuilder.checkHeaderValue("Tollgate-App-Token", appToken)
        try RequestBuilder.checkHeaderValue("Tollgate-SDK", sdk)
        self.appToken = appToken
        self.sdk = sdk
    }

    /// The app token (for the subprotocol form of a realtime upgrade).
    var appTokenValue: String { appToken }

    /// The gateway address without a trailing `/` (the key of its ``ServerClock``).
    var baseValue: String { base }

    /// A gateway route outside the proxy (`GET /v1/me`) with the headers of a proxied request and no body; the
    /// digest covers the route's path as it covers `/v1/proxy/…`.
    func buildRoute(method: String, route: String, deviceToken: String, requestTimeMs: Int64) throws -> BuiltRequest {
        try RequestBuilder.checkHeaderValue("Tollgate-Device-Token", deviceToken)
        let upper = method.uppercased()
        let headers: [(name: String, value: String)] = [
            (name: "Tollgate-App-Token", value: appToken),
            (name: "Tollgate-Device-Token", value: deviceToken),
            (name: "Tollgate-Request-Time", value: String(requestTimeMs)),
            (name: "Tollgate-SDK", value: sdk),
        ]
        let bodySha256 = Digest.sha256Hex(Data())
        let canonical = "\(upper)\n\(route)\n\(requestTimeMs)\n\(bodySha256)"
        return BuiltRequest(method: upper, url: base + route, pathWithQuery: route, headers: headers, body: Data(),
                            bodySha256: bodySha256, canonicalRequest: canonical, digest: Digest.sha256Hex(Data(canonical.utf8)))
    }

    /// Builds `request` with `deviceToken`, stamped with `requestTimeMs`.
    public func build(_ request: TollgateRequest, deviceToken: String, requestTimeMs: Int64) throws -> BuiltRequest {
        guard !request.method.isEmpty, request.method.unicodeScalars.allSatisfy(RequestBuilder.isASCIILetter) else {
            throw invalid("The HTTP method must be letters only: \"\(request.method)\".")
        }
        let method = request.method.uppercased()
        let (path, rawQuery) = try RequestBuilder.checkEndpoint(request.endpoint)

        var queryParts: [String] = []
        if let rawQuery, !rawQuery.isEmpty { queryParts.append(rawQuery) }
        for item in request.query {
            queryParts.append("\(RequestBuilder.encodeComponent(item.name))=\(RequestBuilder.encodeComponent(item.value))")
        }
        let pathWithQuery = "/v1/proxy/" + path + (queryParts.isEmpty ? "" : "?" + queryParts.joined(separator: "&"))

        let body = request.body?.data ?? Data()
        var headers: [(name: String, value: String)] = []
        for header in request.headers {
            guard !header.name.isEmpty, header.name.unicodeScalars.allSatisfy(RequestBuilder.isTokenCharacter) else {
                throw invalid("Not a valid header name: \"\(header.name)\".")
            }
            if header.name.lowercased().hasPrefix("tollgate-") {
                throw invalid("Tollgate-* headers are set by the SDK, not by the caller: \"\(header.name)\".")
            }
            try RequestBuilder.checkHeaderValue(header.name, header.value)
            headers.append(header)
        }
        try RequestBuilder.checkHeaderValue("Tollgate-Device-Token", deviceToken)
        headers.append((name: "Tollgate-App-Token", value: appToken))
        headers.append((name: "Tollgate-Device-Token", value: deviceToken))
        headers.append((name: "Tollgate-Request-Time", value: String(requestTimeMs)))
        headers.append((name: "Tollgate-SDK", value: sdk))
        if !body.isEmpty, let defaultType = request.body?.defaultContentType,
           !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.append((name: "Content-Type", value: defaultType))
        }

        let bodySha256 = Digest.sha256Hex(body)
        let canonical = "\(method)\n\(pathWithQuery)\n\(requestTimeMs)\n\(bodySha256)"
        return BuiltRequest(
            method: method,
            url: base + pathWithQuery,
            pathWithQuery: pathWithQuery,
            headers: headers,
            body: body,
            bodySha256: bodySha256,
            canonicalRequest: canonical,
            digest: Digest.sha256Hex(Data(canonical.utf8))
        )
    }

    /// URL of an attestation route, e.g. `attestURL("challenge")` → `{base}/v1/attest/challenge`.
    public func attestURL(_ method: String) throws -> String {
        guard RequestBuilder.isSlug(method) else { throw invalid("Not an attestation method: \"\(method)\".") }
        return "\(base)/v1/attest/\(method)"
    }

    /// Headers of the attestation routes, which take the app token only (client-behaviour.json,
    /// `attestation-request`: exactly `Tollgate-App-Token`, plus `Content-Type: application/json` with a body).
    public var attestHeaders: [(name: String, value: String)] {
        [(name: "Tollgate-App-Token", value: appToken)]
    }

    // MARK: - Endpoint

    /// Checks an endpoint and returns its path (`slug/version[/provider_path]`, one leading `/` removed) and raw query,
    /// in the order of the conformance README (request-building rule 3).
    public static func checkEndpoint(_ endpoint: String) throws -> (path: String, rawQuery: String?) {
        // 3.1 One leading "/" is removed; a second one is an empty segment, refused below (vector refuse-leading-double-slash).
        let trimmed = endpoint.hasPrefix("/") ? String(endpoint.dropFirst()) : endpoint
        // 3.2 No fragment; split at the first "?".
        if trimmed.unicodeScalars.contains("#") { throw invalid("The endpoint must not contain a fragment ('#').") }
        let path: String
        let rawQuery: String?
        if let mark = trimmed.firstIndex(of: "?") {
            path = String(trimmed[..<mark])
            rawQuery = String(trimmed[trimmed.index(after: mark)...])
        } else {
            path = trimmed
            rawQuery = nil
        }
        // 3.3 Only pchar and "/" (the query may also hold "?"): spaces, non-ASCII, "\" and control characters are the
        // caller's to percent-encode. Every "%" must start an escape.
        if let rawQuery, !rawQuery.unicodeScalars.allSatisfy({ isPathCharacter($0) || $0 == "?" }) {
            throw invalid("The endpoint's query has characters that must be percent-encoded.")
        }
        if !path.unicodeScalars.allSatisfy(isPathCharacter) {
            throw invalid("The endpoint has characters that must be percent-encoded (spaces, non-ASCII, '\\', control characters).")
        }
        if hasBadPercent(path) || (rawQuery.map(hasBadPercent) ?? false) {
            throw invalid("The endpoint has a '%' not followed by two hex digits.")
        }
        // 3.4 No empty segment, no leading "/".
        if path.contains("//") || path.hasPrefix("/") { throw invalid("The endpoint must not contain an empty segment ('//').") }
        // 3.5 slug/version[/provider_path]. (The path is ASCII here, so Character-based splitting is exact.)
        let parts = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, isSlug(parts[0]), isVersion(parts[1]) else {
            throw invalid("The endpoint must look like {provider}/{version}/{path}, e.g. openai/v1/chat/completions: \"\(endpoint)\".")
        }
        // 3.6 The provider path, as the gateway checks it.
        if parts.count == 3 { try checkProviderPath(parts[2]) }
        return (path, rawQuery)
    }

    /// The path as written, then up to three successive percent-decodings, must each pass ``checkDecoded(_:)``; a path
    /// still changing after the third decoding is refused.
    ///
    /// Walkthrough: `%252e%252e/admin` → (as written: fine) → `%2e%2e/admin` (fine) → `../admin` → refused (dot
    /// segment), vector refuse-double-encoded-dot-dot. `chat%25zz` → `chat%zz` (fine) → decoding again meets `%zz`, a
    /// malformed escape → refused, vector refuse-decoded-bad-percent. `caf%E9` → byte E9 alone is not UTF-8 → refused.
    static func checkProviderPath(_ raw: String) throws {
        var current = raw
        try checkDecoded(current)
        for _ in 0..<3 {
            let decoded = try percentDecode(current)
            if decoded == current { return }
            try checkDecoded(decoded)
            current = decoded
        }
        throw invalid("The provider path is percent-encoded too many times.")
    }

    private static func checkDecoded(_ path: String) throws {
        let scalars = path.unicodeScalars
        let reason: String
        if scalars.contains(where: { $0.value <= 0x1F || (0x7F...0x9F).contains($0.value) }) {
            reason = "a control character"
        } else if scalars.contains("\\") {
            reason = "a backslash"
        } else if scalars.contains("@") {
            reason = "'@'"
        } else if path.contains("//") {
            reason = "an empty segment ('//')"
        } else if path.hasPrefix("/") {
            reason = "an absolute path"
        } else if startsWithScheme(scalars) || path.contains("://") {
            reason = "a URL scheme"
        } else if scalars.split(separator: "/", omittingEmptySubsequences: false)
                    .contains(where: { $0.elementsEqual(".".unicodeScalars) || $0.elementsEqual("..".unicodeScalars) }) {
            reason = "a dot segment ('.' or '..')"
        } else {
            return
        }
        throw invalid("The provider path is not allowed: it contains \(reason).")
    }

    /// `^[A-Za-z][A-Za-z0-9+.-]*:` — a colon later in a segment (`models/gemini-2.0-flash:generateContent`) is fine,
    /// because the scan stops at the first character outside the scheme alphabet (here `/`).
    private static func startsWithScheme(_ scalars: String.UnicodeScalarView) -> Bool {
        var iterator = scalars.makeIterator()
        guard let first = iterator.next(), isASCIILetter(first) else { return false }
        while let scalar = iterator.next() {
            if scalar == ":" { return true }
            if !(isASCIILetter(scalar) || isASCIIDigit(scalar) || scalar == "+" || scalar == "." || scalar == "-") { return false }
        }
        return false
    }

    /// Percent-decodes as strict UTF-8 (as JavaScript's `decodeURIComponent` on the gateway): malformed escapes and
    /// byte sequences that are not UTF-8 are refused. `+` stays `+`.
    static func percentDecode(_ value: String) throws -> String {
        if !value.unicodeScalars.contains("%") { return value }
        let input = Array(value.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%") {
                guard index + 2 < input.count,
                      let high = Digest.hexValue(input[index + 1]), let low = Digest.hexValue(input[index + 2])
                else { throw invalid("Malformed percent-encoding in the endpoint.") }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        guard UTF8Validation.isValid(bytes) else { throw invalid("The endpoint's percent-encoding is not UTF-8.") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Percent-encodes every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` (uppercase hex; a space is `%20`, never `+`).
    public static func encodeComponent(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in value.utf8 {
            let unreserved = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            if unreserved {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: - Character classes

    /// `^(?i:https?)://[^/?#@\s]+(/[^?#\s]*)?$`, as in the Kotlin builder.
    static func isValidBaseURL(_ url: String) -> Bool {
        let scalars = Array(url.unicodeScalars)
        let lower = String(String.UnicodeScalarView(scalars.prefix(8))).lowercased()
        let schemeLength: Int
        if lower.hasPrefix("https://") {
            schemeLength = 8
        } else if lower.hasPrefix("http://") {
            schemeLength = 7
        } else {
            return false
        }
        let rest = scalars.dropFirst(schemeLength)
        // Java's `\s`: space, tab, LF, VT, FF, CR.
        let isSpace: (Unicode.Scalar) -> Bool = { scalar in
            scalar.value == 0x20 || (0x09...0x0D).contains(scalar.value)
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[rest.startIndex..<slash]
        guard !authority.isEmpty, !authority.contains(where: { $0 == "?" || $0 == "#" || $0 == "@" || isSpace($0) }) else { return false }
        let pathPart = rest[slash...]
        return !pathPart.contains(where: { $0 == "?" || $0 == "#" || isSpace($0) })
    }

    /// `^[a-z0-9][a-z0-9-]{0,39}$`
    static func isSlug(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard (1...40).contains(scalars.count), isLowerAlphanumeric(scalars[0]) else { return false }
        return scalars.dropFirst().allSatisfy { isLowerAlphanumeric($0) || $0 == "-" }
    }

    /// `^v[0-9][a-z0-9.-]{0,15}$`
    static func isVersion(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard (2...17).contains(scalars.count), scalars[0] == "v", isASCIIDigit(scalars[1]) else { return false }
        return scalars.dropFirst(2).allSatisfy { isLowerAlphanumeric($0) || $0 == "." || $0 == "-" }
    }

    /// RFC 3986 `pchar` and `/`: `A–Z a–z 0–9 - . _ ~ ! $ & ' ( ) * + , ; = : @ % /`.
    static func isPathCharacter(_ scalar: Unicode.Scalar) -> Bool {
        if isASCIILetter(scalar) || isASCIIDigit(scalar) { return true }
        return "-._~!$&'()*+,;=:@%/".unicodeScalars.contains(scalar)
    }

    /// RFC 9110 `tchar`.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        if isASCIILetter(scalar) || isASCIIDigit(scalar) { return true }
        return "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }

    /// A `%` not followed by two hex digits.
    static func hasBadPercent(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "%") {
            guard index + 2 < bytes.count, Digest.hexValue(bytes[index + 1]) != nil, Digest.hexValue(bytes[index + 2]) != nil else {
                return true
            }
        }
        return false
    }

    static func isASCIILetter(_ scalar: Unicode.Scalar) -> Bool {
        (0x41...0x5A).contains(scalar.value) || (0x61...0x7A).contains(scalar.value)
    }

    static func isASCIIDigit(_ scalar: Unicode.Scalar) -> Bool {
        (0x30...0x39).contains(scalar.value)
    }

    private static func isLowerAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        (0x61...0x7A).contains(scalar.value) || isASCIIDigit(scalar)
    }

    /// CR, LF or NUL in a header value is refused (header injection). Checked on scalars: see the type's comment.
    static func checkHeaderValue(_ name: String, _ value: String) throws {
        if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\u{0}" }) {
            throw invalid("The value of header \"\(name)\" contains CR, LF or NUL.")
        }
    }
}

private func invalid(_ message: String) -> TollgateError {
    .invalid(message)
}

/// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
enum UTF8Validation {
    static func isValid(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let length: Int
            var lowerBound: UInt8 = 0x80
            var upperBound: UInt8 = 0xBF
            switch lead {
            case 0x00...0x7F:
                index += 1
                continue
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lowerBound = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upperBound = 0x9F
            case 0xF0: length = 4; lowerBound = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upperBound = 0x8F
            default: return false
            }
            guard index + length <= bytes.count else { return false }
            // The first continuation byte has the tightened range; the others are 80–BF.
            let second = bytes[index + 1]
            guard second >= lowerBound, second <= upperBound else { return false }
            if length > 2 {
                for offset in 2..<length {
                    guard (0x80...0xBF).contains(bytes[index + offset]) else { return false }
                }
            }
            index += length
        }
        return true
    }
}
