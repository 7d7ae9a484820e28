/**
 * The usage tap on its own: framing across arbitrary chunk boundaries (one byte at a time), its memory bounds (a body or
 * a line past the bound is given up, later lines still read), and "usage unknown" rather than an error for whatever it
 * cannot read, including a reader that throws.
 */
import { expect } from 'chai';
import { crc32 } from 'node:zlib';
import { JSON_WINDOW_BYTES, MAX_FRAME_BYTES, MAX_JSON_BODY_BYTES, MAX_PARSED_JSON_BYTES, UsageTap, topLevelMembers, windowMembers } from '../../core/pipeline/usage-tap';
import { ANTHROPIC_USAGE, BEDROCK_USAGE, EMBEDDINGS_USAGE, GEMINI_USAGE, OPENAI_USAGE } from '../../providers/_shared';
import type { UsageExtractor } from '../../core/contract';
import { MAX_HELD_EVENT_BYTES, UsageEventFilter, usageEventFilterFor } from '../../core/pipeline/usage-event-filter';

function feed(tap: UsageTap, bytes: Buffer, size: number): void {
  for (let offset = 0; offset < bytes.length; offset += size) tap.observe(bytes.subarray(offset, offset + size));
}

function eventStreamMessage(eventType: string, payload: unknown): Buffer {
  const name = Buffer.from(':event-type');
  const value = Buffer.from(eventType);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(value.length);
  const headers = Buffer.concat([Buffer.from([name.length]), name, Buffer.from([7]), length, value]);
  const body = Buffer.from(JSON.stringify(payload));
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(12 + headers.length + body.length + 4, 0);
  prelude.writeUInt32BE(headers.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude));
  const message = Buffer.concat([prelude, preludeCrc, headers, body]);
  const messageCrc = Buffer.alloc(4);
  messageCrc.writeUInt32BE(crc32(message));
  return Buffer.concat([message, messageCrc]);
}

describe('usage tap', () => {
  const anthropicStream = Buffer.from(
    [
      'event: message_start\r\ndata: {"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":12,"output_tokens":1}}}\r\n\r\n',
      ': a comment line\r\n',
      'event: message_delta\r\ndata: {"type":"message_delta","delta":{},"usage":{"output_tokens":34}}\r\n\r\n',
    ].join(''),
  );

  for (const size of [1, 7, 64, 1 << 20]) {
    it(`reads SSE usage fed ${size} byte(s) at a time, CRLF framed`, () => {
      const tap = new UsageTap(ANTHROPIC_USAGE, { 'content-type': 'text/event-stream; charset=utf-8' }, 'messages');
      feed(tap, anthropicStream, size);
      expect(tap.finish()).to.deep.equal({ inputTokens: 12, outputTokens: 34, model: 'claude-x' });
    });

    it(`reads AWS event-stream usage fed ${size} byte(s) at a time`, () => {
      const tap = new UsageTap(BEDROCK_USAGE, { 'content-type': 'application/vnd.amazon.eventstream' }, 'model/amazon.nova-micro-v1%3A0/converse-stream');
      feed(tap, Buffer.concat([eventStreamMessage('contentBlockDelta', { delta: { text: 'x' } }), eventStreamMessage('metadata', { usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 } })]), size);
      expect(tap.finish()).to.deep.equal({ inputTokens: 3, outputTokens: 4, model: 'amazon.nova-micro-v1:0' });
    });
  }

  it('gives up on a JSON body past its bound (usage unknown), keeping no more than the bound', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'embeddings');
    const filler = Buffer.alloc(64 * 1024, 0x20);
    tap.observe(Buffer.from('{"data":"'));
    for (let sent = 0; sent <= MAX_JSON_BODY_BYTES; sent += filler.length) tap.observe(filler);
    tap.observe(Buffer.from('","usage":{"prompt_tokens":5,"total_tokens":5}}'));
    expect(tap.finish()).to.equal(undefined);
  });

  it('skips an SSE line past its bound and still reads the events after it', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
    tap.observe(Buffer.from('data: {"huge":"'));
    const filler = Buffer.alloc(256 * 1024, 0x61);
    for (let sent = 0; sent <= MAX_FRAME_BYTES; sent += filler.length) tap.observe(filler);
    tap.observe(Buffer.from('"}\n\ndata: {"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}\n\ndata: [DONE]\n\n'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 2, outputTokens: 3, model: 'm' });
  });

  it('an event whose data lines together pass the bound is dropped, and the events after it are still read', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
    // First (so that every line is read): one event of many data lines, each under the bound, together over it.
    const line = Buffer.from(`data: ${'a'.repeat(64 * 1024)}\n`);
    for (let count = 0; count <= MAX_FRAME_BYTES / (64 * 1024); count += 1) tap.observe(line);
    tap.observe(Buffer.from('\ndata: {"model":"m","choices":[],"usage":{"prompt_tokens":6,"completion_tokens":7}}\n\ndata: [DONE]\n\n'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 6, outputTokens: 7, model: 'm' });
  });

  describe('a stream read one provider write at a time (whole events without the usage marker are not split into lines)', () => {
    const frames = [
      'data: {"id":"c","model":"gpt-x","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
      ...Array.from({ length: 20 }, (_, index) => `data: {"id":"c","choices":[{"index":0,"delta":{"content":"token ${index} \\"usage\\" in text"}}]}\n\n`),
      ': keep-alive comment\n\n',
      // The usage event, cut by the provider's writes in the middle of its marker.
      'event: message\r\ndata: {"id":"c","choices":[],"usa',
      'ge":{"prompt_tokens":8,"completion_tokens":9}}\r\n\r\n',
      'data: [DONE]\n\n',
    ];
    const expected = { inputTokens: 8, outputTokens: 9, model: 'gpt-x' };

    it('each write a chunk', () => {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
      for (const frame of frames) tap.observe(Buffer.from(frame));
      expect(tap.finish()).to.deep.equal(expected);
    });

    it('writes coalesced in pairs, and cut in the middle of events', () => {
      for (const cut of [1, 2, 3, 5, 11]) {
        const whole = Buffer.from(frames.join(''));
        const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
        // Chunks that end on an event boundary every other time, and mid-event otherwise.
        let offset = 0;
        for (let index = 0; index < frames.length; index += 2) {
          const pair = Buffer.byteLength(frames.slice(index, index + 2).join(''));
          tap.observe(whole.subarray(offset, offset + pair - (index % 4 === 0 ? cut : 0)));
          offset += pair - (index % 4 === 0 ? cut : 0);
        }
        tap.observe(whole.subarray(offset));
        expect(tap.finish(), `cut ${cut}`).to.deep.equal(expected);
      }
    });

    it('an event with an unmarked data line is dropped even when its marked line comes in a later chunk', () => {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
      tap.observe(Buffer.from(frames[0]!));
      // A JSON document split over two data lines: the first holds no marker, so the event cannot be parsed whole.
      tap.observe(Buffer.from('data: {"choices":[],\n'));
      tap.observe(Buffer.from('data: "usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n'));
      tap.observe(Buffer.from('data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}\n\n'));
      expect(tap.finish()).to.deep.equal({ inputTokens: 2, outputTokens: 3, model: 'gpt-x' });
    });
  });

  describe('a whole JSON answer read for the extractor\'s declared members only', () => {
    const names = ['usage', 'model'];
    const pick = (text: string) => {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(parsed).filter(([name]) => names.includes(name)));
    };

    it('gives what JSON.parse gives for those members, whatever surrounds them', () => {
      const documents = [
        '{"id":"c","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"a } ] { [ \\" \\\\ \\u00e9 \\"usage\\": 1"}}],"usage":{"prompt_tokens":10,"completion_tokens":150}}',
        ' \r\n\t{ "model" : "m1" , "usage" : { "prompt_tokens" : 1 } , "x" : [ 1 , 2 , { "y" : "}" } ] } \n',
        '{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}',
        '{"n":-1.5e+3,"t":true,"f":false,"z":null,"model":"é-model 模型","usage":null}',
        '{}',
        '{"data":[[0.1,0.2],[0.3]],"usage":{"prompt_tokens":8,"total_tokens":8}}',
      ];
      for (const text of documents) expect(topLevelMembers(Buffer.from(text), names), text).to.deep.equal(pick(text));
    });

    it('finds where a string ends wherever an escape falls, around the length scanned byte by byte (64)', () => {
      for (let length = 50; length <= 140; length += 1) {
        for (const escape of ['\\"', '\\\\', '\\u0022', '\\\\\\"']) {
          const text = `"${'a'.repeat(length)}${escape}${'b'.repeat(length % 7)}"`;
          const document = `{"id":${text},"choices":[{"content":${text},"x":{"${'k'.repeat(length)}":${text}}}],"model":${text},"usage":{"prompt_tokens":${length}}}`;
          expect(topLevelMembers(Buffer.from(document), names), document).to.deep.equal(pick(document));
        }
      }
    });

    it('declines (the whole document is parsed instead) what it cannot read the same way', () => {
      for (const text of ['[{"usage":{}}]', '{"usage":{"a":1}', '{"us\\u0061ge":{"a":1}}', '{"usage":{"a":1}} trailing', '{"usage" {"a":1}}', '{"usage":{"a":01}}', '', '\ufeff{"usage":{}}']) {
        expect(topLevelMembers(Buffer.from(text), names), text).to.equal(undefined);
      }
    });

    it('the tap reads only the declared members of an answer of any size, and the same usage as the whole document parsed, a JSON array included', () => {
      // What the extractor is handed: the declared members alone (scanned), or the whole document (no members declared).
      const seen: string[][] = [];
      const read = (document: unknown) => (seen.push(Object.keys(document as object)), OPENAI_USAGE.read(document));
      const { members: _members, ...wholeOnly } = OPENAI_USAGE;
      const scanned: UsageExtractor = { ...OPENAI_USAGE, read };
      const parsed: UsageExtractor = { ...wholeOnly, read };
      for (const filler of ['', 'x'.repeat(20_000)]) {
        const answer = `{"id":"c","model":"gpt-x","choices":[{"message":{"content":"${filler}{\\"usage\\":{\\"prompt_tokens\\":999}}"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`;
        for (const [extractor, keys] of [
          [scanned, ['model', 'usage']],
          [parsed, ['id', 'model', 'choices', 'usage']],
        ] as const) {
          seen.length = 0;
          const tap = new UsageTap(extractor, { 'content-type': 'application/json' }, 'chat/completions');
          feed(tap, Buffer.from(answer), 4096);
          expect(tap.finish(), `${answer.length} bytes`).to.deep.equal({ inputTokens: 3, outputTokens: 4, model: 'gpt-x' });
          expect(seen, `${answer.length} bytes`).to.deep.equal([keys]);
        }
      }
      const embeddings = JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: Array.from({ length: 3000 }, (_, index) => index / 3000) }], model: 'emb-x', usage: { prompt_tokens: 9, total_tokens: 9 } });
      const embeddingTap = new UsageTap(EMBEDDINGS_USAGE, { 'content-type': 'application/json' }, 'embeddings');
      feed(embeddingTap, Buffer.from(embeddings), 1000);
      expect(embeddingTap.finish()).to.deep.equal({ inputTokens: 9, outputTokens: 0, model: 'emb-x' });
      const gemini = '[{"candidates":[],"modelVersion":"gemini-x"},{"candidates":[],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":6}}]';
      const arrayTap = new UsageTap(GEMINI_USAGE, { 'content-type': 'application/json' }, 'models/gemini-x:streamGenerateContent');
      arrayTap.observe(Buffer.from(gemini));
      expect(arrayTap.finish()).to.deep.equal({ inputTokens: 5, outputTokens: 6, model: 'gemini-x' });
    });
  });

  it('records usage unknown for compressed, non-JSON and unknown content types', () => {
    for (const headers of [{ 'content-type': 'application/json', 'content-encoding': 'gzip' }, { 'content-type': 'audio/mpeg' }, {}]) {
      const tap = new UsageTap(OPENAI_USAGE, headers, 'x');
      tap.observe(Buffer.from('{"usage":{"prompt_tokens":1,"completion_tokens":1}}'));
      expect(tap.finish(), JSON.stringify(headers)).to.equal(undefined);
    }
  });

  it('a reader that throws, or a garbled frame, is "nothing found", never an error', () => {
    const throwing: UsageExtractor = {
      read() {
        throw new Error('reader bug');
      },
    };
    const tap = new UsageTap(throwing, { 'content-type': 'text/event-stream' }, 'x');
    expect(() => tap.observe(Buffer.from('data: {"usage":{}}\n\n'))).not.to.throw();
    expect(tap.finish()).to.equal(undefined);
    const garbled = new UsageTap(BEDROCK_USAGE, { 'content-type': 'application/vnd.amazon.eventstream' }, 'x');
    expect(() => garbled.observe(Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]))).not.to.throw();
    expect(garbled.finish()).to.equal(undefined);
  });

  it('keeps no control characters in a model name (the request body is the client\'s)', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions');
    tap.observeRequest(Buffer.from('{"model":"evil\u0000\u0007model\nname"}'));
    tap.observe(Buffer.from('{"usage":{"prompt_tokens":1,"completion_tokens":1}}'));
    expect(tap.finish()?.model).to.equal('evilmodelname');
  });

  it('falls back to the model the request named when the answer names none', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions');
    tap.observeRequest(Buffer.from('{"messages":[{"role":"user","content":"hi"}],"model":"my-model"}'));
    tap.observe(Buffer.from('{"usage":{"prompt_tokens":4,"completion_tokens":5}}'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 4, outputTokens: 5, model: 'my-model' });
  });
});

/**
 * Readings that must not come out short (a short reading under-charges a token budget) and the framing decisions
 * behind them: which answers are read at all, how SSE `data:` lines are cut and joined
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation), the last line of an
 * answer that ends without its newline, and the model name a reading is filed under.
 */
describe('usage tap: readings that must not come out short', () => {
  const openAiUsage = '{"model":"m","usage":{"prompt_tokens":11,"completion_tokens":22}}';
  /** A reader handing back the document as the reading: what the tap does with a reading, the provider aside. */
  const asReading: UsageExtractor = { read: (document) => document as never };

  it('reads an answer whose encoding is identity, however written, and no answer in another encoding', () => {
    for (const encoding of ['identity', ' IDENTITY ', '']) {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json', 'content-encoding': encoding }, 'chat/completions');
      tap.observe(Buffer.from(openAiUsage));
      expect(tap.finish(), JSON.stringify(encoding)).to.deep.equal({ inputTokens: 11, outputTokens: 22, model: 'm' });
    }
    for (const encoding of ['br', 'gzip, identity']) {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json', 'content-encoding': encoding }, 'chat/completions');
      tap.observe(Buffer.from(openAiUsage));
      expect(tap.finish(), encoding).to.equal(undefined);
    }
  });

  it('reads JSON whatever the media type\'s case, parameters or +json suffix', () => {
    for (const type of [' Application/JSON ', 'application/json;charset=utf-8', 'application/vnd.api+json; charset=utf-8']) {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': type }, 'chat/completions');
      tap.observe(Buffer.from(openAiUsage));
      expect(tap.finish(), type).to.deep.equal({ inputTokens: 11, outputTokens: 22, model: 'm' });
    }
  });

  it('reads every line of a line-delimited JSON stream, each media type, the last line without its newline, later values winning', () => {
    const lines = '{"model":"m","usage":{"prompt_tokens":1,"completion_tokens":1}}\r\nnot json\n{"usage":{"prompt_tokens":7,"completion_tokens":30}}\n{"usage":{"prompt_tokens":7,"completion_tokens":45}}';
    for (const type of ['application/x-ndjson', 'application/jsonl', 'application/x-jsonlines', 'application/stream+json']) {
      for (const size of [1, 5, lines.length]) {
        const tap = new UsageTap(OPENAI_USAGE, { 'content-type': type }, 'chat/completions');
        feed(tap, Buffer.from(lines), size);
        expect(tap.finish(), `${type} by ${size}`).to.deep.equal({ inputTokens: 7, outputTokens: 45, model: 'm' });
      }
    }
  });

  it('reads the last SSE event when the stream ends without its blank line, or without its newline', () => {
    for (const end of ['\n', '\r\n', '']) {
      const stream = `data: {"model":"m","choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}${end}`;
      for (const size of [1, 3, stream.length]) {
        const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
        feed(tap, Buffer.from(stream), size);
        expect(tap.finish(), `${JSON.stringify(end)} by ${size}`).to.deep.equal({ inputTokens: 5, outputTokens: 9, model: 'm' });
      }
    }
  });

  it('reads SSE data lines with or without the space after the colon, joined by a line feed, and the last event\'s counts', () => {
    const stream = [
      'data:{"model":"m","choices":[{"delta":{"content":"a"}}]}\n\n',
      // One JSON document over three data lines (the first empty): joined with line feeds it parses.
      'event: usage\ndata:\ndata: {"choices":[],\ndata:"usage":{"prompt_tokens":4,"completion_tokens":6}}\n\n',
      'data:{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":60}}\r\n\r\n',
      'data: [DONE]\n\n',
    ].join('');
    for (const size of [1, 2, 9, stream.length]) {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
      feed(tap, Buffer.from(stream), size);
      expect(tap.finish(), `by ${size}`).to.deep.equal({ inputTokens: 4, outputTokens: 60, model: 'm' });
    }
    // Joined without the line feed the two halves of a string would parse: they must not (a string holds no raw newline).
    const tap = new UsageTap(asReading, { 'content-type': 'text/event-stream' }, 'x');
    tap.observe(Buffer.from('data: {"inputTokens":3,"model":"a\ndata: b"}\n\n'));
    expect(tap.finish()).to.equal(undefined);
  });

  it('an unmarked event after the first, one provider write at a time, is skipped; a marked one in a CRLF-framed write is read', () => {
    const first = 'data: {"model":"m","choices":[{"delta":{"content":"a"}}]}\n\n';
    for (const usageEvent of [
      'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":8}}\r\n\r\n',
      'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":8}}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":8}}\n',
    ]) {
      const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/event-stream' }, 'chat/completions');
      tap.observe(Buffer.from(first));
      // Unmarked writes: a whole event, a comment, an event cut before its blank line, CRLF framed.
      tap.observe(Buffer.from('data: {"choices":[{"delta":{"content":"b"}}]}\r\n\r\n'));
      tap.observe(Buffer.from(': ping\n'));
      tap.observe(Buffer.from('\n'));
      tap.observe(Buffer.from(usageEvent));
      expect(tap.finish(), JSON.stringify(usageEvent)).to.deep.equal({ inputTokens: 2, outputTokens: 8, model: 'm' });
    }
  });

  it('an event whose marked data line follows an unmarked one in the same write is not read whole (cut JSON), the next is', () => {
    const tap = new UsageTap(asReading, { 'content-type': 'text/event-stream' }, 'x');
    const marked: UsageExtractor = { read: (document) => document as never, markers: ['Tokens'] };
    const markedTap = new UsageTap(marked, { 'content-type': 'text/event-stream' }, 'x');
    for (const each of [tap, markedTap]) {
      each.observe(Buffer.from('data: {"outputTokens":1}\n\n'));
      each.observe(Buffer.from('data: {"a":\ndata: 1, "outputTokens":5}\n\ndata: {"inputTokens":3}\n\n'));
    }
    expect(tap.finish()).to.deep.equal({ outputTokens: 5, inputTokens: 3 });
    expect(markedTap.finish()).to.deep.equal({ outputTokens: 1, inputTokens: 3 });
  });

  it('takes only finite, non-negative numbers, rounded down, and a reading of tokens alone (no model) counts', () => {
    const tap = new UsageTap(asReading, { 'content-type': 'text/event-stream' }, 'x');
    tap.observe(Buffer.from('data: {"inputTokens":9,"outputTokens":12.9,"cachedTokens":2,"reasoningTokens":1}\n\n'));
    tap.observe(Buffer.from('data: {"inputTokens":-1,"outputTokens":"99","cachedTokens":null,"reasoningTokens":1e400}\n\n'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 9, outputTokens: 12, cachedTokens: 2, reasoningTokens: 1 });
  });

  it('a reader that returns nothing for one event still has the later events read', () => {
    const reader: UsageExtractor = { read: (document) => ((document as { n?: number }).n === undefined ? undefined : { outputTokens: (document as { n: number }).n }) };
    const tap = new UsageTap(reader, { 'content-type': 'text/event-stream' }, 'x');
    tap.observe(Buffer.from('data: {"skip":true}\n\ndata: {"n":14}\n\n'));
    expect(tap.finish()).to.deep.equal({ outputTokens: 14 });
  });

  it('files the reading under the model the path names when the answer and the request name none, else under no model', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions', undefined, () => 'path-model');
    tap.observe(Buffer.from('{"usage":{"prompt_tokens":1,"completion_tokens":2}}'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 1, outputTokens: 2, model: 'path-model' });
    const none = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions');
    none.observe(Buffer.from('{"usage":{"prompt_tokens":1,"completion_tokens":2}}'));
    expect(none.finish()).to.deep.equal({ inputTokens: 1, outputTokens: 2 });
  });

  it('a model name is trimmed and cut to 200 characters; one left empty falls back to the request\'s', () => {
    const long = new UsageTap(asReading, { 'content-type': 'application/json' }, 'x');
    long.observe(Buffer.from(JSON.stringify({ inputTokens: 1, model: `  ${'m'.repeat(300)}` })));
    expect(long.finish()?.model).to.equal('m'.repeat(200));
    const blank = new UsageTap(asReading, { 'content-type': 'application/json' }, 'x');
    blank.observeRequest(Buffer.from('{ "stream": false, "model": "from-request" }'));
    blank.observe(Buffer.from(JSON.stringify({ inputTokens: 1, model: ' \u0000 ' })));
    expect(blank.finish()).to.deep.equal({ inputTokens: 1, model: 'from-request' });
  });

  it('the request\'s model is looked for only at the start of a JSON object body, in its first 16 KiB', () => {
    const read = (chunks: Buffer[]) => {
      const tap = new UsageTap(asReading, { 'content-type': 'application/json' }, 'x');
      for (const chunk of chunks) tap.observeRequest(chunk);
      tap.observe(Buffer.from('{"inputTokens":1}'));
      return tap.finish()?.model;
    };
    expect(read([Buffer.from('x={"model":"not-a-body"}')])).to.equal(undefined);
    // Within the first 16 KiB, over several chunks (each in a buffer of its own).
    expect(read([Buffer.from(`{"a":"${'x'.repeat(10 * 1024)}", `), Buffer.from(`"b": 1, "model": "found"}`)])).to.equal('found');
    const filler = (size: number) => Buffer.from(`{"a":"${'x'.repeat(size)}",`);
    expect(read([filler(10 * 1024), Buffer.alloc(7 * 1024, 0x20), Buffer.from('"model":"too-far"}')])).to.equal(undefined);
    expect(read([filler(10 * 1024), Buffer.from(`"b":"${'y'.repeat(7 * 1024)}","model":"too-far"}`)])).to.equal(undefined);
    expect(read([filler(20 * 1024), Buffer.from('"model":"too-far"}')])).to.equal(undefined);
    expect(read([Buffer.from(`{"a":"${'x'.repeat(17 * 1024)}","model":"too-far"}`)])).to.equal(undefined);
  });

  it('reads a JSON answer of exactly the parsed-whole bound for its top-level usage, not a nested one near its end', () => {
    const size = 64 * 1024;
    const head = Buffer.from('{"model":"m","usage":{"prompt_tokens":70,"completion_tokens":80},"data":[{"usage":{"prompt_tokens":1,"completion_tokens":1}},"');
    const body = Buffer.concat([head, Buffer.alloc(size - head.length - 3, 0x71), Buffer.from('"]}')]);
    expect(body.length).to.equal(size);
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions');
    feed(tap, body, 4096);
    expect(tap.finish()).to.deep.equal({ inputTokens: 70, outputTokens: 80, model: 'm' });
  });

  it('reads a JSON answer of exactly the kept-body bound (its usage in the tail)', () => {
    const head = Buffer.from('{"data":"');
    const tail = Buffer.from('","model":"e","usage":{"prompt_tokens":900,"total_tokens":900}}');
    const body = Buffer.concat([head, Buffer.alloc(MAX_JSON_BODY_BYTES - head.length - tail.length, 0x61), tail]);
    const tap = new UsageTap(EMBEDDINGS_USAGE, { 'content-type': 'application/json' }, 'embeddings');
    feed(tap, body, 64 * 1024);
    expect(tap.finish()).to.deep.include({ inputTokens: 900, model: 'e' });
  });

  it('reads every element of a JSON array answer, those without usage included', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'chat/completions');
    tap.observe(Buffer.from('[{"id":"a"},{"model":"m","usage":{"prompt_tokens":3,"completion_tokens":4}}]'));
    expect(tap.finish()).to.deep.equal({ inputTokens: 3, outputTokens: 4, model: 'm' });
  });

  it('reads nothing from an answer of another media type, even one shaped like an event stream', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'text/plain' }, 'chat/completions');
    tap.observe(Buffer.from('data: {"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n'));
    expect(tap.finish()).to.equal(undefined);
  });

  it('an event of two JSON documents on two data lines is not read, the unmarked line in the same write or an earlier one', () => {
    for (const chunks of [['data: {"x":1}\ndata: {"outputTokens":9}\n\n'], ['data: {"x":1}\n', 'data: {"outputTokens":9}\n\n']]) {
      const tap = new UsageTap({ read: (document) => document as never, markers: ['Tokens'] }, { 'content-type': 'text/event-stream' }, 'x');
      tap.observe(Buffer.from('data: {"outputTokens":1}\n\n'));
      for (const chunk of chunks) tap.observe(Buffer.from(chunk));
      expect(tap.finish(), JSON.stringify(chunks)).to.deep.equal({ outputTokens: 1 });
    }
  });
});

describe('usage tap: AWS event-stream headers', () => {
  /** One message with these headers (name, type, value bytes), in the layout of https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream. */
  function message(headers: Array<[string, number, Buffer]>, payload: unknown): Buffer {
    const encoded = Buffer.concat(headers.map(([name, type, value]) => Buffer.concat([Buffer.from([name.length]), Buffer.from(name), Buffer.from([type]), value])));
    const body = Buffer.from(JSON.stringify(payload));
    const prelude = Buffer.alloc(12);
    prelude.writeUInt32BE(12 + encoded.length + body.length + 4, 0);
    prelude.writeUInt32BE(encoded.length, 4);
    prelude.writeUInt32BE(crc32(prelude.subarray(0, 8)), 8);
    const whole = Buffer.concat([prelude, encoded, body]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(whole));
    return Buffer.concat([whole, crc]);
  }
  const string = (value: string) => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(Buffer.byteLength(value));
    return Buffer.concat([length, Buffer.from(value)]);
  };

  it('stops at a prelude that cannot be a message (too short, or headers longer than the message), and passes over the shortest ones that can', () => {
    const good = message([[':event-type', 7, string('metadata')]], { usage: { inputTokens: 2, outputTokens: 3, totalTokens: 5 } });
    // [total length, headers length, readable]: 16 bytes is prelude and CRC alone; 24 header bytes are 12 empty boolean headers.
    for (const [total, headersLength, readable] of [[12, 0, false], [15, 0, false], [40, 26, false], [16, 0, true], [40, 24, true]] as const) {
      const prelude = Buffer.alloc(12);
      prelude.writeUInt32BE(total, 0);
      prelude.writeUInt32BE(headersLength, 4);
      const tap = new UsageTap(BEDROCK_USAGE, { 'content-type': 'application/vnd.amazon.eventstream' }, 'x');
      tap.observe(Buffer.concat([prelude, Buffer.alloc(Math.max(0, total - 12)), good]));
      expect(tap.finish(), `${total}/${headersLength}`).to.deep.equal(readable ? { inputTokens: 2, outputTokens: 3 } : undefined);
    }
  });

  it('finds the :event-type header after headers of every other type, string ones included', () => {
    const headers: Array<[string, number, Buffer]> = [
      [':message-type', 7, string('event')],
      [':content-type', 7, string('application/json')],
      ['t', 0, Buffer.alloc(0)],
      ['f', 1, Buffer.alloc(0)],
      ['b', 2, Buffer.alloc(1)],
      ['s', 3, Buffer.alloc(2)],
      ['i', 4, Buffer.alloc(4)],
      ['l', 5, Buffer.alloc(8)],
      ['bytes', 6, string('xy')],
      ['ts', 8, Buffer.alloc(8)],
      ['id', 9, Buffer.alloc(16)],
      [':event-type', 7, string('metadata')],
    ];
    for (const size of [1, 13, 4096]) {
      const tap = new UsageTap(BEDROCK_USAGE, { 'content-type': 'application/vnd.amazon.eventstream' }, 'model/amazon.nova-micro-v1%3A0/converse-stream');
      feed(tap, message(headers, { usage: { inputTokens: 21, outputTokens: 34, totalTokens: 55 } }), size);
      expect(tap.finish(), `by ${size}`).to.deep.equal({ inputTokens: 21, outputTokens: 34, model: 'amazon.nova-micro-v1:0' });
    }
  });
});

describe('usage tap: a JSON answer longer than what is read whole (head and tail windows)', () => {
  const names = ['usage', 'model'];
  /** `head` + filler + `tail`, longer than MAX_PARSED_JSON_BYTES, the filler outside both windows. */
  const long = (head: string, middle: string, tail: string): Buffer => {
    const filler = 'x'.repeat(JSON_WINDOW_BYTES);
    const body = Buffer.from(`${head}${filler}${middle}${filler}${tail}`);
    expect(body.length).to.be.above(MAX_PARSED_JSON_BYTES);
    return body;
  };

  it('reads the last usage member of the tail, the model from the head', () => {
    const body = long('{"model":"m-head","data":"', '', '","usage":{"prompt_tokens":5,"total_tokens":5}}');
    expect(windowMembers(body, names)).to.deep.equal({ usage: { prompt_tokens: 5, total_tokens: 5 }, model: 'm-head' });
  });

  it('skips a decoy "usage" that is not a member (a string, no colon after it) and finds the member before it', () => {
    const body = long('{"data":"', '', '","usage":{"prompt_tokens":7},"note":"usage","tag":["usage"]}');
    expect(windowMembers(body, ['usage'])).to.deep.equal({ usage: { prompt_tokens: 7 } });
  });

  it('never reads between the windows: a usage member only in the middle leaves the usage unknown', () => {
    const body = long('{"data":"', '","usage":{"prompt_tokens":9},"more":"', '"}');
    expect(windowMembers(body, names)).to.equal(undefined);
  });

  it('a value that does not parse or does not end in the tail: the head is tried, else nothing', () => {
    const broken = long('{"usage":{"prompt_tokens":3},"data":"', '', '","usage":{"prompt_tokens":tru}}');
    expect(windowMembers(broken, ['usage'])).to.deep.equal({ usage: { prompt_tokens: 3 } });
    const unterminated = long('{"usage":{"prompt_tokens":4},"data":"', '', '","usage":{"prompt_tokens":4');
    expect(windowMembers(unterminated, ['usage'])).to.deep.equal({ usage: { prompt_tokens: 4 } });
    const nowhere = long('{"data":"', '', '","usage":{"prompt_tokens":');
    expect(windowMembers(nowhere, names)).to.equal(undefined);
  });

  it('the tap reads a long answer through the windows, and a long one with no usage as unknown', () => {
    const tap = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'v1/embeddings');
    feed(tap, long('{"object":"list","data":"', '', '","model":"text-embedding-3-small","usage":{"prompt_tokens":11,"total_tokens":11}}'), 4096);
    expect(tap.finish()).to.deep.include({ inputTokens: 11, model: 'text-embedding-3-small' });
    const none = new UsageTap(OPENAI_USAGE, { 'content-type': 'application/json' }, 'v1/embeddings');
    feed(none, long('{"object":"list","data":"', '","usage":{"prompt_tokens":11}', '"}'), 4096);
    expect(none.finish()?.inputTokens).to.equal(undefined);
  });
});

describe('usage-only event filter', () => {
  const usageOnly = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n';
  const content = 'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n';
  const run = (filter: UsageEventFilter, stream: string, size: number) => {
    const out: Buffer[] = [];
    const bytes = Buffer.from(stream);
    for (let offset = 0; offset < bytes.length; offset += size) out.push(filter.push(bytes.subarray(offset, offset + size)));
    out.push(filter.flush());
    return Buffer.concat(out).toString();
  };

  it('filters only an uncompressed event stream', () => {
    for (const headers of [{ 'content-type': 'text/event-stream' }, { 'content-type': 'Text/Event-Stream; charset=utf-8', 'content-encoding': 'identity' }, { 'content-type': 'text/event-stream', 'content-encoding': ' Identity ' }]) {
      expect(usageEventFilterFor(headers, OPENAI_USAGE), JSON.stringify(headers)).to.be.instanceOf(UsageEventFilter);
    }
    for (const headers of [{ 'content-type': 'text/event-stream', 'content-encoding': 'gzip' }, { 'content-type': 'application/json' }, {}]) {
      expect(usageEventFilterFor(headers, OPENAI_USAGE), JSON.stringify(headers)).to.equal(undefined);
    }
  });

  it('drops the usage-only event, LF or CRLF framed, whatever the chunking, and relays every other byte', () => {
    for (const eol of ['\n', '\r\n']) {
      const stream = (content + 'event: message\n' + usageOnly.replace('data: {', 'data:{') + 'data: [DONE]\n\n').replace(/\n/g, eol);
      const expected = (content + 'data: [DONE]\n\n').replace(/\n/g, eol);
      for (const size of [1, 3, 64, stream.length]) expect(run(new UsageEventFilter(OPENAI_USAGE), stream, size), `${JSON.stringify(eol)} by ${size}`).to.equal(expected);
    }
    // LF- and CRLF-ended events in one chunk, either first.
    expect(run(new UsageEventFilter(OPENAI_USAGE), content.replace(/\n/g, '\r\n') + usageOnly, 1 << 20)).to.equal(content.replace(/\n/g, '\r\n'));
    expect(run(new UsageEventFilter(OPENAI_USAGE), usageOnly + content.replace(/\n/g, '\r\n'), 1 << 20)).to.equal(content.replace(/\n/g, '\r\n'));
    expect(run(new UsageEventFilter(OPENAI_USAGE), '\r\n\r\n' + usageOnly, 1 << 20)).to.equal('\r\n\r\n');
  });

  it('relays a blank line at once, and an event as soon as its blank line is there', () => {
    for (const blank of ['\n\n', '\r\n\r\n']) expect(new UsageEventFilter(OPENAI_USAGE).push(Buffer.from(blank)).toString()).to.equal(blank);
    const filter = new UsageEventFilter(OPENAI_USAGE);
    expect(filter.push(Buffer.from(content.slice(0, -1))).length).to.equal(0);
    expect(filter.push(Buffer.from('\n')).toString()).to.equal(content);
  });

  it('drops a usage-only event whose data starts on an empty line, or that ends the stream without its blank line', () => {
    expect(run(new UsageEventFilter(OPENAI_USAGE), content + 'data:\n' + usageOnly, 7)).to.equal(content);
    expect(run(new UsageEventFilter(OPENAI_USAGE), content + usageOnly.trimEnd(), 7)).to.equal(content);
    expect(run(new UsageEventFilter(OPENAI_USAGE), usageOnly + content.trimEnd(), 7)).to.equal(content.trimEnd());
  });

  it('drops an event with input tokens alone or output tokens alone; relays one with no tokens, or with content', () => {
    const reader: UsageExtractor = { read: (document) => (Array.isArray(document) ? document[0] : document) as never, markers: ['Tokens'] };
    for (const data of ['{"inputTokens":3}', '{"outputTokens":3,"choices":[]}']) expect(run(new UsageEventFilter(reader), `data: ${data}\n\n`, 5), data).to.equal('');
    for (const data of ['{"cachedTokens":3,"model":"Tokens"}', '{"outputTokens":3,"choices":[1]}', '[{"outputTokens":3}]', '{"outputTokens":3', '{"outputTokens":3,"model":"a\ndata: b"}']) {
      expect(run(new UsageEventFilter(reader), `data: ${data}\n\n`, 5), data).to.equal(`data: ${data}\n\n`);
    }
  });

  it('relays an event without any of the reader\'s markers, one the reader throws on, and one past the held bound', () => {
    const reader: UsageExtractor = { read: (document) => ({ outputTokens: (document as { n: number }).n }), markers: ['"usage"', '"meta"'] };
    expect(run(new UsageEventFilter(reader), 'data: {"n":5}\n\n', 3)).to.equal('data: {"n":5}\n\n');
    expect(run(new UsageEventFilter(reader), 'data: {"n":5,"usage":1}\n\n', 3)).to.equal('');
    const throwing: UsageExtractor = { read: () => { throw new Error('reader bug'); } };
    expect(run(new UsageEventFilter(throwing), usageOnly, 3)).to.equal(usageOnly);
    const filter = new UsageEventFilter(OPENAI_USAGE);
    const held = Buffer.alloc(MAX_HELD_EVENT_BYTES, 0x61);
    expect(filter.push(held).length).to.equal(0);
    expect(filter.push(Buffer.from('b')).length).to.equal(MAX_HELD_EVENT_BYTES + 1);
    expect(filter.push(Buffer.from(usageOnly)).length).to.equal(0);
  });
});
