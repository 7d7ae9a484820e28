// The client against a scripted transport: headers on the wire, token refresh, retries, streams, cut streams, and the
// facade before initialize.
import 'dart:async';
import 'dart:convert';
import 'dart:io';

import 'package:flutter_test/flutter_test.dart';
import 'package:tollgate/src/behaviour.dart';
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

/// A device session as the plugin's native side behaves: tokens numbered, reportError by the shared rule.
class _ScriptedSession implements DeviceSession {
  final tokenCalls = <bool>[];
  final reports = <(String, String?)>[];
  final digests = <String>[];
  var revoked = false;

  @override
  Future<DeviceToken> token({required bool forceRefresh}) async {
    tokenCalls.add(forceRefresh);
    if (revoked) throw const AttestationFailedException('revoked', reason: 'device_revoked');
    return DeviceToken('dt-${tokenCalls.length}', expiresAtMs: 1764000000000 + 3600000, receivedAtMs: 1764000000000);
  }

  @override
  Future<ReasonAction> reportError(String deviceToken, String? reason) async {
    reports.add((deviceToken, reason));
    final action = reasonAction('attestationFailed', reason);
    if (action == ReasonAction.stop) revoked = true;
    return action;
  }

  @override
  Future<String?> assertion(String digestHex) async {
    digests.add(digestHex);
    return 'sig-${digestHex.substring(0, 8)}';
  }
}

_Answer _refused(String? reason) => _Answer(403,
    headers: [('Tollgate-Error', 'attestationFailed')],
    body: jsonEncode({
      'error': {'type': 'attestationFailed', if (reason != null) 'reason': reason, 'message': 'refused', 'requestId': 'r'},
    }));

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
    await expectLater(Tollgate.request(endpoint: 'openai/v1/models', method: 'GET'),
        throwsA(isA<InvalidRequestException>().having((error) => error.reason, 'reason', 'not_initialized')));
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

  test('a refused device token is refreshed once (device_token_expired), then the error surfaces', () async {
    final transport = _ScriptedTransport([_refused('device_token_expired'), _Answer(200, body: '{}')]);
    final session = _ScriptedSession();
    await _client(transport, tokens: DeviceTokenCache(session, clock: () => 1764000000000))
        .request(endpoint: 'openai/v1/models', method: 'GET');
    expect(session.reports, [('dt-1', 'device_token_expired')]);
    expect(session.tokenCalls, [false, true]);
    expect(_header(transport.calls[1], 'Tollgate-Device-Token'), 'dt-2');

    final twice = _ScriptedTransport([_refused(null), _refused(null)]);
    await expectLater(
      _client(twice, tokens: DeviceTokenCache(_ScriptedSession(), clock: () => 1764000000000))
          .request(endpoint: 'openai/v1/models', method: 'GET'),
      throwsA(isA<AttestationFailedException>().having((error) => error.requestId, 'requestId', 'r')),
    );
    expect(twice.calls, hasLength(2));
  });

  test('device_revoked: reportError, the error surfaces, and no token is asked for again', () async {
    final transport = _ScriptedTransport([_refused('device_revoked')]);
    final session = _ScriptedSession();
    final tokens = DeviceTokenCache(session, clock: () => 1764000000000);
    final client = _client(transport, tokens: tokens);
    await expectLater(client.request(endpoint: 'openai/v1/models', method: 'GET'),
        throwsA(isA<AttestationFailedException>().having((error) => error.reason, 'reason', 'device_revoked')));
    await expectLater(client.request(endpoint: 'openai/v1/models', method: 'GET'),
        throwsA(isA<AttestationFailedException>().having((error) => error.reason, 'reason', 'device_revoked')));
    expect(session.reports, [('dt-1', 'device_revoked')]);
    expect(session.tokenCalls, [false]);
    expect(transport.calls, hasLength(1));
    expect(tokens.isStopped, isTrue);
  });

  test('assertion_required: the resend and every later request carry Tollgate-Assertion', () async {
    final transport = _ScriptedTransport([_refused('assertion_required'), _Answer(200, body: '{}'), _Answer(200, body: '{}')]);
    final session = _ScriptedSession();
    final client = _client(transport, tokens: DeviceTokenCache(session, clock: () => 1764000000000));
    await client.request(endpoint: 'openai/v1/models', method: 'GET');
    await client.request(endpoint: 'openai/v1/models', method: 'GET');
    expect(_header(transport.calls[0], 'Tollgate-Assertion'), isNull);
    expect(session.digests, hasLength(2));
    expect(_header(transport.calls[1], 'Tollgate-Assertion'), 'sig-${session.digests[0].substring(0, 8)}');
    expect(_header(transport.calls[2], 'Tollgate-Assertion'), 'sig-${session.digests[1].substring(0, 8)}');
    expect(session.tokenCalls, [false], reason: 'no refresh for assertion_required');
    expect(client.sendsAssertions, isTrue);
  });

  test('an unrelated 403 (request_time_skew) surfaces without a refresh or a resend', () async {
    final transport = _ScriptedTransport([_refused('request_time_skew')]);
    final session = _ScriptedSession();
    await expectLater(
        _client(transport, tokens: DeviceTokenCache(session, clock: () => 1764000000000))
            .request(endpoint: 'openai/v1/models', method: 'GET'),
        throwsA(isA<AttestationFailedException>().having((error) => error.reason, 'reason', 'request_time_skew')));
    expect(session.tokenCalls, [false]);
    expect(transport.calls, hasLength(1));
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

  test('the device-token cache asks again only when the refresh margin (60 s) is reached', () async {
    var now = 1000000;
    final session = _ClockSession(() => now);
    final cache = DeviceTokenCache(session, clock: () => now);
    final first = await cache.deviceToken();
    now += 3600000 - 60001; // 60.001 s left: kept
    expect(await cache.deviceToken(), first);
    now += 2; // under 60 s left: asked again
    expect(await cache.deviceToken(), isNot(first));
    expect(cache.requestCount, 2);
  });
}

class _ClockSession implements DeviceSession {
  _ClockSession(this.clock);

  final int Function() clock;

  @override
  Future<DeviceToken> token({required bool forceRefresh}) async {
    final now = clock();
    return DeviceToken('t$now', expiresAtMs: now + 3600000, receivedAtMs: now);
  }

  @override
  Future<ReasonAction> reportError(String deviceToken, String? reason) async => ReasonAction.none;

  @override
  Future<String?> assertion(String digestHex) async => null;
}
