import Foundation

/// The Tollgate SDK: call AI providers through your Tollgate gateway without shipping a provider key.
///
/// Configure once at app start (the App initializer, or `application(_:didFinishLaunchingWithOptions:)`), then call
/// ``request(endpoint:method:body:query:headers:)`` and ``stream(endpoint:method:body:format:query:headers:)`` (or the
/// same methods on ``shared``) from anywhere:
///
/// ```swift
/// @main
/// struct MyApp: App {
///     init() {
///         Tollgate.configure(appToken: "at_…", baseURL: URL(string: "https://gateway.example.com")!)
///     }
///     var body: some Scene { WindowGroup { ContentView() } }
/// }
///
/// let response = try await Tollgate.request(endpoint: "openai/v1/chat/completions", method: "POST", body: json)
/// for try await event in Tollgate.stream(endpoint: "anthropic/v1/messages", method: "POST", body: json,
///                                        headers: ["anthropic-version": "2023-06-01"]) { … }
/// ```
///
/// A call before ``configure(appToken:baseURL:developmentToken:retry:assertions:session:)`` throws
/// `TollgateError.invalidRequest("call Tollgate.configure(appToken:) at app start")`.
public enum Tollgate {
    /// The SDK version.
    public static let version = "1.2.0"
    /// The `Tollgate-SDK` header value.
    public static let sdkHeader = "ios/" + version
    /// The message of the error thrown by calls made before ``configure(appToken:baseURL:developmentToken:retry:assertions:session:)``.
    public static let notConfiguredMessage = "call Tollgate.configure(appToken:) at app start"

    private static let state = ConfigurationState()

    /// The app-wide client. Its calls throw `invalidRequest` until ``configure(appToken:baseURL:developmentToken:retry:assertions:session:)`` has run;
    /// it follows later re-configurations.
    public static let shared = TollgateClient(resolve: { try Tollgate.state.engine() })

    /// Sets the SDK up; call once at app start. Nothing goes on the network here: the first request attests the device
    /// (or call ``prepare()`` to do it early). Calling it again replaces the configuration.
    ///
    /// An invalid `baseURL` or `appToken` does not crash the app: every later call throws `invalidRequest` naming it.
    ///
    /// - Parameters:
    ///   - appToken: the app token (`at_…`) from the dashboard. It identifies the app; it is not a provider key and no
    ///     provider key ever belongs in the app.
    ///   - baseURL: the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed).
    ///   - developmentToken: a development token (`dt_…`) for the **simulator**, used only when the SDK is built
    ///     `DEBUG` and runs in a simulator; ignored everywhere else, where App Attest is used. Pass it only from debug
    ///     code (`#if DEBUG`), so that it is not in your release binary.
    ///   - retry: automatic retries of `rateLimited`; off by default.
    ///   - assertions: when requests carry an App Attest assertion (`Tollgate-Assertion`).
    ///   - session: a `URLSession` to use (its configuration, proxy and pinning apply). It must not follow redirects
    ///     on its own: the SDK refuses them per task.
    public static func configure(appToken: String, baseURL: URL, developmentToken: String? = nil,
                                 retry: RetryPolicy = .none, assertions: AssertionPolicy = .whenRequired,
                                 session: URLSession? = nil) {
        do {
            let transport = URLSessionTransport(session: session)
            let base = baseURL.absoluteString
            let api = try AttestationAPI(baseURL: base, appToken: appToken, sdk: sdkHeader, transport: transport)
            let attestor = PlatformAttestor(api: api, developmentToken: developmentToken)
            let tokens = DeviceTokenCache(store: KeychainDeviceTokenStore(appToken: appToken)) { try await attestor.attest() }
            let signer: @Sendable (String) async throws -> String? = { digest in
                // Development tokens have no device key: nothing to sign with.
                if attestor.usesDevelopmentToken { return nil }
                return try await AppAttestProvider.shared.assertion(digestHex: digest)
            }
            let engine = ClientEngine(
                builder: try RequestBuilder(baseURL: base, appToken: appToken, sdk: sdkHeader),
                transport: transport, deviceTokens: tokens, clock: { SystemClock.nowMs() }, retry: retry,
                assertionPolicy: assertions, signer: signer, rawChunkSize: 1024
            )
            state.set(.success(engine))
        } catch let error as TollgateError {
            state.set(.failure(error))
        } catch {
            state.set(.failure(.invalidRequest("Tollgate.configure failed: \(error)")))
        }
    }

    /// True once ``configure(appToken:baseURL:developmentToken:retry:assertions:session:)`` has run with valid settings.
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
        case nil: throw TollgateError.invalidRequest(Tollgate.notConfiguredMessage)
        }
    }
}

/// Earns device tokens on this platform: App Attest on devices; in a DEBUG build running in the simulator, the
/// development token when one is configured (`POST /v1/attest/development {developmentToken, deviceId}`).
struct PlatformAttestor: Sendable {
    let api: AttestationAPI
    private let developmentToken: String?

    init(api: AttestationAPI, developmentToken: String?) {
        self.api = api
        self.developmentToken = PlatformAttestor.usableDevelopmentToken(developmentToken)
    }

    /// True when this build attests with a development token.
    var usesDevelopmentToken: Bool { developmentToken != nil }

    func attest() async throws -> DeviceToken {
        if let developmentToken = developmentToken {
            return try await api.exchange(method: "development", body: .object([
                "developmentToken": .string(developmentToken),
                "deviceId": .string(PlatformAttestor.developmentDeviceId()),
            ]))
        }
        // A key attested earlier refreshes with an assertion (the device keeps its id); if the gateway no longer knows
        // the key, or there is none, a new key is attested.
        let challenge = try await api.challenge()
        if let refresh = try await AppAttestProvider.shared.refresh(challenge: challenge.value) {
            do {
                return try await api.exchange(method: refresh.method, body: refresh.body)
            } catch TollgateError.attestationFailed {
                AppAttestProvider.shared.forgetAttestedKey()
            }
        }
        let fresh = try await api.challenge()
        let artifact = try await AppAttestProvider.shared.attest(challenge: fresh.value)
        return try await api.exchange(method: artifact.method, body: artifact.body)
    }

    /// The development token only in a DEBUG build running in the simulator (simulators cannot use App Attest); a
    /// blank token counts as none. Everywhere else it is ignored, so a token left in the call cannot weaken a device
    /// or release build (and a production gateway refuses development tokens anyway).
    private static func usableDevelopmentToken(_ token: String?) -> String? {
        #if DEBUG && targetEnvironment(simulator)
        guard let token, !token.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return token
        #else
        return nil
        #endif
    }

    /// A random id for development attestation, stable per installation (`dev-<UUID>`; the gateway accepts 1–128 of
    /// `A-Z a-z 0-9 . _ : -`).
    static func developmentDeviceId() -> String {
        let key = "dev.tollgate.developmentDeviceId"
        if let id = UserDefaults.standard.string(forKey: key) { return id }
        let id = "dev-" + UUID().uuidString
        UserDefaults.standard.set(id, forKey: key)
        return id
    }
}
