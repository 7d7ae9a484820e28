/// Call AI providers from a Flutter app through a Tollgate gateway, without shipping a provider key.
///
/// ```dart
/// import 'package:tollgate/tollgate.dart';
///
/// Future<void> main() async {
///   WidgetsFlutterBinding.ensureInitialized();
///   await Tollgate.initialize('at_...', baseUrl: 'https://gateway.example.com');
///   runApp(const MyApp());
/// }
/// ```
library tollgate;

export 'src/attestation_api.dart' show AttestationApi, AttestationArtifact, Challenge;
export 'src/client.dart'
    show AssertionPolicy, RetryPolicy, TollgateClient, TollgateResponse, tollgateSdkHeader, tollgateVersion;
export 'src/device_tokens.dart' show DeviceToken, DeviceTokenCache, DeviceTokenSource, StaticDeviceToken, jwsExpiryMs;
export 'src/error_mapper.dart' show mapError, noResponse, parseHttpDate, parseRetryAfter;
export 'src/exceptions.dart';
export 'src/native_attestation.dart' show NativeAttestation;
export 'src/request_builder.dart' show BuiltRequest, RequestBody, RequestBuilder, TollgateRequest, requestDigest, sha256Hex;
export 'src/stream_parsers.dart';
export 'src/tollgate.dart' show Tollgate;
export 'src/transport.dart' show HttpCall, HttpResult, HttpTransport, PackageHttpTransport;
