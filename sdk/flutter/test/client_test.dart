// The client against a scripted transport: headers on the wire, token refresh, retries, streams, cut streams, and the
// facade before initialize.
import 'dart:async';
import 'dart:convert';
import 'dart:io';
import 'dart:typed_data';

import 'package:test/test.dart';
import 'package:tollgate/src/client.dart';
import 'package:tollgate/src/device_tokens.dart';
import 'package:tollgate/src/exceptions.dart';
import 'package:tollgate/src/stream_parsers.dart';
import 'package:tollgate/src/tollgate.dart';
import 'package:tollgate/src/transport.dart';

class _Answer {
  _Answer(this.status, {this.headers = const [], String body = '', this.cut = false}) : body = utf8.encode(body);

  final int status;
  final List<(String, String)> headers;
  final List<int> body;

  /// The body fails after its bytes (a cut).
  final bool cut;
}

class _ScriptedTransport implements HttpTransport {
  _ScriptedTransport(this.answers);

  final List<_Answer> answers;
  final calls = <HttpCall>[];

  @override
  Future<HttpResult> send(HttpCall call) async {
    calls.add(call);
    final answer = answers.isEmpty ? _Answer(500, body: 'no more answers') : answers.removeAt(0);
    final controller = StreamController<List<int>>();
    // Two chunks, split mid-body, then a clean end or a cut.
    final middle = answer.body.length ~/ 2;
    scheduleMicrotask(() {
      controller.add(answer.body.sublist(0, middle));
      controller.add(answer.body.sublist(middle));
      if (answer.cut) controller.addError(const SocketException('Connection reset by peer'));
      controller.close();
    });
    return HttpResult(answer.status, answer.headers, controller.stream);
  }
}

class _CountingTokens implements DeviceTokenSource {
  int issued = 0;
  final invalidated = <String>[];
  String? _current;

  @override
  Future<String> deviceToken() async => _current ??= 'dt-${++issued}';

  @override
  void invalidate(String token) {
    invalidated.add(token);
    if (_current == token) _current = null;
  }
}

String? _header(HttpCall call, String name) {
  for (final (key, value) in call.headers) {
    if (key.toLowerCase() == name.toLowerCase()) return value;
  }
  return null;
}

TollgateClient _client(_ScriptedTransport transport, {DeviceTokenSource? tokens, RetryPolicy retry = RetryPolicy.none}) =>
    TollgateClient(
      baseUrl: 'https://gateway.example.com',
      appToken: 'at_test',
      deviceTokens: tokens ?? const StaticDeviceToken('device-token'),
      transport: transport,
      retry: retry,
      clock: () => 1764000000000,
    );

void main() {
  test('calls before initialize fail with InvalidRequestException', () async {
    Tollgate.reset();
    await expectLater(Tollgate.request(endpoint: 'openai/v1/models', method: 'GET'), throwsA(isA<InvalidRequestException>()));
    await expectLater(Tollgate.stream(endpoint: 'openai/v1/models').toList(), throwsA(isA<InvalidRequestException>()));
  });

  test('a request carries the Tollgate headers and a JSON body', () async {
    final transport = _ScriptedTransport([_Answer(200, headers: [('tollgate-request-id', 'req_1')], body: '{"ok":true}')]);
    final response = await _client(transport).request(endpoint: 'openai/v1/chat/completions', body: {'model': 'x'});
    expect(response.status, 200);
    expect(response.json(), {'ok': true});
    expect(response.requestId, 'req_1');
    final call = transport.calls.single;
    expect(call.url, 'https://gateway.example.com/v1/proxy/openai/v1/chat/completions');
    expect(call.method, 'POST');
    expect(utf8.decode(call.body), '{"model":"x"}');
    expect(_header(call, 'Tollgate-App-Token'), 'at_test');
    expect(_header(call, 'Tollgate-Device-Token'), 'device-token');
    expect(_header(call, 'Tollgate-Request-Time'), '1764000000000');
    expect(_header(call, 'Tollgate-SDK'), 'flutter/1.2.0');
    expect(_header(call, 'Content-Type'), 'application/json');
  });

  test('an unsafe endpoint is refused before sending', () async {
    final transport = _ScriptedTransport([]);
    await expectLater(_client(transport).request(endpoint: 'openai/v1/%2e%2e/admin'), throwsA(isA<InvalidRequestException>()));
    expect(transport.calls, isEmpty);
  });

  test('a refused device token is replaced once', () async {
    _Answer refused() => _Answer(403,
        headers: [('Tollgate-Error', 'attestationFailed')],
        body: '{"error":{"type":"attestationFailed","message":"expired","requestId":"r"}}');
    final transport = _ScriptedTransport([refused(), _Answer(200, body: '{}')]);
    final tokens = _CountingTokens();
    await _client(transport, tokens: tokens).request(endpoint: 'openai/v1/models', method: 'GET');
    expect(tokens.invalidated, ['dt-1']);
    expect(_header(transport.calls[1], 'Tollgate-Device-Token'), 'dt-2');

    final twice = _ScriptedTransport([refused(), refused()]);
    await expectLater(
      _client(twice, tokens: _CountingTokens()).request(endpoint: 'openai/v1/models', method: 'GET'),
      throwsA(isA<AttestationFailedException>().having((error) => error.requestId, 'requestId', 'r')),
    );
  });

  test('rateLimited is retried within the budget, and not beyond it', () async {
    final limited = [('Tollgate-Error', 'rateLimited'), ('Retry-After', '0')];
    final transport = _ScriptedTransport([_Answer(429, headers: limited), _Answer(200, body: '{}')]);
    await _client(transport, retry: RetryPolicy.standard).request(endpoint: 'openai/v1/models', method: 'GET');
    expect(transport.calls, hasLength(2));

    final slow = _ScriptedTransport([_Answer(429, headers: [('Tollgate-Error', 'rateLimited'), ('Retry-After', '60')])]);
    await expectLater(
      _client(slow, retry: RetryPolicy.standard).request(endpoint: 'openai/v1/models', method: 'GET'),
      throwsA(isA<RateLimitedException>().having((error) => error.retryAfter, 'retryAfter', const Duration(seconds: 60))),
    );
    expect(slow.calls, hasLength(1));
  });

  test("a provider's 429 passes through and is not retried", () async {
    final transport = _ScriptedTransport([_Answer(429, body: '{"error":"slow down"}')]);
    await expectLater(
      _client(transport, retry: RetryPolicy.standard).request(endpoint: 'openai/v1/models', method: 'GET'),
      throwsA(isA<ProviderErrorException>()
          .having((error) => error.status, 'status', 429)
          .having((error) => error.body, 'body', '{"error":"slow down"}')),
    );
    expect(transport.calls, hasLength(1));
  });

  test('a stream is parsed per its Content-Type', () async {
    final transport = _ScriptedTransport([
      _Answer(200, headers: [('content-type', 'text/event-stream')], body: 'data: {"a":1}\n\nevent: done\ndata: [DONE]\n\n'),
    ]);
    final events = await _client(transport).stream(endpoint: 'openai/v1/chat/completions', body: '{}').toList();
    expect(events, [const SseEvent(data: '{"a":1}'), const SseEvent(event: 'done', data: '[DONE]')]);
  });

  test('a cut stream ends with NetworkException after the complete events', () async {
    final transport = _ScriptedTransport([_Answer(200, body: '{"n":1}\n{"n":2}\n{"n":', cut: true)]);
    final events = <StreamEvent>[];
    Object? failure;
    await for (final event in _client(transport)
        .stream(endpoint: 'ollama/v1/api/chat', format: StreamFormat.ndjson)
        .handleError((Object error) => failure = error)) {
      events.add(event);
    }
    expect(events, [const JsonEvent({'n': 1}), const JsonEvent({'n': 2})]);
    expect(failure, isA<NetworkException>().having((error) => error.reason, 'reason', 'stream_cut'));
  });

  test('the device-token cache refreshes before expiry', () async {
    var now = 1000000;
    final cache = DeviceTokenCache(
      () async => DeviceToken('t$now', expiresAtMs: now + 3600000, receivedAtMs: now, method: 'development'),
      clock: () => now,
    );
    final first = await cache.deviceToken();
    now += 3000000; // 10 minutes left: kept
    expect(await cache.deviceToken(), first);
    now += 400000; // under 5 minutes left: refreshed
    expect(await cache.deviceToken(), isNot(first));
    expect(cache.attestationCount, 2);
  });
}
