/**
 * Realtime sessions as the request log keeps them: one row per WebSocket session (status 101), its duration in
 * `latencyMs`, its own figures in `session` (frames each way, close code and reason, who closed, audio seconds). The
 * request log and a device's page show them apart from HTTP requests with these helpers.
 */
import type { RealtimeSessionFigures, RequestLog } from './api.js';
import { h } from './dom.js';
import { compact, duration } from './format.js';
import { badge } from './ui.js';

export type LoggedEntry = RequestLog['requests'][number];
export type SessionEntry = LoggedEntry & { session: RealtimeSessionFigures };

export const isSession = (entry: LoggedEntry): entry is SessionEntry => entry.session !== null && entry.session !== undefined;

/** Who closed, in words. */
const CLOSERS: Record<RealtimeSessionFigures['closedBy'], string> = { client: 'the app', provider: 'the provider', gateway: 'the gateway' };

/** A normal close (1000 normal, 1001 going away, 1005 none given). */
const normal = (code: number) => code === 1000 || code === 1001 || code === 1005;

/** The close as a badge: code and reason, good for a normal close. */
export function closeBadge(session: RealtimeSessionFigures): HTMLElement {
  return badge(`${session.closeCode}${session.closeReason ? ` ${session.closeReason}` : ''}`, normal(session.closeCode) ? 'ok' : 'bad');
}

/** The route cell of a session's row: a "realtime" badge before its path, so it never reads as an HTTP call. */
export function sessionRoute(entry: LoggedEntry): HTMLElement {
  return h('span', {}, badge('realtime', 'muted'), h('br'), h('span', { class: 'muted' }, entry.provider), ' ', h('code', { title: entry.requestId ?? '' }, entry.route ?? ''));
}

/** The status cell of a session's row: its close, and who closed. */
export function sessionStatus(session: RealtimeSessionFigures): HTMLElement {
  return h('span', {}, closeBadge(session), h('br'), h('span', { class: 'error-type' }, `closed by ${CLOSERS[session.closedBy]}`));
}

/** Audio seconds as the provider reported them, e.g. `12.5 s`. */
const audio = (seconds: number): string => `${Math.round(seconds * 10) / 10} s`;

/** Frames each way, with the audio seconds where the provider reports them, e.g. `12 in / 340 out, 12.5 s audio`. */
export const frames = (session: RealtimeSessionFigures): string => `${compact(session.framesIn)} in / ${compact(session.framesOut)} out${session.audioSeconds === undefined ? '' : `, ${audio(session.audioSeconds)} audio`}`;

/** Every figure of one session, for a detail list. */
export function sessionFacts(entry: SessionEntry): Array<[string, Node | string]> {
  const session = entry.session;
  return [
    ['Kind', 'Realtime session (WebSocket)'],
    ['Duration', duration(entry.latencyMs)],
    ['Frames from the app / to the app', `${session.framesIn} / ${session.framesOut}`],
    ['Close', closeBadge(session)],
    ['Closed by', CLOSERS[session.closedBy]],
    ['Audio', session.audioSeconds === undefined ? 'not reported' : audio(session.audioSeconds)],
    ['Tokens in / out', entry.inputTokens === null || entry.inputTokens === undefined ? 'not reported' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`],
  ];
}
