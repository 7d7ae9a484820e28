import 'dart:convert';
import 'dart:typed_data';

import 'package:crypto/crypto.dart' as crypto;

import 'exceptions.dart';

// The client-side rules every Tollgate SDK shares (sdk/conformance/README.md, "client-behaviour.json"), as pure
// functions. The client and the device-token cache use them; test/conformance_test.dart runs every vector on them.

/// Refresh when less than this remains (or a fifth of the token's lifetime, if that is shorter).
const int refreshMarginMs = 60000;

/// The `exp` claim of a compact JWS, in unix ms, read without verifying the signature; null when unreadable.
int? jwsExpiryMs(String token) {
  final parts = token.split('.');
  if (parts.length != 3) return null;
  try {
    final Object? claims = jsonDecode(utf8.decode(base64Url.decode(base64Url.normalize(parts[1]))));
    final Object? exp = claims is Map ? claims['exp'] : null;
    return exp is num ? (exp * 1000).round() : null;
  } on FormatException {
    return null;
  }
}

/// Rule `token-expiry`: the earlier of the JWS `exp` and [expiresAt] (ISO 8601), each when readable; neither →
/// [receivedAtMs] (the token is then used for one call and never kept).
int tokenExpiryMs(String deviceToken, String? expiresAt, int receivedAtMs) {
  final candidates = <int>[];
  final exp = jwsExpiryMs(deviceToken);
  if (exp != null) candidates.add(exp);
  if (expiresAt != null) {
    final parsed = DateTime.tryParse(expiresAt);
    if (parsed != null) candidates.add(parsed.millisecondsSinceEpoch);
  }
  if (candidates.isEmpty) return receivedAtMs;
  return candidates.reduce((a, b) => a < b ? a : b);
}

/// Rule `refresh-due`: `nowMs >= expiresAtMs - min(margin, (expiresAtMs - receivedAtMs) / 5)`.
bool refreshDue(int receivedAtMs, int expiresAtMs, int nowMs, {int margin = refreshMarginMs}) {
  final lifetime = expiresAtMs - receivedAtMs;
  final fifth = (lifetime < 0 ? 0 : lifetime) / 5;
  final used = margin < fifth ? margin.toDouble() : fifth;
  return nowMs >= expiresAtMs - used;
}

/// Rule `retry`: only the gateway's `rateLimited` is retried; wait `Retry-After` when given, else
/// `min(30, 2^retriesDone)` seconds; never more than [maxRetries] retries, never a wait that would take the total past
/// [maxWaitSeconds]. [maxRetries] null means retries are off (the default). Returns the delay in seconds, or null for
/// no retry.
int? retryDelaySeconds(String errorKind, int? retryAfterSeconds, int retriesDone, int waitedSeconds,
    {required int? maxRetries, required int maxWaitSeconds}) {
  if (maxRetries == null || errorKind != 'rateLimited' || retriesDone >= maxRetries) return null;
  final delay = retryAfterSeconds ?? (retriesDone >= 5 ? 30 : (1 << retriesDone) > 30 ? 30 : 1 << retriesDone);
  if (waitedSeconds + delay > maxWaitSeconds) return null;
  return delay;
}

/// What the SDK does after a gateway error (rule `reason-action`).
enum ReasonAction {
  /// `device_revoked`: surface [AttestationFailedException], attest no new key, refresh nothing until the app restarts.
  stop,

  /// Refresh the device token with the existing key, then send once more.
  refresh,

  /// The gateway no longer knows the key: attest a new one, then send once more.
  attest,

  /// Send `Tollgate-Assertion` on every request from now on, then send once more.
  assert_,

  /// Surface the error, change nothing.
  none;

  /// The name used on the platform channel and in the vectors (`stop`, `refresh`, `attest`, `assert`, `none`).
  String get wireName => this == ReasonAction.assert_ ? 'assert' : name;

  /// The action named [value] on the platform channel, or null.
  static ReasonAction? fromWire(Object? value) {
    for (final action in ReasonAction.values) {
      if (action.wireName == value) return action;
    }
    return null;
  }

  /// True when the request is sent once more after this action.
  bool get retriesOnce => this == ReasonAction.refresh || this == ReasonAction.attest || this == ReasonAction.assert_;

  /// True when this action creates a new device key.
  bool get newKey => this == ReasonAction.attest;
}

/// Rule `reason-action`. Only `attestationFailed` touches the device: `device_revoked` → stop; an expired, invalid or
/// missing token (or an older gateway's 403 without a reason) → refresh; `device_key_unknown` → attest;
/// `assertion_required` → assert; anything else → none. (The native SDKs apply the same rule behind `reportError`.)
ReasonAction reasonAction(String? errorType, String? reason) {
  if (errorType != 'attestationFailed') return ReasonAction.none;
  switch (reason) {
    case 'device_revoked':
      return ReasonAction.stop;
    case null:
    case 'device_token_expired':
    case 'device_token_invalid':
    case 'device_token_missing':
      return ReasonAction.refresh;
    case 'device_key_unknown':
      return ReasonAction.attest;
    case 'assertion_required':
      return ReasonAction.assert_;
    default:
      return ReasonAction.none;
  }
}

/// Base64url (RFC 4648 §5) without padding.
String base64UrlNoPad(List<int> bytes) => base64Url.encode(bytes).replaceAll('=', '');

/// Rule `assertion-encoding`: the `Tollgate-Assertion` value of a proof; empty bytes are refused.
String encodeAssertion(List<int> proof) {
  if (proof.isEmpty) throw const InvalidRequestException('An assertion needs at least one byte.', reason: 'assertion_empty');
  return base64UrlNoPad(proof);
}

/// Bytes of a hex string.
Uint8List hexBytes(String hex) {
  if (hex.length.isOdd || !RegExp(r'^[0-9a-fA-F]*$').hasMatch(hex)) throw const FormatException('Not a hex string.');
  final out = Uint8List(hex.length ~/ 2);
  for (var index = 0; index < out.length; index += 1) {
    out[index] = int.parse(hex.substring(index * 2, index * 2 + 2), radix: 16);
  }
  return out;
}

/// Lowercase hex of [bytes].
String hexOf(List<int> bytes) => [for (final byte in bytes) byte.toRadixString(16).padLeft(2, '0')].join();

/// One attestation request (rule `attestation-request`): what the native SDKs send, and what their platform call
/// takes. The Dart side sends none of these (attestation runs in the native SDKs); this is the reference the vectors
/// pin, kept here so that the Flutter suite runs every vector.
class AttestationRequest {
  const AttestationRequest(this.path, this.headers, this.body,
      {this.clientDataHash, this.attestationChallenge, this.signedMessage, this.requestHash, this.nonce});

  final String method = 'POST';
  final String path;
  final List<(String, String)> headers;

  /// The JSON body, null for none.
  final Map<String, Object?>? body;
  final Uint8List? clientDataHash;
  final Uint8List? attestationChallenge;
  final Uint8List? signedMessage;
  final String? requestHash;
  final String? nonce;
}

String _stringField(Map<String, Object?> fields, String name) {
  final value = fields[name];
  if (value is! String || value.isEmpty) throw InvalidRequestException('The attestation needs "$name".', reason: 'bad_attestation');
  return value;
}

/// Builds the request for [method] from [fields] (byte fields as `...Hex`, `refresh: true` for a refresh by the
/// attested key).
AttestationRequest buildAttestationRequest(String method, String appToken, Map<String, Object?> fields) {
  final path = '/v1/attest/$method';
  final jsonHeaders = [('Content-Type', 'application/json'), ('Tollgate-App-Token', appToken)];
  final refresh = fields['refresh'] == true;
  switch (method) {
    case 'challenge': {
      return AttestationRequest(path, [('Tollgate-App-Token', appToken)], null);
    }
    case 'development': {
      return AttestationRequest(path, jsonHeaders, {
        'developmentToken': _stringField(fields, 'developmentToken'),
        'deviceId': _stringField(fields, 'deviceId'),
      });
    }
    case 'apple-app-attest': {
      final challenge = _stringField(fields, 'challenge');
      final proof = base64.encode(hexBytes(_stringField(fields, 'proofHex')));
      return AttestationRequest(
        path,
        jsonHeaders,
        {'keyId': _stringField(fields, 'keyId'), 'challenge': challenge, if (refresh) 'assertion': proof else 'attestation': proof},
        clientDataHash: Uint8List.fromList(crypto.sha256.convert(utf8.encode(challenge)).bytes),
      );
    }
    case 'android-key-attestation': {
      final challenge = _stringField(fields, 'challenge');
      if (refresh) {
        return AttestationRequest(
          path,
          jsonHeaders,
          {
            'challenge': challenge,
            'keyId': _stringField(fields, 'keyId'),
            'signature': base64.encode(hexBytes(_stringField(fields, 'proofHex'))),
          },
          signedMessage: Uint8List.fromList(utf8.encode(challenge)),
        );
      }
      final chain = fields['chainHex'];
      if (chain is! List || chain.isEmpty) throw const InvalidRequestException('The attestation needs "chainHex".', reason: 'bad_attestation');
      return AttestationRequest(
        path,
        jsonHeaders,
        {'challenge': challenge, 'chain': [for (final item in chain) base64.encode(hexBytes('$item'))]},
        attestationChallenge: base64Url.decode(base64Url.normalize(challenge)),
      );
    }
    case 'android-play-integrity': {
      final challenge = _stringField(fields, 'challenge');
      final deviceId = _stringField(fields, 'deviceId');
      final type = fields['type'] == 'classic' ? 'classic' : 'standard';
      final binding = base64UrlNoPad(crypto.sha256.convert(utf8.encode('$challenge\n$deviceId')).bytes);
      return AttestationRequest(
        path,
        jsonHeaders,
        {'challenge': challenge, 'integrityToken': _stringField(fields, 'integrityToken'), 'deviceId': deviceId, 'type': type},
        requestHash: type == 'standard' ? binding : null,
        nonce: type == 'classic' ? binding : null,
      );
    }
    default:
      throw InvalidRequestException('Unknown attestation method "$method".', reason: 'bad_attestation');
  }
}

/// Rule `attestation-response`: a 200 answer of `POST /v1/attest/{method}` → (token, deviceId, expiresAtMs). A body
/// without a usable `deviceToken`, or not JSON, is a [NetworkException].
({String deviceToken, String? deviceId, int expiresAtMs}) parseAttestationResponse(String body, int receivedAtMs) {
  Object? answer;
  try {
    answer = jsonDecode(body);
  } on FormatException {
    throw const NetworkException("The gateway's attestation answer is not JSON.", reason: 'malformed_response');
  }
  if (answer is! Map) throw const NetworkException("The gateway's attestation answer is not a JSON object.", reason: 'malformed_response');
  final token = answer['deviceToken'];
  if (token is! String || token.isEmpty) {
    throw const NetworkException('The gateway\'s attestation answer has no "deviceToken".', reason: 'malformed_response');
  }
  final expiresAt = answer['expiresAt'];
  final deviceId = answer['deviceId'];
  return (
    deviceToken: token,
    deviceId: deviceId is String ? deviceId : null,
    expiresAtMs: tokenExpiryMs(token, expiresAt is String ? expiresAt : null, receivedAtMs),
  );
}
