import 'dart:convert';
import 'dart:typed_data';

import 'package:crypto/crypto.dart' as crypto;

import 'exceptions.dart';

/// A request body. A zero-length body is the same as none (no `Content-Type`, digest over zero bytes).
class RequestBody {
  RequestBody(List<int> bytes, this.defaultContentType) : bytes = bytes is Uint8List ? bytes : Uint8List.fromList(bytes);

  /// UTF-8 text, by default `application/json` (the conformance vectors' `{"text": ...}` bodies).
  factory RequestBody.text(String text, {String contentType = 'application/json'}) =>
      RequestBody(utf8.encode(text), contentType);

  /// Raw bytes, by default `application/octet-stream` (audio uploads and the like).
  factory RequestBody.bytes(List<int> bytes, {String contentType = 'application/octet-stream'}) =>
      RequestBody(bytes, contentType);

  /// A value encoded with `jsonEncode` (`application/json`).
  factory RequestBody.json(Object? value) => RequestBody.text(jsonEncode(value));

  /// The body of a `request`/`stream` call: null → none; a [RequestBody] as is; a [String] as UTF-8 text
  /// (`application/json`, e.g. JSON you serialized yourself); a [Uint8List] as bytes (`application/octet-stream`);
  /// anything else (a `Map`, a `List`, a number) encoded as JSON.
  static RequestBody? from(Object? body) {
    if (body == null) return null;
    if (body is RequestBody) return body;
    if (body is String) return RequestBody.text(body);
    if (body is Uint8List) return RequestBody.bytes(body);
    return RequestBody.json(body);
  }

  /// The bytes sent.
  final Uint8List bytes;

  /// `Content-Type` sent when the caller gives none.
  final String defaultContentType;
}

/// One call as the app makes it. [endpoint] is `{slug}/{version}[/{path}][?{query}]`, e.g.
/// `openai/v1/chat/completions`.
class TollgateRequest {
  const TollgateRequest({
    this.method = 'POST',
    required this.endpoint,
    this.body,
    this.query = const [],
    this.headers = const {},
  });

  final String method;
  final String endpoint;
  final RequestBody? body;

  /// Query parameters, appended (percent-encoded) after any query written in the endpoint.
  final List<(String, String)> query;

  /// Extra headers for the provider (e.g. `anthropic-version`). `Tollgate-*` names are refused.
  final Map<String, String> headers;
}

/// What goes on the wire, with the digest an assertion would sign.
class BuiltRequest {
  const BuiltRequest({
    required this.method,
    required this.url,
    required this.pathWithQuery,
    required this.headers,
    required this.body,
    required this.bodySha256,
    required this.canonicalRequest,
    required this.digest,
  });

  /// Upper-cased.
  final String method;
  final String url;

  /// `/v1/proxy/...?query`: the path used in the digest (never the base URL's path prefix).
  final String pathWithQuery;

  /// In the case sent, in the order added.
  final List<(String, String)> headers;
  final Uint8List body;

  /// Lowercase hex SHA-256 of [body].
  final String bodySha256;

  /// `METHOD\npathWithQuery\nrequestTime\nbodySha256`.
  final String canonicalRequest;

  /// Lowercase hex SHA-256 of [canonicalRequest]: what a `Tollgate-Assertion` signs.
  final String digest;
}

/// Lowercase hex SHA-256 (package:crypto).
String sha256Hex(List<int> bytes) => crypto.sha256.convert(bytes).toString();

/// The request digest of protocol.md: `SHA-256( METHOD "\n" path-with-query "\n" Tollgate-Request-Time "\n"
/// hex(SHA-256(body)) )`, as lowercase hex.
String requestDigest(String method, String pathWithQuery, int requestTimeMs, List<int> body) =>
    sha256Hex(utf8.encode('$method\n$pathWithQuery\n$requestTimeMs\n${sha256Hex(body)}'));

InvalidRequestException _invalid(String message) => InvalidRequestException(message);

/// Validates an endpoint and builds URL, headers and request digest (sdk/conformance/README.md,
/// "request-building.json"). Every refusal is an [InvalidRequestException], thrown before anything is sent.
/// The Dart twin of the Kotlin `dev.tollgate.core.RequestBuilder`.
class RequestBuilder {
  /// [baseUrl] is the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed; it is not in the digest);
  /// [sdk] the `Tollgate-SDK` value, e.g. `flutter/1.2.0`.
  RequestBuilder(String baseUrl, this.appToken, this.sdk) : base = _trimSlashes(baseUrl) {
    if (!_baseUrl.hasMatch(baseUrl)) {
      throw _invalid('The base URL must be http(s)://host[:port][/path], without query, fragment or user info: "$baseUrl".');
    }
    checkHeaderValue('Tollgate-App-Token', appToken);
    checkHeaderValue('Tollgate-SDK', sdk);
  }

  /// The base URL without trailing `/`.
  final String base;
  final String appToken;
  final String sdk;

  // Java's `\s` (ASCII whitespace) is spelled out: Dart's `\s` also matches Unicode spaces.
  static final _baseUrl = RegExp(r'^[hH][tT][tT][pP][sS]?://[^/?#@ \t\n\x0B\f\r]+(/[^?# \t\n\x0B\f\r]*)?$');
  static final _method = RegExp(r'^[A-Za-z]+$');
  static final _slug = RegExp(r'^[a-z0-9][a-z0-9-]{0,39}$');
  static final _version = RegExp(r'^v[0-9][a-z0-9.-]{0,15}$');
  static final _pathChars = RegExp(r"^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$");
  static final _queryChars = RegExp(r"^[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$");
  static final _badPercent = RegExp(r'%(?![0-9A-Fa-f]{2})');
  static final _control = RegExp(r'[\x00-\x1f\x7f-\x9f]');
  static final _scheme = RegExp(r'^[A-Za-z][A-Za-z0-9+.\-]*:');
  static final _token = RegExp(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$");
  static const _maxDecodeRounds = 3;

  static String _trimSlashes(String url) {
    var end = url.length;
    while (end > 0 && url.codeUnitAt(end - 1) == 0x2F) {
      end -= 1;
    }
    return url.substring(0, end);
  }

  /// Builds [request] with [deviceToken], stamped with [requestTimeMs].
  BuiltRequest build(TollgateRequest request, String deviceToken, int requestTimeMs) {
    if (!_method.hasMatch(request.method)) throw _invalid('The HTTP method must be letters only: "${request.method}".');
    final method = request.method.toUpperCase();
    final (path, rawQuery) = checkEndpoint(request.endpoint);

    final queryParts = <String>[];
    if (rawQuery != null && rawQuery.isNotEmpty) queryParts.add(rawQuery);
    for (final (name, value) in request.query) {
      queryParts.add('${encodeComponent(name)}=${encodeComponent(value)}');
    }
    final pathWithQuery = '/v1/proxy/$path${queryParts.isEmpty ? '' : '?${queryParts.join('&')}'}';

    final body = request.body?.bytes ?? Uint8List(0);
    final headers = <(String, String)>[];
    for (final MapEntry(key: name, value: value) in request.headers.entries) {
      if (!_token.hasMatch(name)) throw _invalid('Not a valid header name: "$name".');
      if (name.toLowerCase().startsWith('tollgate-')) {
        throw _invalid('Tollgate-* headers are set by the SDK, not by the caller: "$name".');
      }
      checkHeaderValue(name, value);
      headers.add((name, value));
    }
    checkHeaderValue('Tollgate-Device-Token', deviceToken);
    headers.add(('Tollgate-App-Token', appToken));
    headers.add(('Tollgate-Device-Token', deviceToken));
    headers.add(('Tollgate-Request-Time', requestTimeMs.toString()));
    headers.add(('Tollgate-SDK', sdk));
    if (body.isNotEmpty && !headers.any((header) => header.$1.toLowerCase() == 'content-type')) {
      headers.add(('Content-Type', request.body!.defaultContentType));
    }

    final bodySha256 = sha256Hex(body);
    final canonical = '$method\n$pathWithQuery\n$requestTimeMs\n$bodySha256';
    return BuiltRequest(
      method: method,
      url: base + pathWithQuery,
      pathWithQuery: pathWithQuery,
      headers: headers,
      body: body,
      bodySha256: bodySha256,
      canonicalRequest: canonical,
      digest: sha256Hex(utf8.encode(canonical)),
    );
  }

  /// URL of an attestation route, e.g. `attestUrl('challenge')` → `{base}/v1/attest/challenge`.
  String attestUrl(String method) {
    if (!_slug.hasMatch(method)) throw _invalid('Not an attestation method: "$method".');
    return '$base/v1/attest/$method';
  }

  /// Headers of the attestation routes, which take the app token only (client-behaviour.json, `attestation-request`:
  /// exactly `Tollgate-App-Token`, plus `Content-Type: application/json` with a body).
  List<(String, String)> get attestHeaders => [('Tollgate-App-Token', appToken)];

  /// Checks an endpoint and returns its path (`slug/version[/provider_path]`, one leading `/` removed) and raw query,
  /// in the order of the conformance README (request-building rule 3).
  static (String, String?) checkEndpoint(String endpoint) {
    // 3.1 One leading "/" is removed; a second one is an empty segment, refused below.
    final trimmed = endpoint.startsWith('/') ? endpoint.substring(1) : endpoint;
    // 3.2 No fragment; split at the first "?".
    if (trimmed.contains('#')) throw _invalid("The endpoint must not contain a fragment ('#').");
    final mark = trimmed.indexOf('?');
    final path = mark < 0 ? trimmed : trimmed.substring(0, mark);
    final rawQuery = mark < 0 ? null : trimmed.substring(mark + 1);
    // 3.3 Only pchar and "/" (the query may also hold "?"); every "%" starts an escape.
    if (rawQuery != null && !_queryChars.hasMatch(rawQuery)) {
      throw _invalid("The endpoint's query has characters that must be percent-encoded.");
    }
    if (!_pathChars.hasMatch(path)) {
      throw _invalid("The endpoint has characters that must be percent-encoded (spaces, non-ASCII, '\\', control characters).");
    }
    if (_badPercent.hasMatch(path) || (rawQuery != null && _badPercent.hasMatch(rawQuery))) {
      throw _invalid("The endpoint has a '%' not followed by two hex digits.");
    }
    // 3.4 No empty segment, no leading "/".
    if (path.contains('//') || path.startsWith('/')) throw _invalid("The endpoint must not contain an empty segment ('//').");
    // 3.5 slug/version[/provider_path] (split with a limit of three parts, as Kotlin's split(limit = 3)).
    final first = path.indexOf('/');
    final second = first < 0 ? -1 : path.indexOf('/', first + 1);
    final slug = first < 0 ? path : path.substring(0, first);
    final version = first < 0 ? null : (second < 0 ? path.substring(first + 1) : path.substring(first + 1, second));
    if (version == null || !_slug.hasMatch(slug) || !_version.hasMatch(version)) {
      throw _invalid('The endpoint must look like {provider}/{version}/{path}, e.g. openai/v1/chat/completions: "$endpoint".');
    }
    // 3.6 The provider path, as the gateway checks it.
    if (second >= 0) _checkProviderPath(path.substring(second + 1));
    return (path, rawQuery);
  }

  /// The path as written, then up to three successive percent-decodings, must each pass [_checkDecoded]; a path still
  /// changing after the third decoding is refused.
  ///
  /// Walkthrough: `%252e%252e/admin` → `%2e%2e/admin` (fine) → `../admin`: a dot segment, refused (vector
  /// refuse-double-encoded-dot-dot). `chat%25zz` → `chat%zz` (fine) → decoding again meets `%zz`: refused (vector
  /// refuse-decoded-bad-percent). `caf%E9`: byte E9 alone is not UTF-8, refused (vector refuse-invalid-utf8-percent).
  static void _checkProviderPath(String raw) {
    var current = raw;
    _checkDecoded(current);
    for (var round = 0; round < _maxDecodeRounds; round++) {
      final decoded = _percentDecode(current);
      if (decoded == current) return;
      _checkDecoded(decoded);
      current = decoded;
    }
    throw _invalid('The provider path is percent-encoded too many times.');
  }

  static void _checkDecoded(String path) {
    final String reason;
    if (_control.hasMatch(path)) {
      reason = 'a control character';
    } else if (path.contains(r'\')) {
      reason = 'a backslash';
    } else if (path.contains('@')) {
      reason = "'@'";
    } else if (path.contains('//')) {
      reason = "an empty segment ('//')";
    } else if (path.startsWith('/')) {
      reason = 'an absolute path';
    } else if (_scheme.hasMatch(path) || path.contains('://')) {
      // A ":" later in a segment (models/gemini-2.0-flash:generateContent) is fine: the scheme pattern stops at "/".
      reason = 'a URL scheme';
    } else if (path.split('/').any((segment) => segment == '.' || segment == '..')) {
      reason = "a dot segment ('.' or '..')";
    } else {
      return;
    }
    throw _invalid('The provider path is not allowed: it contains $reason.');
  }

  /// Percent-decodes as strict UTF-8 (as JavaScript's `decodeURIComponent` on the gateway): malformed escapes and byte
  /// sequences that are not UTF-8 are refused. `+` stays `+`.
  static String _percentDecode(String value) {
    if (!value.contains('%')) return value;
    final input = utf8.encode(value);
    final bytes = <int>[];
    var index = 0;
    while (index < input.length) {
      if (input[index] == 0x25) {
        final high = index + 2 < input.length ? _hexValue(input[index + 1]) : -1;
        final low = index + 2 < input.length ? _hexValue(input[index + 2]) : -1;
        if (high < 0 || low < 0) throw _invalid('Malformed percent-encoding in the endpoint.');
        bytes.add(high * 16 + low);
        index += 3;
      } else {
        bytes.add(input[index]);
        index += 1;
      }
    }
    if (!isValidUtf8(bytes)) throw _invalid("The endpoint's percent-encoding is not UTF-8.");
    return utf8.decode(bytes);
  }

  static int _hexValue(int byte) {
    if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
    if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
    if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
    return -1;
  }

  /// Percent-encodes every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` (uppercase hex; a space is `%20`, never `+`).
  static String encodeComponent(String value) {
    const hex = '0123456789ABCDEF';
    final out = StringBuffer();
    for (final byte in utf8.encode(value)) {
      final unreserved = (byte >= 0x41 && byte <= 0x5A) ||
          (byte >= 0x61 && byte <= 0x7A) ||
          (byte >= 0x30 && byte <= 0x39) ||
          byte == 0x2D ||
          byte == 0x2E ||
          byte == 0x5F ||
          byte == 0x7E;
      if (unreserved) {
        out.writeCharCode(byte);
      } else {
        out
          ..write('%')
          ..write(hex[byte >> 4])
          ..write(hex[byte & 0x0F]);
      }
    }
    return out.toString();
  }

  /// CR, LF or NUL in a header value is refused (header injection).
  static void checkHeaderValue(String name, String value) {
    if (value.contains('\r') || value.contains('\n') || value.contains('\u0000')) {
      throw _invalid('The value of header "$name" contains CR, LF or NUL.');
    }
  }
}

/// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool isValidUtf8(List<int> bytes) {
  var index = 0;
  while (index < bytes.length) {
    final lead = bytes[index];
    int length;
    var lower = 0x80;
    var upper = 0xBF;
    if (lead <= 0x7F) {
      index += 1;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead == 0xE0) {
      length = 3;
      lower = 0xA0;
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
      length = 3;
    } else if (lead == 0xED) {
      length = 3;
      upper = 0x9F;
    } else if (lead == 0xF0) {
      length = 4;
      lower = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
      length = 4;
    } else if (lead == 0xF4) {
      length = 4;
      upper = 0x8F;
    } else {
      return false;
    }
    if (index + length > bytes.length) return false;
    final second = bytes[index + 1];
    if (second < lower || second > upper) return false;
    for (var offset = 2; offset < length; offset++) {
      final byte = bytes[index + offset];
      if (byte < 0x80 || byte > 0xBF) return false;
    }
    index += length;
  }
  return true;
}
