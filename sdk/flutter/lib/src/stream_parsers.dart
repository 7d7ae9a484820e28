import 'dart:convert';
import 'dart:typed_data';

/// One parsed unit of a streamed response (sdk/conformance/README.md, "Event shapes").
sealed class StreamEvent {
  const StreamEvent();
}

/// A server-sent event. [event] is `message` when the stream named none; [id] is the last event id (it persists across
/// events, as in the WHATWG specification), null when empty; [retry] is the `retry:` value of this event's block.
/// `data: [DONE]` arrives as an ordinary event.
final class SseEvent extends StreamEvent {
  const SseEvent({this.event = 'message', required this.data, this.id, this.retry});

  final String event;
  final String data;
  final String? id;
  final int? retry;

  @override
  bool operator ==(Object other) =>
      other is SseEvent && other.event == event && other.data == data && other.id == id && other.retry == retry;

  @override
  int get hashCode => Object.hash(event, data, id, retry);

  @override
  String toString() => 'SseEvent(event: $event, data: $data, id: $id, retry: $retry)';
}

/// One NDJSON line or one element of a streamed JSON array, as `jsonDecode` returns it (Map, List, String, num, bool
/// or null).
final class JsonEvent extends StreamEvent {
  const JsonEvent(this.json);

  final Object? json;

  @override
  bool operator ==(Object other) => other is JsonEvent && jsonEquals(other.json, json);

  @override
  int get hashCode => 0; // deep equality: rarely hashed

  @override
  String toString() => 'JsonEvent(${jsonEncode(json)})';
}

/// Raw bytes as they arrived (audio, images, anything not framed).
final class BytesEvent extends StreamEvent {
  const BytesEvent(this.bytes);

  final Uint8List bytes;

  @override
  bool operator ==(Object other) {
    if (other is! BytesEvent || other.bytes.length != bytes.length) return false;
    for (var index = 0; index < bytes.length; index++) {
      if (other.bytes[index] != bytes[index]) return false;
    }
    return true;
  }

  @override
  int get hashCode => bytes.length;

  @override
  String toString() => 'BytesEvent(${bytes.length} bytes)';
}

/// JSON equality: objects unordered, numbers by value (`1 == 1.0`).
bool jsonEquals(Object? a, Object? b) {
  if (a is Map && b is Map) {
    if (a.length != b.length) return false;
    for (final key in a.keys) {
      if (!b.containsKey(key) || !jsonEquals(a[key], b[key])) return false;
    }
    return true;
  }
  if (a is List && b is List) {
    if (a.length != b.length) return false;
    for (var index = 0; index < a.length; index++) {
      if (!jsonEquals(a[index], b[index])) return false;
    }
    return true;
  }
  return a == b;
}

/// The streaming formats a provider can declare (`GET /v1/providers`, `streaming`).
enum StreamFormat {
  sse('sse'),
  ndjson('ndjson'),
  jsonArray('json-array'),
  raw('raw');

  const StreamFormat(this.wireName);

  /// The name in the provider catalog and the conformance vectors.
  final String wireName;

  /// A new parser for one response.
  StreamParser newParser() => switch (this) {
        StreamFormat.sse => SseParser(),
        StreamFormat.ndjson => NdjsonParser(),
        StreamFormat.jsonArray => JsonArrayParser(),
        StreamFormat.raw => RawParser(),
      };

  /// The format named [name] (`sse`, `ndjson`, `json-array`, `raw`), or null.
  static StreamFormat? fromWireName(String name) {
    for (final format in StreamFormat.values) {
      if (format.wireName == name) return format;
    }
    return null;
  }

  /// The format a response's `Content-Type` implies: `text/event-stream` → sse, NDJSON types → ndjson, JSON →
  /// jsonArray (Gemini's `streamGenerateContent` without `alt=sse`), anything else → raw.
  static StreamFormat forContentType(String? contentType) {
    final type = (contentType ?? '').split(';').first.trim().toLowerCase();
    switch (type) {
      case 'text/event-stream':
        return StreamFormat.sse;
      case 'application/x-ndjson':
      case 'application/ndjson':
      case 'application/jsonl':
      case 'application/x-jsonlines':
        return StreamFormat.ndjson;
      case 'application/json':
        return StreamFormat.jsonArray;
    }
    return type.endsWith('+json') ? StreamFormat.jsonArray : StreamFormat.raw;
  }
}

/// The body does not follow its declared format; the client reports it as a `NetworkException`.
class MalformedStreamException implements Exception {
  const MalformedStreamException(this.message);

  final String message;

  @override
  String toString() => 'MalformedStreamException: $message';
}

/// What one call to a parser produced: the complete events, then, if the format broke, the error. Events found before
/// a format error are always delivered before it.
class StreamParseResult {
  const StreamParseResult(this.events, [this.error]);

  final List<StreamEvent> events;
  final MalformedStreamException? error;
}

/// An incremental parser: feed chunks as they arrive, in order; call [finish] once when the body ended cleanly. When the
/// transport fails (a cut), do not call [finish]: whatever is pending is dropped. After a format error the parser
/// refuses further input (it answers the same error).
abstract interface class StreamParser {
  /// Parses [chunk] (any chunking: one byte, a whole body, a split multi-byte character).
  StreamParseResult feed(List<int> chunk);

  /// The body ended cleanly: flushes what the format allows, or reports a format error.
  StreamParseResult finish();
}

/// Drops one UTF-8 byte order mark (EF BB BF) at the very start of a stream, even when split across chunks; a partial
/// BOM followed by something else (or by a clean end) was content after all and is passed on.
class _BomSkipper {
  static const _bom = [0xEF, 0xBB, 0xBF];
  int _matched = 0;
  bool _decided = false;

  void push(int byte, void Function(int) sink) {
    if (!_decided) {
      if (byte == _bom[_matched]) {
        _matched += 1;
        if (_matched == _bom.length) _decided = true;
        return;
      }
      _decided = true;
      for (var index = 0; index < _matched; index++) {
        sink(_bom[index]);
      }
    }
    sink(byte);
  }

  void finish(void Function(int) sink) {
    if (!_decided) {
      _decided = true;
      for (var index = 0; index < _matched; index++) {
        sink(_bom[index]);
      }
    }
  }
}

const _lineFeed = 0x0A;
const _carriageReturn = 0x0D;

String _decode(List<int> bytes) => utf8.decode(bytes, allowMalformed: true);

/// Server-sent events as the WHATWG HTML specification ("Parsing an event stream") reads them.
///
/// - Lines end with CRLF, LF or CR, mixed freely; a CR ending one chunk and an LF starting the next are one line end.
/// - Lines are decoded as UTF-8 whole (U+FFFD for invalid bytes), so a character split across chunks is intact. The
///   split at the first `:` is done on bytes: `:` is ASCII and never part of a multi-byte sequence.
/// - An empty line dispatches; a block without `data` emits nothing; the last event id persists; `retry` only when all
///   digits; at a clean end an unterminated block is dropped (no error).
///
/// Walkthrough: `"data: a\r\ndata:b\r\n\r\n"` → `data` value `a` (one leading space removed), then `b` → buffer
/// `"a\nb\n"` → the empty line emits `SseEvent(event: 'message', data: 'a\nb')`.
class SseParser implements StreamParser {
  final _bom = _BomSkipper();
  final _line = <int>[];
  bool _skipLineFeed = false;
  final _data = StringBuffer();
  bool _hasData = false;
  String _eventType = '';
  String _lastEventId = '';
  int? _retry;
  final _out = <StreamEvent>[];

  @override
  StreamParseResult feed(List<int> chunk) {
    for (final byte in chunk) {
      _bom.push(byte, _accept);
    }
    return _take();
  }

  @override
  StreamParseResult finish() {
    _bom.finish(_accept);
    // End of file: pending data is discarded (WHATWG), with a last line that has no line end.
    return _take();
  }

  StreamParseResult _take() {
    final events = List<StreamEvent>.of(_out);
    _out.clear();
    return StreamParseResult(events);
  }

  void _accept(int byte) {
    if (_skipLineFeed) {
      _skipLineFeed = false;
      if (byte == _lineFeed) return;
    }
    if (byte == _lineFeed) {
      _endLine();
    } else if (byte == _carriageReturn) {
      _endLine();
      _skipLineFeed = true;
    } else {
      _line.add(byte & 0xFF);
    }
  }

  void _endLine() {
    final bytes = List<int>.of(_line);
    _line.clear();
    if (bytes.isEmpty) {
      _dispatch();
      return;
    }
    if (bytes[0] == 0x3A) return; // a comment
    final colon = bytes.indexOf(0x3A);
    final String field;
    var value = const <int>[];
    if (colon < 0) {
      field = _decode(bytes);
    } else {
      field = _decode(bytes.sublist(0, colon));
      value = bytes.sublist(colon + 1);
      if (value.isNotEmpty && value[0] == 0x20) value = value.sublist(1);
    }
    switch (field) {
      case 'data':
        _data
          ..write(_decode(value))
          ..write('\n');
        _hasData = true;
      case 'event':
        _eventType = _decode(value);
      case 'id':
        if (!value.contains(0)) _lastEventId = _decode(value);
      case 'retry':
        if (value.isNotEmpty && value.every((byte) => byte >= 0x30 && byte <= 0x39)) _retry = int.tryParse(_decode(value));
      default:
        break; // any other field is ignored
    }
  }

  void _dispatch() {
    if (_hasData) {
      final text = _data.toString();
      _out.add(SseEvent(
        event: _eventType.isEmpty ? 'message' : _eventType,
        data: text.substring(0, text.length - 1), // without the final "\n"
        id: _lastEventId.isEmpty ? null : _lastEventId,
        retry: _retry,
      ));
    }
    _data.clear();
    _hasData = false;
    _eventType = '';
    _retry = null;
  }
}

/// Newline-delimited JSON: one JSON value per LF-terminated line (a CR before the LF is removed), blank or
/// whitespace-only lines skipped, a leading BOM skipped. A last line without its newline is emitted at a clean end
/// (never at a cut, where [finish] is not called).
class NdjsonParser implements StreamParser {
  final _bom = _BomSkipper();
  final _line = <int>[];
  MalformedStreamException? _failure;
  final _out = <StreamEvent>[];

  @override
  StreamParseResult feed(List<int> chunk) {
    for (final byte in chunk) {
      if (_failure != null) break;
      _bom.push(byte, _content);
    }
    return _take();
  }

  @override
  StreamParseResult finish() {
    if (_failure == null) {
      _bom.finish(_line.add);
      _endLine();
    }
    return _take();
  }

  void _content(int byte) {
    if (byte == _lineFeed) {
      _endLine();
    } else {
      _line.add(byte & 0xFF);
    }
  }

  StreamParseResult _take() {
    final events = List<StreamEvent>.of(_out);
    _out.clear();
    return StreamParseResult(events, _failure);
  }

  void _endLine() {
    if (_failure != null) return;
    final bytes = List<int>.of(_line);
    _line.clear();
    // Empty, or only space / tab / CR: skipped.
    if (bytes.every((byte) => byte == 0x20 || byte == 0x09 || byte == _carriageReturn)) return;
    if (bytes.last == _carriageReturn) bytes.removeLast();
    try {
      _out.add(JsonEvent(jsonDecode(_decode(bytes))));
    } on FormatException catch (error) {
      _failure = MalformedStreamException('An NDJSON line is not valid JSON: ${error.message}');
    }
  }
}

enum _ArrayState { beforeArray, firstElementOrEnd, element, inElement, afterElement, done }

/// A top-level JSON array streamed element by element (Gemini's `streamGenerateContent` without `alt=sse`). Each
/// element is emitted once complete; strings are tracked (with `\"` and `\\` escapes) so that brackets, braces and
/// commas inside them are content. A number or literal ends at the next `,`, `]` or whitespace.
///
/// Walkthrough: `[{"a":"]"} , 2 ]` → `[` opens; `{` starts an object element (depth 1); the `]` inside `"..."` is string
/// content; `}` closes it (depth 0) → event `{"a":"]"}`; whitespace, `,` → next element; `2` starts a scalar, the space
/// ends it → event `2`; `]` closes the array. A clean end before `]` (`[1,2`) or `[1 2]` is an error.
class JsonArrayParser implements StreamParser {
  final _bom = _BomSkipper();
  _ArrayState _state = _ArrayState.beforeArray;
  final _element = <int>[];
  int _depth = 0;
  bool _inString = false;
  bool _escaped = false;
  bool _scalar = false;
  MalformedStreamException? _failure;
  final _out = <StreamEvent>[];

  @override
  StreamParseResult feed(List<int> chunk) {
    for (final byte in chunk) {
      if (_failure != null) break;
      _bom.push(byte, _accept);
    }
    return _take();
  }

  @override
  StreamParseResult finish() {
    if (_failure == null) {
      _bom.finish(_accept);
      if (_failure == null && _state != _ArrayState.done) {
        _fail(_state == _ArrayState.beforeArray ? 'The body is not a JSON array.' : "The JSON array ended before its closing ']'.");
      }
    }
    return _take();
  }

  StreamParseResult _take() {
    final events = List<StreamEvent>.of(_out);
    _out.clear();
    return StreamParseResult(events, _failure);
  }

  void _fail(String message) {
    _failure ??= MalformedStreamException(message);
  }

  static bool _isWhitespace(int byte) => byte == 0x20 || byte == 0x09 || byte == _lineFeed || byte == _carriageReturn;

  void _accept(int byte) {
    if (_failure != null) return;
    switch (_state) {
      case _ArrayState.beforeArray:
        if (_isWhitespace(byte)) return;
        if (byte == 0x5B) {
          _state = _ArrayState.firstElementOrEnd;
        } else {
          _fail('The body is not a JSON array.');
        }
      case _ArrayState.firstElementOrEnd:
      case _ArrayState.element:
        if (_isWhitespace(byte)) return;
        if (byte == 0x5D && _state == _ArrayState.firstElementOrEnd) {
          _state = _ArrayState.done;
        } else if (byte == 0x5D || byte == 0x2C) {
          _fail('A JSON array element is missing.');
        } else {
          _startElement(byte);
        }
      case _ArrayState.inElement:
        _continueElement(byte);
      case _ArrayState.afterElement:
        if (_isWhitespace(byte)) return;
        if (byte == 0x2C) {
          _state = _ArrayState.element;
        } else if (byte == 0x5D) {
          _state = _ArrayState.done;
        } else {
          _fail("Expected ',' or ']' between JSON array elements.");
        }
      case _ArrayState.done:
        if (!_isWhitespace(byte)) _fail('Data after the end of the JSON array.');
    }
  }

  void _startElement(int byte) {
    _element.clear();
    _depth = 0;
    _inString = false;
    _escaped = false;
    _scalar = false;
    _state = _ArrayState.inElement;
    if (byte == 0x7B || byte == 0x5B) {
      _depth = 1;
    } else if (byte == 0x22) {
      _inString = true;
    } else {
      _scalar = true;
    }
    _element.add(byte & 0xFF);
  }

  void _continueElement(int byte) {
    if (_scalar) {
      // A number or literal ends at the next delimiter, which then belongs to the array.
      if (_isWhitespace(byte) || byte == 0x2C || byte == 0x5D) {
        _complete();
        _accept(byte);
      } else {
        _element.add(byte & 0xFF);
      }
      return;
    }
    _element.add(byte & 0xFF);
    if (_inString) {
      if (_escaped) {
        _escaped = false;
      } else if (byte == 0x5C) {
        _escaped = true;
      } else if (byte == 0x22) {
        _inString = false;
        if (_depth == 0) _complete();
      }
      return;
    }
    if (byte == 0x22) {
      _inString = true;
    } else if (byte == 0x7B || byte == 0x5B) {
      _depth += 1;
    } else if (byte == 0x7D || byte == 0x5D) {
      _depth -= 1;
      if (_depth == 0) _complete();
    }
  }

  void _complete() {
    _state = _ArrayState.afterElement;
    try {
      _out.add(JsonEvent(jsonDecode(_decode(_element))));
    } on FormatException catch (error) {
      _fail('A JSON array element is not valid JSON: ${error.message}');
    }
    _element.clear();
  }
}

/// Bytes pass through untouched (no BOM skipping, no line handling): each non-empty chunk is one [BytesEvent].
class RawParser implements StreamParser {
  @override
  StreamParseResult feed(List<int> chunk) =>
      StreamParseResult(chunk.isEmpty ? const [] : [BytesEvent(Uint8List.fromList(chunk))]);

  @override
  StreamParseResult finish() => const StreamParseResult([]);
}
