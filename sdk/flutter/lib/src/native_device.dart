import 'dart:convert';

import 'package:flutter/services.dart';

import 'behaviour.dart';
import 'device_tokens.dart';
import 'exceptions.dart';
import 'request_builder.dart';

/// The native half of the SDK, served by this plugin's Android and iOS code over the MethodChannel
/// `dev.tollgate/native`, which delegate to the native Tollgate SDKs (one attestation implementation per platform:
/// App Attest on iOS; Keystore key attestation and Play Integrity on Android). The Dart side never sees a key.
///
/// | method | arguments | result |
/// |---|---|---|
/// | `getConfiguration` | none | `{gatewayUrl: String?}` (Info.plist `TollgateGatewayURL`, AndroidManifest meta-data `dev.tollgate.GATEWAY_URL`) |
/// | `configure` | `{appToken, gatewayUrl, developmentToken: String?}` | null |
/// | `deviceToken` | `{forceRefresh: bool}` | `{deviceToken, expiresAtMs, deviceId}`: persisted (Keychain / Keystore), refreshed with the attested key |
/// | `reportError` | `{deviceToken, reason: String?}` | `{action: stop / refresh / attest / assert / none}` |
/// | `assertion` | `{digest}` (standard base64 of the 32-byte request digest) | `{assertion: String?}` |
/// | `clear` | none | null |
///
/// Errors are `PlatformException`s whose `code` is the SDK error kind (`attestationFailed`, `networkError`,
/// `invalidRequest`, ...) and whose `details` hold `{reason}`.
class TollgateNative implements DeviceSession {
  const TollgateNative([this.channel = const MethodChannel('dev.tollgate/native')]);

  final MethodChannel channel;

  /// The gateway address from the app's native configuration, or null when it has none.
  Future<String?> gatewayUrl() async {
    final answer = await _invoke('getConfiguration', null, 'native_configuration_failed');
    final url = answer?['gatewayUrl'];
    return url is String && url.trim().isNotEmpty ? url.trim() : null;
  }

  /// Hands the app's settings to the native SDK. [developmentToken] only in debug builds (the caller checks).
  Future<void> configure({required String appToken, required String gatewayUrl, String? developmentToken}) async {
    await _invoke('configure', {'appToken': appToken, 'gatewayUrl': gatewayUrl, 'developmentToken': developmentToken},
        'native_configuration_failed');
  }

  @override
  Future<DeviceToken> token({required bool forceRefresh}) async {
    final received = DateTime.now().millisecondsSinceEpoch;
    final answer = await _invoke('deviceToken', {'forceRefresh': forceRefresh}, 'native_attestation_failed');
    final deviceToken = answer?['deviceToken'];
    final expiresAtMs = answer?['expiresAtMs'];
    final deviceId = answer?['deviceId'];
    if (deviceToken is! String || deviceToken.isEmpty || expiresAtMs is! num) throw _malformed('deviceToken');
    RequestBuilder.checkHeaderValue('Tollgate-Device-Token', deviceToken);
    return DeviceToken(deviceToken,
        expiresAtMs: expiresAtMs.toInt(), receivedAtMs: received, deviceId: deviceId is String ? deviceId : null);
  }

  @override
  Future<ReasonAction> reportError(String deviceToken, String? reason) async {
    final answer = await _invoke('reportError', {'deviceToken': deviceToken, 'reason': reason}, 'native_report_failed');
    return ReasonAction.fromWire(answer?['action']) ?? (throw _malformed('reportError'));
  }

  @override
  Future<String?> assertion(String digestHex) async {
    final answer = await _invoke('assertion', {'digest': base64.encode(hexBytes(digestHex))}, 'assertion_failed');
    final value = answer?['assertion'];
    if (value == null || value == '') return null;
    if (value is! String) throw _malformed('assertion');
    RequestBuilder.checkHeaderValue('Tollgate-Assertion', value);
    return value;
  }

  /// Forgets the stored device token (sign-out). A revocation stays in force until the next launch.
  Future<void> clear() async {
    await _invoke('clear', null, 'native_clear_failed');
  }

  Future<Map<Object?, Object?>?> _invoke(String method, Map<String, Object?>? arguments, String fallbackReason) async {
    try {
      return await channel.invokeMethod<Map<Object?, Object?>>(method, arguments);
    } on PlatformException catch (error) {
      throw nativeException(error, fallbackReason);
    } on MissingPluginException catch (error) {
      throw AttestationFailedException(
          'The Tollgate plugin is not registered on this platform (rebuild the app after adding it; unit tests mock the '
          'dev.tollgate/native channel).',
          reason: 'native_module_missing',
          cause: error);
    }
  }

  static AttestationFailedException _malformed(String method) => AttestationFailedException(
      'The native Tollgate plugin answered $method with an unexpected value.',
      reason: 'native_module_malformed');
}

/// A [PlatformException] from the plugin (`code` = SDK error kind, `details['reason']`) as a [TollgateException].
TollgateException nativeException(PlatformException error, String fallbackReason) {
  final details = error.details;
  final detailReason = details is Map ? details['reason'] : null;
  final reason = detailReason is String && detailReason.isNotEmpty ? detailReason : fallbackReason;
  final message = 'The native Tollgate plugin failed: ${error.message ?? error.code}';
  switch (error.code) {
    case 'unauthorized':
      return UnauthorizedException(message, reason: reason);
    case 'rateLimited':
      return RateLimitedException(message, reason: reason);
    case 'secretNotFound':
      return SecretNotFoundException(message, reason: reason);
    case 'networkError':
      return NetworkException(message, reason: reason, cause: error);
    case 'invalidRequest':
      return InvalidRequestException(message, reason: reason);
    default:
      return AttestationFailedException(message, errorType: 'attestationFailed', reason: reason, cause: error);
  }
}
