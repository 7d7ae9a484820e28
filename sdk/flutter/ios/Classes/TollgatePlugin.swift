import Flutter
import Foundation
import TollgateSDK

/// Serves the MethodChannel `dev.tollgate/native` for the Dart SDK with the Tollgate Swift SDK (sdk/ios), which owns the
/// device-token lifecycle: App Attest key attestation and assertion refresh, the token persisted in the Keychain, the
/// reason → action rule and revocation (``TollgateNativeBridge`` over ``TollgateDeviceSession``). This class generates
/// no key of its own; it only translates channel calls.
///
/// | method | arguments | result |
/// |---|---|---|
/// | `getConfiguration` | – | `{gatewayUrl}` (Info.plist `TollgateGatewayURL`, or null) |
/// | `configure` | `{appToken, gatewayUrl, developmentToken}` | null |
/// | `deviceToken` | `{forceRefresh}` | `{deviceToken, expiresAtMs, deviceId}` |
/// | `reportError` | `{deviceToken, reason}` | `{action}`: `stop`, `refresh`, `attest`, `assert` or `none` |
/// | `assertion` | `{digest}` (base64 of the 32-byte request digest) | `{assertion}` (base64url, or null) |
/// | `clear` | – | null |
///
/// Errors: `FlutterError(code: kind, message:, details: ["reason": reason])`, `kind` being the SDK error kind
/// (`attestationFailed`, `networkError`, `invalidRequest`, …) and `reason` the gateway's or the SDK's reason (or null).
public final class TollgatePlugin: NSObject, FlutterPlugin {
    private let bridge = TollgateNativeBridge.shared

    public static func register(with registrar: FlutterPluginRegistrar) {
        let channel = FlutterMethodChannel(name: "dev.tollgate/native", binaryMessenger: registrar.messenger())
        registrar.addMethodCallDelegate(TollgatePlugin(), channel: channel)
    }

    public func handle(_ call: FlutterMethodCall, result: @escaping FlutterResult) {
        let reply = Reply(result)
        let arguments = call.arguments as? [String: Any] ?? [:]
        let bridge = self.bridge
        switch call.method {
        case "getConfiguration":
            let gatewayURL = bridge.gatewayURLFromInfoPlist()
            reply.send(["gatewayUrl": gatewayURL.map { $0 as Any } ?? NSNull()] as [String: Any])
        case "configure":
            guard let appToken = arguments["appToken"] as? String else {
                reply.fail(kind: "invalidRequest", message: "configure needs {appToken, gatewayUrl, developmentToken}.", reason: "bad_arguments")
                return
            }
            do {
                try bridge.configure(appToken: appToken, gatewayURL: arguments["gatewayUrl"] as? String,
                                     developmentToken: arguments["developmentToken"] as? String)
                reply.send(nil)
            } catch {
                reply.fail(error)
            }
        case "deviceToken":
            let forceRefresh = arguments["forceRefresh"] as? Bool ?? false
            Task {
                do {
                    let token = try await bridge.deviceToken(forceRefresh: forceRefresh)
                    reply.sendToken(token.token, expiresAtMs: token.expiresAtMs, deviceId: token.deviceId)
                } catch {
                    reply.fail(error)
                }
            }
        case "reportError":
            guard let deviceToken = arguments["deviceToken"] as? String else {
                reply.fail(kind: "invalidRequest", message: "reportError needs {deviceToken, reason}.", reason: "bad_arguments")
                return
            }
            let reason = arguments["reason"] as? String
            Task {
                do {
                    let action = try await bridge.reportError(deviceToken: deviceToken, reason: reason)
                    reply.sendStrings(["action": action.rawValue])
                } catch {
                    reply.fail(error)
                }
            }
        case "assertion":
            guard let digest = arguments["digest"] as? String else {
                reply.fail(kind: "invalidRequest", message: "assertion needs {digest}.", reason: "bad_arguments")
                return
            }
            Task {
                do {
                    let assertion = try await bridge.assertion(digestBase64: digest)
                    reply.sendStrings(["assertion": assertion])
                } catch {
                    reply.fail(error)
                }
            }
        case "clear":
            Task {
                await bridge.clear()
                reply.send(nil)
            }
        default:
            result(FlutterMethodNotImplemented)
        }
    }
}

/// Delivers one channel answer on the main thread (Flutter's platform thread), from any task. It holds the
/// non-Sendable `FlutterResult`; only Sendable values (strings, numbers) cross into it from a task, and the Foundation
/// objects handed to Flutter are built on the main thread.
private final class Reply: @unchecked Sendable {
    private let result: FlutterResult

    init(_ result: @escaping FlutterResult) {
        self.result = result
    }

    /// Sends `value` now (on the calling thread: used from `handle`, which Flutter calls on the platform thread).
    func send(_ value: Any?) {
        result(value)
    }

    func sendStrings(_ values: [String: String?]) {
        DispatchQueue.main.async {
            var map: [String: Any] = [:]
            for (key, value) in values { map[key] = value.map { $0 as Any } ?? NSNull() }
            self.result(map)
        }
    }

    func sendToken(_ token: String, expiresAtMs: Int64, deviceId: String?) {
        DispatchQueue.main.async {
            self.result([
                "deviceToken": token,
                "expiresAtMs": NSNumber(value: expiresAtMs),
                "deviceId": deviceId.map { $0 as Any } ?? NSNull(),
            ] as [String: Any])
        }
    }

    func fail(_ error: Error) {
        if let error = error as? TollgateError {
            fail(kind: error.kind.rawValue, message: error.message, reason: error.reason)
        } else {
            fail(kind: "networkError", message: error.localizedDescription, reason: nil)
        }
    }

    func fail(kind: String, message: String, reason: String?) {
        DispatchQueue.main.async {
            self.result(FlutterError(code: kind, message: message, details: ["reason": reason.map { $0 as Any } ?? NSNull()]))
        }
    }
}
