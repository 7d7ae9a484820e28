// Realtime sessions, the user-token callback, /v1/me, cancellable requests and the http.BaseClient, against a
// loopback gateway stand-in (dart:io HttpServer and WebSocketTransformer). Run with `flutter test`.
import 'dart:async';
import 'dart:convert';
import 'dart:io';

import 'package:flutter_test/flutter_test.dart';
import 'package:tollgate/src/client.dart';
import 'package:tollgate/src/device_tokens.dart';
import 'package:tollgate/src/exceptions.dart';
import 'package:tollgate/src/http_client.dart';
import 'package:tollgate/src/realtime.dart';

const _appToken = 'at_0123456789abcdefghijABCDEFGHIJkl';

String _jws(Map<String, Object> claims) {
  String part(Object value) => base64Url.encode(utf8.encode(jsonEncode(value))).replaceAll('=', '');
  return '${part({'alg': 'EdDSA'})}.${part(claims)}.c2ln';
}

void main() {
  late HttpServer server;
  late String base;
  final requests = <HttpRequest>[];
  late Future<void> Function(HttpRequest request) handler;

  setUp(() async {
    requests.clear();
    server = await HttpServer.bind(InternetAddress.loopbackIPv4, 0);
    base = 'http://127.0.0.1:${server.port}';
    server.listen((HttpRequest request) async {
      requests.add(request);
      await handler(request);
    });
  });

  tearDown(() async {
    await server.close(force: true);
  });

  TollgateClient client() => TollgateClient(baseUrl: base, appToken: _appToken, deviceTokens: const StaticDeviceToken('dt'));

  test('realtime: the upgrade carries the Tollgate headers, frames go both ways, a 4429 close is rateLimited', () async {
    handler = (HttpRequest request) async {
      final socket = await WebSocketTransformer.upgrade(request);
      socket.listen((Object? frame) {
        if (frame == 'budget') {
          socket.close(4429, 'token_budget');
        } else {
          socket.add(frame);
        }
      });
    };
    final tollgate = client();
    final session = await tollgate.realtime('openai/v1/realtime?model=gpt-realtime');
    final upgrade = requests.single;
    expect(upgrade.uri.toString(), '/v1/proxy/openai/v1/realtime?model=gpt-realtime');
    expect(upgrade.headers.value('tollgate-app-token'), _appToken);
    expect(upgrade.headers.value('tollgate-device-token'), 'dt');
    expect(upgrade.headers.value('tollgate-request-time'), isNotNull);
    session.send('hello');
    session.sendBytes([1, 2, 3]);
    session.send('budget');
    final received = <RealtimeMessage>[];
    await expectLater(
      session.messages.forEach(received.add),
      throwsA(isA<RateLimitedException>().having((RateLimitedException error) => error.reason, 'reason', 'token_budget')),
    );
    expect((received[0] as RealtimeText).text, 'hello');
    expect((received[1] as RealtimeBinary).bytes, [1, 2, 3]);
    expect(session.closed?.code, 4429);
  });

  test('realtime: a refused upgrade is the gateway typed error, and 4503 says reconnect', () async {
    handler = (HttpRequest request) async {
      request.response
        ..statusCode = 403
        ..headers.set('Tollgate-Error', 'attestationFailed')
        ..write('{"error":{"type":"attestationFailed","reason":"assertion_invalid","message":"No."}}');
      await request.response.close();
    };
    await expectLater(client().realtime('openai/v1/realtime'),
        throwsA(isA<AttestationFailedException>().having((AttestationFailedException error) => error.reason, 'reason', 'assertion_invalid')));
    expect(const RealtimeClose(4503, 'draining').mayReconnect, isTrue);
    expect(const RealtimeClose(4503, 'draining').error(), isA<NetworkException>());
    expect(const RealtimeClose(4403, 'device_revoked').action, RealtimeAction.stop);
    expect(const RealtimeClose(1000, '').error(), isNull);
  });

  test('the user-token callback is asked again exactly once on user_token_expired', () async {
    var expired = 1;
    handler = (HttpRequest request) async {
      final user = request.headers.value('tollgate-user-token') ?? '';
      if (user.endsWith('first') && expired-- > 0) {
        request.response
          ..statusCode = 401
          ..headers.set('Tollgate-Error', 'unauthorized')
          ..write('{"error":{"type":"unauthorized","reason":"user_token_expired","message":"Expired."}}');
      } else {
        request.response.write('ok');
      }
      await request.response.close();
    };
    final calls = <bool>[];
    final exp = DateTime.now().millisecondsSinceEpoch ~/ 1000 + 3600;
    final tollgate = client()
      ..setUserTokenProvider((bool force) async {
        calls.add(force);
        return _jws({'sub': 'u', 'exp': exp}) + (force ? 'second' : 'first');
      });
    expect((await tollgate.request(endpoint: 'openai/v1/models', method: 'GET')).text, 'ok');
    expect(calls, [false, true]);
    tollgate.setUserTokenProvider(null);
    await tollgate.request(endpoint: 'openai/v1/models', method: 'GET');
    expect(requests.last.headers.value('tollgate-user-token'), isNull);
  });

  test('me() reads the limits; a request can be cancelled', () async {
    final hold = Completer<void>();
    handler = (HttpRequest request) async {
      if (request.uri.path == '/v1/me') {
        request.response.write('{"device":{"id":"dev-1"},"user":null,"limits":[{"name":"requests","scope":"device",'
            '"unit":"requests","limit":100,"remaining":12,"window":"day","resetsAt":"2026-11-29T00:00:00Z"}]}');
        await request.response.close();
        return;
      }
      await hold.future;
      await request.response.close();
    };
    final tollgate = client();
    final me = await tollgate.me();
    expect(me.deviceId, 'dev-1');
    expect(me.limit('requests')?.remaining, 12);
    final cancel = CancelToken();
    final pending = tollgate.request(endpoint: 'openai/v1/models', method: 'GET', cancelToken: cancel);
    cancel.cancel();
    await expectLater(pending, throwsA(isA<NetworkException>().having((NetworkException error) => error.reason, 'reason', 'cancelled')));
    hold.complete();
  });

  test('TollgateHttpClient adds the Tollgate headers and drops the provider SDK placeholder key', () async {
    handler = (HttpRequest request) async {
      request.response
        ..headers.contentType = ContentType('text', 'event-stream')
        ..write('data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n');
      await request.response.close();
    };
    final httpClient = TollgateHttpClient(client());
    final response = await httpClient.post(Uri.parse('$base/v1/proxy/openai/v1/chat/completions'),
        headers: {'Authorization': 'Bearer unused', 'Content-Type': 'application/json'}, body: '{"stream":true}');
    expect(response.statusCode, 200);
    expect(response.body, contains('"Hi"'));
    final sent = requests.single;
    expect(sent.headers.value('authorization'), isNull);
    expect(sent.headers.value('tollgate-device-token'), 'dt');
    expect(sent.uri.path, '/v1/proxy/openai/v1/chat/completions');
    httpClient.close();
  });
}
