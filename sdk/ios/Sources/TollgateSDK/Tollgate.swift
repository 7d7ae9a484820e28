import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Tollgate SDK: call AI providers through your Tollgate gateway without shipping a provider key.
///
/// Configure once at app start with the app token; the gateway address comes from the app's Info.plist key
/// `TollgateGatewayURL` (``configure(appToken:developmentToken:retry:assertions:)``), or is given explicitly
/// (``configure(appToken:gatewayURL:developmentToken:retry:assertions:transport:)``). Then call
/// ``request(endpoint:method:body:query:headers:)`` and ``stream(endpoint:method:body:format:query:headers:)`` (or the
/// same methods on ``shared``) from anywhere:
///
/// ```swift
/// @main
/// struct MyApp: App {
///     init() {
///         try! Tollgate.configure(appToken: "at_…")   // Info.plist: TollgateGatewayURL = https://gateway.example.com
///     }
///     var body: some Scene { WindowGroup { ContentView() } }
/// }
///
/// let response = try await Tollgate.request(endpoint: "openai/v1/chat/completions", method: "POST", body: json)
/// for try await event in Tollgate.stream(endpoint: "anthropic/v1/messages", method: "POST", body: json,
///                                        headers: ["anthropic-version": "2023-06-01"]) { … }
/// ```
///
/// A call before `configure` throws `TollgateError.invalidRequest` with reason `not_initialized`; a missing or invalid
/// gateway address makes `configure` throw `invalidRequest` with reason `gateway_url_missing` (and later calls too).
public enum Tollgate {
    /// The SDK version.
    public static let version = "1.2.0"
    /// The `Tollgate-SDK` header value.
    public static let sdkHeader = "ios/" + version
    /// The Info.plist key holding the gateway address.
    public static let gatewayURLInfoPlistKey = "TollgateGatewayURL"
    /// The message of the error thrown by calls made before `configure`.
    public static let notConfiguredMessage = "call Tollgate.configure(appToken:) at app start"

    private static let state = ConfigurationState()

    /// The app-wide client. Its calls throw `invalidRequest` (reason `not_initialized`) until `configure` has run;
    /// it follows later re-configurations.
    public static let shared = TollgateClient(resolve: { try Tollgate.state.engine() })

    /// The gateway address from the app's Info.plist (`TollgateGatewayURL`), trimmed; nil when absent or empty.
    public static var infoPlistGatewayURL: String? {
        guard let value = Bundle.main.object(forInfoDictionaryKey: gatewayURLInfoPlistKey) as? String else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Sets the SDK up with the gateway address from Info.plist (`TollgateGatewayURL`); call once at app start.
    /// Nothing goes on the network here: the first request attests the device (or call ``prepare()``).
    ///
    /// - Parameters:
    ///   - appToken: the app token (`at_…`) from the dashboard. It identifies the app; it is not a provider key and no
    ///     provider key ever belongs in the app.
    ///   - developmentToken: a development token (`dt_…`) for the **simulator**, used only when the SDK is built
    ///     `DEBUG` and runs in a simulator; ignored everywhere else, where App Attest is used. Pass it only from debug
    ///     code (`#if DEBUG`), so that it is not in your release binary.
    ///   - retry: automatic retries of `rateLimited`; off by default.
    ///   - assertions: when requests carry an App Attest assertion (`Tollgate-Assertion`).
    /// - Throws: `TollgateError.invalidRequest` with reason `gateway_url_missing` when Info.plist has no valid
    ///   `TollgateGatewayURL`, or the app token cannot be sent as a header.
    public static func configure(appToken: String, developmentToken: String? = nil, retry: RetryPolicy = .none,
                                 assertions: AssertionPolicy = .whenRequired) throws {
        guard let gatewayURL = infoPlistGatewayURL else {
            let error = TollgateError.invalid(
                "No gateway address: add the key \(gatewayURLInfoPlistKey) (e.g. https://gateway.example.com) to the app's Info.plist, or call Tollgate.configure(appToken:gatewayURL:).",
                reason: "gateway_url_missing")
            state.set(.failure(error))
            throw error
        }
        try configure(appToken: appToken, gatewayURL: gatewayURL, developmentToken: developmentToken, retry: retry, assertions: assertions)
    }

    /// Sets the SDK up with an explicit gateway address, e.g. `https://gateway.example.com` (a path prefix is allowed).
    /// See ``configure(appToken:developmentToken:retry:assertions:)``; `transport` replaces `URLSession` (tests, proxies).
    public static func configure(appToken: String, gatewayURL: String, developmentToken: String? = nil,
                                 retry: RetryPolicy = .none, assertions: AssertionPolicy = .whenRequired,
                                 transport: HTTPTransport? = nil) throws {
        do {
            let http = transport ?? defaultTransport()
            let session = try TollgateDeviceSession(gatewayURL: gatewayURL, appToken: appToken,
                                                    developmentToken: usableDevelopmentToken(developmentToken), transport: http)
            let signer: @Sendable (String) async throws -> String? = { digestHex in
                guard let digest = Digest.bytes(fromHex: digestHex) else { return nil }
                return try await session.sign(digest: digest)
            }
            let engine = ClientEngine(
                builder: try RequestBuilder(baseURL: session.gatewayURL, appToken: appToken, sdk: sdkHeader),
                transport: http, deviceTokens: session, clock: { SystemClock.nowMs() }, retry: retry,
                assertionPolicy: assertions, signer: signer, rawChunkSize: 1024
            )
            state.set(.success(engine))
        } catch let error as TollgateError {
            state.set(.failure(error))
            throw error
        }
    }

    #if canImport(Darwin)
    /// The 1.x call with a `URL` and an optional `URLSession`; prefer ``configure(appToken:developmentToken:retry:assertions:)``.
    /// It does not throw: an invalid address makes every later call throw `invalidRequest` instead.
    @available(*, deprecated, message: "Use configure(appToken:) with the Info.plist key TollgateGatewayURL, or configure(appToken:gatewayURL:).")
    public static func configure(appToken: String, baseURL: URL, developmentToken: String? = nil,
                                 retry: RetryPolicy = .none, assertions: AssertionPolicy = .whenRequired,
                                 session: URLSession? = nil) {
        try? configure(appToken: appToken, gatewayURL: baseURL.absoluteString, developmentToken: developmentToken,
                       retry: retry, assertions: assertions, transport: URLSessionTransport(session: session))
    }
    #endif

    /// The development token only in a DEBUG build running in the simulator (simulators cannot use App Attest); a
    /// blank token counts as none. Everywhere else it is ignored, so a token left in the call cannot weaken a device
    /// or release build (and a production gateway refuses development tokens anyway).
    static func usableDevelopmentToken(_ token: String?) -> String? {
        #if DEBUG && targetEnvironment(simulator)
        guard let token, !token.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return token
        #else
        return nil
        #endif
    }

    /// True once ``configure(appToken:developmentToken:retry:assertions:)`` has run with valid settings.
    public static var isConfigured: Bool {
        (try? state.engine()) != nil
    }

    /// Forgets the configuration (tests, sign-out); calls then throw until `configure` runs again.
    public static func reset() {
        state.set(nil)
    }

    // MARK: The calls, on the shared client

    /// Sends a request through the gateway and returns the whole 2xx response. See
    /// ``TollgateClient/request(endpoint:method:body:query:headers:)``.
    public static func request(endpoint: String, method: String = "POST", body: Data? = nil,
                               query: [(name: String, value: String)] = [], headers: [String: String] = [:]) async throws -> TollgateResponse {
        try await shared.request(endpoint: endpoint, method: method, body: body, query: query, headers: headers)
    }

    /// Sends a request with a typed ``RequestBody`` (`.json`, `.text`, `.bytes`).
    public static func request(endpoint: String, method: String = "POST", body: RequestBody,
                               query: [(name: String, value: String)] = [], headers: [String: String] = [:]) async throws -> TollgateResponse {
        try await shared.request(endpoint: endpoint, method: method, body: body, query: query, headers: headers)
    }

    /// Sends `request` and returns the whole 2xx response.
    public static func request(_ request: TollgateRequest) async throws -> TollgateResponse {
        try await shared.request(request)
    }

    /// Streams a response as events. See ``TollgateClient/stream(endpoint:method:body:format:query:headers:)``.
    public static func stream(endpoint: String, method: String = "POST", body: Data? = nil, format: StreamFormat? = nil,
                              query: [(name: String, value: String)] = [], headers: [String: String] = [:]) -> AsyncThrowingStream<StreamEvent, Error> {
        shared.stream(endpoint: endpoint, method: method, body: body, format: format, query: query, headers: headers)
    }

    /// Streams a request with a typed ``RequestBody``.
    public static func stream(endpoint: String, method: String = "POST", body: RequestBody, format: StreamFormat? = nil,
                              query: [(name: String, value: String)] = [], headers: [String: String] = [:]) -> AsyncThrowingStream<StreamEvent, Error> {
        shared.stream(endpoint: endpoint, method: method, body: body, format: format, query: query, headers: headers)
    }

    /// Streams `request` as events of `format` (nil: from the response's `Content-Type`).
    public static func stream(_ request: TollgateRequest, format: StreamFormat? = nil) -> AsyncThrowingStream<StreamEvent, Error> {
        shared.stream(request, format: format)
    }

    /// Attests now (e.g. at launch, to hide the first request's latency); later requests reuse the device token.
    public static func prepare() async throws {
        try await shared.prepare()
    }
}

/// The current configuration, behind a lock (configure may run on any thread).
private final class ConfigurationState: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Result<ClientEngine, TollgateError>?

    func set(_ value: Result<ClientEngine, TollgateError>?) {
        lock.lock()
        current = value
        lock.unlock()
    }

    func engine() throws -> ClientEngine {
        lock.lock()
        let value = current
        lock.unlock()
        switch value {
        case .success(let engine)?: return engine
        case .failure(let error)?: throw error
        case nil: throw TollgateError.invalid(Tollgate.notConfiguredMessage, reason: "not_initialized")
        }
    }
}
