/**
 * The usage tap: reads token usage from a provider's answer as it passes to the client.
 *
 * It only observes: `forward` writes each chunk to the client first and hands the same chunk to {@link UsageTap.observe}
 * afterwards, so the tap can neither delay nor change what the client receives. Memory is bounded: a JSON body is kept
 * up to {@link MAX_JSON_BODY_BYTES} (past that the tap gives up); a stream is cut into lines or frames and only the
 * current one is kept, up to {@link MAX_FRAME_BYTES} (a longer line is skipped). Core does the framing, chosen from the
 * response's `Content-Type`; the provider's {@link UsageExtractor} reads each parsed document. Whatever cannot be read
 * (a compressed body, a body over the bound, not JSON, a reader that throws) leaves the usage unknown, never an error.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TokenUsage, UsageExtractor } from '../contract';
import { joinChunks } from './request-body';

/** Largest non-streamed JSON answer whose usage is read (embeddings of large batches go past it: usage unknown). */
export const MAX_JSON_BODY_BYTES = 2 * 1024 * 1024;
/**
 * Largest JSON answer scanned or parsed whole for usage. A longer one is looked at only in its first and last
 * {@link JSON_WINDOW_BYTES} (where providers put `usage` and `model`: after a long embeddings list, in the last element of
 * a streamed array): a hostile 1.8 MB answer (a deep array under `usage`, 200,000 small array elements, 50,000 repeated
 * `usage` members) held the event loop 150 ms to 1.5 s when parsed or scanned whole. A provider could report any usage
 * it likes anyway; what matters is that reading it costs bounded work.
 */
export const MAX_PARSED_JSON_BYTES = 64 * 1024;
/** The head and tail of a longer JSON answer searched for the extractor's members. */
export const JSON_WINDOW_BYTES = 32 * 1024;
/** Largest SSE event, NDJSON line or event-stream message kept while looking for usage. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Request-body bytes looked at for a top-level `"model"` (when the answer does not name it). */
export const REQUEST_MODEL_SCAN_BYTES = 16 * 1024;

type Framing = 'json' | 'sse' | 'lines' | 'aws-event-stream';

function framingOf(headers: IncomingHttpHeaders): Framing | undefined {
  const contentEncoding = headers['content-encoding'];
  if (contentEncoding !== undefined) {
    const encoding = String(contentEncoding).trim().toLowerCase();
    if (encoding !== '' && encoding !== 'identity') return undefined;
  }
  // The media type before any parameters (`;`), without splitting the header into an array per response.
  const contentType = String(headers['content-type'] ?? '');
  const semicolon = contentType.indexOf(';');
  const type = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (type === 'text/event-stream') return 'sse';
  if (type === 'application/x-ndjson' || type === 'application/jsonl' || type === 'application/x-jsonlines' || type === 'application/stream+json') return 'lines';
  if (type === 'application/vnd.amazon.eventstream') return 'aws-event-stream';
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  return undefined;
}

/**
 * A model name fit to store and show: no control characters (PostgreSQL refuses NUL in text, and the name may come from
 * the client's request body), at most 200 characters; undefined when nothing is left.
 */
function modelName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 200);
  return name.length > 0 ? name : undefined;
}

/**
 * The first {@link REQUEST_MODEL_SCAN_BYTES} of a request body, kept as they arrive (before the answer's head says
 * whether usage is read at all) and decoded only when the answer names no model.
 */
export class RequestPrefix {
  private chunks: Buffer[] = [];
  private bytes = 0;

  keep(chunk: Buffer): void {
    if (this.bytes >= REQUEST_MODEL_SCAN_BYTES) return;
    const room = REQUEST_MODEL_SCAN_BYTES - this.bytes;
    // The chunk itself when all the memory it holds fits (Node's HTTP parser copies each body chunk into its own);
    // else a copy of its start, as a view would keep the whole underlying buffer alive.
    const kept = chunk.buffer.byteLength <= room ? chunk : Buffer.from(chunk.subarray(0, room));
    this.chunks.push(kept);
    this.bytes += kept.length;
  }

  /** The first `"model": "…"` string of the body, if any: a name still to be cleaned (modelName). */
  model(): string | undefined {
    return /^\s*\{[\s\S]*?"model"\s*:\s*"([^"\\]{1,200})"/.exec(joinChunks(this.chunks).toString('utf8'))?.[1];
  }
}

const clean = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined);

/** Accumulates what the reader finds, field by field, later values winning. */
class UsageAccumulator {
  readonly found: TokenUsage = {};
  any = false;

  merge(reading: TokenUsage | undefined): void {
    if (!reading || typeof reading !== 'object') return;
    for (const field of ['inputTokens', 'outputTokens', 'cachedTokens', 'reasoningTokens'] as const) {
      const value = clean(reading[field]);
      if (value !== undefined) {
        this.found[field] = value;
        this.any = true;
      }
    }
    const model = modelName(reading.model);
    if (model !== undefined) this.found.model = model;
  }
}

export class UsageTap {
  private readonly accumulator = new UsageAccumulator();
  private readonly framing: Framing | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** SSE: the `data:` lines of the event being read. */
  private eventData: string[] = [];
  private eventBytes = 0;
  /** A line or frame went past the bound: skip to the next line (text) or stop (binary, JSON). */
  private skippingLine = false;
  private gaveUp = false;
  /** The start of the request body, decoded only if the answer names no model; dropped once it does. */
  private request: RequestPrefix | undefined;
  /** A document was parsed: later streamed ones without a marker are skipped (see `holdsNothing`). */
  private readOne = false;
  /** The SSE event being read had a `data:` line skipped as unmarked: the event is not parsed. */
  private eventSkipped = false;

  constructor(
    private readonly extractor: UsageExtractor,
    headers: IncomingHttpHeaders,
    private readonly providerPath: string,
    request: RequestPrefix = new RequestPrefix(),
    /** The model the path names by the manifest's `pathModels`, for a provider whose reader has no `modelFromPath`. */
    private readonly pathModel?: () => string | undefined,
  ) {
    this.request = request;
    this.framing = framingOf(headers);
    if (this.framing === undefined) this.gaveUp = true;
  }

  /**
   * Looks at the start of the request body for the model the client asked for (fallback when the answer names none).
   * `forward` hands over the start it kept instead (the `request` of the constructor).
   */
  observeRequest(chunk: Buffer): void {
    this.request?.keep(chunk);
  }

  /** Sees one chunk that was already written to the client. Never throws. */
  observe(chunk: Buffer): void {
    if (this.gaveUp) return;
    try {
      if (this.framing === 'json') this.keepJson(chunk);
      else if (this.framing === 'aws-event-stream') this.readFrames(chunk);
      else this.readLines(chunk);
    } catch {
      this.giveUp();
    }
  }

  /** The usage read so far (call at the end of the response, or when it was cut): undefined when unknown. */
  finish(): TokenUsage | undefined {
    if (!this.gaveUp) {
      try {
        if (this.framing === 'json') this.readJsonBody(joinChunks(this.pending));
        else if (this.framing === 'sse' || this.framing === 'lines') {
          if (this.pendingBytes > 0 && !this.skippingLine) this.line(Buffer.concat(this.pending).toString('utf8'));
          this.dispatchEvent();
        }
      } catch {
        // unreadable: usage unknown
      }
      this.giveUp();
    }
    const usage: TokenUsage = { ...this.accumulator.found };
    if (usage.model === undefined) {
      const fromPath = safely(() => this.extractor.modelFromPath?.(this.providerPath)) ?? safely(() => this.pathModel?.());
      const fromBody = this.request?.model();
      const model = modelName(fromPath) ?? modelName(fromBody);
      if (model) usage.model = model;
    }
    this.request = undefined;
    if (!this.accumulator.any && usage.model === undefined) return undefined;
    return usage;
  }

  private giveUp(): void {
    this.gaveUp = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.eventData = [];
  }

  private keepJson(chunk: Buffer): void {
    this.pendingBytes += chunk.length;
    if (this.pendingBytes > MAX_JSON_BODY_BYTES) return this.giveUp();
    this.pending.push(chunk);
  }

  /** Markers as bytes, for lines looked at before decoding. */
  private markerBytes: Buffer[] | undefined;

  /**
   * A whole line (SSE or NDJSON) that holds none of the extractor's markers, once a document was read: skipped without
   * decoding. An SSE event with a skipped `data:` line is not parsed (its JSON would be cut).
   */
  private unmarkedLine(piece: Buffer): boolean {
    const markers = this.skippedMarkers();
    if (!markers) return false;
    this.markerBytes ??= markers.map((marker) => Buffer.from(marker, 'utf8'));
    for (const marker of this.markerBytes) if (piece.includes(marker)) return false;
    return true;
  }

  /**
   * A chunk of whole lines (SSE: of whole events, it ends with a blank line) that holds none of the markers, once a
   * document was read, with no line or event of an earlier chunk still open: nothing in it can hold usage and it leaves
   * no state behind (each of its events is dropped as unmarked), so it is not even split into lines.
   */
  private unmarkedChunk(chunk: Buffer): boolean {
    if (this.pendingBytes > 0 || this.skippingLine || this.eventData.length > 0) return false;
    const length = chunk.length;
    if (length === 0 || chunk[length - 1] !== 0x0a) return false;
    if (this.framing === 'sse' && !(chunk[length - 2] === 0x0a || (chunk[length - 2] === 0x0d && chunk[length - 3] === 0x0a))) return false;
    if (!this.unmarkedLine(chunk)) return false;
    this.clearEvent();
    return true;
  }

  /** A decoded streamed document (e.g. a line that spanned chunks) that holds none of the markers, once skipping. */
  private holdsNothing(text: string): boolean {
    const markers = this.skippedMarkers();
    if (!markers) return false;
    for (const marker of markers) if (text.includes(marker)) return false;
    return true;
  }

  /**
   * The extractor's markers once unmarked documents may be skipped, else undefined: the first document is always read
   * (it names the model when the provider does); after it, or once the model is known, only marked ones.
   */
  private skippedMarkers(): readonly string[] | undefined {
    const markers = this.extractor.markers;
    return markers && (this.readOne || this.accumulator.found.model !== undefined) ? markers : undefined;
  }

  /**
   * A whole JSON answer, read for the extractor's declared members only (topLevelMembers) when it declares them and the
   * body is one object; otherwise (an array, or what the scan declines) parsed whole. The members alone cost less at
   * every size: a 237 KB embeddings answer took 0.43 ms that way and 1.41 ms parsed whole; for the benchmark's 0.9 KB
   * chat answer, in the loaded gateway, the tap's work went from 5.0 to 4.0 µs and 2.5 KB less was allocated per
   * request: the answer's content is no longer copied into a string, nor turned into objects only the collector reads
   * again (docs/benchmarks.md).
   */
  private readJsonBody(body: Buffer): void {
    const members = this.extractor.members;
    if (body.length > MAX_PARSED_JSON_BYTES) {
      // Longer than what is read whole: the declared members in its head and tail only, else the usage stays unknown.
      const found = members ? windowMembers(body, members) : undefined;
      if (found) {
        this.readOne = true;
        this.read(found);
      }
      return;
    }
    const partial = members ? topLevelMembers(body, members) : undefined;
    if (partial) {
      this.readOne = true;
      this.read(partial);
    } else this.readDocument(body.toString('utf8'), true);
  }

  private readDocument(text: string, allowArray: boolean): void {
    const trimmed = text.trim();
    if (trimmed === '' || trimmed === '[DONE]') return;
    if (trimmed[0] !== '{' && trimmed[0] !== '[') return;
    this.readOne = true;
    const document: unknown = JSON.parse(trimmed);
    if (allowArray && Array.isArray(document)) for (const element of document) this.read(element);
    else this.read(document);
  }

  private read(document: unknown): void {
    this.accumulator.merge(safely(() => this.extractor.read(document)));
    // The answer names its model: the request's first bytes are not needed (a long stream does not hold them).
    if (this.request && this.accumulator.found.model !== undefined) this.request = undefined;
  }

  private readLines(chunk: Buffer): void {
    if (this.unmarkedChunk(chunk)) return;
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) break;
      const piece = chunk.subarray(start, newline);
      if (this.skippingLine) this.skippingLine = false;
      else if (this.pendingBytes === 0 && this.unmarkedLine(piece)) {
        // A line that cannot hold usage (no marker) after the first document: its bytes are never turned into text.
        if (piece.length === 0 || (piece.length === 1 && piece[0] === 0x0d)) this.dispatchEvent();
        // Only a skipped `data:` line cuts the event; `event:`, `id:` and comment lines carry no JSON.
        else if (this.framing === 'sse' && piece.length >= 5 && piece.toString('latin1', 0, 5) === 'data:') this.eventSkipped = true;
      } else {
        const line = this.pendingBytes > 0 ? Buffer.concat([...this.pending, piece]).toString('utf8') : piece.toString('utf8');
        this.line(line.endsWith('\r') ? line.slice(0, -1) : line);
      }
      this.pending = [];
      this.pendingBytes = 0;
      start = newline + 1;
    }
    if (start < chunk.length && !this.skippingLine) {
      const rest = chunk.subarray(start);
      this.pendingBytes += rest.length;
      if (this.pendingBytes > MAX_FRAME_BYTES) {
        this.pending = [];
        this.pendingBytes = 0;
        this.skippingLine = true;
      } else this.pending.push(Buffer.from(rest));
    }
  }

  private line(line: string): void {
    if (this.framing === 'lines') {
      if (this.holdsNothing(line)) return;
      try {
        this.readDocument(line, false);
      } catch {
        // one unreadable line: keep reading the others
      }
      return;
    }
    // SSE (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation): `data:` lines
    // accumulate until a blank line dispatches the event.
    if (line === '') return this.dispatchEvent();
    if (line.startsWith('data:')) {
      const value = line.slice(line[5] === ' ' ? 6 : 5);
      this.eventBytes += value.length;
      if (this.eventBytes > MAX_FRAME_BYTES) this.eventData = [];
      else this.eventData.push(value);
    }
  }

  /** Forgets the SSE event being read (after it was dispatched or dropped): the next one starts from nothing. */
  private clearEvent(): void {
    this.eventSkipped = false;
    this.eventData = [];
    this.eventBytes = 0;
  }

  private dispatchEvent(): void {
    // A skipped or empty event (an oversized one had its data dropped) is cleared, its byte count included.
    const data = this.eventSkipped || this.eventData.length === 0 || this.eventBytes > MAX_FRAME_BYTES ? '' : this.eventData.join('\n');
    this.clearEvent();
    if (data === '') return;
    if (this.holdsNothing(data)) return;
    try {
      this.readDocument(data, false);
    } catch {
      // one unreadable event: keep reading the others
    }
  }

  /**
   * AWS event-stream messages (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream):
   * total length (4), headers length (4), prelude CRC (4), headers, payload, message CRC (4), big-endian. The payload
   * is handed to the reader as `{ [":event-type" header]: payload }`. CRCs are not checked: the client does that.
   */
  private readFrames(chunk: Buffer): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    // Chunks are joined only once a whole message is there (never once per chunk: a provider sending a message a byte
    // at a time costs linear work, not quadratic).
    while (this.pendingBytes >= 12) {
      if (this.pending[0]!.length < 12) this.pending = [Buffer.concat(this.pending)];
      const head = this.pending[0]!;
      const total = head.readUInt32BE(0);
      const headersLength = head.readUInt32BE(4);
      if (total > MAX_FRAME_BYTES || total < 16 || headersLength > total - 16) return this.giveUp();
      if (this.pendingBytes < total) return;
      const buffer = joinChunks(this.pending);
      const headers = buffer.subarray(12, 12 + headersLength);
      const payload = buffer.subarray(12 + headersLength, total - 4);
      const eventType = eventStreamHeader(headers, ':event-type');
      if (eventType !== undefined && payload.length > 0 && payload[0] === 0x7b) {
        try {
          this.read({ [eventType]: JSON.parse(payload.toString('utf8')) as unknown });
        } catch {
          // one unreadable message: keep reading the others
        }
      }
      const rest = buffer.subarray(total);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
    }
  }
}

/** The string value of one event-stream header (type 7), or undefined. */
function eventStreamHeader(headers: Buffer, wanted: string): string | undefined {
  let offset = 0;
  while (offset < headers.length) {
    const nameLength = headers.readUInt8(offset);
    const name = headers.subarray(offset + 1, offset + 1 + nameLength).toString('utf8');
    offset += 1 + nameLength;
    const type = headers.readUInt8(offset);
    offset += 1;
    let valueLength: number;
    switch (type) {
      case 0: case 1: valueLength = 0; break; // true, false
      case 2: valueLength = 1; break; // byte
      case 3: valueLength = 2; break; // short
      case 4: valueLength = 4; break; // integer
      case 5: case 8: valueLength = 8; break; // long, timestamp
      case 6: case 7: {
        // byte array, string: 2-byte length
        const length = headers.readUInt16BE(offset);
        if (type === 7 && name === wanted) return headers.subarray(offset + 2, offset + 2 + length).toString('utf8');
        valueLength = 2 + length;
        break;
      }
      case 9: valueLength = 16; break; // uuid
      default: return undefined;
    }
    offset += valueLength;
  }
  return undefined;
}

function safely<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function isJsonSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipSpace(body: Buffer, index: number): number {
  while (isJsonSpace(body[index])) index += 1;
  return index;
}

/** Strings up to this many bytes are scanned in JavaScript; past it the closing quote is searched natively. */
const SHORT_STRING_BYTES = 64;

/** From an opening quote: the index after the closing one (a quote after an even run of backslashes), or -1. */
function skipString(body: Buffer, index: number): number {
  // Member names, ids and numbers' neighbours are short: a call into Buffer#indexOf costs more than looking at them.
  let at = index + 1;
  const shortEnd = Math.min(body.length, at + SHORT_STRING_BYTES);
  for (; at < shortEnd; at += 1) {
    const byte = body[at];
    if (byte === QUOTE) return at + 1;
    // The escaped byte is passed over with the backslash.
    if (byte === BACKSLASH) at += 1;
  }
  let from = at;
  for (;;) {
    const quote = body.indexOf(QUOTE, from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (body[quote - 1 - backslashes] === BACKSLASH && quote - 1 - backslashes > index) backslashes += 1;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** From the first byte of a value: the index after it, or -1 (truncated, or not a value). */
function skipValue(body: Buffer, index: number): number {
  const first = body[index];
  if (first === QUOTE) return skipString(body, index);
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let at = index; at < body.length; at += 1) {
      const byte = body[at];
      if (byte === QUOTE) {
        const end = skipString(body, at);
        if (end < 0) return -1;
        at = end - 1;
      } else if (byte === 0x7b || byte === 0x5b) depth += 1;
      else if (byte === 0x7d || byte === 0x5d) {
        depth -= 1;
        if (depth === 0) return at + 1;
      }
    }
    return -1;
  }
  // A number, true, false or null: up to the next delimiter.
  let at = index;
  while (at < body.length && body[at] !== 0x2c && body[at] !== 0x7d && body[at] !== 0x5d && !isJsonSpace(body[at])) at += 1;
  return at > index ? at : -1;
}

/** {@link wantedName}: the name holds an escape. */
const ESCAPED_NAME = -2;

/**
 * Which of `names` (ASCII, as extractors declare them) the member name between `start` and `end` is, compared byte by
 * byte without decoding it: its index, -1 for none, {@link ESCAPED_NAME} when the name holds a backslash (an escape,
 * whose text would differ from the name it stands for).
 */
function wantedName(body: Buffer, start: number, end: number, names: readonly string[]): number {
  for (let at = start; at < end; at += 1) if (body[at] === BACKSLASH) return ESCAPED_NAME;
  const length = end - start;
  next: for (let index = 0; index < names.length; index += 1) {
    const name = names[index]!;
    if (name.length !== length) continue;
    for (let offset = 0; offset < length; offset += 1) if (body[start + offset] !== name.charCodeAt(offset)) continue next;
    return index;
  }
  return -1;
}

/**
 * The named top-level members of a JSON object, each parsed on its own; the other members are skipped, their bytes
 * only scanned for string and bracket boundaries. Undefined (the caller parses the whole document instead) when the
 * body is not one object, when a member name holds an escape, or when a member cannot be delimited or parsed. A
 * repeated member keeps its last value, as `JSON.parse` does.
 */
export function topLevelMembers(body: Buffer, names: readonly string[]): Record<string, unknown> | undefined {
  let at = skipSpace(body, 0);
  if (body[at] !== 0x7b) return undefined;
  at = skipSpace(body, at + 1);
  const members: Record<string, unknown> = {};
  if (body[at] === 0x7d) return skipSpace(body, at + 1) === body.length ? members : undefined;
  for (;;) {
    if (body[at] !== QUOTE) return undefined;
    const nameEnd = skipString(body, at);
    if (nameEnd < 0) return undefined;
    const wanted = wantedName(body, at + 1, nameEnd - 1, names);
    if (wanted === ESCAPED_NAME) return undefined;
    at = skipSpace(body, nameEnd);
    if (body[at] !== 0x3a) return undefined;
    at = skipSpace(body, at + 1);
    const valueEnd = skipValue(body, at);
    if (valueEnd < 0) return undefined;
    if (wanted >= 0) {
      try {
        members[names[wanted]!] = JSON.parse(body.toString('utf8', at, valueEnd));
      } catch {
        return undefined;
      }
    }
    at = skipSpace(body, valueEnd);
    if (body[at] === 0x2c) {
      at = skipSpace(body, at + 1);
      continue;
    }
    if (body[at] === 0x7d) return skipSpace(body, at + 1) === body.length ? members : undefined;
    return undefined;
  }
}

/**
 * The declared members found in the first and last {@link JSON_WINDOW_BYTES} of a long JSON answer, for each name the
 * last `"name":` of the tail, else of the head, when its value ends inside that window and parses. Nesting is not
 * followed (a member found may belong to an inner object: `response.usage`, the last element of an array), which is what
 * the extractors read anyway. Bounded: each window is searched natively, and at most a window is parsed per name.
 */
export function windowMembers(body: Buffer, names: readonly string[]): Record<string, unknown> | undefined {
  const windows = [body.subarray(Math.max(0, body.length - JSON_WINDOW_BYTES)), body.subarray(0, Math.min(body.length, JSON_WINDOW_BYTES))];
  const members: Record<string, unknown> = {};
  let any = false;
  for (const name of names) {
    const key = Buffer.from(`"${name}"`, 'latin1');
    search: for (const window of windows) {
      for (let index = window.lastIndexOf(key); index >= 0; index = index > 0 ? window.lastIndexOf(key, index - 1) : -1) {
        let at = skipSpace(window, index + key.length);
        if (window[at] !== 0x3a) continue;
        at = skipSpace(window, at + 1);
        // One value tried per window (a tail of unterminated values must not be scanned again and again).
        const end = skipValue(window, at);
        if (end < 0) break;
        try {
          members[name] = JSON.parse(window.toString('utf8', at, end));
          any = true;
          break search;
        } catch {
          break;
        }
      }
    }
  }
  return any ? members : undefined;
}
