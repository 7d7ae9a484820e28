import 'dart:async';
import 'dart:convert';

/// A device token from `POST /v1/attest/{method}` (protocol.md, "Device tokens").
class DeviceToken {
  const DeviceToken(this.token, {required this.expiresAtMs, required this.receivedAtMs, required this.method});

  final String token;

  /// Unix ms after which the gateway refuses it.
  final int expiresAtMs;

  /// Unix ms when it was received (to size the refresh margin).
  final int receivedAtMs;

  /// The attestation method that earned it (`apple-app-attest`, `android-key-attestation`, `development`).
  final String method;

  /// Never prints the token itself.
  @override
  String toString() => 'DeviceToken(method: $method, expiresAtMs: $expiresAtMs)';
}

/// Where the client gets its `Tollgate-Device-Token`.
abstract interface class DeviceTokenSource {
  /// A token valid for at least the refresh margin; attests when needed. Throws a `TollgateException`.
  Future<String> deviceToken();

  /// The gateway refused [token] (attestationFailed): forget it so that the next call attests again.
  void invalidate(String token);
}

/// A fixed token (tests, tools).
class StaticDeviceToken implements DeviceTokenSource {
  const StaticDeviceToken(this._token);

  final String _token;

  @override
  Future<String> deviceToken() async => _token;

  @override
  void invalidate(String token) {}
}

/// Unix ms from the system clock.
int systemNowMs() => DateTime.now().millisecondsSinceEpoch;

/// Caches the device token in memory and attests again shortly before it expires: when less than [refreshMarginMs]
/// (default 5 minutes), or a fifth of the token's lifetime if that is shorter, remains. Concurrent callers share one
/// attestation (single flight); a failed attestation is not cached, so the next call tries again.
class DeviceTokenCache implements DeviceTokenSource {
  DeviceTokenCache(this._attest, {int Function()? clock, this.refreshMarginMs = 5 * 60 * 1000}) : _clock = clock ?? systemNowMs;

  final Future<DeviceToken> Function() _attest;
  final int Function() _clock;
  final int refreshMarginMs;
  DeviceToken? _current;
  Future<DeviceToken>? _pending;

  /// How many attestations were started (diagnostics and tests).
  int attestationCount = 0;

  /// The cached token, if any (even one due for refresh).
  DeviceToken? get cached => _current;

  @override
  Future<String> deviceToken() async {
    final cached = _current;
    if (cached != null && !needsRefresh(cached, _clock())) return cached.token;
    return (await _refresh()).token;
  }

  Future<DeviceToken> _refresh() {
    final pending = _pending;
    if (pending != null) return pending;
    attestationCount += 1;
    // Future.sync: an attestor that throws synchronously still yields a failed future (and clears _pending).
    final flight = Future<DeviceToken>.sync(_attest).then((fresh) {
      _current = fresh;
      return fresh;
    });
    _pending = flight;
    void settle() {
      if (identical(_pending, flight)) _pending = null;
    }

    // Handles the error on this branch only; the caller still receives it through `flight`.
    flight.then<void>((_) => settle(), onError: (Object _) => settle());
    return flight;
  }

  @override
  void invalidate(String token) {
    if (_current?.token == token) _current = null;
  }

  /// Forgets the token (sign-out, a new app token).
  void clear() {
    _current = null;
  }

  /// True when [token] should be replaced at [nowMs].
  bool needsRefresh(DeviceToken token, int nowMs) {
    final lifetime = token.expiresAtMs - token.receivedAtMs;
    final fifth = (lifetime < 0 ? 0 : lifetime) ~/ 5;
    final margin = refreshMarginMs < fifth ? refreshMarginMs : fifth;
    return nowMs >= token.expiresAtMs - margin;
  }
}

/// The `exp` claim of a compact JWS, in unix ms, read without verifying the signature; null when unreadable.
int? jwsExpiryMs(String token) {
  final parts = token.split('.');
  if (parts.length != 3) return null;
  try {
    final claims = jsonDecode(utf8.decode(base64Url.decode(base64Url.normalize(parts[1]))));
    final exp = claims is Map ? claims['exp'] : null;
    return exp is num ? (exp * 1000).round() : null;
  } on FormatException {
    return null;
  }
}
