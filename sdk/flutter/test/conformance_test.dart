// Runs every vector of sdk/conformance/*.json (sdk/conformance/README.md): one test per vector, named after it. Stream
// vectors are fed three ways: as chunked in the vector, as one whole chunk, and one byte at a time.
//
//   cd sdk/flutter && flutter test            (the folder defaults to ../conformance;
//   TOLLGATE_CONFORMANCE_DIR=/path flutter test   overrides it)
import 'dart:convert';
import 'dart:io';
import 'dart:typed_data';

import 'package:flutter_test/flutter_test.dart';
import 'package:tollgate/src/behaviour.dart';
import 'package:tollgate/src/device_tokens.dart';
import 'package:tollgate/src/error_mapper.dart';
import 'package:tollgate/src/native_device.dart';
import 'package:tollgate/src/exceptions.dart';
import 'package:tollgate/src/request_builder.dart';
import 'package:tollgate/src/stream_parsers.dart';
import 'package:tollgate/src/tollgate.dart';
import 'package:tollgate/src/client.dart';
import 'package:tollgate/src/me.dart';
import 'package:tollgate/src/realtime.dart';
import 'package:tollgate/src/transport.dart';
import 'package:tollgate/src/user_tokens.dart';

Directory _conformanceDirectory() {
  final override = Platform.environment['TOLLGATE_CONFORMANCE_DIR'];
  if (override != null && override.isNotEmpty) return Directory(override);
  // `flutter test` and `dart test` run with the package root (sdk/flutter) as the working directory.
  return Directory('../conformance');
}

/// A field that must be there: a missing one fails the vector instead of skipping an assertion.
Object? _field(Map<String, dynamic> object, String name) {
  if (!object.containsKey(name)) fail('missing field "$name"');
  return object[name];
}

String _string(Map<String, dynamic> object, String name) {
  final value = _field(object, name);
  if (value is! String) fail('field "$name" is not a string');
  return value;
}

Map<String, dynamic> _object(Map<String, dynamic> object, String name) {
  final value = _field(object, name);
  if (value is! Map<String, dynamic>) fail('field "$name" is not an object');
  return value;
}

List<dynamic> _list(Map<String, dynamic> object, String name) {
  final value = _field(object, name);
  if (value is! List) fail('field "$name" is not an array');
  return value;
}

/// `{"text": ...}` (UTF-8) or `{"base64": ...}`.
Uint8List _bytes(Object? value) {
  if (value is Map<String, dynamic>) {
    if (value['text'] is String) return Uint8List.fromList(utf8.encode(value['text'] as String));
    if (value['base64'] is String) return base64.decode(value['base64'] as String);
  }
  fail('bytes need text or base64');
}

void main() {
  final directory = _conformanceDirectory();
  final files = directory.existsSync()
      ? (directory.listSync().whereType<File>().where((file) => file.path.endsWith('.json')).toList()
        ..sort((a, b) => a.path.compareTo(b.path)))
      : <File>[];

  test('the vector files are there', () {
    final names = files.map((file) => file.uri.pathSegments.last).toSet();
    expect(
        names,
        containsAll([
          'client-behaviour.json', 'error-mapping.json', 'request-building.json', 'stream-parsing.json', //
          'realtime-close-codes.json', 'subprotocols.json', 'user-token.json', 'me.json',
        ]),
        reason: 'no conformance vectors in ${directory.absolute.path}');
  });

  for (final file in files) {
    final name = file.uri.pathSegments.last;
    final document = jsonDecode(file.readAsStringSync()) as Map<String, dynamic>;
    group(name, () {
      test('format version and kind', () {
        expect(document['version'], 1, reason: '$name: unknown format version');
        expect([
          'request-building', 'error-mapping', 'stream-parsing', 'client-behaviour', //
          'realtime-close-codes', 'subprotocols', 'user-token', 'me',
        ], contains(document['kind']), reason: '$name: unknown vector kind');
        expect(document['vectors'], isNotEmpty);
      });
      final kind = document['kind'];
      final vectors = (document['vectors'] as List).cast<Map<String, dynamic>>();
      for (final vector in vectors) {
        test(vector['name'] as String, () async {
          switch (kind) {
            case 'request-building':
              _requestBuilding(vector);
            case 'error-mapping':
              _errorMapping(vector);
            case 'stream-parsing':
              _streamParsing(vector);
            case 'client-behaviour':
              await _clientBehaviour(vector);
            case 'realtime-close-codes':
              _realtimeClose(vector);
            case 'subprotocols':
              _subprotocols(vector);
            case 'user-token':
              expect(UserTokens.marginMs, (document['constants'] as Map<String, dynamic>)['userTokenMarginMs']);
              await _userToken(vector);
            case 'me':
              await _me(vector);
            default:
              fail('unknown vector kind "$kind" in $name');
          }
        });
      }
    });
  }
}

// ---- request-building.json ----

void _requestBuilding(Map<String, dynamic> vector) {
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  final requestTimeMs = _field(input, 'requestTimeMs') as int;
  BuiltRequest build() {
    final builder = RequestBuilder(_string(input, 'baseUrl'), _string(input, 'appToken'), _string(input, 'sdk'));
    RequestBody? body;
    final bodyField = input['body'];
    if (bodyField != null) {
      body = (bodyField as Map<String, dynamic>)['text'] is String
          ? RequestBody.text(bodyField['text'] as String)
          : RequestBody.bytes(_bytes(bodyField));
    }
    final query = [
      for (final pair in (input['query'] as List? ?? const []))
        ((pair as List)[0] as String, pair[1] as String),
    ];
    final headers = {
      for (final entry in ((input['headers'] as Map<String, dynamic>?) ?? const <String, dynamic>{}).entries)
        entry.key: entry.value as String,
    };
    final request = TollgateRequest(
      method: _string(input, 'method'),
      endpoint: _string(input, 'endpoint'),
      body: body,
      query: query,
      headers: headers,
    );
    return builder.build(request, _string(input, 'deviceToken'), requestTimeMs);
  }

  if (expected.containsKey('error')) {
    expect(expected['error'], 'invalidRequest');
    expect(build, throwsA(isA<InvalidRequestException>()));
    return;
  }
  final built = build();
  expect(built.method, _string(expected, 'method'), reason: 'method');
  expect(built.url, _string(expected, 'url'), reason: 'url');
  expect(built.pathWithQuery, _string(expected, 'pathWithQuery'), reason: 'pathWithQuery');
  final expectedHeaders = {
    for (final entry in _object(expected, 'headers').entries) entry.key.toLowerCase(): entry.value as String,
  };
  final actualHeaders = <String, String>{};
  for (final (headerName, value) in built.headers) {
    expect(actualHeaders.containsKey(headerName.toLowerCase()), isFalse, reason: 'header $headerName set twice');
    actualHeaders[headerName.toLowerCase()] = value;
  }
  expect(actualHeaders, expectedHeaders, reason: 'headers');
  expect(built.bodySha256, _string(expected, 'bodySha256'), reason: 'bodySha256');
  expect(built.canonicalRequest, _string(expected, 'canonicalRequest'), reason: 'canonicalRequest');
  expect(built.digest, _string(expected, 'digest'), reason: 'digest');
  expect(requestDigest(built.method, built.pathWithQuery, requestTimeMs, built.body), _string(expected, 'digest'),
      reason: 'requestDigest');
}

// ---- error-mapping.json ----

void _errorMapping(Map<String, dynamic> vector) {
  final input = _object(vector, 'input');
  final expected = _field(vector, 'expected');
  final nowMs = _field(input, 'nowMs') as int;
  final status = _field(input, 'status');
  final TollgateException? error;
  if (status == null) {
    error = noResponse(SocketException(input['transportError'] as String? ?? 'no response'));
  } else {
    final headers = [
      for (final pair in _list(input, 'headers')) ((pair as List)[0] as String, pair[1] as String),
    ];
    final body = _field(input, 'body');
    error = mapError(status as int, headers, body == null ? null : utf8.encode(body as String), nowMs);
  }
  if (expected == null) {
    expect(error, isNull, reason: 'a 2xx is not an error');
    return;
  }
  final fields = expected as Map<String, dynamic>;
  final kind = _string(fields, 'kind');
  if (error == null) fail('expected $kind, got no error');
  expect(error.kind, kind, reason: 'kind');
  final typed = switch (kind) {
    'unauthorized' => error is UnauthorizedException,
    'attestationFailed' => error is AttestationFailedException,
    'rateLimited' => error is RateLimitedException,
    'secretNotFound' => error is SecretNotFoundException,
    'invalidRequest' => error is InvalidRequestException,
    'networkError' => error is NetworkException,
    'providerError' => error is ProviderErrorException,
    _ => fail('unknown kind $kind'),
  };
  expect(typed, isTrue, reason: 'class ${error.runtimeType} for kind $kind');
  if (fields.containsKey('errorType')) expect(error.errorType, fields['errorType'], reason: 'errorType');
  if (fields.containsKey('message')) expect(error.message, fields['message'], reason: 'message');
  if (fields.containsKey('requestId')) expect(error.requestId, fields['requestId'], reason: 'requestId');
  if (fields.containsKey('retryAfterSeconds')) {
    expect((error as RateLimitedException).retryAfterSeconds, fields['retryAfterSeconds'], reason: 'retryAfterSeconds');
  }
  if (fields.containsKey('status')) expect((error as ProviderErrorException).status, fields['status'], reason: 'status');
  if (fields.containsKey('body')) expect((error as ProviderErrorException).body, fields['body'], reason: 'body');
  if (fields.containsKey('reason')) expect(error.reason, fields['reason'], reason: 'reason');
}

// ---- client-behaviour.json ----

/// A session handing out a fixed token (for the refresh-due check through the cache).
class _FixedSession implements DeviceSession {
  _FixedSession(this.receivedAtMs, this.expiresAtMs);

  final int receivedAtMs;
  final int expiresAtMs;
  int asked = 0;

  @override
  Future<DeviceToken> token({required bool forceRefresh}) async {
    asked += 1;
    return DeviceToken('t$asked', expiresAtMs: expiresAtMs, receivedAtMs: receivedAtMs);
  }

  @override
  Future<ReasonAction> reportError(String deviceToken, String? reason) async => ReasonAction.none;

  @override
  Future<String?> assertion(String digestHex) async => null;
}

/// A native side whose configuration holds no gateway address; it records what it was asked.
class _NoAddressNative extends TollgateNative {
  _NoAddressNative();

  final calls = <String>[];

  @override
  Future<String?> gatewayUrl() async {
    calls.add('getConfiguration');
    return null;
  }

  @override
  Future<void> configure({required String appToken, required String gatewayUrl, String? developmentToken}) async {
    calls.add('configure');
  }

  @override
  Future<DeviceToken> token({required bool forceRefresh}) async {
    calls.add('deviceToken');
    throw StateError('no token expected');
  }
}

/// Dispatches on `rule`; an unknown rule fails.
Future<void> _clientBehaviour(Map<String, dynamic> vector) async {
  final rule = _string(vector, 'rule');
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  switch (rule) {
    case 'assertion-encoding': {
      final bytes = hexBytes(_string(input, 'bytesHex'));
      if (expected.containsKey('error')) {
        expect(() => encodeAssertion(bytes),
            throwsA(isA<TollgateException>().having((error) => error.kind, 'kind', _string(expected, 'error'))));
      } else {
        expect(encodeAssertion(bytes), _string(expected, 'header'));
      }
    }
    case 'attestation-request': {
      final built = buildAttestationRequest(
          _string(input, 'method'), _string(input, 'appToken'), _object(input, 'fields').cast<String, Object?>());
      expect(built.method, _string(expected, 'method'));
      expect(built.path, _string(expected, 'path'));
      Map<String, String> lower(Iterable<(String, String)> pairs) => {for (final (name, value) in pairs) name.toLowerCase(): value};
      final expectedHeaders = [for (final pair in _list(expected, 'headers')) ((pair as List)[0] as String, pair[1] as String)];
      expect(lower(built.headers), lower(expectedHeaders), reason: 'exact headers');
      expect(built.body, _field(expected, 'body'));
      if (expected.containsKey('clientDataHashHex')) expect(hexOf(built.clientDataHash!), expected['clientDataHashHex']);
      if (expected.containsKey('attestationChallengeHex')) {
        expect(hexOf(built.attestationChallenge!), expected['attestationChallengeHex']);
      }
      if (expected.containsKey('signedMessageHex')) expect(hexOf(built.signedMessage!), expected['signedMessageHex']);
      if (expected.containsKey('requestHash')) expect(built.requestHash, expected['requestHash']);
      if (expected.containsKey('nonce')) expect(built.nonce, expected['nonce']);
    }
    case 'attestation-response': {
      expect(_field(input, 'status'), 200);
      final body = _string(input, 'body');
      final receivedAtMs = _field(input, 'receivedAtMs') as int;
      if (expected.containsKey('error')) {
        expect(() => parseAttestationResponse(body, receivedAtMs),
            throwsA(isA<TollgateException>().having((error) => error.kind, 'kind', _string(expected, 'error'))));
      } else {
        final parsed = parseAttestationResponse(body, receivedAtMs);
        expect(parsed.deviceToken, _string(expected, 'deviceToken'));
        expect(parsed.deviceId, _field(expected, 'deviceId'));
        expect(parsed.expiresAtMs, _field(expected, 'expiresAtMs'));
      }
    }
    case 'token-expiry': {
      expect(
        tokenExpiryMs(_string(input, 'deviceToken'), _field(input, 'expiresAt') as String?, _field(input, 'receivedAtMs') as int),
        _field(expected, 'expiresAtMs'),
      );
    }
    case 'refresh-due': {
      final receivedAtMs = _field(input, 'receivedAtMs') as int;
      final expiresAtMs = _field(input, 'expiresAtMs') as int;
      final nowMs = _field(input, 'nowMs') as int;
      final due = _field(expected, 'refresh') as bool;
      expect(refreshDue(receivedAtMs, expiresAtMs, nowMs), due);
      // Through the cache: a second deviceToken() asks the session again exactly when due.
      var now = receivedAtMs;
      final session = _FixedSession(receivedAtMs, expiresAtMs);
      final cache = DeviceTokenCache(session, clock: () => now);
      await cache.deviceToken();
      now = nowMs;
      await cache.deviceToken();
      expect(session.asked - 1, due ? 1 : 0, reason: 'asked again');
    }
    case 'stream-format': {
      expect(StreamFormat.forContentType(_field(input, 'contentType') as String?).wireName, _string(expected, 'format'));
    }
    case 'retry': {
      final options = _field(input, 'options') as Map<String, dynamic>?;
      final delay = retryDelaySeconds(
        _string(input, 'errorKind'),
        _field(input, 'retryAfterSeconds') as int?,
        _field(input, 'retriesDone') as int,
        _field(input, 'waitedSeconds') as int,
        maxRetries: options == null ? null : _field(options, 'maxRetries') as int,
        maxWaitSeconds: options == null ? 0 : _field(options, 'maxWaitSeconds') as int,
      );
      expect(delay != null, _field(expected, 'retry'));
      expect(delay, _field(expected, 'delaySeconds'));
    }
    case 'not-initialized': {
      final state = _string(input, 'state');
      final call = _string(input, 'call');
      if (!['request', 'stream'].contains(call)) fail('unknown call "$call"');
      switch (state) {
        case 'not-initialized': {
          Tollgate.reset();
          final Future<Object?> attempt = call == 'request'
              ? Tollgate.request(endpoint: 'openai/v1/chat/completions', body: '{}')
              : Tollgate.stream(endpoint: 'openai/v1/chat/completions', body: '{}').toList();
          await expectLater(
              attempt,
              throwsA(isA<InvalidRequestException>()
                  .having((error) => error.kind, 'kind', _string(expected, 'kind'))
                  .having((error) => error.reason, 'reason', _string(expected, 'reason'))));
        }
        case 'no-gateway-url': {
          // The native configuration has no address and none is passed: initialize records the error, calls fail
          // with it before anything is sent (no configure, no token).
          final native = _NoAddressNative();
          await Tollgate.initialize('at_0123456789abcdefghijABCDEFGHIJkl', native: native);
          expect(Tollgate.isInitialized, isFalse);
          final Future<Object?> attempt = call == 'request'
              ? Tollgate.request(endpoint: 'openai/v1/chat/completions', body: '{}')
              : Tollgate.stream(endpoint: 'openai/v1/chat/completions', body: '{}').toList();
          await expectLater(
              attempt,
              throwsA(isA<InvalidRequestException>()
                  .having((error) => error.kind, 'kind', _string(expected, 'kind'))
                  .having((error) => error.reason, 'reason', _string(expected, 'reason'))));
          expect(native.calls, ['getConfiguration']);
          Tollgate.reset();
        }
        default:
          fail('unknown state "$state"');
      }
    }
    case 'reason-action': {
      final action = reasonAction(_string(input, 'errorType'), _field(input, 'reason') as String?);
      expect(action.wireName, _string(expected, 'action'));
      expect(action.retriesOnce, _field(expected, 'retryOnce'));
      expect(action.newKey, _field(expected, 'newKey'));
    }
    default:
      fail('unknown rule "$rule"');
  }
}

// ---- stream-parsing.json ----

void _streamParsing(Map<String, dynamic> vector) {
  final formatName = _string(vector, 'format');
  final format = StreamFormat.fromWireName(formatName);
  if (format == null) fail('unknown format $formatName');
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  final chunks = [for (final chunk in _list(input, 'chunks')) _bytes(chunk)];
  final whole = base64.decode(_string(input, 'base64'));
  if (input.containsKey('text')) {
    expect(utf8.decode(whole), input['text'], reason: 'input.text and input.base64 differ');
  }
  expect([for (final chunk in chunks) ...chunk], whole, reason: 'chunks do not add up to input.base64');
  final end = _string(input, 'end');
  if (end != 'clean' && end != 'cut') fail('unknown end $end');
  final cut = end == 'cut';
  final expectedError = _field(expected, 'error');
  final ways = <String, List<List<int>>>{
    'as given': chunks,
    'whole': [whole],
    'byte by byte': [for (final byte in whole) [byte]],
  };
  for (final MapEntry(key: way, value: feed) in ways.entries) {
    final (events, error) = _run(format, feed, cut);
    expect(error, expectedError, reason: 'error ($way)');
    if (format == StreamFormat.raw) {
      final delivered = <int>[
        for (final event in events) ...(event as BytesEvent).bytes,
      ];
      expect(base64.encode(delivered), _string(expected, 'bytes'), reason: 'bytes ($way)');
    } else {
      final expectedEvents = [for (final event in _list(expected, 'events')) _expectedEvent(event as Map<String, dynamic>)];
      expect(events, expectedEvents, reason: 'events ($way)');
    }
  }
}

/// Feeds [chunks] as the client does; a cut is the transport failing after the last chunk (no finish).
(List<StreamEvent>, String?) _run(StreamFormat format, List<List<int>> chunks, bool cut) {
  final parser = format.newParser();
  final events = <StreamEvent>[];
  for (final chunk in chunks) {
    final result = parser.feed(chunk);
    events.addAll(result.events);
    if (result.error != null) return (events, 'networkError');
  }
  if (cut) return (events, 'networkError');
  final result = parser.finish();
  events.addAll(result.events);
  return (events, result.error == null ? null : 'networkError');
}

StreamEvent _expectedEvent(Map<String, dynamic> event) {
  if (event.containsKey('json')) return JsonEvent(event['json']);
  return SseEvent(
    event: _string(event, 'event'),
    data: _string(event, 'data'),
    id: event['id'] as String?,
    retry: event['retry'] as int?,
  );
}

// ---- realtime-close-codes.json ----

void _realtimeClose(Map<String, dynamic> vector) {
  final input = _object(vector, 'input');
  final close = RealtimeClose(_field(input, 'code') as int, _string(input, 'reason'));
  final expected = _field(vector, 'expected');
  if (expected == null) {
    expect(close.kind, isNull, reason: 'a normal end');
    expect(close.error(), isNull, reason: 'a normal end');
    return;
  }
  final fields = expected as Map<String, dynamic>;
  expect(close.kind, _field(fields, 'kind'), reason: 'kind');
  expect(close.errorType, _field(fields, 'errorType'), reason: 'errorType');
  expect(close.closeCode, _field(fields, 'closeCode'), reason: 'closeCode');
  expect(close.errorReason, _field(fields, 'reason'), reason: 'reason');
  expect(close.message, _field(fields, 'message'), reason: 'message');
  expect(close.action.name, _field(fields, 'action'), reason: 'action');
  expect(close.mayReconnect, _field(fields, 'mayReconnect'), reason: 'mayReconnect');
  expect(close.newKey, _field(fields, 'newKey'), reason: 'newKey');
  final error = close.error();
  if (error == null) fail('no error for ${close.code}');
  expect(error.kind, _field(fields, 'kind'), reason: 'error kind');
  if (error is ProviderErrorException) {
    expect(error.status, close.code, reason: 'provider close code as status');
    expect(error.body, _field(fields, 'message'), reason: 'provider close reason as body');
  } else {
    expect(error.reason, _field(fields, 'reason'), reason: 'error reason');
    expect(error.errorType, _field(fields, 'errorType'), reason: 'error errorType');
  }
}

// ---- subprotocols.json ----

void _subprotocols(Map<String, dynamic> vector) {
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  final appToken = _string(input, 'appToken');
  final mode = switch (_string(input, 'mode')) {
    'headers' => RealtimeUpgradeMode.headers,
    'subprotocols' => RealtimeUpgradeMode.subprotocols,
    final String other => fail('unknown mode $other'),
  };
  RealtimeUpgradeRequest build() => buildRealtimeUpgrade(
        RequestBuilder(_string(input, 'baseUrl'), appToken, _string(input, 'sdk')),
        endpoint: _string(input, 'endpoint'),
        mode: mode,
        deviceToken: _string(input, 'deviceToken'),
        userToken: input['userToken'] as String?,
        requestTimeMs: _field(input, 'requestTimeMs') as int,
        protocols: _list(input, 'providerProtocols').cast<String>(),
      );
  if (expected.containsKey('error')) {
    expect(_string(expected, 'error'), 'invalidRequest');
    expect(build, throwsA(isA<InvalidRequestException>()));
    return;
  }
  final built = build();
  expect(built.url, _string(expected, 'url'), reason: 'url');
  expect(built.pathWithQuery, _string(expected, 'pathWithQuery'), reason: 'pathWithQuery');
  final headers = {for (final (name, value) in built.headers) name.toLowerCase(): value};
  expect(headers.length, built.headers.length, reason: 'duplicate header names');
  expect(headers, {for (final entry in _object(expected, 'headers').entries) entry.key.toLowerCase(): entry.value}, reason: 'headers');
  expect(built.protocols, _list(expected, 'protocols'), reason: 'protocols');
  expect(built.secWebSocketProtocol, _field(expected, 'secWebSocketProtocol'), reason: 'secWebSocketProtocol');
  if (expected.containsKey('digest')) {
    expect(built.canonicalRequest, _string(expected, 'canonicalRequest'), reason: 'canonicalRequest');
    expect(built.digest, _string(expected, 'digest'), reason: 'digest');
  }
}

// ---- user-token.json and me.json: through a client whose transport records what was sent ----

class _ScriptedTransport implements HttpTransport {
  _ScriptedTransport(this._answer);

  final (int, List<(String, String)>, String) Function(HttpCall call) _answer;
  final List<HttpCall> calls = [];

  @override
  Future<HttpResult> send(HttpCall call) async {
    calls.add(call);
    final (status, headers, body) = _answer(call);
    return HttpResult(status, headers, Stream<List<int>>.value(utf8.encode(body)));
  }
}

/// A device token source that counts what the client asked of it: a user-token answer never touches the device.
class _CountingDeviceTokens implements DeviceTokenSource {
  int forcedRefreshes = 0;
  int invalidations = 0;
  int stops = 0;

  @override
  Future<String> deviceToken({bool forceRefresh = false}) async {
    if (forceRefresh) forcedRefreshes += 1;
    return 'e30.e30.c2ln';
  }

  @override
  void invalidate(String token) => invalidations += 1;

  @override
  Future<ReasonAction> reportError(String token, String? reason) async => reasonAction('attestationFailed', reason);

  @override
  void stop(TollgateException error) => stops += 1;

  @override
  Future<String?> assertion(String digestHex) async => null;
}

(int, List<(String, String)>, String) _gatewayError(int status, String type, String? reason) => (
      status,
      [('Tollgate-Error', type), ('Content-Type', 'application/json')],
      jsonEncode({
        'error': {'type': type, if (reason != null) 'reason': reason, 'message': 'refused', 'requestId': 'req_1'},
      }),
    );

Future<void> _userToken(Map<String, dynamic> vector) async {
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  final nowMs = _field(input, 'nowMs') as int;
  final answers = [..._list(input, 'answers').cast<Map<String, dynamic>>()];
  final transport = _ScriptedTransport((HttpCall call) {
    expect(call.url, isNot(contains('/v1/attest/')));
    if (answers.isEmpty) fail('more requests than answers');
    final answer = answers.removeAt(0);
    final status = _field(answer, 'status') as int;
    if (status == 200) return (200, [('Content-Type', 'application/json')], '{}');
    return _gatewayError(status, _string(answer, 'errorType'), answer['reason'] as String?);
  });
  final devices = _CountingDeviceTokens();
  final client = TollgateClient(
      baseUrl: 'https://gateway.example.com', appToken: 'at_0123456789abcdefghijABCDEFGHIJkl', deviceTokens: devices, transport: transport, clock: () => nowMs);
  final forced = <bool>[];
  final results = _field(input, 'callbackResults');
  if (results is List) {
    final queue = [...results];
    client.setUserTokenProvider((bool forceRefresh) async {
      forced.add(forceRefresh);
      if (queue.isEmpty) fail('the callback was called more often than the vector allows');
      final next = queue.removeAt(0);
      if (next is Map) throw StateError(next['throws'] as String);
      return next as String?;
    });
  }
  if (input['cached'] is String) client.userTokens.prime(input['cached'] as String);
  TollgateException? outcome;
  final requests = _field(input, 'requests') as int;
  for (var index = 0; index < requests && outcome == null; index += 1) {
    try {
      await client.request(endpoint: 'openai/v1/chat/completions', body: <String, Object?>{});
    } on TollgateException catch (error) {
      outcome = error;
    }
  }
  expect(forced.length, _field(expected, 'callbackCalls'), reason: 'callback calls');
  expect(forced, _list(expected, 'callbackForced'), reason: 'forced');
  String? userToken(HttpCall call) {
    for (final (name, value) in call.headers) {
      if (name.toLowerCase() == 'tollgate-user-token') return value;
    }
    return null;
  }

  expect(transport.calls.map(userToken).toList(), _list(expected, 'sentUserTokens'), reason: 'Tollgate-User-Token sent');
  final want = _field(expected, 'outcome');
  if (want == null) {
    expect(outcome, isNull, reason: outcome?.message);
  } else {
    final fields = want as Map<String, dynamic>;
    if (outcome == null) fail('expected ${fields['kind']}, every call succeeded');
    expect(outcome.kind, _field(fields, 'kind'), reason: 'outcome kind');
    expect(outcome.reason, _field(fields, 'reason'), reason: 'outcome reason');
  }
  // No user-token answer made the device refresh, attest or stop.
  expect([devices.forcedRefreshes, devices.invalidations, devices.stops], [0, 0, 0], reason: 'device actions');
}

Future<void> _me(Map<String, dynamic> vector) async {
  final input = _object(vector, 'input');
  final expected = _object(vector, 'expected');
  final status = _field(input, 'status') as int;
  final body = _string(input, 'body');
  final transport = _ScriptedTransport((HttpCall call) {
    final headers = [('Content-Type', 'application/json')];
    if (status != 200) headers.add(('Tollgate-Error', ((jsonDecode(body) as Map<String, dynamic>)['error'] as Map<String, dynamic>)['type'] as String));
    return (status, headers, body);
  });
  final client = TollgateClient(
      baseUrl: 'https://gateway.example.com',
      appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
      deviceTokens: const StaticDeviceToken('e30.e30.c2ln'),
      transport: transport,
      clock: () => 1764000000000);
  Me? result;
  TollgateException? failure;
  try {
    result = await client.me();
  } on TollgateException catch (error) {
    failure = error;
  }
  expect(transport.calls.map((HttpCall call) => call.url).toList(), ['https://gateway.example.com/v1/me']);
  expect(transport.calls.single.method, 'GET');
  expect(transport.calls.single.headers.map(((String, String) header) => header.$1).toList()..sort(),
      ['Tollgate-App-Token', 'Tollgate-Device-Token', 'Tollgate-Request-Time', 'Tollgate-SDK']);
  if (expected.containsKey('error')) {
    if (failure == null) fail('expected ${expected['error']}, got an answer');
    expect(failure.kind, _string(expected, 'error'), reason: 'kind');
    if (expected.containsKey('reason')) expect(failure.reason, expected['reason'], reason: 'reason');
    return;
  }
  if (result == null) fail('failed: ${failure?.message}');
  expect(result.deviceId, _field(expected, 'deviceId'), reason: 'deviceId');
  expect(result.userId, _field(expected, 'userId'), reason: 'userId');
  expect(result.signedIn, _field(expected, 'signedIn'), reason: 'signedIn');
  final limits = _list(expected, 'limits').cast<Map<String, dynamic>>();
  expect(result.limits.length, limits.length, reason: 'limits');
  for (var index = 0; index < limits.length; index += 1) {
    final want = limits[index];
    final got = result.limits[index];
    expect(got.name, _field(want, 'name'), reason: 'name');
    expect(got.scope, _field(want, 'scope'), reason: 'scope');
    expect(got.unit, _field(want, 'unit'), reason: 'unit');
    expect(got.limit, _field(want, 'limit'), reason: 'limit');
    expect(got.remaining, _field(want, 'remaining'), reason: 'remaining');
    expect(got.window, _field(want, 'window'), reason: 'window');
    expect(got.resetsAtMs, _field(want, 'resetsAtMs'), reason: 'resetsAtMs');
  }
}
