import 'dart:math';

import 'package:flutter/foundation.dart' show debugPrint, kDebugMode;
import 'package:http/http.dart' as http;

import 'attestation_api.dart';
import 'client.dart';
import 'device_tokens.dart';
import 'exceptions.dart';
import 'native_attestation.dart';
import 'request_builder.dart';
import 'stream_parsers.dart';
import 'transport.dart';

/// The Tollgate SDK for Flutter: call AI providers through your Tollgate gateway without shipping a provider key.
///
/// Initialize once in `main()`, before `runApp`; then [request] and [stream] from anywhere:
///
/// ```dart
/// Future<void> main() async {
///   WidgetsFlutterBinding.ensureInitialized();
///   await Tollgate.initialize('at_...', baseUrl: 'https://gateway.example.com');
///   runApp(const MyApp());
/// }
///
/// final response = await Tollgate.request(endpoint: 'openai/v1/chat/completions', method: 'POST', body: {...});
/// await for (final event in Tollgate.stream(endpoint: 'anthropic/v1/messages', method: 'POST', body: {...},
///     headers: {'anthropic-version': '2023-06-01'})) { ... }
/// ```
///
/// Any call before [initialize] fails with an [InvalidRequestException].
class Tollgate {
  Tollgate._();

  /// The SDK version.
  static const String version = tollgateVersion;

  /// The `Tollgate-SDK` header value.
  static const String sdkHeader = tollgateSdkHeader;

  /// The message of the error raised by calls made before [initialize].
  static const String notInitializedMessage =
      "Tollgate is not initialized: call `await Tollgate.initialize(appToken, baseUrl: ...)` in main(), before runApp.";

  static TollgateClient? _client;
  static TollgateException? _configurationError;

  /// Sets the SDK up; call once in `main()` before `runApp` (after `WidgetsFlutterBinding.ensureInitialized()`, since
  /// attestation uses a platform channel). Nothing goes on the network here: the first request attests the device (or
  /// call [prepare] to do it early). Calling it again replaces the configuration.
  ///
  /// An invalid [baseUrl] or [appToken] does not crash the app: every later call fails with an
  /// [InvalidRequestException] naming it.
  ///
  /// - [appToken]: the app token (`at_...`) from the dashboard. It identifies the app; it is not a provider key, and no
  ///   provider key ever belongs in the app.
  /// - [baseUrl]: the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed).
  /// - [developmentToken]: a development token (`dt_...`) for simulators and emulators, used **only in debug builds**
  ///   (`kDebugMode`); ignored in profile and release builds, where the device attests natively.
  /// - [developmentDeviceId]: a stable id for this simulator or emulator (1-128 of `A-Z a-z 0-9 . _ : -`); default a
  ///   random id per launch.
  /// - [retry]: automatic retries of `rateLimited`; off by default.
  /// - [assertions]: when requests carry a device assertion (`Tollgate-Assertion`).
  /// - [httpClient]: a `package:http` client to use (e.g. `cupertino_http` or `cronet_http`).
  static Future<void> initialize(
    String appToken, {
    required String baseUrl,
    String? developmentToken,
    String? developmentDeviceId,
    RetryPolicy retry = RetryPolicy.none,
    AssertionPolicy assertions = AssertionPolicy.whenRequired,
    http.Client? httpClient,
  }) async {
    _client = null;
    _configurationError = null;
    try {
      final transport = PackageHttpTransport(httpClient);
      final builder = RequestBuilder(baseUrl, appToken, sdkHeader);
      final api = AttestationApi(builder, transport);
      const native = NativeAttestation();
      final development = kDebugMode && developmentToken != null && developmentToken.trim().isNotEmpty ? developmentToken : null;
      final deviceId = developmentDeviceId ?? _randomDeviceId();
      final tokens = DeviceTokenCache(() async {
        if (development != null) {
          return api.exchange('development', {'developmentToken': development, 'deviceId': deviceId});
        }
        final challenge = await api.challenge();
        final artifact = await native.attest(challenge.value);
        return api.exchange(artifact.method, artifact.body);
      });
      _client = TollgateClient(
        baseUrl: baseUrl,
        appToken: appToken,
        deviceTokens: tokens,
        transport: transport,
        retry: retry,
        assertions: assertions,
        // Development tokens have no device key: nothing to sign with.
        assertionSigner: development != null ? null : native.assertDigest,
      );
    } on TollgateException catch (error) {
      _configurationError = error;
      if (kDebugMode) debugPrint('Tollgate.initialize: $error');
    }
  }

  /// True once [initialize] has run with valid settings.
  static bool get isInitialized => _client != null;

  /// The client behind this facade (throws [InvalidRequestException] before [initialize]).
  static TollgateClient get client => _client ?? (throw _notReady());

  /// Forgets the configuration (tests, sign-out); calls then fail until [initialize] runs again.
  static void reset() {
    _client = null;
    _configurationError = null;
  }

  static TollgateException _notReady() => _configurationError ?? const InvalidRequestException(notInitializedMessage);

  /// Sends a request through the gateway and returns the whole 2xx response. See [TollgateClient.request].
  static Future<TollgateResponse> request({
    required String endpoint,
    String method = 'POST',
    Object? body,
    List<(String, String)> query = const [],
    Map<String, String> headers = const {},
  }) async {
    final client = _client ?? (throw _notReady());
    return client.request(endpoint: endpoint, method: method, body: body, query: query, headers: headers);
  }

  /// Streams a response as events (a `Stream`, for `await for`). See [TollgateClient.streamRequest].
  static Stream<StreamEvent> stream({
    required String endpoint,
    String method = 'POST',
    Object? body,
    StreamFormat? format,
    List<(String, String)> query = const [],
    Map<String, String> headers = const {},
  }) {
    final client = _client;
    if (client == null) return Stream<StreamEvent>.error(_notReady());
    return client.stream(endpoint: endpoint, method: method, body: body, format: format, query: query, headers: headers);
  }

  /// Attests now (e.g. at start-up, to hide the first request's latency); later requests reuse the device token.
  static Future<void> prepare() async {
    final client = _client ?? (throw _notReady());
    await client.prepare();
  }

  static String _randomDeviceId() {
    final random = Random.secure();
    final hex = List.generate(16, (_) => random.nextInt(256).toRadixString(16).padLeft(2, '0')).join();
    return 'dev-$hex';
  }
}
