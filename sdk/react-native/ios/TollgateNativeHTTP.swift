import Foundation
import TollgateSDK

/// HTTP for the TypeScript core through the Swift SDK's ``URLSessionTransport`` (instead of React Native's fetch, which
/// delivers a response only when it is complete and follows redirects with the Tollgate tokens): no redirect is
/// followed (the 3xx comes back as it is), the body is read as it arrives, one `read` at a time, and the body bytes go
/// out exactly as given (the request digest covers them).
final class TollgateNativeHTTP: @unchecked Sendable {
    static let shared = TollgateNativeHTTP()

    private let transport = URLSessionTransport()
    private let lock = NSLock()
    private var bodies: [String: HTTPBodyStream] = [:]

    /// Sends the request; returns once the response head arrived.
    func start(url: String, method: String, headerPairs: [String], body: Data?) async throws -> (id: String, status: Int, headerPairs: [String]) {
        var headers: [(name: String, value: String)] = []
        var index = 0
        while index + 1 < headerPairs.count {
            headers.append((name: headerPairs[index], value: headerPairs[index + 1]))
            index += 2
        }
        let (head, stream) = try await transport.bytes(for: HTTPCall(method: method, url: url, headers: headers, body: body ?? Data()))
        let id = UUID().uuidString
        store(stream, id: id)
        var pairs: [String] = []
        for header in head.headers {
            pairs.append(header.name)
            pairs.append(header.value)
        }
        return (id, head.status, pairs)
    }

    /// The next bytes of the body, nil at its end: up to the next line feed (an SSE or NDJSON line reaches JavaScript
    /// as soon as it is complete) or 16 KiB, whichever comes first.
    func read(id: String) async throws -> Data? {
        guard let stream = stream(id) else { return nil }
        var chunk = Data()
        do {
            while chunk.count < 16_384 {
                guard let byte = try await stream.next() else { break }
                chunk.append(byte)
                if byte == 0x0A { break }
            }
        } catch {
            _ = remove(id)
            throw error
        }
        if chunk.isEmpty {
            _ = remove(id)
            return nil
        }
        return chunk
    }

    /// Closes the connection (the gateway then aborts the provider request).
    func cancel(id: String) {
        remove(id)?.cancel()
    }

    private func store(_ stream: HTTPBodyStream, id: String) {
        lock.lock()
        bodies[id] = stream
        lock.unlock()
    }

    private func stream(_ id: String) -> HTTPBodyStream? {
        lock.lock()
        defer { lock.unlock() }
        return bodies[id]
    }

    private func remove(_ id: String) -> HTTPBodyStream? {
        lock.lock()
        defer { lock.unlock() }
        return bodies.removeValue(forKey: id)
    }
}
