/**
 * Usage readers for providers' realtime frames (core/contract/realtime.ts). Each reads one parsed frame and returns what
 * that frame reports on its own (an increment), citing the event it reads.
 */
import type { RealtimeUsageReader } from '../../core/contract';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

type Document = Record<string, unknown> | undefined;
function member(document: unknown, name: string): Document {
  if (document === null || typeof document !== 'object') return undefined;
  const value = (document as Record<string, unknown>)[name];
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

/**
 * OpenAI Realtime: `response.done` carries `response.usage` (`input_tokens`, `output_tokens`, `input_token_details`
 * with `cached_tokens`, text and audio tokens) for that response
 * (https://platform.openai.com/docs/api-reference/realtime-server-events/response/done); a transcription session's
 * `conversation.item.input_audio_transcription.completed` carries `usage` with `input_tokens` and `output_tokens` when
 * billed by tokens (https://platform.openai.com/docs/api-reference/realtime-server-events/conversation/item/input_audio_transcription/completed).
 */
export const OPENAI_REALTIME_USAGE: RealtimeUsageReader = {
  markers: ['"response.done"', '"conversation.item.input_audio_transcription.completed"'],
  read(frame) {
    const type = (frame as { type?: unknown }).type;
    const usage = type === 'response.done' ? member(member(frame, 'response'), 'usage') : type === 'conversation.item.input_audio_transcription.completed' ? member(frame, 'usage') : undefined;
    if (!usage) return undefined;
    const details = member(usage, 'input_token_details');
    const result = { inputTokens: count(usage.input_tokens), outputTokens: count(usage.output_tokens), cachedTokens: count(details?.cached_tokens) };
    return result.inputTokens === undefined && result.outputTokens === undefined ? undefined : result;
  },
};

/**
 * Gemini Live: a `BidiGenerateContentServerMessage` may carry `usageMetadata` (`promptTokenCount`,
 * `responseTokenCount`, `cachedContentTokenCount`, `thoughtsTokenCount`) for the turn it ends
 * (https://ai.google.dev/api/live#usagemetadata).
 */
export const GEMINI_LIVE_USAGE: RealtimeUsageReader = {
  markers: ['"usageMetadata"'],
  read(frame) {
    const usage = member(frame, 'usageMetadata');
    if (!usage) return undefined;
    const result = {
      inputTokens: count(usage.promptTokenCount),
      outputTokens: count(usage.responseTokenCount) ?? count(usage.candidatesTokenCount),
      cachedTokens: count(usage.cachedContentTokenCount),
      reasoningTokens: count(usage.thoughtsTokenCount),
    };
    return result.inputTokens === undefined && result.outputTokens === undefined ? undefined : result;
  },
};

/**
 * Deepgram live transcription: the `Metadata` message sent when the stream closes holds `duration`, the seconds of audio
 * processed (https://developers.deepgram.com/docs/lower-level-websockets, "Metadata").
 */
export const DEEPGRAM_LIVE_USAGE: RealtimeUsageReader = {
  markers: ['"Metadata"'],
  read(frame) {
    const document = frame as { type?: unknown; duration?: unknown };
    const seconds = document.type === 'Metadata' ? count(document.duration) : undefined;
    return seconds === undefined ? undefined : { audioSeconds: seconds };
  },
};

/**
 * AssemblyAI Universal-Streaming v3: the `Termination` message holds `audio_duration_seconds`
 * (https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api).
 */
export const ASSEMBLYAI_STREAMING_USAGE: RealtimeUsageReader = {
  markers: ['"Termination"'],
  read(frame) {
    const document = frame as { type?: unknown; audio_duration_seconds?: unknown };
    const seconds = document.type === 'Termination' ? count(document.audio_duration_seconds) : undefined;
    return seconds === undefined ? undefined : { audioSeconds: seconds };
  },
};
