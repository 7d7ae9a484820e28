// A minimal SwiftUI app using Tollgate: configure at launch, one request, one stream, every error handled. It is a
// SwiftPM app (Example/Package.swift) that depends on the Tollgate package exactly as an app does, through the
// repository root Package.swift (here by path; an app uses .package(url:from:)). `swift run` on a Mac with
// TOLLGATE_GATEWAY_URL set (and TOLLGATE_DEV_TOKEN: a Mac has no App Attest), or add the file to an iOS app target
// with the Info.plist key TollgateGatewayURL. No provider key appears anywhere: the gateway adds it.
import SwiftUI
import TollgateSDK

@main
struct TollgateExampleApp: App {
    init() {
        #if DEBUG
        // Simulators cannot use App Attest: a development token (`npx tollgate dev-tokens create --app ID`), used only
        // in DEBUG simulator builds. Keep the real value out of source control (e.g. an .xcconfig that is git-ignored).
        let developmentToken: String? = ProcessInfo.processInfo.environment["TOLLGATE_DEV_TOKEN"]
        #else
        let developmentToken: String? = nil
        #endif
        do {
            // The app token identifies the app; it is not a provider key. The gateway address comes from Info.plist.
            if let gatewayURL = ProcessInfo.processInfo.environment["TOLLGATE_GATEWAY_URL"] {
                // `swift run` on a Mac has no Info.plist: the address from the environment.
                try Tollgate.configure(appToken: "at_YOUR_APP_TOKEN", gatewayURL: gatewayURL, developmentToken: developmentToken)
            } else {
                try Tollgate.configure(appToken: "at_YOUR_APP_TOKEN", developmentToken: developmentToken)
            }
        } catch {
            // invalidRequest, reason gateway_url_missing: Info.plist has no valid TollgateGatewayURL.
            print("Tollgate is not configured: \(error)")
        }
    }

    var body: some Scene {
        WindowGroup { ContentView() }
    }
}

struct ContentView: View {
    @State private var reply = ""
    @State private var status = "Tap a button."

    var body: some View {
        VStack(alignment: .leading, spacing: 16) {
            HStack {
                Button("Ask") { Task { await ask() } }
                Button("Stream") { Task { await streamAnswer() } }
            }
            Text(status).font(.footnote).foregroundColor(.secondary)
            ScrollView { Text(reply).frame(maxWidth: .infinity, alignment: .leading) }
        }
        .padding()
    }

    private let question = #"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in French."}]}"#

    func ask() async {
        status = "Asking…"
        do {
            let response = try await Tollgate.request(endpoint: "openai/v1/chat/completions", method: "POST",
                                                      body: question.data(using: .utf8))
            let content = try response.json()["choices"]?[0]?["message"]?["content"]?.stringValue
            reply = content ?? response.text
            status = "Done (request \(response.requestId ?? "?"))."
        } catch {
            status = describe(error)
        }
    }

    func streamAnswer() async {
        status = "Streaming…"
        reply = ""
        let body = #"{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Count to ten."}]}"#
        do {
            for try await event in Tollgate.stream(endpoint: "openai/v1/chat/completions", method: "POST",
                                                   body: body.data(using: .utf8)) {
                guard case .sse(let sse) = event, sse.data != "[DONE]",
                      let chunk = try? JSONValue.parse(sse.data),
                      let piece = chunk["choices"]?[0]?["delta"]?["content"]?.stringValue
                else { continue }
                reply += piece
            }
            status = "Done."
        } catch {
            status = describe(error)
        }
    }

    private func describe(_ error: Error) -> String {
        guard let error = error as? TollgateError else { return "\(error)" } // e.g. CancellationError
        switch error {
        case .attestationFailed(let details) where details.reason == "device_revoked":
            return "This device was blocked by the app's operator."
        case .attestationFailed(let details):
            return "This device could not prove it runs the genuine app: \(details.message)"
        case .unauthorized:
            return "The app token was refused: ship the current one."
        case .rateLimited(let retryAfter):
            return "Busy: try again in \(retryAfter ?? 5) s."
        case .secretNotFound:
            return "The gateway has no key for this provider yet: add it in the dashboard."
        case .networkError(let details):
            return "Offline or the provider is unreachable: \(details.message)"
        case .invalidRequest(let details):
            return "Bug in the request (\(details.reason ?? "invalid_request")): \(details.message)"
        case .providerError(let status, let body):
            return "The provider answered \(status): \(body)"
        }
    }
}
