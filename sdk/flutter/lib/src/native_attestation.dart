import 'package:flutter/services.dart';

import 'attestation_api.dart';
import 'exceptions.dart';

/// The native half of attestation, reached through the MethodChannel `dev.tollgate/attestation` and served by this
/// plugin's Android and iOS code, which forward to the native SDKs:
///
/// - `attest` with `{challenge}` (base64url, from `POST /v1/attest/challenge`) → `{method, body}`: iOS App Attest
///   (`apple-app-attest`, `{keyId, attestation, challenge}`) or Android hardware key attestation
///   (`android-key-attestation`, `{challenge, chain}`);
/// - `assert` with `{digest}` (the request digest, lowercase hex) → the assertion (base64url), or null/'' for none.
///
/// The Dart side never sees a key: it moves challenges and artifacts between the platform and the gateway.
class NativeAttestation {
  const NativeAttestation([this.channel = const MethodChannel('dev.tollgate/attestation')]);

  final MethodChannel channel;

  /// Attests this app instance over [challenge]. Throws [AttestationFailedException] with the platform's error code as
  /// reason (`no_native_attestation` when the plugin is not registered, e.g. in a plain Dart test).
  Future<AttestationArtifact> attest(String challenge) async {
    final Map<String, Object?>? answer;
    try {
      answer = await channel.invokeMapMethod<String, Object?>('attest', {'challenge': challenge});
    } on PlatformException catch (error) {
      throw AttestationFailedException('The device could not attest: ${error.message ?? error.code}', reason: error.code, cause: error);
    } on MissingPluginException catch (error) {
      throw AttestationFailedException('The Tollgate plugin is not registered on this platform.', reason: 'no_native_attestation', cause: error);
    }
    final method = answer?['method'];
    final body = answer?['body'];
    if (method is! String || body is! Map) {
      throw const AttestationFailedException('The native attestation returned no method and body.', reason: 'native_attestation_failed');
    }
    return AttestationArtifact(method, _stringKeys(body));
  }

  /// Signs a request digest (lowercase hex) with the attested device key; null when the device has none.
  Future<String?> assertDigest(String digestHex) async {
    try {
      return await channel.invokeMethod<String>('assert', {'digest': digestHex});
    } on PlatformException catch (error) {
      throw AttestationFailedException('The device could not sign the request: ${error.message ?? error.code}', reason: error.code, cause: error);
    } on MissingPluginException {
      return null;
    }
  }

  /// Platform channels deliver maps as `Map<Object?, Object?>`: converted (deeply) for `jsonEncode`.
  static Map<String, Object?> _stringKeys(Map<Object?, Object?> map) =>
      {for (final entry in map.entries) '${entry.key}': _convert(entry.value)};

  static Object? _convert(Object? value) {
    if (value is Map) return _stringKeys(value);
    if (value is List) return [for (final item in value) _convert(item)];
    return value;
  }
}
