import Foundation
import TollgateSDK

/// The React Native native module `TollgateNative` (bridge declarations in TollgateNative.mm): the TypeScript core
/// calls it for everything that needs the device, and the Tollgate Swift SDK (sdk/ios) does the work
/// (``TollgateNativeBridge`` over ``TollgateDeviceSession``: App Attest attestation and assertion refresh, the device
/// token persisted in the Keychain, the reason → action rule, revocation). No app writes native code.
///
/// Every method resolves or rejects a promise:
/// - `getConfiguration()` → `{gatewayUrl}` (Info.plist `TollgateGatewayURL`, or null);
/// - `configure({appToken, gatewayUrl, developmentToken})` → null;
/// - `deviceToken({forceRefresh})` → `{deviceToken, expiresAtMs, deviceId}`;
/// - `reportError({deviceToken, reason})` → `{action}` (`stop`, `refresh`, `attest`, `assert`, `none`);
/// - `assertion({digest})` (base64 of the 32-byte request digest) → `{assertion}` (base64url without padding, or null);
/// - `clear()` → null;
/// - `httpStart({url, method, headerPairs, bodyBase64})` → `{id, status, headerPairs}`, `httpRead({id})` →
///   `{chunkBase64}` (null at the end), `httpCancel({id})` → null: HTTP for the TypeScript core over the Swift SDK's
///   transport (``TollgateNativeHTTP``), which streams and never follows a redirect.
///
/// A rejection's code is the SDK error kind (`attestationFailed`, `networkError`, `invalidRequest`, …), its message the
/// error's message, and its `userInfo` `{reason}` (the gateway's or the SDK's reason, or null).
///
/// The promise blocks are taken as plain closures (`RCTPromiseResolveBlock` is `void (^)(id)`,
/// `RCTPromiseRejectBlock` is `void (^)(NSString *, NSString *, NSError *)`), so this file needs no React import.
@objc(TollgateNative)
final class TollgateNative: NSObject {
    private let bridge = TollgateNativeBridge.shared

    @objc static func requiresMainQueueSetup() -> Bool {
        false
    }

    @objc(getConfiguration:rejecter:)
    func getConfiguration(_ resolve: @escaping (Any?) -> Void, rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let gatewayURL = bridge.gatewayURLFromInfoPlist()
        resolve(["gatewayUrl": gatewayURL.map { $0 as Any } ?? NSNull()] as [String: Any])
    }

    @objc(configure:resolver:rejecter:)
    func configure(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                   rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        guard let appToken = options["appToken"] as? String else {
            promise.reject(kind: "invalidRequest", message: "configure needs {appToken, gatewayUrl, developmentToken}.", reason: "bad_arguments")
            return
        }
        do {
            try bridge.configure(appToken: appToken, gatewayURL: options["gatewayUrl"] as? String,
                                 developmentToken: options["developmentToken"] as? String)
            promise.resolve(nil)
        } catch {
            promise.reject(error)
        }
    }

    @objc(deviceToken:resolver:rejecter:)
    func deviceToken(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                     rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        let forceRefresh = options["forceRefresh"] as? Bool ?? false
        let bridge = self.bridge
        Task {
            do {
                let token = try await bridge.deviceToken(forceRefresh: forceRefresh)
                promise.resolveToken(token.token, expiresAtMs: token.expiresAtMs, deviceId: token.deviceId)
            } catch {
                promise.reject(error)
            }
        }
    }

    @objc(reportError:resolver:rejecter:)
    func reportError(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                     rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        guard let deviceToken = options["deviceToken"] as? String else {
            promise.reject(kind: "invalidRequest", message: "reportError needs {deviceToken, reason}.", reason: "bad_arguments")
            return
        }
        let reason = options["reason"] as? String
        let bridge = self.bridge
        Task {
            do {
                let action = try await bridge.reportError(deviceToken: deviceToken, reason: reason)
                promise.resolveStrings(["action": action.rawValue])
            } catch {
                promise.reject(error)
            }
        }
    }

    @objc(assertion:resolver:rejecter:)
    func assertion(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                   rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        guard let digest = options["digest"] as? String else {
            promise.reject(kind: "invalidRequest", message: "assertion needs {digest}.", reason: "bad_arguments")
            return
        }
        let bridge = self.bridge
        Task {
            do {
                let assertion = try await bridge.assertion(digestBase64: digest)
                promise.resolveStrings(["assertion": assertion])
            } catch {
                promise.reject(error)
            }
        }
    }

    /// `{url, method, headerPairs, bodyBase64}` → `{id, status, headerPairs}` (``TollgateNativeHTTP``).
    @objc(httpStart:resolver:rejecter:)
    func httpStart(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                   rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        guard let url = options["url"] as? String else {
            promise.reject(kind: "invalidRequest", message: "httpStart needs {url, method, headerPairs, bodyBase64}.", reason: "bad_arguments")
            return
        }
        let method = options["method"] as? String ?? "GET"
        let headerPairs = options["headerPairs"] as? [String] ?? []
        let body = (options["bodyBase64"] as? String).flatMap { Data(base64Encoded: $0) }
        Task {
            do {
                let head = try await TollgateNativeHTTP.shared.start(url: url, method: method, headerPairs: headerPairs, body: body)
                promise.resolveHead(id: head.id, status: head.status, headerPairs: head.headerPairs)
            } catch {
                promise.reject(kind: "networkError", message: "Could not reach the gateway: \(error.localizedDescription)", reason: "unreachable")
            }
        }
    }

    /// `{id}` → `{chunkBase64}`: the next bytes of the body, null at its end.
    @objc(httpRead:resolver:rejecter:)
    func httpRead(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                  rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        guard let id = options["id"] as? String else {
            promise.reject(kind: "invalidRequest", message: "httpRead needs {id}.", reason: "bad_arguments")
            return
        }
        Task {
            do {
                let chunk = try await TollgateNativeHTTP.shared.read(id: id)
                promise.resolveStrings(["chunkBase64": chunk?.base64EncodedString()])
            } catch {
                promise.reject(kind: "networkError", message: "The response was cut: \(error.localizedDescription)", reason: "stream_cut")
            }
        }
    }

    /// `{id}` → null: closes the connection.
    @objc(httpCancel:resolver:rejecter:)
    func httpCancel(_ options: NSDictionary, resolver resolve: @escaping (Any?) -> Void,
                    rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        if let id = options["id"] as? String { TollgateNativeHTTP.shared.cancel(id: id) }
        resolve(nil)
    }

    @objc(clear:rejecter:)
    func clear(_ resolve: @escaping (Any?) -> Void, rejecter reject: @escaping (String?, String?, Error?) -> Void) {
        let promise = Promise(resolve, reject)
        let bridge = self.bridge
        Task {
            await bridge.clear()
            promise.resolve(nil)
        }
    }
}

/// One promise, settled once from any task. It holds React Native's (non-Sendable) blocks; only Sendable values
/// (strings, numbers) cross into it, and the Foundation objects handed to React Native are built where they are sent.
private final class Promise: @unchecked Sendable {
    private let resolveBlock: (Any?) -> Void
    private let rejectBlock: (String?, String?, Error?) -> Void

    init(_ resolve: @escaping (Any?) -> Void, _ reject: @escaping (String?, String?, Error?) -> Void) {
        resolveBlock = resolve
        rejectBlock = reject
    }

    func resolve(_ value: Any?) {
        resolveBlock(value)
    }

    func resolveStrings(_ values: [String: String?]) {
        var map: [String: Any] = [:]
        for (key, value) in values { map[key] = value.map { $0 as Any } ?? NSNull() }
        resolveBlock(map)
    }

    func resolveToken(_ token: String, expiresAtMs: Int64, deviceId: String?) {
        resolveBlock([
            "deviceToken": token,
            "expiresAtMs": NSNumber(value: expiresAtMs),
            "deviceId": deviceId.map { $0 as Any } ?? NSNull(),
        ] as [String: Any])
    }

    func resolveHead(id: String, status: Int, headerPairs: [String]) {
        resolveBlock(["id": id, "status": NSNumber(value: status), "headerPairs": headerPairs] as [String: Any])
    }

    func reject(_ error: Error) {
        if let error = error as? TollgateError {
            reject(kind: error.kind.rawValue, message: error.message, reason: error.reason)
        } else {
            reject(kind: "networkError", message: error.localizedDescription, reason: nil)
        }
    }

    func reject(kind: String, message: String, reason: String?) {
        // React Native copies the NSError's userInfo into the JavaScript error's `userInfo`.
        let userInfo: [String: Any] = [NSLocalizedDescriptionKey: message, "reason": reason.map { $0 as Any } ?? NSNull()]
        rejectBlock(kind, message, NSError(domain: "dev.tollgate", code: 1, userInfo: userInfo))
    }
}
