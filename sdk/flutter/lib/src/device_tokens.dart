import 'behaviour.dart';
import 'exceptions.dart';

export 'behaviour.dart' show jwsExpiryMs, refreshMarginMs;

/// A device token (protocol.md, "Device tokens").
class DeviceToken {
  const DeviceToken(this.token, {required this.expiresAtMs, required this.receivedAtMs, this.deviceId});

  final String token;

  /// Unix ms after which the gateway refuses it.
  final int expiresAtMs;

  /// Unix ms when it was received (to size the refresh margin).
  final int receivedAtMs;

  /// The device id the gateway knows this device by, when known.
  final String? deviceId;

  /// Never prints the token itself.
  @override
  String toString() => 'DeviceToken(deviceId: $deviceId, expiresAtMs: $expiresAtMs)';
}

/// Where device tokens come from: the plugin's native side ([TollgateNative]), which persists them in the Keychain /
/// Keystore, refreshes them with the attested key and attests a new key only when the gateway no longer knows the old
/// one; or a test double.
abstract interface class DeviceSession {
  /// A device token; [forceRefresh] asks for a new one even if the stored one is still valid.
  Future<DeviceToken> token({required bool forceRefresh});

  /// The gateway refused [deviceToken] (attestationFailed) with [reason]: what the client does next (rule
  /// `reason-action`, applied by the native SDK).
  Future<ReasonAction> reportError(String deviceToken, String? reason);

  /// The `Tollgate-Assertion` value for a request digest (lowercase hex), or null when none is sent.
  Future<String?> assertion(String digestHex);
}

/// Where the client gets its `Tollgate-Device-Token`, and what it tells it when the gateway refuses one.
abstract interface class DeviceTokenSource {
  /// A token not yet due for refresh; asks the session when needed. Throws a `TollgateException`.
  Future<String> deviceToken({bool forceRefresh = false});

  /// The gateway refused [token]: forget it.
  void invalidate(String token);

  /// The gateway refused [token] with [reason] (attestationFailed): the action to take (rule `reason-action`).
  Future<ReasonAction> reportError(String token, String? reason);

  /// The device was revoked: refuse every call with [error] until the app restarts.
  void stop(TollgateException error);

  /// The `Tollgate-Assertion` value for a request digest (lowercase hex), or null.
  Future<String?> assertion(String digestHex);
}

/// A fixed token (tests, tools): never refreshed, no assertions, every refusal surfaced.
class StaticDeviceToken implements DeviceTokenSource {
  const StaticDeviceToken(this._token);

  final String _token;

  @override
  Future<String> deviceToken({bool forceRefresh = false}) async => _token;

  @override
  void invalidate(String token) {}

  @override
  Future<ReasonAction> reportError(String token, String? reason) async => ReasonAction.none;

  @override
  void stop(TollgateException error) {}

  @override
  Future<String?> assertion(String digestHex) async => null;
}

/// Unix ms from the system clock.
int systemNowMs() => DateTime.now().millisecondsSinceEpoch;

/// Keeps the current device token in memory in front of a [DeviceSession] and asks for a new one when it is due (rule
/// `refresh-due`: when less than [refreshMargin] (60 s), or a fifth of the token's lifetime if that is shorter,
/// remains). Concurrent callers share one request (single flight); a failure is not cached, so the next call tries
/// again, except `device_revoked`, after which nothing is asked any more until the app restarts.
class DeviceTokenCache implements DeviceTokenSource {
  DeviceTokenCache(this.session, {int Function()? clock, this.refreshMargin = refreshMarginMs}) : _clock = clock ?? systemNowMs;

  final DeviceSession session;
  final int Function() _clock;
  final int refreshMargin;
  DeviceToken? _current;
  Future<DeviceToken>? _pending;
  TollgateException? _stopped;

  /// How many times the session was asked for a token (diagnostics and tests). The native side may answer from the
  /// Keychain / Keystore without any attestation.
  int requestCount = 0;

  /// The cached token, if any (even one due for refresh).
  DeviceToken? get cached => _current;

  /// True after `device_revoked`.
  bool get isStopped => _stopped != null;

  @override
  Future<String> deviceToken({bool forceRefresh = false}) async {
    final stopped = _stopped;
    if (stopped != null) throw stopped;
    final cached = _current;
    if (!forceRefresh && cached != null && !needsRefresh(cached, _clock())) return cached.token;
    return (await _refresh(forceRefresh)).token;
  }

  Future<DeviceToken> _refresh(bool forceRefresh) {
    final pending = _pending;
    if (pending != null) return pending;
    requestCount += 1;
    // Future.sync: a session that throws synchronously still yields a failed future (and clears _pending).
    final flight = Future<DeviceToken>.sync(() => session.token(forceRefresh: forceRefresh)).then((fresh) {
      if (_stopped == null) _current = fresh;
      return fresh;
    }, onError: (Object error, StackTrace stackTrace) {
      if (error is AttestationFailedException && reasonAction('attestationFailed', error.reason) == ReasonAction.stop) {
        stop(error);
      }
      Error.throwWithStackTrace(error, stackTrace);
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

  @override
  Future<ReasonAction> reportError(String token, String? reason) => session.reportError(token, reason);

  @override
  void stop(TollgateException error) {
    _stopped = error;
    _current = null;
  }

  @override
  Future<String?> assertion(String digestHex) => session.assertion(digestHex);

  /// Forgets the token (sign-out). A revocation stays in force.
  void clear() {
    _current = null;
  }

  /// True when [token] should be replaced at [nowMs].
  bool needsRefresh(DeviceToken token, int nowMs) => refreshDue(token.receivedAtMs, token.expiresAtMs, nowMs, margin: refreshMargin);
}
