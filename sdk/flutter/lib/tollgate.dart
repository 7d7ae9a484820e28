/// Call AI providers from a Flutter app through a Tollgate gateway, without shipping a provider key.
///
/// ```dart
/// import 'package:tollgate/tollgate.dart';
///
/// Future<void> main() async {
///   WidgetsFlutterBinding.ensureInitialized();
///   await Tollgate.initialize('at_...');
///   runApp(const MyApp());
/// }
/// ```
library tollgate;

export 'src/behaviour.dart'
    show
        AttestationRequest,
        ReasonAction,
        base64UrlNoPad,
        buildAttestationRequest,
        encodeAssertion,
        parseAttestationResponse,
        reasonAction,
        refreshDue,
        refreshMarginMs,
        retryDelaySeconds,
        tokenExpiryMs;
export 'src/client.dart' show CancelToken, RetryPolicy, TollgateClient, TollgateResponse, tollgateSdkHeader, tollgateVersion;
export 'src/http_client.dart' show TollgateHttpClient;
export 'src/me.dart' show Me, MeLimit;
export 'src/realtime.dart'
    show
        RealtimeAction,
        RealtimeBinary,
        RealtimeClose,
        RealtimeMessage,
        RealtimeSession,
        RealtimeText,
        RealtimeUpgradeMode,
        RealtimeUpgradeRequest,
        buildRealtimeUpgrade,
        checkRealtimeProtocols;
export 'src/user_tokens.dart' show UserTokenProvider, UserTokens;
export 'src/device_tokens.dart'
    show DeviceSession, DeviceToken, DeviceTokenCache, DeviceTokenSource, StaticDeviceToken, jwsExpiryMs;
export 'src/error_mapper.dart' show mapError, noResponse, parseHttpDate, parseRetryAfter;
export 'src/exceptions.dart';
export 'src/native_device.dart' show TollgateNative, nativeException;
export 'src/request_builder.dart' show BuiltRequest, RequestBody, RequestBuilder, TollgateRequest, requestDigest, sha256Hex;
export 'src/stream_parsers.dart';
export 'src/tollgate.dart' show Tollgate;
export 'src/transport.dart' show HttpCall, HttpResult, HttpTransport, PackageHttpTransport;
