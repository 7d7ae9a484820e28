import Foundation

/// Automatic retries of `rateLimited` (the gateway's own 429, never a provider's). Off unless set.
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt.
    public var maxRetries: Int
    /// Total seconds one call may spend waiting between attempts. A wait that would go beyond it is not started: the
    /// call fails at once with `rateLimited(retryAfter:)`.
    public var maxWaitSeconds: Double

    public init(maxRetries: Int = 3, maxWaitSeconds: Double = 30) {
        self.maxRetries = max(0, maxRetries)
        self.maxWaitSeconds = max(0, maxWaitSeconds)
    }

    /// No automatic retry (the default): `rateLimited` reaches the caller at once.
    public static let none = RetryPolicy(maxRetries: 0, maxWaitSeconds: 0)
    /// Up to 3 retries within 30 seconds, honoring `Retry-After` (1, 2, 4 s when the gateway gave none).
    public static let standard = RetryPolicy()

    /// How long to wait before retrying, or nil for no retry (client-behaviour.json, `retry`): only the gateway's
    /// `rateLimited`; `Retry-After` when given, else `min(30, 2^retriesDone)` seconds; never past ``maxRetries`` or
    /// ``maxWaitSeconds`` (a wait that reaches it exactly is allowed).
    public func delaySeconds(errorKind: TollgateError.Kind, retryAfterSeconds: Int?, retriesDone: Int, waitedSeconds: Double) -> Double? {
        guard errorKind == .rateLimited, retriesDone < maxRetries else { return nil }
        let backoff = retriesDone >= 5 ? 30 : min(30, 1 << max(0, retriesDone))
        let delay = Double(max(0, retryAfterSeconds ?? backoff))
        guard waitedSeconds + delay <= maxWaitSeconds else { return nil }
        return delay
    }
}

/// When requests carry a `Tollgate-Assertion` (an App Attest assertion over the request digest).
public enum AssertionPolicy: Sendable, Equatable {
    /// Not at first. When the gateway says so (`attestationFailed` with reason `assertion_required`), the retry and
    /// every later request of the process carry one. No other refusal turns them on.
    case whenRequired
    /// On every request, once a key is attested.
    case always
    /// Never.
    case never
}

/// A complete (non-streamed) 2xx response.
public struct TollgateResponse: Sendable {
    public let status: Int
    public let headers: HeaderPairs
    public let body: Data

    public init(status: Int, headers: HeaderPairs, body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as UTF-8 text (invalid bytes replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The gateway's `Tollgate-Request-Id`, to match its logs.
    public var requestId: String? { header("Tollgate-Request-Id") }

    /// The first value of header `name` (any case).
    public func header(_ name: String) -> String? { Headers.first(headers, name) }

    /// The body parsed as JSON.
    public func json() throws -> JSONValue { try JSONValue.parse(body) }

    /// The body decoded into a `Decodable` type.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: body)
    }
}

/// The engine behind a ``TollgateClient``: one configuration, immutable except for what it learns about assertions.
final class ClientEngine: @unchecked Sendable {
    let builder: RequestBuilder
    let transport: HTTPTransport
    let deviceTokens: DeviceTokenSource
    let clock: @Sendable () -> Int64
    let retry: RetryPolicy
    let assertionPolicy: AssertionPolicy
    /// Signs a request digest (hex); nil or "" sends no assertion.
    let signer: (@Sendable (String) async throws -> String?)?
    let rawChunkSize: Int

    private let lock = NSLock()
    private var assertionsRequired = false
    /// The signed-in user's ID token (``TollgateClient/setUserTokenProvider(_:)``).
    let userTokens: UserTokenCache
    /// Serializes signing and sending while requests carry assertions (App Attest counters arrive in order).
    let assertionOrder = AsyncSerialQueue()

    init(builder: RequestBuilder, transport: HTTPTransport, deviceTokens: DeviceTokenSource,
         clock: @escaping @Sendable () -> Int64, retry: RetryPolicy, assertionPolicy: AssertionPolicy,
         signer: (@Sendable (String) async throws -> String?)?, rawChunkSize: Int) {
        self.builder = builder
        self.transport = transport
        self.deviceTokens = deviceTokens
        self.clock = clock
        self.retry = retry
        self.assertionPolicy = assertionPolicy
        self.signer = signer
        self.rawChunkSize = max(1, rawChunkSize)
        userTokens = UserTokenCache(clock: clock)
    }

    private var shouldAssert: Bool {
        switch assertionPolicy {
        case .always: return true
        case .never: return false
        case .whenRequired:
            lock.lock()
            defer { lock.unlock() }
            return assertionsRequired
        }
    }

    /// `Tollgate-Request-Time`: the device clock plus the gateway's offset (``ServerClock``).
    private func requestTimeMs() -> Int64 {
        clock() + ServerClock.forGateway(builder.baseValue).offsetMs
    }

    private func learnAssertionsRequired() {
        lock.lock()
        assertionsRequired = true
        lock.unlock()
    }

    // MARK: - Request

    func request(_ request: TollgateRequest) async throws -> TollgateResponse {
        let (head, body) = try await perform(request, exchange: { try await self.transport.data(for: $0) }, errorBody: { $0 })
        return TollgateResponse(status: head.status, headers: head.headers, body: body)
    }

    /// Sends `request` and returns the 2xx response, or throws the mapped error. Around the exchange:
    /// - everything the SDK can refuse is refused before attesting or sending;
    /// - attestationFailed from the gateway: the reason → action rule (``ReasonAction``, applied by the token source):
    ///   `refresh` / `attest` → the request is sent once more with a new token; `assert` → once more with an assertion,
    ///   and every later request carries one (under ``AssertionPolicy/whenRequired``); `stop` (`device_revoked`) and
    ///   `none` → the error reaches the caller;
    /// - rateLimited: retried per ``RetryPolicy`` (off by default), waiting `Retry-After` within the budget.
    func perform<Body>(_ request: TollgateRequest, route: String? = nil,
                    exchange: (HTTPCall) async throws -> (HTTPResponseHead, Body),
                    errorBody: (Body) async throws -> Data) async throws -> (HTTPResponseHead, Body) {
        if route == nil { _ = try builder.build(request, deviceToken: "placeholder", requestTimeMs: clock()) }
        if let body = request.body, !body.data.isEmpty, ["GET", "HEAD"].contains(request.method.uppercased()) {
            throw TollgateError.invalid("A \(request.method.uppercased()) request cannot have a body.")
        }
        var retries = 0
        var waitedSeconds = 0.0
        var retriedOnce = false
        var retriedUser = false
        var forceUser = false
        while true {
            try Task.checkCancellation()
            do {
                let token = try await deviceTokens.deviceToken()
                let userToken = try await userTokens.token(forceRefresh: forceUser)
                forceUser = false
                let requestTime = requestTimeMs()
                let built = try route.map { try builder.buildRoute(method: request.method, route: $0, deviceToken: token, requestTimeMs: requestTime) }
                    ?? builder.build(request, deviceToken: token, requestTimeMs: requestTime)
                var headers = built.headers
                if let userToken { headers.append((name: "Tollgate-User-Token", value: userToken)) }
                var assertionSent = false
                // App Attest assertions carry a counter that the gateway requires to increase: signing and sending are
                // serialized per key (one request between its assertion and its response head at a time), so that
                // parallel requests reach the gateway in the order they were signed.
                let serialized = shouldAssert && signer != nil
                if serialized { await assertionOrder.acquire() }
                let response: (HTTPResponseHead, Body)
                do {
                    if serialized, let signer = signer {
                        let assertion: String?
                        do {
                            assertion = try await signer(built.digest)
                        } catch let error as TollgateError {
                            if error.kind == .attestationFailed, error.reason != "device_revoked", !retriedOnce {
                                // e.g. the App Attest key is gone after a reinstall: a new token (and key), once.
                                retriedOnce = true
                                await deviceTokens.invalidate(token)
                                throw RetryWithNewToken()
                            }
                            throw error
                        } catch {
                            if Task.isCancelled { throw CancellationError() }
                            throw TollgateError.attestation("The device could not sign the request: \(ErrorMapper.describe(error))", reason: "assertion_failed")
                        }
                        if let assertion, !assertion.isEmpty {
                            try RequestBuilder.checkHeaderValue("Tollgate-Assertion", assertion)
                            headers.append((name: "Tollgate-Assertion", value: assertion))
                            assertionSent = true
                        }
                    }
                    let call = HTTPCall(method: built.method, url: built.url, headers: headers, body: built.body)
                    do {
                        response = try await exchange(call)
                    } catch let error as TollgateError {
                        throw error
                    } catch {
                        if Task.isCancelled { throw CancellationError() }
                        throw ErrorMapper.noResponse(error)
                    }
                } catch is RetryWithNewToken {
                    if serialized { await assertionOrder.release() }
                    continue
                } catch {
                    if serialized { await assertionOrder.release() }
                    throw error
                }
                if serialized { await assertionOrder.release() }
                let (head, body) = response
                ServerClock.forGateway(builder.baseValue).observe(head.header("Date"), receivedAtMs: clock())
                if (200...299).contains(head.status) { return response }
                let bytes: Data
                do {
                    bytes = try await errorBody(body)
                } catch {
                    if Task.isCancelled { throw CancellationError() }
                    throw TollgateError.network("The gateway's error answer (HTTP \(head.status)) was cut: \(ErrorMapper.describe(error))", reason: "stream_cut")
                }
                let error = ErrorMapper.map(status: head.status, headers: head.headers, body: bytes, nowMs: clock())
                    ?? TollgateError.network("Unexpected HTTP \(head.status).")
                if error.kind == .unauthorized, error.reason == "user_token_expired", !retriedUser, await userTokens.hasProvider {
                    // user-token.json: ask the callback once more (forced) and resend once; a second expiry surfaces.
                    retriedUser = true
                    await userTokens.invalidate(userToken)
                    forceUser = true
                    continue
                }
                if error.kind == .attestationFailed {
                    let action = await deviceTokens.report(deviceToken: token, reason: error.reason)
                    switch action {
                    case .refresh, .attest:
                        if !retriedOnce {
                            retriedOnce = true
                            continue
                        }
                    case .assert:
                        if assertionPolicy != .never, signer != nil {
                            learnAssertionsRequired()
                            if !assertionSent, !retriedOnce {
                                retriedOnce = true
                                continue
                            }
                        }
                    case .stop, .noAction:
                        break
                    }
                }
                throw error
            } catch let error as TollgateError {
                if let delay = retry.delaySeconds(errorKind: error.kind, retryAfterSeconds: error.retryAfter,
                                                  retriesDone: retries, waitedSeconds: waitedSeconds) {
                    retries += 1
                    waitedSeconds += delay
                    try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                    continue
                }
                throw error
            }
        }
    }

    /// `GET /v1/me` with the headers of a proxied request (``TollgateClient/me()``).
    func me() async throws -> Me {
        let (_, body) = try await perform(TollgateRequest(method: "GET", endpoint: "me/v1"), route: "/v1/me",
                                          exchange: { try await self.transport.data(for: $0) }, errorBody: { $0 })
        return try Me.parse(body)
    }

    /// The upgrade of a realtime session with fresh tokens (and an assertion over its digest when the app requires
    /// them), and the device token it carries.
    func realtimeUpgrade(endpoint: String, mode: RealtimeUpgradeMode, protocols: [String],
                         forceUser: Bool) async throws -> (upgrade: RealtimeUpgrade, deviceToken: String, userToken: String?) {
        let token = try await deviceTokens.deviceToken()
        var userToken: String?
        if mode == .headers { userToken = try await userTokens.token(forceRefresh: forceUser) }
        var upgrade = try RealtimeUpgrade.build(builder: builder, appToken: builder.appTokenValue, endpoint: endpoint, mode: mode,
                                                deviceToken: token, userToken: userToken, requestTimeMs: requestTimeMs(), protocols: protocols)
        if mode == .headers, shouldAssert, let signer = signer, let assertion = try await signer(upgrade.digest), !assertion.isEmpty {
            try RequestBuilder.checkHeaderValue("Tollgate-Assertion", assertion)
            upgrade = upgrade.adding(header: "Tollgate-Assertion", value: assertion)
        }
        return (upgrade, token, userToken)
    }

    // MARK: - Stream

    /// Sends `request` and yields events as bytes arrive (see ``TollgateClient/stream(_:format:)``).
    /// Events parsed but not read yet, at most: past it the pump waits for the app (bounded memory; TCP then slows
    /// the gateway down) instead of buffering without limit.
    static let maxBufferedEvents = 256

    func stream(_ request: TollgateRequest, format: StreamFormat?) -> AsyncThrowingStream<StreamEvent, Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingOldest(Self.maxBufferedEvents)) { continuation in
            let connection = ConnectionHandle()
            let task = Task {
                do {
                    let (head, body) = try await self.perform(
                        request,
                        exchange: { try await self.transport.bytes(for: $0) },
                        errorBody: { try await $0.readAll() }
                    )
                    connection.attach(body)
                    defer { body.cancel() }
                    let parser = (format ?? StreamFormat.forContentType(head.header("Content-Type"))).makeParser()
                    try await self.pump(body, parser: parser, raw: parser is RawParser, into: continuation)
                    continuation.finish()
                } catch {
                    let failure: Error
                    if Task.isCancelled, !(error is TollgateError) {
                        failure = CancellationError()
                    } else {
                        failure = error
                    }
                    continuation.finish(throwing: failure)
                }
            }
            continuation.onTermination = { _ in
                // The consumer left the loop (break, return, throw, cancellation): close the connection, which makes
                // the gateway abort the provider request.
                task.cancel()
                connection.cancel()
            }
        }
    }

    /// Reads `body` byte by byte and feeds the parser, yielding each event as soon as it is complete.
    ///
    /// `URLSession.AsyncBytes` hands out bytes, not network chunks, so the framed formats (sse, ndjson, json-array)
    /// are fed one byte at a time and never wait for more bytes than their framing needs; raw bytes are delivered in
    /// pieces of at most `rawChunkSize` bytes, and whatever was received is delivered before a cut is reported.
    private func pump(_ body: HTTPBodyStream, parser: StreamParser, raw: Bool,
                      into continuation: AsyncThrowingStream<StreamEvent, Error>.Continuation) async throws {
        var pending: [UInt8] = []
        func deliver(_ result: StreamParseResult) async throws {
            for event in result.events { try await Self.enqueue(event, into: continuation) }
            if let failure = result.error {
                throw TollgateError.network("The stream is malformed: \(failure.message)", reason: "malformed_stream")
            }
        }
        while true {
            let next: UInt8?
            do {
                next = try await body.next()
            } catch {
                if Task.isCancelled { throw CancellationError() }
                // A cut: what was complete stays delivered; nothing pending in a framed parser is flushed.
                if raw, !pending.isEmpty { try await deliver(parser.feed(pending)) }
                throw TollgateError.network("The stream was cut: \(ErrorMapper.describe(error))", reason: "stream_cut")
            }
            guard let byte = next else { break }
            if raw {
                pending.append(byte)
                if pending.count >= rawChunkSize {
                    try await deliver(parser.feed(pending))
                    pending.removeAll(keepingCapacity: true)
                }
            } else {
                try await deliver(parser.feed(CollectionOfOne(byte)))
            }
        }
        if raw, !pending.isEmpty { try await deliver(parser.feed(pending)) }
        try await deliver(parser.finish())
    }

    /// Hands `event` to the app, waiting while the bounded buffer is full (the consumer frees room as it reads).
    private static func enqueue(_ event: StreamEvent, into continuation: AsyncThrowingStream<StreamEvent, Error>.Continuation) async throws {
        var waiting = event
        while true {
            switch continuation.yield(waiting) {
            case .enqueued:
                return
            case .dropped(let dropped):
                // bufferingOldest drops the new element and hands it back: keep it and try again shortly.
                waiting = dropped
                try await Task.sleep(nanoseconds: 1_000_000)
            case .terminated:
                throw CancellationError()
            @unknown default:
                return
            }
        }
    }
}

/// The open response body of a stream, so that `onTermination` can close it from any thread.
private final class ConnectionHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var body: HTTPBodyStream?
    private var cancelled = false

    func attach(_ body: HTTPBodyStream) {
        lock.lock()
        let cancelNow = cancelled
        if !cancelNow { self.body = body }
        lock.unlock()
        if cancelNow { body.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let body = self.body
        self.body = nil
        lock.unlock()
        body?.cancel()
    }
}

/// Calls providers through a Tollgate gateway: `{baseURL}/v1/proxy/{endpoint}` with the Tollgate headers
/// (protocol.md). Every failure is a ``TollgateError`` (or `CancellationError` when the calling task is cancelled).
///
/// Apps use ``Tollgate/shared`` (configured by ``Tollgate/configure(appToken:developmentToken:retry:assertions:)``);
/// a client of its own suits tests and tools:
///
/// ```swift
/// let client = try TollgateClient(baseURL: URL(string: "https://gateway.example.com")!, appToken: "at_…",
///                                 deviceTokens: StaticDeviceToken(token))
/// let reply = try await client.request(endpoint: "openai/v1/chat/completions", method: "POST", body: json)
/// ```
public final class TollgateClient: @unchecked Sendable {
    let resolve: @Sendable () throws -> ClientEngine

    init(resolve: @escaping @Sendable () throws -> ClientEngine) {
        self.resolve = resolve
    }

    /// A client with its own configuration.
    ///
    /// - Parameters:
    ///   - deviceTokens: where device tokens come from (a ``TollgateDeviceSession``, a ``DeviceTokenCache`` around your
    ///     own attestation, or a fixed token).
    ///   - transport: HTTP; nil: `URLSession` on Apple platforms (Linux has no default: pass one).
    ///   - assertionSigner: signs the request digest (hex) for `Tollgate-Assertion`; nil sends none.
    public convenience init(baseURL: URL, appToken: String, deviceTokens: DeviceTokenSource,
                            transport: HTTPTransport? = nil, sdk: String = Tollgate.sdkHeader,
                            retry: RetryPolicy = .none, assertions: AssertionPolicy = .never,
                            assertionSigner: (@Sendable (String) async throws -> String?)? = nil,
                            rawChunkSize: Int = 1024,
                            clock: @escaping @Sendable () -> Int64 = { SystemClock.nowMs() }) throws {
        let engine = ClientEngine(
            builder: try RequestBuilder(baseURL: baseURL.absoluteString, appToken: appToken, sdk: sdk),
            transport: transport ?? defaultTransport(), deviceTokens: deviceTokens, clock: clock, retry: retry,
            assertionPolicy: assertions, signer: assertionSigner, rawChunkSize: rawChunkSize
        )
        self.init(resolve: { engine })
    }

    // MARK: Request

    /// Sends a request through the gateway and returns the whole 2xx response.
    ///
    /// - Parameters:
    ///   - endpoint: `{provider}/{version}/{path}[?query]`, e.g. `openai/v1/chat/completions`. Percent-encode spaces and
    ///     non-ASCII characters; `..`, `//`, `\`, `@`, schemes and control characters are refused before sending.
    ///   - method: default `POST`.
    ///   - body: JSON bytes, sent with `Content-Type: application/json` unless `headers` sets one. For other bytes use
    ///     the ``RequestBody`` overload (`.bytes(data, contentType: "audio/wav")`).
    ///   - query: query parameters (`%20` for spaces, never `+`).
    ///   - headers: provider headers such as `anthropic-version`; `Tollgate-*` names are refused.
    public func request(endpoint: String, method: String = "POST", body: Data? = nil,
                        query: [(name: String, value: String)] = [], headers: [String: String] = [:]) async throws -> TollgateResponse {
        try await request(TollgateRequest(method: method, endpoint: endpoint, body: body.map { RequestBody.json($0) },
                                          query: query, headers: Self.pairs(headers)))
    }

    /// Sends a request with a typed ``RequestBody`` (`.json`, `.text`, `.bytes`).
    public func request(endpoint: String, method: String = "POST", body: RequestBody,
                        query: [(name: String, value: String)] = [], headers: [String: String] = [:]) async throws -> TollgateResponse {
        try await request(TollgateRequest(method: method, endpoint: endpoint, body: body, query: query, headers: Self.pairs(headers)))
    }

    /// Sends `request` and returns the whole 2xx response.
    public func request(_ request: TollgateRequest) async throws -> TollgateResponse {
        try await resolve().request(request)
    }

    // MARK: Stream

    /// Sends a request and yields events as the provider sends them. Nothing is sent until iteration starts;
    /// leaving the loop closes the connection (the gateway then aborts the provider request). A cut or malformed
    /// stream ends with `networkError` after the events that were complete.
    ///
    /// - Parameter format: the provider's streaming format; nil picks it from the response's `Content-Type`
    ///   (`text/event-stream` → `.sse`, NDJSON → `.ndjson`, JSON → `.jsonArray`, anything else → `.raw`).
    public func stream(endpoint: String, method: String = "POST", body: Data? = nil, format: StreamFormat? = nil,
                       query: [(name: String, value: String)] = [], headers: [String: String] = [:]) -> AsyncThrowingStream<StreamEvent, Error> {
        stream(TollgateRequest(method: method, endpoint: endpoint, body: body.map { RequestBody.json($0) }, query: query,
                               headers: Self.pairs(headers)), format: format)
    }

    /// Streams a request with a typed ``RequestBody``.
    public func stream(endpoint: String, method: String = "POST", body: RequestBody, format: StreamFormat? = nil,
                       query: [(name: String, value: String)] = [], headers: [String: String] = [:]) -> AsyncThrowingStream<StreamEvent, Error> {
        stream(TollgateRequest(method: method, endpoint: endpoint, body: body, query: query, headers: Self.pairs(headers)), format: format)
    }

    /// Streams `request` as events of `format` (nil: from the response's `Content-Type`).
    public func stream(_ request: TollgateRequest, format: StreamFormat? = nil) -> AsyncThrowingStream<StreamEvent, Error> {
        let engine: ClientEngine
        do {
            engine = try resolve()
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        return engine.stream(request, format: format)
    }

    /// Earns a device token now (e.g. at launch, to hide the first request's latency); later calls reuse it.
    public func prepare() async throws {
        _ = try await resolve().deviceTokens.deviceToken()
    }

    private static func pairs(_ headers: [String: String]) -> [(name: String, value: String)] {
        headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { (name: $0.key, value: $0.value) }
    }
}
