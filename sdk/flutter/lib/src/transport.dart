import 'dart:async';
import 'dart:typed_data';

import 'package:http/http.dart' as http;

import 'exceptions.dart';

/// One HTTP exchange as the SDK wants it sent.
class HttpCall {
  const HttpCall(this.method, this.url, this.headers, this.body);

  final String method;
  final String url;
  final List<(String, String)> headers;
  final Uint8List body;
}

/// A response head with its body still to read. [cancel] closes the connection (the gateway then aborts the provider
/// request).
class HttpResult {
  HttpResult(this.status, this.headers, this.body, {Future<void> Function()? cancel}) : _cancel = cancel;

  final int status;

  /// Header pairs (names in any case).
  final List<(String, String)> headers;

  /// The body, chunk by chunk as it arrives; single subscription.
  final Stream<List<int>> body;

  final Future<void> Function()? _cancel;

  /// The first value of header [name] (any case), or null.
  String? header(String name) {
    final wanted = name.toLowerCase();
    for (final (key, value) in headers) {
      if (key.toLowerCase() == wanted) return value;
    }
    return null;
  }

  /// Closes the connection without reading the rest of the body.
  Future<void> cancel() async {
    await _cancel?.call();
  }

  /// Reads the whole body.
  Future<Uint8List> readAll() async {
    final builder = BytesBuilder(copy: false);
    await for (final chunk in body) {
      builder.add(chunk);
    }
    return builder.takeBytes();
  }
}

/// Sends HTTP requests. Must not follow redirects (a 3xx is reported as it is) and must not buffer the body. Throws
/// any [Exception] for "no response"; the client reports it as a [NetworkException].
abstract interface class HttpTransport {
  Future<HttpResult> send(HttpCall call);
}

/// [HttpTransport] over `package:http` (`IOClient` on Android and iOS; pass `cupertino_http`'s or `cronet_http`'s
/// client to use the platform's HTTP stack). Redirects are not followed; the body streams as it arrives.
class PackageHttpTransport implements HttpTransport {
  PackageHttpTransport([http.Client? client]) : _client = client ?? http.Client();

  final http.Client _client;

  @override
  Future<HttpResult> send(HttpCall call) async {
    final Uri uri;
    try {
      uri = Uri.parse(call.url);
    } on FormatException catch (error) {
      throw InvalidRequestException('The request URL is not valid: ${error.message}');
    }
    final request = http.Request(call.method, uri)..followRedirects = false;
    for (final (name, value) in call.headers) {
      request.headers[name] = value;
    }
    // bodyBytes (unlike body) does not add a Content-Type of its own.
    if (call.body.isNotEmpty) request.bodyBytes = call.body;
    final response = await _client.send(request);
    final headers = [for (final entry in response.headers.entries) (entry.key, entry.value)];
    // Cancelling the subscription to the body closes the connection; the client does that through HttpResult.cancel.
    final controller = StreamController<List<int>>(sync: true);
    StreamSubscription<List<int>>? subscription;
    var listened = false;
    controller.onListen = () {
      listened = true;
      subscription = response.stream.listen(
        controller.add,
        onError: controller.addError,
        onDone: controller.close,
        cancelOnError: true,
      );
    };
    controller.onPause = () => subscription?.pause();
    controller.onResume = () => subscription?.resume();
    controller.onCancel = () => subscription?.cancel();
    return HttpResult(response.statusCode, headers, controller.stream, cancel: () async {
      if (!listened) {
        // Never listened to: listen and cancel at once, which releases the connection.
        listened = true;
        await response.stream.listen(null).cancel();
      } else {
        await subscription?.cancel();
      }
    });
  }
}
