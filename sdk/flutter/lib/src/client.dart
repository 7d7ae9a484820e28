import 'dart:async';
import 'dart:convert';
import 'dart:typed_data';

import 'behaviour.dart';
import 'device_tokens.dart';
import 'error_mapper.dart';
import 'exceptions.dart';
import 'me.dart';
import 'realtime.dart';
import 'request_builder.dart';
import 'stream_parsers.dart';
import 'transport.dart';
import 'user_tokens.dart';

/// Cancels a [TollgateClient.request] in flight: the call fails with a [NetworkException] (reason `cancelled`) and the
/// connection is closed, which makes the gateway abort the provider request.
class CancelToken {
  final Completer<void> _cancelled = Completer<void>();

  /// True once [cancel] ran.
  bool get isCancelled => _cancelled.isCompleted;

  /// Cancels every call this token was given to.
  void cancel() {
    if (!_cancelled.isCompleted) _cancelled.complete();
  }

  Future<void> get _whenCancelled => _cancelled.future;
}

/// The SDK version and its `Tollgate-SDK` header value.
const String tollgateVersion = '1.2.0';
const String tollgateSdkHeader = 'flutter/$tollgateVersion';

/// Automatic retries of `rateLimited` (the gateway's own 429, never a provider's). Off unless set.
class RetryPolicy {
  const RetryPolicy({this.maxRetries = 3, this.maxWait = const Duration(seconds: 30)});

  /// Retries after the first attempt.
  final int maxRetries;

  /// Total time one call may spend waiting between attempts. A wait that would go beyond it is not started: the call
  /// fails at once with [RateLimitedException].
  final Duration maxWait;

  /// No automatic retry (the default).
  static const none = RetryPolicy(maxRetries: 0, maxWait: Duration.zero);

  /// Up to 3 retries within 30 seconds, honoring `Retry-After` (1, 2, 4 s when the gateway gave none).
  static const standard = RetryPolicy();
}

/// A complete (non-streamed) 2xx response.
class TollgateResponse {
  TollgateResponse(this.status, this.headers, this.bodyBytes);

  final int status;

  /// Response headers, names in lower case.
  final Map<String, String> headers;

  /// The body as received.
  final Uint8List bodyBytes;

  /// The body as UTF-8 text (invalid bytes replaced).
  String get text => utf8.decode(bodyBytes, allowMalformed: true);

  /// The body parsed as JSON (`jsonDecode`). Throws a [FormatException] when it is not JSON.
  Object? json() => jsonDecode(text);

  /// The gateway's `Tollgate-Request-Id`, to match its logs.
  String? get requestId => headers['tollgate-request-id'];
}

/// Calls providers through a Tollgate gateway: `{baseUrl}/v1/proxy/{endpoint}` with the Tollgate headers
/// (protocol.md). Every failure is a [TollgateException]. Apps use the `Tollgate` facade; a client of its own suits
/// tests and tools.
class TollgateClient {
  /// Throws [InvalidRequestException] for a bad [baseUrl] or [appToken].
  TollgateClient({
    required String baseUrl,
    required String appToken,
    required this.deviceTokens,
    HttpTransport? transport,
    String sdk = tollgateSdkHeader,
    this.retry = RetryPolicy.none,
    int Function()? clock,
  })  : builder = RequestBuilder(baseUrl, appToken, sdk),
        transport = transport ?? PackageHttpTransport(),
        _clock = clock ?? systemNowMs;

  final RequestBuilder builder;
  final HttpTransport transport;
  final DeviceTokenSource deviceTokens;
  final RetryPolicy retry;
  final int Function() _clock;
  bool _assertions = false;

  /// The signed-in user's token for `Tollgate-User-Token` (see [setUserTokenProvider]).
  final UserTokens userTokens = UserTokens();

  /// Sets the callback returning the signed-in user's ID token (e.g. Firebase
  /// `(force) => FirebaseAuth.instance.currentUser?.getIdToken(force) ?? Future.value(null)`): called when no fresh
  /// token is cached, and once more with `true` after the gateway's `user_token_expired`. Null signs out.
  void setUserTokenProvider(UserTokenProvider? provider) => userTokens.setProvider(provider);

  /// True once the gateway asked for per-request assertions (`assertion_required`): every request from then on
  /// carries `Tollgate-Assertion`.
  bool get sendsAssertions => _assertions;

  /// Sends a request through the gateway and returns the whole 2xx response.
  ///
  /// [endpoint] is `{provider}/{version}/{path}[?query]`, e.g. `openai/v1/chat/completions`; percent-encode spaces and
  /// non-ASCII characters. [body]: a `Map`/`List` is sent as JSON, a `String` as UTF-8 (both `application/json` unless
  /// [headers] set a `Content-Type`), a `Uint8List` as bytes (`application/octet-stream`), or a [RequestBody].
  Future<TollgateResponse> request({
    required String endpoint,
    String method = 'POST',
    Object? body,
    List<(String, String)> query = const [],
    Map<String, String> headers = const {},
    Duration? timeout,
    CancelToken? cancelToken,
  }) =>
      send(TollgateRequest(method: method, endpoint: endpoint, body: RequestBody.from(body), query: query, headers: headers),
          timeout: timeout, cancelToken: cancelToken);

  /// Sends [request] and returns the whole 2xx response. [timeout] bounds the whole call (attestation, retries and
  /// the body included) and [cancelToken] cancels it: either fails with a [NetworkException] (reason `timeout` or
  /// `cancelled`) and closes the connection.
  Future<TollgateResponse> send(TollgateRequest request, {Duration? timeout, CancelToken? cancelToken}) async {
    HttpResult? opened;
    var abandoned = false;
    Future<Uint8List> whole() async {
      final result = await _open(request);
      if (abandoned) {
        await result.cancel();
        throw const NetworkException('Cancelled.', reason: 'cancelled');
      }
      opened = result;
      try {
        return await result.readAll();
      } on Exception catch (error) {
        throw NetworkException('The response was cut: $error', reason: 'stream_cut', cause: error);
      }
    }

    final completer = Completer<Uint8List>();
    Timer? timer;
    void abandon(TollgateException error) {
      if (completer.isCompleted) return;
      abandoned = true;
      completer.completeError(error);
      final result = opened;
      if (result != null) unawaited(result.cancel());
    }

    whole().then((Uint8List bytes) {
      if (!completer.isCompleted) completer.complete(bytes);
    }, onError: (Object error, StackTrace stack) {
      if (!completer.isCompleted) completer.completeError(error, stack);
    });
    if (timeout != null) {
      timer = Timer(timeout, () => abandon(NetworkException('No answer within ${timeout.inMilliseconds} ms.', reason: 'timeout')));
    }
    if (cancelToken != null) {
      unawaited(cancelToken._whenCancelled.then((_) => abandon(const NetworkException('Cancelled.', reason: 'cancelled'))));
    }
    final Uint8List bytes;
    try {
      bytes = await completer.future;
    } finally {
      timer?.cancel();
    }
    final result = opened!;
    final headers = <String, String>{};
    for (final (name, value) in result.headers) {
      headers.putIfAbsent(name.toLowerCase(), () => value);
    }
    return TollgateResponse(result.status, headers, bytes);
  }

  /// `GET /v1/me`: every limit and budget of this device (and user) with what remains. Counts against nothing.
  Future<Me> me() async {
    final token = await deviceTokens.deviceToken();
    final now = _clock();
    final headers = <(String, String)>[
      ('Tollgate-App-Token', builder.appToken),
      ('Tollgate-Device-Token', token),
      ('Tollgate-Request-Time', '$now'),
      ('Tollgate-SDK', builder.sdk),
    ];
    final user = await userTokens.current(now);
    if (user != null) headers.add(('Tollgate-User-Token', user));
    final HttpResult result;
    try {
      result = await transport.send(HttpCall('GET', '${builder.base}/v1/me', headers, Uint8List(0)));
    } on TollgateException {
      rethrow;
    } on Exception catch (error) {
      throw noResponse(error);
    }
    final bytes = await result.readAll();
    final error = mapError(result.status, result.headers, bytes, _clock());
    if (error != null) throw error;
    return Me.parse(utf8.decode(bytes, allowMalformed: true));
  }

  /// Opens a realtime session (protocol.md, "Realtime sessions") at [endpoint], e.g.
  /// `openai/v1/realtime?model=gpt-realtime`: the device token is refreshed when due before the upgrade and the
  /// Tollgate headers go on it. A refused upgrade throws its typed error (an attestationFailed that asks for a refresh,
  /// and `user_token_expired`, are retried once). See [RealtimeSession] for the closes. Each of [protocols] (the
  /// provider's own subprotocols) must be an RFC 9110 token not starting with `tollgate`, else
  /// [InvalidRequestException] before anything is sent.
  Future<RealtimeSession> realtime(String endpoint, {List<String> protocols = const [], Map<String, String> headers = const {}}) async {
    checkRealtimeProtocols(protocols);
    final request = TollgateRequest(method: 'GET', endpoint: endpoint, headers: headers);
    var resent = false;
    var userResent = false;
    var forceRefresh = false;
    String? user = await userTokens.current(_clock());
    while (true) {
      final token = await deviceTokens.deviceToken(forceRefresh: forceRefresh);
      forceRefresh = false;
      final built = builder.build(request, token, _clock());
      final sent = [...built.headers];
      if (user != null) sent.add(('Tollgate-User-Token', user));
      if (_assertions) {
        final assertion = await deviceTokens.assertion(built.digest);
        if (assertion != null && assertion.isNotEmpty) sent.add(('Tollgate-Assertion', assertion));
      }
      final RealtimeUpgrade upgrade;
      try {
        upgrade = await upgradeWebSocket(built.url, sent, protocols);
      } on TollgateException {
        rethrow;
      } on Exception catch (error) {
        throw noResponse(error);
      }
      switch (upgrade) {
        case RealtimeOpened(:final socket):
          return RealtimeSession(socket, onGatewayClose: (RealtimeClose close) {
            final error = close.error();
            // Only 4403 device_revoked changes the device session (it stops); a close never attests a new key.
            if (close.action == RealtimeAction.stop && error != null) deviceTokens.stop(error);
          });
        case RealtimeRefused(:final status, headers: final responseHeaders, :final body):
          final error = mapError(status, responseHeaders, body, _clock()) ??
              NetworkException('The gateway did not upgrade the connection (HTTP $status).');
          if (error is AttestationFailedException && status == 403) {
            final action = await deviceTokens.reportError(token, error.reason);
            if (action == ReasonAction.stop) {
              deviceTokens.stop(error);
              throw error;
            }
            if (!resent && action.retriesOnce) {
              resent = true;
              if (action == ReasonAction.assert_) {
                _assertions = true;
              } else {
                deviceTokens.invalidate(token);
                forceRefresh = true;
              }
              continue;
            }
          }
          if (error is UnauthorizedException && error.reason == 'user_token_expired' && userTokens.isSet && !userResent) {
            userResent = true;
            user = await userTokens.refreshed();
            continue;
          }
          throw error;
      }
    }
  }

  /// Sends a request and emits events as the provider sends them (see [streamRequest]).
  Stream<StreamEvent> stream({
    required String endpoint,
    String method = 'POST',
    Object? body,
    StreamFormat? format,
    List<(String, String)> query = const [],
    Map<String, String> headers = const {},
  }) =>
      streamRequest(
        TollgateRequest(method: method, endpoint: endpoint, body: RequestBody.from(body), query: query, headers: headers),
        format: format,
      );

  /// Sends [request] when the stream is listened to and emits events as bytes arrive, parsed per [format] (null: from
  /// the response's `Content-Type`: `text/event-stream` → sse, NDJSON → ndjson, JSON → jsonArray, else raw). Cancelling
  /// the subscription (leaving an `await for`) closes the connection, which makes the gateway abort the provider
  /// request. A cut or malformed stream ends with a [NetworkException] after the events that were complete.
  Stream<StreamEvent> streamRequest(TollgateRequest request, {StreamFormat? format}) {
    late final StreamController<StreamEvent> controller;
    StreamSubscription<List<int>>? subscription;
    HttpResult? opened;
    var cancelled = false;

    void fail(Object error) {
      if (controller.isClosed) return;
      controller.addError(error);
      controller.close();
    }

    Future<void> start() async {
      final HttpResult result;
      try {
        result = await _open(request);
      } catch (error) {
        fail(error);
        return;
      }
      if (cancelled) {
        await result.cancel();
        return;
      }
      opened = result;
      final parser = (format ?? StreamFormat.forContentType(result.header('content-type'))).newParser();

      /// Emits what the parser produced; false when the format broke (the stream then ends with the error).
      bool deliver(StreamParseResult parsed) {
        for (final event in parsed.events) {
          if (!controller.isClosed) controller.add(event);
        }
        final failure = parsed.error;
        if (failure == null) return true;
        fail(NetworkException('The stream is malformed: ${failure.message}', reason: 'malformed_stream', cause: failure));
        return false;
      }

      subscription = result.body.listen(
        (chunk) {
          if (!deliver(parser.feed(chunk))) {
            subscription?.cancel();
            result.cancel();
          }
        },
        onError: (Object error) {
          // A cut: what was complete stays delivered; nothing pending is flushed.
          fail(NetworkException('The stream was cut: $error', reason: 'stream_cut', cause: error));
        },
        onDone: () {
          if (deliver(parser.finish()) && !controller.isClosed) controller.close();
        },
        cancelOnError: true,
      );
      controller
        ..onPause = subscription?.pause
        ..onResume = subscription?.resume;
    }

    controller = StreamController<StreamEvent>(
      onListen: () {
        start();
      },
      onCancel: () async {
        cancelled = true;
        await subscription?.cancel();
        await opened?.cancel();
      },
    );
    return controller.stream;
  }

  /// Gets a device token now (e.g. at start-up, to hide the first request's latency); later calls reuse it.
  Future<void> prepare() async {
    await deviceTokens.deviceToken();
  }

  /// The 2xx response head of [request] with every rule of [send] (for [TollgateHttpClient]); throws the mapped error,
  /// a provider's own error as [ProviderErrorException] with its body.
  Future<HttpResult> openForHttpClient(TollgateRequest request) => _open(request);

  /// Sends [request] and returns the 2xx response head, or throws the mapped error. Around the exchange:
  /// - everything the SDK can refuse is refused before asking for a device token or sending;
  /// - a 403 attestationFailed is reported to the device session with its `reason`, which answers the action (rule
  ///   `reason-action`): stop (`device_revoked`: surface the error, never ask for a token again until the app
  ///   restarts), refresh or attest (a forced refresh, then one resend), assert (`Tollgate-Assertion` on this resend
  ///   and every later request), none (surface the error);
  /// - rateLimited: retried per [retry], waiting `Retry-After` within the budget.
  Future<HttpResult> _open(TollgateRequest request) async {
    builder.build(request, 'placeholder', _clock());
    final method = request.method.toUpperCase();
    if ((request.body?.bytes.isNotEmpty ?? false) && (method == 'GET' || method == 'HEAD')) {
      throw InvalidRequestException('A $method request cannot have a body.', reason: 'bad_body');
    }
    var retries = 0;
    var waitedSeconds = 0;
    var resent = false;
    var userResent = false;
    var forceRefresh = false;
    // Asked once per call (the callback runs only when nothing fresh is cached), and once more on expiry.
    String? user = await userTokens.current(_clock());
    while (true) {
      try {
        final token = await deviceTokens.deviceToken(forceRefresh: forceRefresh);
        forceRefresh = false;
        final built = builder.build(request, token, _clock());
        _checkUriKeepsPath(built);
        final headers = [...built.headers];
        if (user != null) headers.add(('Tollgate-User-Token', user));
        if (_assertions) {
          final assertion = await deviceTokens.assertion(built.digest);
          if (assertion != null && assertion.isNotEmpty) headers.add(('Tollgate-Assertion', assertion));
        }
        final HttpResult result;
        try {
          result = await transport.send(HttpCall(built.method, built.url, headers, built.body));
        } on TollgateException {
          rethrow;
        } on Exception catch (error) {
          throw noResponse(error);
        }
        if (result.status >= 200 && result.status <= 299) return result;
        final Uint8List bytes;
        try {
          bytes = await result.readAll();
        } on Exception catch (error) {
          throw NetworkException("The gateway's error answer (HTTP ${result.status}) was cut: $error", reason: 'stream_cut', cause: error);
        }
        final error = mapError(result.status, result.headers, bytes, _clock()) ??
            NetworkException('Unexpected HTTP ${result.status}.');
        if (error is AttestationFailedException && result.status == 403) {
          final action = await deviceTokens.reportError(token, error.reason);
          if (action == ReasonAction.stop) {
            deviceTokens.stop(error);
            throw error;
          }
          if (!resent && action.retriesOnce) {
            resent = true;
            if (action == ReasonAction.assert_) {
              _assertions = true;
            } else {
              deviceTokens.invalidate(token);
              forceRefresh = true;
            }
            continue;
          }
        }
        if (error is UnauthorizedException && error.reason == 'user_token_expired' && userTokens.isSet && !userResent) {
          userResent = true;
          user = await userTokens.refreshed();
          continue;
        }
        throw error;
      } on RateLimitedException catch (error) {
        final delay = retryDelaySeconds(error.kind, error.retryAfterSeconds, retries, waitedSeconds,
            maxRetries: retry.maxRetries > 0 ? retry.maxRetries : null, maxWaitSeconds: retry.maxWait.inSeconds);
        if (delay == null) rethrow;
        retries += 1;
        waitedSeconds += delay;
        await Future<void>.delayed(Duration(seconds: delay));
      }
    }
  }

  /// Dart's `Uri` normalizes percent-escapes (it decodes those of unreserved characters, `%41` → `A`, and upper-cases
  /// hex digits), so the path on the wire could differ from the one the digest covers. Such an endpoint is refused
  /// rather than sent with a digest that does not match: write unreserved characters plainly and hex digits upper-case.
  static void _checkUriKeepsPath(BuiltRequest built) {
    final Uri uri;
    try {
      uri = Uri.parse(built.url);
    } on FormatException catch (error) {
      throw InvalidRequestException('The request URL is not valid: ${error.message}');
    }
    final sent = uri.hasQuery ? '${uri.path}?${uri.query}' : uri.path;
    if (!sent.endsWith(built.pathWithQuery)) {
      throw InvalidRequestException(
          'The endpoint would be rewritten on the wire ("${built.pathWithQuery}" → "$sent"): do not percent-encode '
          'letters, digits or "-._~", and write escapes with upper-case hex digits.');
    }
  }
}
