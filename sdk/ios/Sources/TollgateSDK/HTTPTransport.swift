import Foundation

/// One HTTP exchange as the SDK wants it sent.
public struct HTTPCall: Sendable {
    public let method: String
    public let url: String
    public let headers: [(name: String, value: String)]
    public let body: Data

    public init(method: String, url: String, headers: [(name: String, value: String)], body: Data) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A response's status line and headers.
public struct HTTPResponseHead: Sendable {
    public let status: Int
    public let headers: HeaderPairs

    public init(status: Int, headers: HeaderPairs) {
        self.status = status
        self.headers = headers
    }

    /// The first value of header `name` (any case).
    public func header(_ name: String) -> String? {
        Headers.first(headers, name)
    }
}

/// A response body still to be read, byte by byte as it arrives. ``cancel()`` closes the connection (the gateway then
/// aborts the provider request).
public final class HTTPBodyStream: @unchecked Sendable {
    private let nextByte: () async throws -> UInt8?
    private let onCancel: @Sendable () -> Void

    /// - Parameters:
    ///   - next: the next byte, nil at a clean end; throws when the transport fails (a cut).
    ///   - cancel: closes the connection.
    public init(next: @escaping () async throws -> UInt8?, cancel: @escaping @Sendable () -> Void = {}) {
        nextByte = next
        onCancel = cancel
    }

    /// A body that is already complete.
    public convenience init(data: Data) {
        let box = ByteArrayCursor(Array(data))
        self.init(next: { box.next() })
    }

    /// The next byte, nil at a clean end. Not for concurrent use (one reader per body).
    public func next() async throws -> UInt8? {
        try await nextByte()
    }

    public func cancel() {
        onCancel()
    }

    /// Reads the rest of the body (error bodies: small).
    public func readAll(limit: Int = 1 << 20) async throws -> Data {
        var out: [UInt8] = []
        while let byte = try await next() {
            if out.count < limit { out.append(byte) }
        }
        return Data(out)
    }
}

/// Sends HTTP requests. Must not follow redirects (a 3xx is reported as it is) and must not buffer a streamed body.
/// Throws anything for "no response"; the client reports it as `networkError`.
public protocol HTTPTransport: Sendable {
    /// Sends `call` and returns the whole response.
    func data(for call: HTTPCall) async throws -> (HTTPResponseHead, Data)
    /// Sends `call` and returns the response head with the body still to read.
    func bytes(for call: HTTPCall) async throws -> (HTTPResponseHead, HTTPBodyStream)
}

/// The transport the SDK uses when none is given: ``URLSessionTransport`` on Apple platforms. Elsewhere (Linux, where
/// `URLSession` cannot stream) there is no default: pass a transport (tests pass a scripted one).
func defaultTransport() -> HTTPTransport {
    #if canImport(Darwin)
    return URLSessionTransport()
    #else
    return UnavailableTransport()
    #endif
}

/// Fails every call: the platform has no default transport.
struct UnavailableTransport: HTTPTransport {
    func data(for call: HTTPCall) async throws -> (HTTPResponseHead, Data) {
        throw TollgateError.network("No HTTP transport on this platform: pass one to the SDK.", reason: "no_transport")
    }

    func bytes(for call: HTTPCall) async throws -> (HTTPResponseHead, HTTPBodyStream) {
        throw TollgateError.network("No HTTP transport on this platform: pass one to the SDK.", reason: "no_transport")
    }
}

#if canImport(Darwin)
/// ``HTTPTransport`` over `URLSession` (`data(for:)` for whole responses, `bytes(for:)` for streams).
///
/// Redirects are refused (a task delegate answers `nil` to `willPerformHTTPRedirection`), so a 3xx reaches the error
/// mapping as the provider's answer (conformance vector `redirect-is-provider-error`).
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let session: URLSession
    private let delegate: RedirectRefusingDelegate

    /// - Parameter session: a session to share (its configuration, proxy and pinning are used); by default an
    ///   ephemeral-cache session with a 120 s idle timeout (a model may think for a while before its first token).
    public init(session: URLSession? = nil) {
        let delegate = RedirectRefusingDelegate()
        self.delegate = delegate
        if let session {
            self.session = session
        } else {
            let configuration = URLSessionConfiguration.default
            configuration.timeoutIntervalForRequest = 120
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            configuration.urlCache = nil
            configuration.httpCookieStorage = nil
            configuration.httpShouldSetCookies = false
            self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        }
    }

    public func data(for call: HTTPCall) async throws -> (HTTPResponseHead, Data) {
        let (data, response) = try await session.data(for: try urlRequest(call), delegate: delegate)
        return (try head(response), data)
    }

    public func bytes(for call: HTTPCall) async throws -> (HTTPResponseHead, HTTPBodyStream) {
        let (bytes, response) = try await session.bytes(for: try urlRequest(call), delegate: delegate)
        let task = TaskCanceller(bytes.task)
        let reader = AsyncBytesReader(bytes.makeAsyncIterator())
        return (try head(response), HTTPBodyStream(next: { try await reader.next() }, cancel: { task.cancel() }))
    }

    private func urlRequest(_ call: HTTPCall) throws -> URLRequest {
        guard let url = URL(string: call.url) else {
            throw TollgateError.invalid("The request URL is not valid: \"\(call.url)\".")
        }
        var request = URLRequest(url: url)
        request.httpMethod = call.method
        for header in call.headers {
            request.addValue(header.value, forHTTPHeaderField: header.name)
        }
        if !call.body.isEmpty { request.httpBody = call.body }
        return request
    }

    private func head(_ response: URLResponse) throws -> HTTPResponseHead {
        guard let http = response as? HTTPURLResponse else {
            throw TollgateError.network("The gateway's answer is not an HTTP response.", reason: "not_http")
        }
        return HTTPResponseHead(status: http.statusCode, headers: Headers.of(http))
    }
}

/// Refuses every redirect: the 3xx response itself is delivered.
final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // The completion handler is @Sendable as in the current SDKs (NS_SWIFT_SENDABLE); the explicit selector makes the
    // URL loading system find the method whatever an older SDK's annotation is.
    @objc(URLSession:task:willPerformHTTPRedirection:newRequest:completionHandler:)
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// Cancels a `URLSessionTask` from a `@Sendable` closure, whatever the SDK's Sendable annotation of the task class.
private final class TaskCanceller: @unchecked Sendable {
    private let task: URLSessionTask

    init(_ task: URLSessionTask) {
        self.task = task
    }

    func cancel() {
        task.cancel()
    }
}

/// Holds the (mutating) iterator of `URLSession.AsyncBytes` so that a closure can advance it.
private final class AsyncBytesReader: @unchecked Sendable {
    private var iterator: URLSession.AsyncBytes.AsyncIterator

    init(_ iterator: URLSession.AsyncBytes.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> UInt8? {
        try await iterator.next()
    }
}

#endif

/// A cursor over bytes already in memory.
final class ByteArrayCursor: @unchecked Sendable {
    private let bytes: [UInt8]
    private var index = 0
    private let lock = NSLock()

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func next() -> UInt8? {
        lock.lock()
        defer { lock.unlock() }
        guard index < bytes.count else { return nil }
        index += 1
        return bytes[index - 1]
    }
}
