import 'dart:convert';

import 'exceptions.dart';

/// One limit or budget of `GET /v1/me`: e.g. `requests` per `day` for the `device`, 12 of 100 [remaining].
class MeLimit {
  const MeLimit({
    required this.name,
    required this.scope,
    required this.unit,
    this.limit,
    this.remaining,
    this.window,
    this.resetsAt,
  });

  final String name;
  final String scope;
  final String unit;
  final num? limit;
  final num? remaining;
  final String? window;

  /// When it resets (UTC), or null when it does not.
  final DateTime? resetsAt;
}

/// The answer of `GET /v1/me` (protocol.md, "What the device may still spend"): the device, the user (null when none
/// is signed in) and every limit that applies.
class Me {
  const Me({required this.device, required this.user, required this.limits});

  final Object? device;
  final Object? user;
  final List<MeLimit> limits;

  /// The device's id: `device` itself when a string, else its `id`.
  String? get deviceId => _idOf(device);

  /// The signed-in user's id, or null.
  String? get userId => _idOf(user);

  /// The limit named [name] (and [scope] when given), or null.
  MeLimit? limit(String name, {String? scope}) {
    for (final entry in limits) {
      if (entry.name == name && (scope == null || entry.scope == scope)) return entry;
    }
    return null;
  }

  /// Parses the body; anything but the documented object is a [NetworkException].
  static Me parse(String body) {
    final Object? root;
    try {
      root = jsonDecode(body);
    } on FormatException catch (error) {
      throw NetworkException("The gateway's /v1/me answer is not JSON.", cause: error);
    }
    if (root is! Map<String, dynamic> || root['limits'] is! List) {
      throw const NetworkException("The gateway's /v1/me answer has no \"limits\".");
    }
    final limits = <MeLimit>[];
    for (final entry in root['limits'] as List) {
      if (entry is! Map<String, dynamic>) continue;
      final resets = entry['resetsAt'];
      limits.add(MeLimit(
        name: entry['name'] is String ? entry['name'] as String : '',
        scope: entry['scope'] is String ? entry['scope'] as String : '',
        unit: entry['unit'] is String ? entry['unit'] as String : '',
        limit: entry['limit'] is num ? entry['limit'] as num : null,
        remaining: entry['remaining'] is num ? entry['remaining'] as num : null,
        window: entry['window'] is String ? entry['window'] as String : null,
        resetsAt: resets is String
            ? DateTime.tryParse(resets)?.toUtc()
            : resets is num
                ? DateTime.fromMillisecondsSinceEpoch(resets.toInt(), isUtc: true)
                : null,
      ));
    }
    return Me(device: root['device'], user: root['user'], limits: limits);
  }

  static String? _idOf(Object? value) {
    if (value is String) return value;
    if (value is Map<String, dynamic>) {
      final id = value['id'] ?? value['deviceId'] ?? value['userId'];
      return id is String ? id : null;
    }
    return null;
  }
}
