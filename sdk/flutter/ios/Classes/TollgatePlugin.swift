import Flutter
import TollgateSDK

/// Serves the MethodChannel `dev.tollgate/attestation` for the Dart SDK (lib/src/native_attestation.dart) with the
/// Tollgate Swift SDK's App Attest (`AppAttestProvider`, sdk/ios):
///
/// - `attest` `{challenge}` → `{method: "apple-app-attest", body: {keyId, attestation, challenge}}`;
/// - `assert` `{digest}` → the App Attest assertion over the request digest (base64url), or nil when no key has been
///   attested on this device yet.
///
/// Errors come back as `FlutterError` whose code is the SDK's reason (`app_attest_unsupported`, …), which the Dart side
/// reports as `AttestationFailedException(reason: code)`.
public final class TollgatePlugin: NSObject, FlutterPlugin {
    public static func register(with registrar: FlutterPluginRegistrar) {
        let channel = FlutterMethodChannel(name: "dev.tollgate/attestation", binaryMessenger: registrar.messenger())
        registrar.addMethodCallDelegate(TollgatePlugin(), channel: channel)
    }

    public func handle(_ call: FlutterMethodCall, result: @escaping FlutterResult) {
        let arguments = call.arguments as? [String: Any]
        switch call.method {
        case "attest":
            guard let challenge = arguments?["challenge"] as? String else {
                result(FlutterError(code: "bad_arguments", message: "attest needs {challenge}.", details: nil))
                return
            }
            Task {
                do {
                    let artifact = try await AppAttestProvider.shared.attest(challenge: challenge)
                    let answer: [String: Any] = ["method": artifact.method, "body": artifact.body.foundationValue]
                    await MainActor.run { result(answer) }
                } catch {
                    let failure = TollgatePlugin.flutterError(error)
                    await MainActor.run { result(failure) }
                }
            }
        case "assert":
            guard let digest = arguments?["digest"] as? String else {
                result(FlutterError(code: "bad_arguments", message: "assert needs {digest}.", details: nil))
                return
            }
            Task {
                do {
                    let assertion = try await AppAttestProvider.shared.assertion(digestHex: digest)
                    await MainActor.run { result(assertion) }
                } catch {
                    let failure = TollgatePlugin.flutterError(error)
                    await MainActor.run { result(failure) }
                }
            }
        default:
            result(FlutterMethodNotImplemented)
        }
    }

    private static func flutterError(_ error: Error) -> FlutterError {
        if let error = error as? TollgateError {
            return FlutterError(code: error.details?.reason ?? error.kind.rawValue, message: error.message, details: nil)
        }
        return FlutterError(code: "app_attest_failed", message: error.localizedDescription, details: nil)
    }
}
