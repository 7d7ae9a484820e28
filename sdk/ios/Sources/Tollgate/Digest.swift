import CryptoKit
import Foundation

/// The request digest of protocol.md ("Headers the SDK sends"):
/// `SHA-256( METHOD "\n" path-with-query "\n" Tollgate-Request-Time "\n" hex(SHA-256(body)) )`, as lowercase hex.
/// This is what a `Tollgate-Assertion` signs.
public enum Digest {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// SHA-256 of `bytes` (CryptoKit).
    public static func sha256<Bytes: DataProtocol>(_ bytes: Bytes) -> Data {
        Data(SHA256.hash(data: bytes))
    }

    /// Lowercase hex SHA-256 of `bytes` (of zero bytes for an absent body:
    /// `e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`).
    public static func sha256Hex<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        hex(sha256(bytes))
    }

    /// The digest input: `METHOD\npathWithQuery\nrequestTime\nbodySha256Hex`.
    public static func canonicalRequest(method: String, pathWithQuery: String, requestTimeMs: Int64, body: Data) -> String {
        "\(method)\n\(pathWithQuery)\n\(requestTimeMs)\n\(sha256Hex(body))"
    }

    /// Lowercase hex request digest.
    public static func requestDigest(method: String, pathWithQuery: String, requestTimeMs: Int64, body: Data) -> String {
        sha256Hex(Data(canonicalRequest(method: method, pathWithQuery: pathWithQuery, requestTimeMs: requestTimeMs, body: body).utf8))
    }

    /// Lowercase hex of `bytes`.
    public static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a hex string (either case), or nil when it is not an even number of hex digits.
    public static func bytes(fromHex hex: String) -> Data? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out = Data(capacity: digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// Base64url (RFC 4648 §5) helpers: the gateway's challenges and the `Tollgate-Assertion` header use it.
enum Base64URL {
    /// Unpadded base64url of `data`.
    static func encode(_ data: Data) -> String {
        var text = data.base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url with or without padding (standard base64 is accepted too), or nil.
    static func decode(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = standard.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { standard += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: standard)
    }
}
