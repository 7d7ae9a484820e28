import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One message of a realtime session.
public enum RealtimeMessage: Sendable, Equatable {
    case text(String)
    case binary(Data)
}

extension TollgateClient {
    /// Registers the callback that returns the signed-in user's current ID token (nil when signed out); the SDK sends
    /// it as `Tollgate-User-Token`, reuses it until a minute before its `exp`, and calls the callback again (with
    /// `forceRefresh` true) once when the gateway answers `user_token_expired`. nil signs out.
    ///
    /// ```swift
    /// try await Tollgate.shared.setUserTokenProvider { forceRefresh in
    ///     try await Auth.auth().currentUser?.getIDTokenResult(forcingRefresh: forceRefresh).token
    /// }
    /// ```
    public func setUserTokenProvider(_ provider: UserTokenProvider?) async throws {
        try await resolve().userTokens.setProvider(provider)
    }

    /// What this device (and signed-in user) may still spend: `GET /v1/me`. Counts against no limit.
    public func me() async throws -> Me {
        try await resolve().me()
    }
}

#if canImport(Darwin)
extension TollgateClient {
    /// Opens a realtime session (protocol.md, "Realtime sessions"): `GET {gateway}/v1/proxy/{endpoint}` upgraded to a
    /// WebSocket over `URLSessionWebSocketTask`, the Tollgate headers on the upgrade (fresh tokens first).
    ///
    /// - Throws: the gateway's refusal as a ``TollgateError`` (the status decides the kind: URLSession hands over the
    ///   status and headers of a refused upgrade, not its body).
    public func realtime(endpoint: String, protocols: [String] = [], mode: RealtimeUpgradeMode = .headers) async throws -> RealtimeSession {
        let engine = try resolve()
        var forceUser = false
        var retried = false
        while true {
            let (upgrade, deviceToken, userToken) = try await engine.realtimeUpgrade(endpoint: endpoint, mode: mode, protocols: protocols, forceUser: forceUser)
            do {
                return try await RealtimeSession.open(upgrade, clock: engine.clock) { error in
                    // device_revoked during the session: as for an HTTP refusal; the device is not re-keyed.
                    _ = await engine.deviceTokens.report(deviceToken: deviceToken, reason: error.reason)
                }
            } catch let error as TollgateError {
                if !retried, error.kind == .unauthorized, error.reason == "user_token_expired" || (error.reason == nil && userToken != nil) {
                    retried = true
                    await engine.userTokens.invalidate(userToken)
                    forceUser = true
                    continue
                }
                if !retried, error.kind == .attestationFailed {
                    let action = await engine.deviceTokens.report(deviceToken: deviceToken, reason: error.reason)
                    if action == .refresh || action == .attest {
                        retried = true
                        continue
                    }
                }
                throw error
            }
        }
    }
}

/// An open realtime session. Read ``messages`` with `for try await`; send with ``send(_:)``; end with ``close()``.
/// ``messages`` finishes after a normal close (1000) and throws a ``RealtimeCloseError`` after any other: its `kind`,
/// `reason`, `closeCode`, and `mayReconnect` (4503: the gateway is draining; open a new session at once).
///
/// Messages are pulled from the socket one at a time as the app reads them: nothing piles up in the SDK while the app
/// does not read.
public final class RealtimeSession: @unchecked Sendable {
    private let task: URLSessionWebSocketTask
    private let session: URLSession
    /// The subprotocol the provider chose, if any.
    public let negotiatedProtocol: String?
    /// The provider's messages, in order.
    public let messages: AsyncThrowingStream<RealtimeMessage, Error>

    private init(task: URLSessionWebSocketTask, session: URLSession, negotiatedProtocol: String?,
                 onStop: @escaping @Sendable (RealtimeCloseError) async -> Void) {
        self.task = task
        self.session = session
        self.negotiatedProtocol = negotiatedProtocol
        // `AsyncThrowingStream(unfolding:)` takes a `@Sendable` closure: it captures the task through a Sendable box.
        let socket = WebSocketTaskBox(task)
        messages = AsyncThrowingStream(unfolding: {
            let task = socket.task
            do {
                switch try await task.receive() {
                case .string(let text): return .text(text)
                case .data(let data): return .binary(data)
                @unknown default: return nil
                }
            } catch {
                let code = task.closeCode.rawValue
                let reason = task.closeReason.map { String(decoding: $0, as: UTF8.self) } ?? ""
                if code == URLSessionWebSocketTask.CloseCode.invalid.rawValue {
                    if Task.isCancelled { throw CancellationError() }
                    throw TollgateError.network("The realtime session was cut: \(ErrorMapper.describe(error))", reason: "stream_cut")
                }
                guard let failure = RealtimeCloseError.read(code: code, reason: reason) else { return nil }
                if failure.action == .stop { await onStop(failure) }
                throw failure
            }
        })
    }

    /// Sends a text frame.
    public func send(_ text: String) async throws {
        try await task.send(.string(text))
    }

    /// Sends a binary frame.
    public func send(_ data: Data) async throws {
        try await task.send(.data(data))
    }

    /// Closes the session (1000 by default); ``messages`` then finishes.
    public func close(code: URLSessionWebSocketTask.CloseCode = .normalClosure, reason: String = "") {
        task.cancel(with: code, reason: reason.isEmpty ? nil : Data(reason.utf8))
        session.finishTasksAndInvalidate()
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    static func open(_ upgrade: RealtimeUpgrade, clock: @escaping @Sendable () -> Int64,
                     onStop: @escaping @Sendable (RealtimeCloseError) async -> Void) async throws -> RealtimeSession {
        guard let url = URL(string: upgrade.url) else {
            throw TollgateError.invalid("Not a valid realtime address: \(upgrade.url)", reason: "bad_endpoint")
        }
        var request = URLRequest(url: url)
        for header in upgrade.headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        if !upgrade.protocols.isEmpty {
            request.setValue(upgrade.protocols.joined(separator: ", "), forHTTPHeaderField: "Sec-WebSocket-Protocol")
        }
        let delegate = OpenDelegate(clock: clock)
        let session = URLSession(configuration: .ephemeral, delegate: delegate, delegateQueue: nil)
        let task = session.webSocketTask(with: request)
        task.resume()
        do {
            let negotiated = try await delegate.wait()
            return RealtimeSession(task: task, session: session, negotiatedProtocol: negotiated, onStop: onStop)
        } catch {
            task.cancel()
            session.invalidateAndCancel()
            throw error
        }
    }
}

/// Hands a `URLSessionWebSocketTask` to a `@Sendable` closure whatever the SDK's Sendable annotation of the task class
/// (the task itself is thread-safe: URLSession serializes its calls).
private final class WebSocketTaskBox: @unchecked Sendable {
    let task: URLSessionWebSocketTask

    init(_ task: URLSessionWebSocketTask) {
        self.task = task
    }
}

/// Waits for the upgrade: opened (the negotiated subprotocol), or refused (the gateway's status and headers).
private final class OpenDelegate: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<String?, Error>?
    private var outcome: Result<String?, Error>?
    private let clock: @Sendable () -> Int64

    init(clock: @escaping @Sendable () -> Int64) {
        self.clock = clock
    }

    func wait() async throws -> String? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String?, Error>) in
            lock.lock()
            if let outcome {
                lock.unlock()
                continuation.resume(with: outcome)
                return
            }
            self.continuation = continuation
            lock.unlock()
        }
    }

    private func settle(_ result: Result<String?, Error>) {
        lock.lock()
        guard outcome == nil else {
            lock.unlock()
            return
        }
        outcome = result
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(with: result)
    }

    func urlSession(_ session: URLSession, webSocketTask: URLSessionWebSocketTask, didOpenWithProtocol negotiated: String?) {
        settle(.success(negotiated))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let response = task.response as? HTTPURLResponse, response.statusCode != 101 else {
            settle(.failure(TollgateError.network("The realtime session could not be opened: \(error.map(ErrorMapper.describe) ?? "closed")", reason: "unreachable")))
            return
        }
        var headers: HeaderPairs = []
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers.append((name: name, value: value)) }
        }
        let mapped = ErrorMapper.map(status: response.statusCode, headers: headers, body: nil, nowMs: clock())
            ?? TollgateError.network("The upgrade was answered with HTTP \(response.statusCode).", reason: "upgrade_refused")
        settle(.failure(mapped))
    }
}
#endif
