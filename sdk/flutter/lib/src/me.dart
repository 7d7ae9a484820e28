import 'dart:convert';

import 'exceptions.dart';

/// One limit or budget of `GET /v1/me`: e.g. `device-requests-day` for the `device`, 12 of 100 [remaining]. Strings
/// the gateway did not send are null.
class MeLimit {
  const MeLimit({
    required this.name,
    this.scope,
    this.unit,
    required this.limit,
    required this.remaining,
    this.window,
    this.resetsAtMs,
  });

  final String name;

  /// `device`, `user`, `app`, …, or null when the gateway did not say.
  final String? scope;

  /// `requests`, `tokens`, `seconds`, …, or null.
  final String? unit;
  final num limit;
  final num remaining;

  /// e.g. `minute`, `day`, or null.
  final String? window;

  /// When [remaining] is whole again (gateway clock, unix ms), or null when unknown.
  final int? resetsAtMs;

  /// [resetsAtMs] as a UTC time, or null.
  DateTime? get resetsAt => resetsAtMs == null ? null : DateTime.fromMillisecondsSinceEpoch(resetsAtMs!, isUtc: true);
}

/// The answer of `GET /v1/me` (protocol.md, "What the device may still spend"; sdk/conformance/README.md, "me.json"):
/// the device, the user (null when none is signed in) and every limit that applies.
class Me {
  const Me({required this.device, required this.user, required this.limits});

  /// `device` as the gateway sent it (`id`, `method`).
  final Map<String, dynamic> device;

  /// `user` as the gateway sent it (`id`, `issuer`, `profile`), or null when no user is signed in.
  final Map<String, dynamic>? user;
  final List<MeLimit> limits;

  /// The gateway's id of this device (`device.id`).
  String? get deviceId => device['id'] is String ? device['id'] as String : null;

  /// The signed-in user's id (`user.id`, issuer-scoped), or null.
  String? get userId => user?['id'] is String ? user!['id'] as String : null;

  /// True when the gateway accepted a user token for this call (`user` is an object).
  bool get signedIn => user != null;

  /// The limit named [name] (and [scope] when given), or null.
  MeLimit? limit(String name, {String? scope}) {
    for (final entry in limits) {
      if (entry.name == name && (scope == null || entry.scope == scope)) return entry;
    }
    return null;
  }

  /// Parses a 200 answer: a body that is not a JSON object with a `device` object and a `limits` array is a
  /// [NetworkException] (`malformed_response`); a limit without a string `name` and numeric `limit` and `remaining`
  /// is skipped (a newer gateway's).
  static Me parse(String body) {
    final Object? root;
    try {
      root = jsonDecode(body);
    } on FormatException catch (error) {
      throw NetworkException("The gateway's /v1/me answer is not JSON.", reason: 'malformed_response', cause: error);
    }
    if (root is! Map<String, dynamic> || root['limits'] is! List || root['device'] is! Map<String, dynamic>) {
      throw const NetworkException("The gateway's /v1/me answer has no device or limits.", reason: 'malformed_response');
    }
    final limits = <MeLimit>[];
    for (final Object? entry in root['limits'] as List) {
      if (entry is! Map<String, dynamic>) continue;
      final name = entry['name'];
      final limit = entry['limit'];
      final remaining = entry['remaining'];
      if (name is! String || limit is! num || remaining is! num) continue;
      final resets = entry['resetsAt'];
      limits.add(MeLimit(
        name: name,
        scope: _stringOrNull(entry['scope']),
        unit: _stringOrNull(entry['unit']),
        limit: limit,
        remaining: remaining,
        window: _stringOrNull(entry['window']),
        resetsAtMs: resets is String ? DateTime.tryParse(resets)?.millisecondsSinceEpoch : null,
      ));
    }
    final user = root['user'];
    return Me(
      device: root['device'] as Map<String, dynamic>,
      user: user is Map<String, dynamic> ? user : null,
      limits: limits,
    );
  }

  static String? _stringOrNull(Object? value) => value is String ? value : null;
}
