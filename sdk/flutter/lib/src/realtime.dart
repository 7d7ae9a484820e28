import 'dart:async';
import 'dart:convert';
import 'dart:io';
import 'dart:math';
import 'dart:typed_data';

import 'package:crypto/crypto.dart';

import 'exceptions.dart';

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
/// close reason) and the typed error it maps to.
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

  static final RegExp _reasonPattern = RegExp(r'^[a-z][a-z0-9]*(_[a-z0-9]+)*$');

  /// The gateway's error type for its own codes, else null.
  String? get errorType => _gatewayTypes[code];

  /// The app's next step; a 4403 never attests a new key.
  RealtimeAction get action {
    if (code == 4503) return RealtimeAction.reconnect;
    if (code == 4403 && reason == 'device_revoked') return RealtimeAction.stop;
    return RealtimeAction.none;
  }

  /// True for 4503: the app may reconnect at once.
  bool get mayReconnect => action == RealtimeAction.reconnect;

  /// The typed error, or null for a normal close (1000, 1001, 1005). 44xx: the gateway's kind by code; 45xx and 1006
  /// (connection lost): [NetworkException]; any other code (the provider's, passed through): [ProviderErrorException].
  TollgateException? error() {
    final String? why = reason.isNotEmpty && _reasonPattern.hasMatch(reason) ? reason : null;
    final message = 'The realtime session was closed ($code${reason.isEmpty ? '' : ' $reason'}).';
    if (code == 1000 || code == 1001 || code == 1005) return null;
    if (code == 4401) return UnauthorizedException(message, errorType: errorType, reason: why);
    if (code == 4403) return AttestationFailedException(message, errorType: errorType, reason: why);
    if (code == 4429) return RateLimitedException(message, errorType: errorType, reason: why);
    if (code >= 4400 && code <= 4499) return InvalidRequestException(message, errorType: errorType ?? 'invalidRequest', reason: why);
    if ((code >= 4500 && code <= 4599) || code == 1006) {
      return NetworkException(message, errorType: errorType ?? (code == 1006 ? null : 'upstreamUnavailable'), reason: why);
    }
    return ProviderErrorException(code, reason);
  }
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
}
