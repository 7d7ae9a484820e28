/**
 * Gives the client exactly the stream it asked for when the gateway asked the provider for more: with a token budget,
 * a streaming request to a route that declares `streamUsageRequest` (OpenAI's `stream_options.include_usage`) has it
 * merged into its body so that the stream reports usage (token-reservation.ts). The provider then sends one more
 * event, carrying only the usage; this filter keeps it from the client (the usage tap still reads it).
 *
 * An SSE event (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation) is held
 * until its blank line, then relayed, or dropped when it is usage only: its data is one JSON object from which the
 * provider's usage reader reads token counts, and every array in it is empty (it carries no choice, no content).
 * Events longer than {@link MAX_HELD_EVENT_BYTES} are relayed as they come, unfiltered.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { UsageExtractor } from '../contract';

/** Largest event held back while waiting for its end. */
export const MAX_HELD_EVENT_BYTES = 1024 * 1024;

const EMPTY = Buffer.alloc(0);
const LF_LF = Buffer.from('\n\n');
const CRLF_CRLF = Buffer.from('\r\n\r\n');

/** The filter for an answer with these headers: only an uncompressed SSE stream is filtered. */
export function usageEventFilterFor(headers: IncomingHttpHeaders, extractor: UsageExtractor): UsageEventFilter | undefined {
  const encoding = String(headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding !== '' && encoding !== 'identity') return undefined;
  const type = String(headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'text/event-stream' ? new UsageEventFilter(extractor) : undefined;
}

/** The index just after the blank line that ends the event starting at `from`, or -1. */
function eventEnd(data: Buffer, from: number): number {
  const lf = data.indexOf(LF_LF, from);
  const crlf = data.indexOf(CRLF_CRLF, from);
  if (lf < 0) return crlf < 0 ? -1 : crlf + 4;
  if (crlf < 0 || lf < crlf) return lf + 2;
  return crlf + 4;
}

export class UsageEventFilter {
  private held: Buffer = EMPTY;
  private readonly markers: readonly string[] | undefined;

  constructor(private readonly extractor: UsageExtractor) {
    this.markers = extractor.markers;
  }

  /** The bytes of `chunk` (and of what was held) to relay now. */
  push(chunk: Buffer): Buffer {
    const data = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const relayed: Buffer[] = [];
    let start = 0;
    for (let end = eventEnd(data, 0); end >= 0; end = eventEnd(data, start)) {
      const event = data.subarray(start, end);
      if (!this.usageOnly(event)) relayed.push(event);
      start = end;
    }
    const rest = data.subarray(start);
    if (rest.length > MAX_HELD_EVENT_BYTES) {
      relayed.push(rest);
      this.held = EMPTY;
    } else this.held = rest.length > 0 ? Buffer.from(rest) : EMPTY;
    if (relayed.length === 0) return EMPTY;
    return relayed.length === 1 ? relayed[0]! : Buffer.concat(relayed);
  }

  /** What is still held when the stream ends (an event without its blank line): relayed unless usage only. */
  flush(): Buffer {
    const rest = this.held;
    this.held = EMPTY;
    return rest.length > 0 && !this.usageOnly(rest) ? rest : EMPTY;
  }

  private usageOnly(event: Buffer): boolean {
    const text = event.toString('utf8');
    if (this.markers && !this.markers.some((marker) => text.includes(marker))) return false;
    const data: string[] = [];
    for (const line of text.split(/\r?\n/)) if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
    const payload = data.join('\n').trim();
    if (!payload.startsWith('{')) return false;
    let document: unknown;
    try {
      document = JSON.parse(payload);
    } catch {
      return false;
    }
    let reading;
    try {
      reading = this.extractor.read(document);
    } catch {
      return false;
    }
    if (reading?.inputTokens === undefined && reading?.outputTokens === undefined) return false;
    return Object.values(document as Record<string, unknown>).every((value) => !Array.isArray(value) || value.length === 0);
  }
}
