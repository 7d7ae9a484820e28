import 'dart:async';
import 'dart:convert';
import 'dart:io';
import 'dart:math';
import 'dart:typed_data';

import 'package:crypto/crypto.dart';

import 'exceptions.dart';
import 'request_builder.dart';

/// One frame of a realtime session.
sealed class RealtimeMessage {
  const RealtimeMessage();
}

/// A text frame (JSON events, typically).
final class RealtimeText extends RealtimeMessage {
  const RealtimeText(this.text);
  final String text;
}

/// A binary frame (audio, typically).
final class RealtimeBinary extends RealtimeMessage {
  const RealtimeBinary(this.bytes);
  final Uint8List bytes;
}

/// What the app should do after a session closed.
enum RealtimeAction {
  /// A normal close, or an error to show.
  none,

  /// 4503 `draining`: the gateway node is shutting down; open a new session at once.
  reconnect,

  /// 4403 `device_revoked`: the device session stops until the app restarts; no new key.
  stop,
}

/// A close frame (protocol.md, "Realtime sessions": the gateway closes with 44xx/45xx and the error `reason` as the
/// close reason) and what it means for the app (sdk/conformance/README.md, "realtime-close-codes.json").
class RealtimeClose {
  const RealtimeClose(this.code, this.reason);

  final int code;
  final String reason;

  static const Map<int, String> _gatewayTypes = {
    4400: 'invalidRequest',
    4401: 'unauthorized',
    4403: 'attestationFailed',
    4429: 'rateLimited',
    4502: 'upstreamUnavailable',
    4503: 'serviceUnavailable',
    4504: 'upstreamTimeout',
  };

  /// Transport-level closes (RFC 6455 section 7.4.1 and the IANA registry): going away, no close frame, server trouble.
  static const Set<int> _networkCloses = {1001, 1006, 1011, 1012, 1013, 1014};

  static final RegExp _reasonPattern = RegExp(r'^[a-z][a-z0-9_]*$');

  /// The close reason, trimmed (may be empty).
  String get message => reason.trim();

  /// The gateway's error type for its own codes (4400 `invalidRequest` … 4504 `upstreamTimeout`), else null.
  String? get errorType => _gatewayTypes[code];

  /// The close reason when it is snake_case (the gateway's error `reason`, e.g. `token_budget`), else null; null for a
  /// provider's own close, whose reason text is the provider's.
  String? get errorReason => kind != 'providerError' && _reasonPattern.hasMatch(message) ? message : null;

  /// The SDK error kind, or null for a normal end (1000): the gateway's codes by their type, any other 44xx
  /// `invalidRequest`, any other 45xx and the transport closes (1001, 1006, 1011–1014) `networkError`, every other
  /// code (the provider's own close, passed through) `providerError`.
  String? get kind {
    if (code == 1000) return null;
    switch (code) {
      case 4401:
        return 'unauthorized';
      case 4403:
        return 'attestationFailed';
      case 4429:
        return 'rateLimited';
    }
    if (code >= 4400 && code <= 4499) return 'invalidRequest';
    if (code >= 4500 && code <= 4599) return 'networkError';
    if (_networkCloses.contains(code)) return 'networkError';
    return 'providerError';
  }

  /// The app's next step; a 4403 never attests a new key.
  RealtimeAction get action {
    if (code == 4503) return RealtimeAction.reconnect;
    if (code == 4403 && errorReason == 'device_revoked') return RealtimeAction.stop;
    return RealtimeAction.none;
  }

  /// True for 4503: the app may reconnect at once.
  bool get mayReconnect => action == RealtimeAction.reconnect;

  /// Always false: no close makes the SDK attest a new key or refresh the device token.
  bool get newKey => false;

  /// The typed error the message stream ends with, or null for a normal close (1000), so that no failure ends a
  /// session silently; [closeCode] and [mayReconnect] say the rest. A provider's close is a [ProviderErrorException]
  /// with the code as status and the reason as body.
  TollgateException? error() {
    final text = message.isEmpty ? 'The realtime session was closed with code $code.' : message;
    switch (kind) {
      case null:
        return null;
      case 'unauthorized':
        return UnauthorizedException(text, errorType: errorType, reason: errorReason);
      case 'attestationFailed':
        return AttestationFailedException(text, errorType: errorType, reason: errorReason);
      case 'rateLimited':
        return RateLimitedException(text, errorType: errorType, reason: errorReason);
      case 'invalidRequest':
        return InvalidRequestException(text, errorType: errorType, reason: errorReason);
      case 'networkError':
        return NetworkException(text, errorType: errorType, reason: errorReason);
      default:
        return ProviderErrorException(code, message);
    }
  }

  /// The close code (the error of [error] belongs to it).
  int get closeCode => code;
}

/// How the tokens travel on a realtime upgrade (sdk/conformance/README.md, "subprotocols.json").
enum RealtimeUpgradeMode {
  /// As headers on the upgrade, like any proxied `GET` without a body: what this SDK does.
  headers,

  /// As subprotocols `tollgate.v1`, `tollgate-app.<app token>`, `tollgate-device.<device token>`: for clients that
  /// cannot set headers.
  subprotocols,
}

/// The upgrade request of a realtime session: `ws`/`wss` URL, the headers the SDK sets, the subprotocols, the digest.
class RealtimeUpgradeRequest {
  const RealtimeUpgradeRequest(this.url, this.pathWithQuery, this.headers, this.protocols, this.canonicalRequest, this.digest);

  final String url;
  final String pathWithQuery;
  final List<(String, String)> headers;
  final List<String> protocols;

  /// What a `Tollgate-Assertion` on the upgrade signs (`GET`, empty body).
  final String canonicalRequest;
  final String digest;

  /// [protocols] as the `Sec-WebSocket-Protocol` value, or null when there are none (no header).
  String? get secWebSocketProtocol => protocols.isEmpty ? null : protocols.join(', ');
}

final RegExp _token = RegExp(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$");

/// Refuses a provider subprotocol that is not an RFC 9110 token or that starts with `tollgate` (any case).
void checkRealtimeProtocols(List<String> protocols) {
  for (final protocol in protocols) {
    if (!_token.hasMatch(protocol)) {
      throw InvalidRequestException('Not a valid WebSocket subprotocol: "$protocol".', reason: 'bad_protocol');
    }
    if (protocol.toLowerCase().startsWith('tollgate')) {
      throw InvalidRequestException('Subprotocols starting with "tollgate" are the SDK\'s: "$protocol".', reason: 'bad_protocol');
    }
  }
}

/// The upgrade for [endpoint] (subprotocols.json): the request-building URL with `http` → `ws`, `https` → `wss`; in
/// [RealtimeUpgradeMode.headers] the Tollgate headers of a `GET` without a body (plus `Tollgate-User-Token` when
/// given) and the provider's [protocols]; in [RealtimeUpgradeMode.subprotocols] no headers and the tokens as
/// subprotocols first. Refusals are [InvalidRequestException], before anything is sent.
RealtimeUpgradeRequest buildRealtimeUpgrade(
  RequestBuilder builder, {
  required String endpoint,
  required RealtimeUpgradeMode mode,
  required String deviceToken,
  String? userToken,
  required int requestTimeMs,
  List<String> protocols = const [],
}) {
  checkRealtimeProtocols(protocols);
  final built = builder.build(TollgateRequest(method: 'GET', endpoint: endpoint), deviceToken, requestTimeMs);
  final url = 'ws${built.url.substring(4)}';
  if (mode == RealtimeUpgradeMode.headers) {
    return RealtimeUpgradeRequest(url, built.pathWithQuery,
        [...built.headers, if (userToken != null) ('Tollgate-User-Token', userToken)], protocols, built.canonicalRequest, built.digest);
  }
  return RealtimeUpgradeRequest(url, built.pathWithQuery, const <(String, String)>[],
      ['tollgate.v1', 'tollgate-app.${builder.appToken}', 'tollgate-device.$deviceToken', ...protocols], built.canonicalRequest, built.digest);
}

/// An open realtime session. [messages] delivers the provider's frames and ends at the close: normally, or with the
/// close's [TollgateException] ([closed] then says what happened and whether the app may reconnect). Listen once.
class RealtimeSession {
  RealtimeSession(this._socket, {void Function(RealtimeClose close)? onGatewayClose}) : _onGatewayClose = onGatewayClose;

  final WebSocket _socket;
  final void Function(RealtimeClose close)? _onGatewayClose;
  RealtimeClose? _closed;

  /// The close frame, once closed.
  RealtimeClose? get closed => _closed;

  /// The subprotocol the upgrade agreed on, or null.
  String? get protocol => _socket.protocol;

  /// The provider's frames, in order.
  late final Stream<RealtimeMessage> messages = _frames();

  Stream<RealtimeMessage> _frames() async* {
    final iterator = StreamIterator<dynamic>(_socket);
    while (true) {
      final bool more;
      try {
        more = await iterator.moveNext();
      } catch (error) {
        throw NetworkException('The realtime session was cut: $error', reason: 'stream_cut', cause: error);
      }
      if (!more) break;
      final Object? frame = iterator.current;
      if (frame is String) {
        yield RealtimeText(frame);
      } else if (frame is List<int>) {
        yield RealtimeBinary(frame is Uint8List ? frame : Uint8List.fromList(frame));
      }
    }
    final close = RealtimeClose(_socket.closeCode ?? 1006, _socket.closeReason ?? '');
    _closed = close;
    if (close.errorType != null) _onGatewayClose?.call(close);
    final error = close.error();
    if (error != null) throw error;
  }

  /// Sends a text frame.
  void send(String text) => _socket.add(text);

  /// Sends a binary frame.
  void sendBytes(List<int> bytes) => _socket.add(bytes);

  /// Closes the session (normal closure by default); the gateway closes the provider's socket at once.
  Future<void> close([int code = 1000, String? reason]) async {
    await _socket.close(code, reason);
  }
}

/// The outcome of one upgrade: the socket, or the gateway's plain HTTP refusal (status, headers, body).
sealed class RealtimeUpgrade {
  const RealtimeUpgrade();
}

final class RealtimeOpened extends RealtimeUpgrade {
  const RealtimeOpened(this.socket);
  final WebSocket socket;
}

final class RealtimeRefused extends RealtimeUpgrade {
  const RealtimeRefused(this.status, this.headers, this.body);
  final int status;
  final List<(String, String)> headers;
  final List<int> body;
}

final Random _random = Random.secure();

/// The WebSocket upgrade (RFC 6455 §4.1) done by hand over `dart:io`'s HttpClient, because `WebSocket.connect` hides a
/// refused upgrade's status and body, which carry the gateway's typed error. Redirects are not followed (they would
/// carry the tokens elsewhere).
Future<RealtimeUpgrade> upgradeWebSocket(String url, List<(String, String)> headers, List<String> protocols, {HttpClient? client}) async {
  final httpClient = client ?? HttpClient();
  try {
    final key = base64.encode(List<int>.generate(16, (_) => _random.nextInt(256)));
    final HttpClientRequest request = await httpClient.openUrl('GET', Uri.parse(url));
    request.followRedirects = false;
    for (final (name, value) in headers) {
      request.headers.add(name, value, preserveHeaderCase: true);
    }
    request.headers.set(HttpHeaders.connectionHeader, 'Upgrade');
    request.headers.set(HttpHeaders.upgradeHeader, 'websocket');
    request.headers.set('Sec-WebSocket-Key', key);
    request.headers.set('Sec-WebSocket-Version', '13');
    if (protocols.isNotEmpty) request.headers.set('Sec-WebSocket-Protocol', protocols.join(', '));
    final HttpClientResponse response = await request.close();
    final responseHeaders = <(String, String)>[];
    response.headers.forEach((String name, List<String> values) {
      for (final value in values) {
        responseHeaders.add((name, value));
      }
    });
    if (response.statusCode != HttpStatus.switchingProtocols) {
      final body = await response.fold<List<int>>(<int>[], (List<int> all, List<int> chunk) => all..addAll(chunk));
      return RealtimeRefused(response.statusCode, responseHeaders, body);
    }
    final expected = base64.encode(sha1.convert(utf8.encode('${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11')).bytes);
    if (response.headers.value('sec-websocket-accept') != expected) {
      throw const NetworkException('The gateway answered the upgrade without a valid Sec-WebSocket-Accept.', reason: 'websocket_handshake');
    }
    final protocol = response.headers.value('sec-websocket-protocol');
    final Socket socket = await response.detachSocket();
    return RealtimeOpened(WebSocket.fromUpgradedSocket(socket, protocol: protocol, serverSide: false));
  } finally {
    // A client of our own is closed: an upgraded socket is detached from it already, and a refused upgrade's
    // connection is not left idle in its pool.
    if (client == null) httpClient.close();
  }
}
