/// Every failure the SDK reports (protocol.md, "Errors"): the five errors of the product brief plus
/// [InvalidRequestException] and [ProviderErrorException], so that no failure is silent. The class is `sealed`, so a
/// `switch` over it is exhaustive:
///
/// ```dart
/// try {
///   final response = await Tollgate.request(endpoint: 'openai/v1/chat/completions', method: 'POST', body: {...});
/// } on AttestationFailedException {
///   // not the genuine app on a real device, or revoked
/// } on UnauthorizedException {
///   // wrong, rotated or disabled app token
/// } on RateLimitedException catch (error) {
///   // wait error.retryAfter before retrying
/// } on SecretNotFoundException {
///   // no key for this provider on the gateway yet
/// } on NetworkException {
///   // offline or provider unreachable: offer a retry
/// } on InvalidRequestException catch (error) {
///   // a bug in the request: log error.message
/// } on ProviderErrorException catch (error) {
///   // the provider answered error.status with error.body
/// }
/// ```
sealed class TollgateException implements Exception {
  const TollgateException(this.message, {this.errorType, this.requestId, this.reason, this.cause});

  /// A human sentence: the gateway's `error.message`, or the SDK's own.
  final String message;

  /// The raw `Tollgate-Error` type when the gateway made the error (`providerNotFound`, `upstreamTimeout`, ...).
  final String? errorType;

  /// The gateway's request id (body `error.requestId`, else the `Tollgate-Request-Id` header), to match its logs.
  final String? requestId;

  /// A stable snake_case reason when known: the gateway's `error.reason` (`device_revoked`, `device_token_expired`,
  /// `rate_limited_device`, ... see docs/reference/errors.md), or the SDK's own (`stream_cut`, `not_initialized`,
  /// `gateway_url_missing`, `native_module_missing`, ...).
  final String? reason;

  /// The underlying error, if any.
  final Object? cause;

  /// The kind, named as in the conformance vectors: `attestationFailed`, `unauthorized`, `rateLimited`,
  /// `secretNotFound`, `networkError`, `invalidRequest`, `providerError`.
  String get kind;

  @override
  String toString() => 'TollgateException.$kind: $message';
}

/// 403 from the gateway (device token refused, attestation or assertion rejected), or a failure of this device's own
/// attestation step (see [reason]).
final class AttestationFailedException extends TollgateException {
  const AttestationFailedException(super.message, {super.errorType, super.requestId, super.reason, super.cause});

  @override
  String get kind => 'attestationFailed';
}

/// 401: the app token is missing, malformed, unknown, revoked, or the app is disabled.
final class UnauthorizedException extends TollgateException {
  const UnauthorizedException(super.message, {super.errorType, super.requestId, super.reason});

  @override
  String get kind => 'unauthorized';
}

/// 429 from the gateway: a limit was exceeded. [retryAfter] comes from `Retry-After` (seconds or an HTTP-date), null
/// when the gateway did not say. A provider's own 429 is a [ProviderErrorException] instead.
final class RateLimitedException extends TollgateException {
  const RateLimitedException(super.message, {this.retryAfter, super.errorType, super.requestId, super.reason});

  /// How long to wait before trying again, or null when unknown.
  final Duration? retryAfter;

  /// [retryAfter] in whole seconds.
  int? get retryAfterSeconds => retryAfter?.inSeconds;

  @override
  String get kind => 'rateLimited';
}

/// 424: the gateway has no secret (provider key) for this provider on this app.
final class SecretNotFoundException extends TollgateException {
  const SecretNotFoundException(super.message, {super.errorType, super.requestId, super.reason});

  @override
  String get kind => 'secretNotFound';
}

/// No usable response: offline, DNS, TLS, reset, a cut or malformed stream, or the gateway could not reach the
/// provider (502/504, [errorType] `upstreamUnavailable` / `upstreamTimeout`).
final class NetworkException extends TollgateException {
  const NetworkException(super.message, {super.errorType, super.requestId, super.reason, super.cause});

  @override
  String get kind => 'networkError';
}

/// The request was refused: by the SDK before anything was sent (unsafe endpoint, bad header, not initialized), or by
/// the gateway (400/404/405/413).
final class InvalidRequestException extends TollgateException {
  const InvalidRequestException(super.message, {super.errorType, super.requestId, super.reason});

  @override
  String get kind => 'invalidRequest';
}

/// The provider answered non-2xx (without `Tollgate-Error`); its [body] passes through unchanged, as UTF-8 text.
final class ProviderErrorException extends TollgateException {
  ProviderErrorException(this.status, this.body, {Map<String, String>? headers, super.requestId})
      : headers = headers ?? const {},
        super('The provider answered HTTP $status.');

  /// The provider's HTTP status.
  final int status;

  /// The provider's body, unchanged.
  final String body;

  /// The response headers, names in lower case.
  final Map<String, String> headers;

  @override
  String get kind => 'providerError';
}
