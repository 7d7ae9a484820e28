/**
 * Incremental parsers for streamed responses (sdk/conformance/README.md, "stream-parsing.json"): feed chunks as they
 * arrive, in order; call `finish` once when the body ended cleanly. When the transport fails, do not call `finish`:
 * whatever is pending is dropped, and the caller reports a networkError.
 */
import { utf8ToString } from './utf8';

/** The streaming formats a provider can declare (`GET /v1/providers`, `streaming`). */
export type StreamFormat = 'sse' | 'ndjson' | 'json-array' | 'raw';

export const STREAM_FORMATS: readonly StreamFormat[] = ['sse', 'ndjson', 'json-array', 'raw'];

/**
 * A server-sent event. `event` is `message` when the stream named none; `id` is the last event id (it persists across
 * events, as in the WHATWG specification), null when none; `retry` is the `retry:` value of this event's block, or null.
 */
export interface SseEvent {
  readonly type: 'sse';
  readonly event: string;
  readonly data: string;
  readonly id: string | null;
  readonly retry: number | null;
}

/** One NDJSON line or one element of a streamed JSON array. */
export interface JsonEvent {
  readonly type: 'json';
  readonly json: unknown;
}

/** Bytes as they arrived (`raw`: audio, images, anything not framed). */
export interface BytesEvent {
  readonly type: 'bytes';
  readonly bytes: Uint8Array;
}

export type StreamEvent = SseEvent | JsonEvent | BytesEvent;

/** The body does not follow its declared format; the client reports it as a networkError (reason `malformed_stream`). */
export class MalformedStreamError extends Error {
  override readonly name = 'MalformedStreamError';

  constructor(message: string) {
    super(message);
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

export interface StreamParser {
  /**
   * Parses `chunk` and appends complete events to `out`. Events found before a format error are appended before
   * MalformedStreamError is thrown; after that, the parser refuses further input.
   */
  feed(chunk: Uint8Array, out: StreamEvent[]): void;
  /** The body ended cleanly: appends what the format allows to flush, or throws MalformedStreamError. */
  finish(out: StreamEvent[]): void;
}

/** A new parser for one response in `format`. */
export function createStreamParser(format: StreamFormat): StreamParser {
  switch (format) {
    case 'sse':
      return new SseParser();
    case 'ndjson':
      return new NdjsonParser();
    case 'json-array':
      return new JsonArrayParser();
    case 'raw':
      return new RawParser();
    default:
      throw new TypeError(`Unknown stream format "${String(format)}" (known: ${STREAM_FORMATS.join(', ')}).`);
  }
}

/** The format a Content-Type implies: text/event-stream → sse, NDJSON → ndjson, JSON → json-array, else raw. */
export function formatForContentType(contentType: string | null | undefined): StreamFormat {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'text/event-stream') return 'sse';
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl' || type === 'application/x-jsonlines') return 'ndjson';
  if (type === 'application/json' || type.endsWith('+json')) return 'json-array';
  return 'raw';
}

/** A growable byte buffer. */
class ByteBuffer {
  private data = new Uint8Array(256);
  size = 0;

  add(byte: number): void {
    if (this.size === this.data.length) {
      const bigger = new Uint8Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.size++] = byte;
  }

  clear(): void {
    this.size = 0;
  }

  toText(): string {
    return utf8ToString(this.data.subarray(0, this.size));
  }
}

const BOM = [0xef, 0xbb, 0xbf];

/** Drops one UTF-8 byte order mark at the very start of a stream, even when it is split across chunks. */
class BomSkipper {
  private matched = 0;
  private decided = false;

  feed(chunk: Uint8Array, sink: (byte: number) => void): void {
    let start = 0;
    if (!this.decided) {
      while (start < chunk.length) {
        if (chunk[start] === BOM[this.matched]) {
          this.matched += 1;
          start += 1;
          if (this.matched === BOM.length) {
            this.decided = true;
            break;
          }
        } else {
          this.decided = true;
          for (let index = 0; index < this.matched; index += 1) sink(BOM[index]!);
          break;
        }
      }
    }
    for (let index = start; index < chunk.length; index += 1) sink(chunk[index]!);
  }

  /** At a clean end: a partial BOM was content after all. */
  finish(sink: (byte: number) => void): void {
    if (!this.decided) {
      this.decided = true;
      for (let index = 0; index < this.matched; index += 1) sink(BOM[index]!);
    }
  }
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Server-sent events as the WHATWG HTML specification reads them: CRLF, LF or CR line ends (a CR ending one chunk and
 * an LF starting the next are one line end), `:` comments, one leading space removed from values, multi-line data
 * joined with `\n`, a leading BOM skipped, an unterminated block at the end dropped. `data: [DONE]` is not interpreted.
 */
export class SseParser implements StreamParser {
  private readonly bom = new BomSkipper();
  private readonly line = new ByteBuffer();
  private skipLineFeed = false;
  private data: string[] = [];
  private eventType = '';
  private lastEventId = '';
  private retry: number | null = null;

  feed(chunk: Uint8Array, out: StreamEvent[]): void {
    this.bom.feed(chunk, (byte) => this.accept(byte, out));
  }

  finish(out: StreamEvent[]): void {
    this.bom.finish((byte) => this.accept(byte, out));
    // End of file: pending data is discarded (WHATWG), so a block without its blank line is not dispatched.
  }

  private accept(byte: number, out: StreamEvent[]): void {
    if (this.skipLineFeed) {
      this.skipLineFeed = false;
      if (byte === LF) return;
    }
    if (byte === LF) {
      this.endLine(out);
    } else if (byte === CR) {
      this.endLine(out);
      this.skipLineFeed = true;
    } else {
      this.line.add(byte);
    }
  }

  private endLine(out: StreamEvent[]): void {
    // Decoding whole lines keeps a multi-byte character split across chunks intact.
    const text = this.line.toText();
    this.line.clear();
    if (text === '') {
      this.dispatch(out);
      return;
    }
    if (text[0] === ':') return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retry = Number(value);
        break;
      default:
        break;
    }
  }

  private dispatch(out: StreamEvent[]): void {
    if (this.data.length > 0) {
      out.push({
        type: 'sse',
        event: this.eventType === '' ? 'message' : this.eventType,
        data: this.data.join('\n'),
        id: this.lastEventId === '' ? null : this.lastEventId,
        retry: this.retry,
      });
    }
    this.data = [];
    this.eventType = '';
    this.retry = null;
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new MalformedStreamError(`${what} is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Newline-delimited JSON: one JSON value per LF-terminated line (CRLF accepted), blank lines skipped, a leading BOM
 * skipped. A last line without a newline is emitted at a clean end, never at a cut.
 */
export class NdjsonParser implements StreamParser {
  private readonly bom = new BomSkipper();
  private readonly line = new ByteBuffer();
  private failed: MalformedStreamError | null = null;

  feed(chunk: Uint8Array, out: StreamEvent[]): void {
    if (this.failed) throw this.failed;
    this.bom.feed(chunk, (byte) => {
      if (byte === LF) this.endLine(out);
      else this.line.add(byte);
    });
  }

  finish(out: StreamEvent[]): void {
    if (this.failed) throw this.failed;
    this.bom.finish((byte) => this.line.add(byte));
    this.endLine(out);
  }

  private endLine(out: StreamEvent[]): void {
    if (this.failed) throw this.failed;
    let text = this.line.toText();
    this.line.clear();
    if (/^[ \t\r]*$/.test(text)) return;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    try {
      out.push({ type: 'json', json: parseJson(text, 'An NDJSON line') });
    } catch (error) {
      this.failed = error as MalformedStreamError;
      throw error;
    }
  }
}

enum ArrayState {
  BeforeArray,
  FirstElementOrEnd,
  Element,
  InElement,
  AfterElement,
  Done,
}

const isJsonWhitespace = (byte: number) => byte === 0x20 || byte === 0x09 || byte === LF || byte === CR;

/**
 * A top-level JSON array streamed element by element (Gemini's `streamGenerateContent` without `alt=sse`). Each element
 * is emitted once complete; strings are tracked so that brackets, braces and commas inside them are content.
 */
export class JsonArrayParser implements StreamParser {
  private readonly bom = new BomSkipper();
  private state = ArrayState.BeforeArray;
  private readonly element = new ByteBuffer();
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scalar = false;
  private failed: MalformedStreamError | null = null;

  feed(chunk: Uint8Array, out: StreamEvent[]): void {
    if (this.failed) throw this.failed;
    try {
      this.bom.feed(chunk, (byte) => this.accept(byte, out));
    } catch (error) {
      this.failed = error as MalformedStreamError;
      throw error;
    }
  }

  finish(out: StreamEvent[]): void {
    if (this.failed) throw this.failed;
    try {
      this.bom.finish((byte) => this.accept(byte, out));
      if (this.state !== ArrayState.Done) {
        throw new MalformedStreamError(this.state === ArrayState.BeforeArray ? 'The body is not a JSON array.' : "The JSON array ended before its closing ']'.");
      }
    } catch (error) {
      this.failed = error as MalformedStreamError;
      throw error;
    }
  }

  private accept(byte: number, out: StreamEvent[]): void {
    switch (this.state) {
      case ArrayState.BeforeArray:
        if (isJsonWhitespace(byte)) return;
        if (byte === 0x5b /* [ */) {
          this.state = ArrayState.FirstElementOrEnd;
          return;
        }
        throw new MalformedStreamError('The body is not a JSON array.');
      case ArrayState.FirstElementOrEnd:
      case ArrayState.Element:
        if (isJsonWhitespace(byte)) return;
        if (byte === 0x5d /* ] */ && this.state === ArrayState.FirstElementOrEnd) {
          this.state = ArrayState.Done;
          return;
        }
        if (byte === 0x5d || byte === 0x2c /* , */) throw new MalformedStreamError('A JSON array element is missing.');
        this.startElement(byte);
        return;
      case ArrayState.InElement:
        this.continueElement(byte, out);
        return;
      case ArrayState.AfterElement:
        if (isJsonWhitespace(byte)) return;
        if (byte === 0x2c) {
          this.state = ArrayState.Element;
          return;
        }
        if (byte === 0x5d) {
          this.state = ArrayState.Done;
          return;
        }
        throw new MalformedStreamError("Expected ',' or ']' between JSON array elements.");
      case ArrayState.Done:
        if (!isJsonWhitespace(byte)) throw new MalformedStreamError('Data after the end of the JSON array.');
        return;
    }
  }

  private startElement(byte: number): void {
    this.element.clear();
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.scalar = false;
    this.state = ArrayState.InElement;
    if (byte === 0x7b /* { */ || byte === 0x5b /* [ */) this.depth = 1;
    else if (byte === 0x22 /* " */) this.inString = true;
    else this.scalar = true;
    this.element.add(byte);
  }

  private continueElement(byte: number, out: StreamEvent[]): void {
    if (this.scalar) {
      // A number or literal ends at the next delimiter, which then belongs to the array.
      if (isJsonWhitespace(byte) || byte === 0x2c || byte === 0x5d) {
        this.complete(out);
        this.accept(byte, out);
      } else {
        this.element.add(byte);
      }
      return;
    }
    this.element.add(byte);
    if (this.inString) {
      if (this.escaped) this.escaped = false;
      else if (byte === 0x5c /* \ */) this.escaped = true;
      else if (byte === 0x22) {
        this.inString = false;
        if (this.depth === 0) this.complete(out);
      }
      return;
    }
    if (byte === 0x22) this.inString = true;
    else if (byte === 0x7b || byte === 0x5b) this.depth += 1;
    else if (byte === 0x7d || byte === 0x5d) {
      this.depth -= 1;
      if (this.depth === 0) this.complete(out);
    }
  }

  private complete(out: StreamEvent[]): void {
    this.state = ArrayState.AfterElement;
    const text = this.element.toText();
    this.element.clear();
    out.push({ type: 'json', json: parseJson(text, 'A JSON array element') });
  }
}

/** Bytes pass through untouched: each non-empty chunk is one bytes event (a copy). */
export class RawParser implements StreamParser {
  feed(chunk: Uint8Array, out: StreamEvent[]): void {
    if (chunk.length > 0) out.push({ type: 'bytes', bytes: chunk.slice() });
  }

  finish(): void {
    // Nothing is ever pending.
  }
}
