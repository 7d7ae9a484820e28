import 'package:flutter/foundation.dart' show debugPrint, kDebugMode;
import 'package:http/http.dart' as http;

import 'client.dart';
import 'device_tokens.dart';
import 'exceptions.dart';
import 'http_client.dart';
import 'me.dart';
import 'native_device.dart';
import 'realtime.dart';
import 'stream_parsers.dart';
import 'transport.dart';
import 'user_tokens.dart';

/// The Tollgate SDK for Flutter: call AI providers through your Tollgate gateway without shipping a provider key.
///
/// Initialize once in `main()`, before `runApp`; then [request] and [stream] from anywhere:
///
/// ```dart
/// Future<void> main() async {
///   WidgetsFlutterBinding.ensureInitialized();
///   await Tollgate.initialize('at_...');
///   runApp(const MyApp());
/// }
///
/// final response = await Tollgate.request(endpoint: 'openai/v1/chat/completions', method: 'POST', body: {...});
/// await for (final event in Tollgate.stream(endpoint: 'anthropic/v1/messages', method: 'POST', body: {...},
///     headers: {'anthropic-version': '2023-06-01'})) { ... }
/// ```
///
/// Any call before [initialize] fails with an [InvalidRequestException] (reason `not_initialized`).
class Tollgate {
  Tollgate._();

  /// The SDK version.
  static const String version = tollgateVersion;

  /// The `Tollgate-SDK` header value.
  static const String sdkHeader = tollgateSdkHeader;

  /// The message of the error raised by calls made before [initialize].
  static const String notInitializedMessage =
      "Tollgate is not initialized: call `await Tollgate.initialize(appToken)` in main(), before runApp.";

  static TollgateClient? _client;
  static UserTokenProvider? _userTokenProvider;
  static TollgateNative? _native;
  static TollgateException? _configurationError;

  /// Sets the SDK up; call once in `main()` before `runApp` (after `WidgetsFlutterBinding.ensureInitialized()`, since
  /// it uses the plugin's platform channel). It reads the gateway address from the app's native configuration
  /// (Info.plist `TollgateGatewayURL` on iOS, AndroidManifest meta-data `dev.tollgate.GATEWAY_URL` on Android) unless
  /// [gatewayUrl] is given, and hands the settings to the native SDK, which attests the device on the first request
  /// (or call [prepare] to do it early) and keeps the device token in the Keychain / Keystore across launches. Calling
  /// it again replaces the configuration.
  ///
  /// A missing address (reason `gateway_url_missing`), an invalid one or an invalid [appToken] does not crash the app:
  /// every later call fails with an [InvalidRequestException] naming it (printed in debug builds).
  ///
  /// - [appToken]: the app token (`at_...`) from the dashboard. It identifies the app; it is not a provider key, and no
  ///   provider key ever belongs in the app.
  /// - [gatewayUrl]: the gateway, e.g. `https://gateway.example.com` (a path prefix is allowed), when it is not in
  ///   the native configuration.
  /// - [developmentToken]: a development token (`dt_...`) for simulators and emulators, handed to the native SDK
  ///   **only in debug builds** (`kDebugMode`); ignored in profile and release builds, where the device attests
  ///   natively.
  /// - [retry]: automatic retries of `rateLimited`; off by default.
  /// - [httpClient]: a `package:http` client to use (e.g. `cupertino_http` or `cronet_http`).
  static Future<void> initialize(
    String appToken, {
    String? gatewayUrl,
    @Deprecated('Use gatewayUrl.') String? baseUrl,
    String? developmentToken,
    RetryPolicy retry = RetryPolicy.none,
    http.Client? httpClient,
    TollgateNative native = const TollgateNative(),
  }) async {
    _client = null;
    _native = null;
    _configurationError = null;
    try {
      var address = gatewayUrl ?? baseUrl;
      if (address == null || address.trim().isEmpty) address = await native.gatewayUrl();
      if (address == null) {
        throw const InvalidRequestException(
            'No gateway address: set TollgateGatewayURL in Info.plist and dev.tollgate.GATEWAY_URL in '
            'AndroidManifest.xml, or pass gatewayUrl: to Tollgate.initialize.',
            reason: 'gateway_url_missing');
      }
      final client = TollgateClient(
        baseUrl: address,
        appToken: appToken,
        deviceTokens: DeviceTokenCache(native),
        transport: PackageHttpTransport(httpClient),
        retry: retry,
      );
      final development = developmentToken?.trim();
      await native.configure(
        appToken: appToken,
        gatewayUrl: client.builder.base,
        developmentToken: kDebugMode && development != null && development.isNotEmpty ? development : null,
      );
      client.setUserTokenProvider(_userTokenProvider);
      _client = client;
      _native = native;
    } on TollgateException catch (error) {
      _configurationError = error;
      if (kDebugMode) debugPrint('Tollgate.initialize: $error');
    }
  }

  /// True once [initialize] has run with valid settings.
  static bool get isInitialized => _client != null;

  /// The client behind this facade (throws [InvalidRequestException] before [initialize]).
  static TollgateClient get client => _client ?? (throw _notReady());

  /// Forgets the configuration (tests); calls then fail until [initialize] runs again.
  static void reset() {
    _client = null;
    _native = null;
    _configurationError = null;
  }

  /// Forgets the stored device token (the native Keychain / Keystore entry and the memory cache), e.g. at sign-out;
  /// the next call gets a new one. A revocation stays in force until the app restarts.
  static Future<void> clear() async {
    final client = _client ?? (throw _notReady());
    final tokens = client.deviceTokens;
    if (tokens is DeviceTokenCache) tokens.clear();
    await _native?.clear();
  }

  static TollgateException _notReady() =>
      _configurationError ?? const InvalidRequestException(notInitializedMessage, reason: 'not_initialized');

  /// Sends a request through the gateway and returns the whole 2xx response. See [TollgateClient.request].
  static Future<TollgateResponse> request({
    required String endpoint,
    String method = 'POST',
    Object? body,
    List<(String, String)> query = const [],
    Map<String, String> headers = const {},
    Duration? timeout,
    CancelToken? cancelToken,
  }) async {
    final client = _client ?? (throw _notReady());
    return client.request(
        endpoint: endpoint, method: method, body: body, query: query, headers: headers, timeout: timeout, cancelToken: cancelToken);
  }

  /// Opens a realtime session (WebSocket) through the gateway. See [TollgateClient.realtime].
  static Future<RealtimeSession> realtime(String endpoint, {List<String> protocols = const [], Map<String, String> headers = const {}}) async {
    final client = _client ?? (throw _notReady());
    return client.realtime(endpoint, protocols: protocols, headers: headers);
  }

  /// The signed-in user's ID token callback (see [TollgateClient.setUserTokenProvider]); null at sign-out. May be set
  /// before [initialize].
  static void setUserTokenProvider(UserTokenProvider? provider) {
    _userTokenProvider = provider;
    _client?.setUserTokenProvider(provider);
  }

  /// `GET /v1/me`: the limits and budgets of this device (and user) with what remains.
  static Future<Me> me() async {
    final client = _client ?? (throw _notReady());
    return client.me();
  }

  /// An `http.Client` for provider SDKs that take one (openai_dart, dart_openai): see [TollgateHttpClient].
  static http.Client httpClient() => TollgateHttpClient(_client ?? (throw _notReady()));

  /// The base URL to give a provider SDK for `{provider}/{version}`, e.g. `providerBaseUrl('openai/v1')`.
  static String providerBaseUrl(String prefix) {
    final client = _client ?? (throw _notReady());
    return '${client.builder.base}/v1/proxy/${prefix.replaceAll(RegExp(r'^/+|/+$'), '')}';
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

  /// Gets the device token now (e.g. at start-up, to hide the first request's latency); later requests reuse it.
  static Future<void> prepare() async {
    final client = _client ?? (throw _notReady());
    await client.prepare();
  }
}
