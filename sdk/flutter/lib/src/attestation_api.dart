import 'dart:convert';
import 'dart:typed_data';

import 'device_tokens.dart';
import 'error_mapper.dart';
import 'exceptions.dart';
import 'request_builder.dart';
import 'transport.dart';

/// A one-time challenge from `POST /v1/attest/challenge` (docs/guides/attestation.md): base64url of 32 bytes, single
/// use, bound to the app, valid 5 minutes.
class Challenge {
  const Challenge(this.value, this.expiresAtMs);

  final String value;
  final int? expiresAtMs;
}

/// What the native side returns for `attest`: the attestation method and the JSON body for
/// `POST /v1/attest/{method}` (e.g. for `apple-app-attest` `{keyId, attestation, challenge}`, for
/// `android-key-attestation` `{challenge, chain: [leaf, ..., root]}`).
class AttestationArtifact {
  const AttestationArtifact(this.method, this.body);

  final String method;
  final Map<String, Object?> body;
}

/// The attestation exchange over HTTP, platform-free: get a challenge, then trade a platform artifact for a device
/// token.
class AttestationApi {
  AttestationApi(this._builder, this._transport, {int Function()? clock}) : _clock = clock ?? systemNowMs;

  final RequestBuilder _builder;
  final HttpTransport _transport;
  final int Function() _clock;

  /// `POST /v1/attest/challenge`.
  Future<Challenge> challenge() async {
    final answer = await _post('challenge', null);
    final value = answer['challenge'];
    if (value is! String || value.isEmpty) throw _malformed('challenge');
    final expiresAt = answer['expiresAt'];
    return Challenge(value, expiresAt is String ? DateTime.tryParse(expiresAt)?.millisecondsSinceEpoch : null);
  }

  /// `POST /v1/attest/{method}` with [body] (a JSON object); answers the device token.
  Future<DeviceToken> exchange(String method, Map<String, Object?> body) async {
    final received = _clock();
    final answer = await _post(method, body);
    final token = answer['deviceToken'];
    if (token is! String || token.isEmpty) throw _malformed('deviceToken');
    final expiresAt = answer['expiresAt'];
    final expiresIn = answer['expiresIn'];
    final expiresAtMs = (expiresAt is String ? DateTime.tryParse(expiresAt)?.millisecondsSinceEpoch : null) ??
        (expiresIn is num ? received + (expiresIn * 1000).round() : null) ??
        jwsExpiryMs(token);
    if (expiresAtMs == null) throw _malformed('expiresAt');
    return DeviceToken(token, expiresAtMs: expiresAtMs, receivedAtMs: received, method: method);
  }

  Future<Map<String, dynamic>> _post(String method, Map<String, Object?>? body) async {
    final headers = [..._builder.attestHeaders];
    final payload = body == null ? Uint8List(0) : Uint8List.fromList(utf8.encode(jsonEncode(body)));
    if (payload.isNotEmpty) headers.add(('Content-Type', 'application/json'));
    final HttpResult result;
    final Uint8List bytes;
    try {
      result = await _transport.send(HttpCall('POST', _builder.attestUrl(method), headers, payload));
      bytes = await result.readAll();
    } on TollgateException {
      rethrow;
    } on Exception catch (error) {
      throw noResponse(error);
    }
    final error = mapError(result.status, result.headers, bytes, _clock());
    if (error != null) throw error;
    try {
      final parsed = jsonDecode(utf8.decode(bytes, allowMalformed: true));
      if (parsed is Map<String, dynamic>) return parsed;
    } on FormatException {
      // Reported below.
    }
    throw const NetworkException("The gateway's attestation answer is not a JSON object.", reason: 'malformed_response');
  }

  NetworkException _malformed(String field) =>
      NetworkException('The gateway\'s attestation answer has no "$field".', reason: 'malformed_response');
}
