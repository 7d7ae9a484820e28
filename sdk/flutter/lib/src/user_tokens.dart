import 'behaviour.dart' show jwsExpiryMs;
import 'exceptions.dart';

/// Returns the signed-in user's current ID token (Firebase `getIdToken(forceRefresh)`, Supabase, Auth0, Clerk,
/// Cognito, Sign in with Apple), or null when nobody is signed in.
typedef UserTokenProvider = Future<String?> Function(bool forceRefresh);

/// The `Tollgate-User-Token` of requests (protocol.md, "End users"): the app's callback is asked when no fresh token
/// is cached (none yet, or its `exp` less than a minute away; a token without a readable `exp` is not cached), and
/// once more with `forceRefresh: true` after the gateway's `user_token_expired`. [setProvider] with null signs out.
class UserTokens {
  /// A cached token is reused while its `exp` is more than this away.
  static const int marginMs = 60000;

  UserTokenProvider? _provider;
  int _generation = 0;
  String? _cached;
  int _cachedExpiresAtMs = 0;

  /// True while a callback is set.
  bool get isSet => _provider != null;

  /// Sets the callback, or clears it (and the cached token) with null.
  void setProvider(UserTokenProvider? provider) {
    _provider = provider;
    _generation += 1;
    _cached = null;
    _cachedExpiresAtMs = 0;
  }

  /// Caches [token], one the app already holds (restored at start, say), as if the callback had just returned it;
  /// only a token with a readable `exp` is kept.
  void prime(String token) {
    final expiresAt = jwsExpiryMs(token);
    _cached = expiresAt == null ? null : token;
    _cachedExpiresAtMs = expiresAt ?? 0;
  }

  /// The token to send now ([nowMs]: the gateway's clock), or null.
  Future<String?> current(int nowMs) async {
    final cached = _cached;
    if (cached != null && nowMs < _cachedExpiresAtMs - marginMs) return cached;
    return _ask(false);
  }

  /// A new token from the callback (after `user_token_expired`).
  Future<String?> refreshed() => _ask(true);

  Future<String?> _ask(bool forceRefresh) async {
    final provider = _provider;
    if (provider == null) return null;
    final generation = _generation;
    final String? token;
    try {
      token = await provider(forceRefresh);
    } on Object catch (error) {
      // user-token.json: a callback that fails fails the call before anything is sent.
      throw UnauthorizedException("The app's user token callback failed: $error", reason: 'user_token_unavailable');
    }
    final usable = (token == null || token.isEmpty) ? null : token;
    // A sign-out during the callback wins: nothing is cached for a provider that is gone.
    if (generation == _generation) {
      final expiresAt = usable == null ? null : jwsExpiryMs(usable);
      _cached = expiresAt == null ? null : usable;
      _cachedExpiresAtMs = expiresAt ?? 0;
    }
    return usable;
  }
}
