import Foundation

/// The gateway's clock as seen from the device. Phones' clocks drift and are set by hand: a device token's absolute
/// `expiresAt` read on a clock an hour fast looks expired at once (the SDK would attest on every call and hit the
/// attestation limit), and a `Tollgate-Request-Time` read from it is refused as skewed. So the SDK keeps the offset
/// between the gateway's `Date` header (RFC 9110 section 6.6.1) and the device clock, one per gateway address, stamps
/// requests with device time + offset, and takes a device token's lifetime from the relative `expiresIn`.
final class ServerClock: @unchecked Sendable {
    /// Offsets smaller than this are the `Date` header's one-second resolution and the network's delay.
    static let thresholdMs: Int64 = 2_000

    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var registry: [String: ServerClock] = [:]

    /// The clock of the gateway at `baseURL` (shared by its client and its attestation calls).
    static func forGateway(_ baseURL: String) -> ServerClock {
        registryLock.lock()
        defer { registryLock.unlock() }
        if let clock = registry[baseURL] { return clock }
        let clock = ServerClock()
        registry[baseURL] = clock
        return clock
    }

    private let lock = NSLock()
    private var offset: Int64 = 0

    /// Gateway time minus device time, ms (0 until a `Date` header shows a difference beyond the threshold).
    var offsetMs: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return offset
    }

    /// Reads a response's `Date` header, received at device time `receivedAtMs`.
    func observe(_ dateHeader: String?, receivedAtMs: Int64) {
        guard let dateHeader, let date = HTTPDate.parse(dateHeader.trimmingCharacters(in: .whitespaces)) else { return }
        // The header truncates to the second: the gateway's time was somewhere in [date, date + 1 s).
        let measured = date + 500 - receivedAtMs
        lock.lock()
        offset = abs(measured) >= Self.thresholdMs ? measured : 0
        lock.unlock()
    }
}
