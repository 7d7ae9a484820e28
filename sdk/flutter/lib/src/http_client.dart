import 'dart:convert';
import 'dart:typed_data';

import 'package:http/http.dart' as http;

import 'client.dart';
import 'exceptions.dart';
import 'request_builder.dart';

/// An `http.BaseClient` that routes a provider SDK through Tollgate (openai_dart's `client:`, dart_openai's
/// `OpenAI.httpClient`-style hooks, any package that takes an `http.Client`): each request to
/// `{gateway}/v1/proxy/…` gets the Tollgate headers (device token refreshed when due, user token, assertion when
/// required) and the SDK's retries; the provider SDK's own `Authorization` (a placeholder: the gateway holds the key)
/// is not sent. Answers stream through unbuffered; a provider's error comes back as its response for the provider SDK
/// to read; a gateway refusal is thrown as its [TollgateException]. Other addresses go through [inner] untouched.
///
/// ```dart
/// final client = OpenAIClient(
///   baseUrl: Tollgate.providerBaseUrl('openai/v1'),
///   apiKey: 'unused',
///   client: Tollgate.httpClient(),
/// );
/// ```
class TollgateHttpClient extends http.BaseClient {
  TollgateHttpClient(this._client, {http.Client? inner}) : _inner = inner ?? http.Client();

  final TollgateClient _client;
  final http.Client _inner;

  static const Set<String> _dropped = {'authorization', 'host', 'connection', 'content-length', 'transfer-encoding', 'cookie'};

  @override
  Future<http.StreamedResponse> send(http.BaseRequest request) async {
    final prefix = '${_client.builder.base}/v1/proxy/';
    final url = request.url.toString();
    if (!url.startsWith(prefix)) return _inner.send(request);
    final Uint8List bytes = await request.finalize().toBytes();
    final headers = <String, String>{};
    request.headers.forEach((String name, String value) {
      final lower = name.toLowerCase();
      if (!_dropped.contains(lower) && !lower.startsWith('tollgate-')) headers[name] = value;
    });
    final contentType = request.headers['content-type'] ?? request.headers['Content-Type'];
    final tollgateRequest = TollgateRequest(
      method: request.method,
      endpoint: url.substring(prefix.length),
      body: bytes.isEmpty ? null : RequestBody.bytes(bytes, contentType: contentType ?? 'application/octet-stream'),
      headers: headers,
    );
    try {
      final result = await _client.openForHttpClient(tollgateRequest);
      final responseHeaders = <String, String>{};
      for (final (name, value) in result.headers) {
        final lower = name.toLowerCase();
        responseHeaders[lower] = responseHeaders.containsKey(lower) ? '${responseHeaders[lower]}, $value' : value;
      }
      final length = int.tryParse(responseHeaders['content-length'] ?? '');
      return http.StreamedResponse(result.body, result.status, headers: responseHeaders, contentLength: length, request: request);
    } on ProviderErrorException catch (error) {
      // The provider's own error passes through, as the provider SDK expects to read it.
      final body = Uint8List.fromList(utf8.encode(error.body));
      return http.StreamedResponse(Stream<List<int>>.value(body), error.status, headers: error.headers, contentLength: body.length, request: request);
    }
  }

  @override
  void close() {
    _inner.close();
    super.close();
  }
}
