import Foundation
#if canImport(DeviceCheck)
import DeviceCheck
#endif

/// The platform's default ``KeyAttestor``: App Attest where DeviceCheck exists, none elsewhere (Linux).
func defaultKeyAttestor() -> KeyAttestor? {
    #if canImport(DeviceCheck)
    return AppAttestKeyAttestor()
    #else
    return nil
    #endif
}

#if canImport(DeviceCheck)
/// App Attest (DeviceCheck, `DCAppAttestService`) on this device, for ``TollgateDeviceSession``:
///
/// - `generateKey` → a key in the Secure Enclave (its id is kept by the session, in the Keychain);
/// - `attestKey(_:clientDataHash:)` with clientDataHash = SHA-256 of the challenge string's UTF-8 bytes;
/// - `generateAssertion(_:clientDataHash:)` for refreshes (over the challenge hash) and for per-request assertions
///   (over the 32-byte request digest).
///
/// Errors are ``TollgateError/attestationFailed(_:)`` with reason `app_attest_unsupported` (simulators, some Macs),
/// `app_attest_key_invalid` (`DCError.invalidKey`: the key is gone or was attested already),
/// `app_attest_server_unavailable`, or `app_attest_failed`.
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
public struct AppAttestKeyAttestor: KeyAttestor {
    public init() {}

    /// True when this device offers App Attest (false on simulators, and on Macs without a Secure Enclave).
    public var isSupported: Bool {
        DCAppAttestService.shared.isSupported
    }

    public func generateKey() async throws -> String {
        guard isSupported else {
            throw TollgateError.attestation(
                "App Attest is not available on this device (simulators and some Macs). On a simulator, use a development token in a DEBUG build: Tollgate.configure(appToken:developmentToken:).",
                reason: "app_attest_unsupported")
        }
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, Error>) in
                DCAppAttestService.shared.generateKey { keyId, error in
                    if let keyId {
                        continuation.resume(returning: keyId)
                    } else {
                        continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no key.", reason: "app_attest_failed"))
                    }
                }
            }
        } catch {
            throw AppAttestKeyAttestor.failure("generate a key", error)
        }
    }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, Error>) in
                DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash) { attestation, error in
                    if let attestation {
                        continuation.resume(returning: attestation)
                    } else {
                        continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no attestation.", reason: "app_attest_failed"))
                    }
                }
            }
        } catch {
            throw AppAttestKeyAttestor.failure("attest the key", error)
        }
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, Error>) in
                DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash) { assertion, error in
                    if let assertion {
                        continuation.resume(returning: assertion)
                    } else {
                        continuation.resume(throwing: error ?? TollgateError.attestation("App Attest returned no assertion.", reason: "app_attest_failed"))
                    }
                }
            }
        } catch {
            throw AppAttestKeyAttestor.failure("sign", error)
        }
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
#endif
