/**
 * The usage tap on its own: framing across arbitrary chunk boundaries (one byte at a time), its memory bounds (a body or
 * a line past the bound is given up, later lines still read), and "usage unknown" rather than an error for whatever it
 * cannot read, including a reader that throws.
 */
import { expect } from 'chai';
import { crc32 } from 'node:zlib';
import { MAX_FRAME_BYTES, MAX_JSON_BODY_BYTES, UsageTap, topLevelMembers } from '../../core/pipeline/usage-tap';
import { ANTHROPIC_USAGE, BEDROCK_USAGE, EMBEDDINGS_USAGE, GEMINI_USAGE, OPENAI_USAGE } from '../../providers/_shared';
import type { UsageExtractor } from '../../core/contract';

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
