import Foundation

#if canImport(Darwin)
/// Routes a provider SDK's `URLSession` through Tollgate, for Swift SDKs that take a session or its configuration
/// (MacPaw OpenAI's `session:`, SwiftOpenAI's `configuration:`): requests to `{gateway}/v1/proxy/…` get the Tollgate
/// headers and tokens (the SDK's own `Authorization` / API-key headers are dropped: the gateway adds the real key), are
/// refreshed and resent as ``TollgateClient/request(_:)`` does, never follow a redirect, and stream: the body reaches
/// the SDK line by line as it arrives.
///
/// ```swift
/// let session = URLSession(configuration: TollgateURLProtocol.configuration(client: Tollgate.shared,
///                                                                         gatewayURL: "https://gateway.example.com"))
/// let openAI = OpenAI(configuration: .init(token: "unused", host: "gateway.example.com",
///                                         basePath: "/v1/proxy/openai/v1"), session: session)   // MacPaw OpenAI
/// ```
///
/// A refusal by the gateway fails the task with the ``TollgateError`` (cast the task's error back: `error as? TollgateError`).
public final class TollgateURLProtocol: URLProtocol, @unchecked Sendable {
    private static let routesLock = NSLock()
    nonisolated(unsafe) private static var routes: [(prefix: String, client: TollgateClient)] = []

    /// Headers the provider SDK sets that must not travel: its placeholder credential, and what URLSession sets itself.
    private static let dropped: Set<String> = ["authorization", "x-api-key", "api-key", "x-goog-api-key", "host", "content-length", "connection", "cookie"]

    /// A session configuration whose requests to `{gatewayURL}/v1/proxy/` go through `client`.
    public static func configuration(client: TollgateClient, gatewayURL: String,
                                     base: URLSessionConfiguration = .ephemeral) -> URLSessionConfiguration {
        register(client: client, gatewayURL: gatewayURL)
        let configuration = base
        configuration.protocolClasses = [TollgateURLProtocol.self] + (configuration.protocolClasses ?? [])
        return configuration
    }

    /// Sends requests to `{gatewayURL}/v1/proxy/` through `client` (for sessions configured by hand).
    public static func register(client: TollgateClient, gatewayURL: String) {
        var prefix = gatewayURL
        while prefix.hasSuffix("/") { prefix.removeLast() }
        prefix += "/v1/proxy/"
        routesLock.lock()
        routes.removeAll { $0.prefix == prefix }
        routes.append((prefix: prefix, client: client))
        routesLock.unlock()
    }

    private static func route(_ url: URL?) -> (prefix: String, client: TollgateClient)? {
        guard let text = url?.absoluteString else { return nil }
        routesLock.lock()
        defer { routesLock.unlock() }
        return routes.first { text.hasPrefix($0.prefix) }
    }

    override public class func canInit(with request: URLRequest) -> Bool {
        route(request.url) != nil
    }

    override public class func canonicalRequest(for request: URLRequest) -> URLRequest {
        request
    }

    private var task: Task<Void, Never>?

    override public func startLoading() {
        let request = self.request
        guard let route = Self.route(request.url), let url = request.url else {
            self.client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
            return
        }
        let tollgate = route.client
        let endpoint = String(url.absoluteString.dropFirst(route.prefix.count))
        var headers: [(name: String, value: String)] = []
        for (name, value) in request.allHTTPHeaderFields ?? [:] where !Self.dropped.contains(name.lowercased()) && !name.lowercased().hasPrefix("tollgate-") {
            headers.append((name: name, value: value))
        }
        let body = Self.body(of: request)
        let contentType = request.value(forHTTPHeaderField: "Content-Type") ?? "application/octet-stream"
        let call = TollgateRequest(method: request.httpMethod ?? "GET", endpoint: endpoint,
                                   body: body.isEmpty ? nil : .bytes(body, contentType: contentType), headers: headers)
        task = Task { [weak self] in
            do {
                let engine = try tollgate.resolve()
                let (head, stream) = try await engine.perform(call, exchange: { try await engine.transport.bytes(for: $0) },
                                                              errorBody: { try await $0.readAll() })
                guard let self else {
                    stream.cancel()
                    return
                }
                var fields: [String: String] = [:]
                for header in head.headers { fields[header.name] = fields[header.name].map { "\($0), \(header.value)" } ?? header.value }
                if let response = HTTPURLResponse(url: url, statusCode: head.status, httpVersion: "HTTP/1.1", headerFields: fields) {
                    self.client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
                }
                var chunk = Data()
                while let byte = try await stream.next() {
                    chunk.append(byte)
                    // Line by line (SSE, NDJSON) or 16 KiB: the SDK parsing the stream gets each event as it arrives.
                    if byte == 0x0A || chunk.count >= 16_384 {
                        self.client?.urlProtocol(self, didLoad: chunk)
                        chunk = Data()
                    }
                    if Task.isCancelled {
                        stream.cancel()
                        return
                    }
                }
                if !chunk.isEmpty { self.client?.urlProtocol(self, didLoad: chunk) }
                self.client?.urlProtocolDidFinishLoading(self)
            } catch {
                guard let self else { return }
                self.client?.urlProtocol(self, didFailWithError: error)
            }
        }
    }

    override public func stopLoading() {
        task?.cancel()
    }

    /// The request body, from `httpBody` or (as URLSession hands uploads to protocols) `httpBodyStream`.
    private static func body(of request: URLRequest) -> Data {
        if let data = request.httpBody { return data }
        guard let stream = request.httpBodyStream else { return Data() }
        stream.open()
        defer { stream.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while stream.hasBytesAvailable {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            data.append(buffer, count: count)
        }
        return data
    }
}
#endif
