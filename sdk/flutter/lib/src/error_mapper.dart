import 'dart:convert';

import 'exceptions.dart';

/// The first value of header [name] (any case) in [headers], or null.
String? firstHeader(List<(String, String)> headers, String name) {
  final wanted = name.toLowerCase();
  for (final (key, value) in headers) {
    if (key.toLowerCase() == wanted) return value;
  }
  return null;
}

/// Turns an HTTP response into a [TollgateException] (protocol.md, "Errors"; sdk/conformance/README.md,
/// "error-mapping.json"), in this order:
///
/// 1. a 2xx is never an error, whatever its headers (the status is checked first): null;
/// 2. a non-2xx with a `Tollgate-Error` header is the gateway's error and the **header** decides the kind; the body may
///    be missing, not JSON, or even name another type (vector header-wins-over-body);
/// 3. a non-2xx without it is the provider's own answer, passed through as [ProviderErrorException]: also a 401, 429,
///    5xx or 3xx (a provider's 429 is not the gateway's limit; redirects are never followed).
///
/// No response at all is [noResponse].
TollgateException? mapError(int status, List<(String, String)> headers, List<int>? body, int nowMs) {
  if (status >= 200 && status <= 299) return null;
  // Invalid UTF-8 in a provider's body is replaced (U+FFFD) rather than dropped.
  final text = body == null ? '' : utf8.decode(body, allowMalformed: true);
  final headerRequestId = firstHeader(headers, 'Tollgate-Request-Id')?.trim();
  final type = firstHeader(headers, 'Tollgate-Error')?.trim();
  if (type == null) {
    final lower = <String, String>{};
    for (final (name, value) in headers) {
      lower.putIfAbsent(name.toLowerCase(), () => value);
    }
    return ProviderErrorException(status, text, headers: lower, requestId: headerRequestId);
  }
  final error = _errorObject(text);
  final kind = kindOf(type, status);
  final requestId = (error?['requestId'] is String ? error!['requestId'] as String : null) ?? headerRequestId;
  final retryAfter = kind == 'rateLimited' ? parseRetryAfter(firstHeader(headers, 'Retry-After'), nowMs) : null;
  final message = (error?['message'] is String ? error!['message'] as String : null) ??
      _defaultMessage(kind, type, status, retryAfter);
  // protocol.md, "Errors": a stable snake_case reason; anything else (a number, free text) is read as none.
  final rawReason = error?['reason'];
  final reason = rawReason is String && _snakeCase.hasMatch(rawReason) ? rawReason : null;
  switch (kind) {
    case 'unauthorized':
      return UnauthorizedException(message, errorType: type, requestId: requestId, reason: reason);
    case 'attestationFailed':
      return AttestationFailedException(message, errorType: type, requestId: requestId, reason: reason);
    case 'rateLimited':
      return RateLimitedException(message,
          retryAfter: retryAfter == null ? null : Duration(seconds: retryAfter),
          errorType: type,
          requestId: requestId,
          reason: reason);
    case 'secretNotFound':
      return SecretNotFoundException(message, errorType: type, requestId: requestId, reason: reason);
    case 'networkError':
      return NetworkException(message, errorType: type, requestId: requestId, reason: reason);
    default:
      return InvalidRequestException(message, errorType: type, requestId: requestId, reason: reason);
  }
}

final _snakeCase = RegExp(r'^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$');

/// No response at all (offline, DNS, TLS, reset, timeout before the status line).
NetworkException noResponse(Object? cause) =>
    NetworkException('No response from the gateway${cause == null ? '.' : ': $cause'}', reason: 'unreachable', cause: cause);

/// The kind for a `Tollgate-Error` type (conformance README, error-mapping rule 3).
String kindOf(String type, int status) {
  switch (type) {
    case 'unauthorized':
    case 'attestationFailed':
    case 'rateLimited':
    case 'secretNotFound':
      return type;
    case 'providerNotFound':
    case 'invalidRequest':
      return 'invalidRequest';
    case 'upstreamUnavailable':
    case 'upstreamTimeout':
      return 'networkError';
  }
  // A type this SDK does not know (internalError, or one added later): decide by status so that nothing is silent.
  // Vectors internal-error-500 / -503 → networkError, unknown-type-fallback-403 → attestationFailed,
  // unknown-type-fallback-4xx (409) → invalidRequest.
  if (status == 401) return 'unauthorized';
  if (status == 403) return 'attestationFailed';
  if (status == 424) return 'secretNotFound';
  if (status == 429) return 'rateLimited';
  if (status >= 500 && status <= 599) return 'networkError';
  return 'invalidRequest';
}

Map<String, dynamic>? _errorObject(String text) {
  try {
    final parsed = jsonDecode(text);
    if (parsed is Map<String, dynamic>) {
      final error = parsed['error'];
      if (error is Map<String, dynamic>) return error;
    }
  } on FormatException {
    // Not JSON: the header alone decides.
  }
  return null;
}

String _defaultMessage(String kind, String type, int status, int? retryAfter) {
  switch (kind) {
    case 'attestationFailed':
      return 'The gateway refused this device ($type, HTTP $status).';
    case 'unauthorized':
      return 'The gateway refused the app token ($type, HTTP $status).';
    case 'rateLimited':
      return retryAfter == null ? 'Rate limited by the gateway.' : 'Rate limited by the gateway; retry after $retryAfter s.';
    case 'secretNotFound':
      return 'The gateway has no secret for this provider ($type, HTTP $status).';
    case 'networkError':
      return 'The gateway could not reach the provider ($type, HTTP $status).';
    default:
      return 'The gateway refused the request ($type, HTTP $status).';
  }
}

/// `Retry-After` (RFC 9110 §10.2.3) in whole seconds: delay-seconds, or an HTTP-date counted from [nowMs], rounded up
/// and at least 0. Null when absent or unreadable.
///
/// Walkthrough of the vectors: `" 7 "` → 7; `"Mon, 24 Nov 2025 16:01:30 GMT"` is 1764000090000 ms, so with nowMs
/// 1764000000000 → 90, with nowMs 1764000000500 → 89.5 rounded up → 90; a date in the past → 0; `"soon"` → null.
int? parseRetryAfter(String? value, int nowMs) {
  if (value == null) return null;
  final trimmed = value.trim();
  if (trimmed.isEmpty) return null;
  if (RegExp(r'^[0-9]+$').hasMatch(trimmed)) {
    // Huge values saturate rather than fail.
    return int.tryParse(trimmed) ?? 9007199254740991;
  }
  final date = parseHttpDate(trimmed);
  if (date == null) return null;
  final delta = date - nowMs;
  if (delta <= 0) return 0;
  return (delta + 999) ~/ 1000;
}

const _months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
final _imfFixdate = RegExp(r'^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d{2}) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$');
final _rfc850 = RegExp(r'^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\d{2})-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$');
final _asctime = RegExp(r'^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ( \d|\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$');

/// An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms) as unix ms, or null.
int? parseHttpDate(String value) {
  var match = _imfFixdate.firstMatch(value);
  if (match != null) {
    return _utcMs(int.parse(match[3]!), match[2]!, int.parse(match[1]!), int.parse(match[4]!), int.parse(match[5]!), int.parse(match[6]!));
  }
  match = _rfc850.firstMatch(value);
  if (match != null) {
    // A two-digit year more than 50 years in the future is in the past century.
    final nowYear = DateTime.now().toUtc().year;
    var year = nowYear ~/ 100 * 100 + int.parse(match[3]!);
    if (year > nowYear + 50) year -= 100;
    return _utcMs(year, match[2]!, int.parse(match[1]!), int.parse(match[4]!), int.parse(match[5]!), int.parse(match[6]!));
  }
  match = _asctime.firstMatch(value);
  if (match != null) {
    return _utcMs(int.parse(match[6]!), match[1]!, int.parse(match[2]!.trim()), int.parse(match[3]!), int.parse(match[4]!), int.parse(match[5]!));
  }
  return null;
}

int? _utcMs(int year, String month, int day, int hour, int minute, int second) {
  final monthIndex = _months.indexOf(month);
  if (monthIndex < 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return null;
  final date = DateTime.utc(year, monthIndex + 1, day, hour, minute, second > 59 ? 59 : second);
  // Refuses 31 Feb and the like (DateTime.utc would roll it over).
  if (date.day != day) return null;
  return date.millisecondsSinceEpoch;
}
