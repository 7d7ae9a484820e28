import DeviceCheck
import Foundation

/// What the device sends to `POST /v1/attest/{method}`.
public struct AttestationArtifact: Sendable, Equatable {
    /// `apple-app-attest`.
    public let method: String
    /// The JSON object to post.
    public let body: JSONValue
}

/// App Attest (DeviceCheck, `DCAppAttestService`) for this app on this device: the attestation that earns a device
/// token, and the per-request assertions that sign a request digest. Used by ``Tollgate`` and by the Flutter plugin
/// (`sdk/flutter/ios`), which forwards its `attest` / `assert` channel calls here.
///
/// - Attestation: `generateKey()` → key id kept in the Keychain; `attestKey(keyId, clientDataHash:
///   SHA256(UTF-8 bytes of the challenge string))`, as the gateway computes it; the artifact is
///   `{"keyId", "attestation": base64, "challenge"}` for `POST /v1/attest/apple-app-attest`.
/// - A key can be attested only once (`DCError.invalidKey` otherwise). Later device tokens are refreshed with an
///   assertion by the attested key over the new challenge (``refresh(challenge:)``), so the device keeps its id; a new
///   key is attested only when the gateway no longer knows the old one.
///   A generated key that could not be attested yet (e.g. `serverUnavailable`) is kept and tried again first, as
///   Apple recommends.
/// - Assertion: `generateAssertion(keyId, clientDataHash: digest)`, `digest` being the 32 bytes of the request digest
///   (protocol.md), sent as `Tollgate-Assertion` in base64url.
public final class AppAttestProvider: @unchecked Sendable {
    public static let shared = AppAttestProvider()

    private let keychain = Keychain()
    private let lock = NSLock()
    private static let attestedKeyAccount = "appAttest.keyId"
    private static let pendingKeyAccount = "appAttest.pendingKeyId"

    public init() {}

    /// True when this device offers App Attest (false on simulators, and on Macs without a Secure Enclave).
    public var isSupported: Bool {
        DCAppAttestService.shared.isSupported
    }

    /// The id of the key that signs assertions, if one was attested.
    public var attestedKeyId: String? {
        read(Self.attestedKeyAccount)
    }

    /// Attests a key over `challenge` (base64url, from `POST /v1/attest/challenge`). Throws
    /// ``TollgateError/attestationFailed(_:)`` with a reason (`app_attest_unsupported`, `app_attest_failed`, …).
    public func attest(challenge: String) async throws -> AttestationArtifact {
        guard isSupported else {
            throw TollgateError.attestation(
                "App Attest is not available on this device (simulators and some Macs). On a simulator, use a development token in a DEBUG build: Tollgate.configure(appToken:baseURL:developmentToken:).",
                reason: "app_attest_unsupported"
            )
        }
        guard !challenge.isEmpty else {
            throw TollgateError.attestation("The gateway's challenge is empty.", reason: "challenge_malformed")
        }
        // The gateway checks the nonce against SHA-256 of the challenge string's UTF-8 bytes (docs/guides/attestation.md).
        let clientDataHash = Digest.sha256(Data(challenge.utf8))
        var keyId = try await unattestedKey()
        let attestation: Data
        do {
            attestation = try await attestKey(keyId, clientDataHash: clientDataHash)
        } catch let error where Self.isInvalidKey(error) {
            // The kept key was attested already or belongs to a previous installation: start over with a new key.
            forget(Self.pendingKeyAccount)
            keyId = try await unattestedKey()
            do {
                attestation = try await attestKey(keyId, clientDataHash: clientDataHash)
            } catch {
                throw Self.failure("attest the key", error)
            }
        } catch {
            throw Self.failure("attest the key", error)
        }
        promote(keyId)
        return AttestationArtifact(method: "apple-app-attest", body: .object([
            "keyId": .string(keyId),
            "attestation": .string(attestation.base64EncodedString()),
            "challenge": .string(challenge),
        ]))
    }

    /// Refreshes with the key attested earlier: an assertion over SHA-256 of the challenge's UTF-8 bytes, traded at
    /// `POST /v1/attest/apple-app-attest` as `{"keyId", "assertion", "challenge"}`. The device keeps its id (the key id)
    /// across refreshes. Nil when no key has been attested on this device yet, or the key is gone (reinstall).
    public func refresh(challenge: String) async throws -> AttestationArtifact? {
        guard isSupported, let keyId = attestedKeyId else { return nil }
        do {
            let assertion = try await generateAssertion(keyId, clientDataHash: Digest.sha256(Data(challenge.utf8)))
            return AttestationArtifact(method: "apple-app-attest", body: .object([
                "keyId": .string(keyId),
                "assertion": .string(assertion.base64EncodedString()),
                "challenge": .string(challenge),
            ]))
        } catch let error where Self.isInvalidKey(error) {
            forget(Self.attestedKeyAccount)
            return nil
        } catch {
            throw Self.failure("sign the challenge", error)
        }
    }

    /// Forgets the attested key (the gateway no longer knows it): the next exchange attests a new one.
    public func forgetAttestedKey() {
        forget(Self.attestedKeyAccount)
    }

    /// Signs a request digest (lowercase hex, 64 digits) with the attested key; base64url of the assertion, or nil
    /// when no key has been attested on this device yet.
    public func assertion(digestHex: String) async throws -> String? {
        guard let keyId = attestedKeyId else { return nil }
        guard let digest = Digest.bytes(fromHex: digestHex), digest.count == 32 else {
            throw TollgateError.invalidRequest("The request digest must be 64 hex digits.")
        }
        do {
            return Base64URL.encode(try await generateAssertion(keyId, clientDataHash: digest))
        } catch {
            if Self.isInvalidKey(error) {
                // Gone with a reinstall or rejected: attest again (the client retries once with a fresh device token).
                forget(Self.attestedKeyAccount)
            }
            throw Self.failure("sign the request", error)
        }
    }

    // MARK: - DeviceCheck, wrapped in continuations (works on every SDK version that has App Attest)

    private func unattestedKey() async throws -> String {
        if let kept = read(Self.pendingKeyAccount) { return kept }
        let keyId: String
        do {
            keyId = try await withCheckedThrowingContinuation { continuation in
                DCAppAttestService.shared.generateKey { keyId, error in
                    if let keyId {
                        continuation.resume(returning: keyId)
                    } else {
                        continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no key.", reason: "app_attest_failed"))
                    }
                }
            }
        } catch {
            throw Self.failure("generate a key", error)
        }
        write(keyId, Self.pendingKeyAccount)
        return keyId
    }

    private func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash) { attestation, error in
                if let attestation {
                    continuation.resume(returning: attestation)
                } else {
                    continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no attestation.", reason: "app_attest_failed"))
                }
            }
        }
    }

    private func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash) { assertion, error in
                if let assertion {
                    continuation.resume(returning: assertion)
                } else {
                    continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no assertion.", reason: "app_attest_failed"))
                }
            }
        }
    }

    // Keychain access behind the lock, in synchronous helpers (NSLock is not for use across suspension points).

    private func read(_ account: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return keychain.string(account)
    }

    private func write(_ value: String, _ account: String) {
        lock.lock()
        defer { lock.unlock() }
        keychain.set(value, account)
    }

    private func forget(_ account: String) {
        lock.lock()
        defer { lock.unlock() }
        keychain.delete(account)
    }

    /// The freshly attested key becomes the one that signs assertions.
    private func promote(_ keyId: String) {
        lock.lock()
        defer { lock.unlock() }
        keychain.set(keyId, Self.attestedKeyAccount)
        keychain.delete(Self.pendingKeyAccount)
    }

    private static func isInvalidKey(_ error: Error) -> Bool {
        let error = error as NSError
        return error.domain == DCError.errorDomain && error.code == DCError.Code.invalidKey.rawValue
    }

    private static func failure(_ step: String, _ error: Error) -> TollgateError {
        if let error = error as? TollgateError { return error }
        let nsError = error as NSError
        let reason: String
        if nsError.domain == DCError.errorDomain {
            switch nsError.code {
            case DCError.Code.featureUnsupported.rawValue: reason = "app_attest_unsupported"
            case DCError.Code.invalidKey.rawValue: reason = "app_attest_key_invalid"
            case DCError.Code.serverUnavailable.rawValue: reason = "app_attest_server_unavailable"
            default: reason = "app_attest_failed"
            }
        } else {
            reason = "app_attest_failed"
        }
        return .attestation("App Attest could not \(step): \(nsError.localizedDescription)", reason: reason)
    }
}
