/** Small builders for conformance fixtures. */
import type { FixtureResponse } from './fixture';

export function jsonResponse(body: unknown, status = 200): FixtureResponse {
  return { status, contentType: 'application/json', chunks: [JSON.stringify(body)] };
}

/** SSE frames: `[eventName, data]` pairs (name may be empty) or raw lines such as comments. */
export function sseResponse(frames: ReadonlyArray<readonly [string, unknown] | string>): FixtureResponse {
  return {
    status: 200,
    contentType: 'text/event-stream',
    chunks: frames.map((frame) =>
      typeof frame === 'string' ? frame : `${frame[0] ? `event: ${frame[0]}\n` : ''}data: ${typeof frame[1] === 'string' ? frame[1] : JSON.stringify(frame[1])}\n\n`,
    ),
  };
}

/** Audio-like bytes in several chunks (an MP3 frame header first, then filler, including CR/LF and NUL bytes). */
export function audioResponse(contentType = 'audio/mpeg'): FixtureResponse {
  return {
    status: 200,
    contentType,
    chunks: [Buffer.from([0xff, 0xfb, 0x90, 0x64, 0x00, 0x0d, 0x0a]), Buffer.alloc(4096, 0x55), Buffer.from([0x00, 0xff, 0x0a, 0x0d])],
  };
}
