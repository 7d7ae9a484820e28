/**
 * Realtime sessions (protocol.md, "Realtime sessions"): a WebSocket to `{gateway}/v1/proxy/{endpoint}` with the
 * Tollgate headers on the upgrade (React Native's WebSocket takes them as its third argument, `{ headers }`), messages
 * as an async iterator, text and binary sends, `close`. A refused upgrade is the gateway's HTTP error, mapped as any
 * response; a 44xx/45xx close fails the iterator with the TollgateError of realtime-close-codes.json (4503 `draining`:
 * `mayReconnect`); no close ever makes the SDK attest a new key.
 */
import type { ReasonAction } from './behaviour';
import type { DeviceTokenCache } from './device-token-cache';
import { abortedError, invalidRequest, mapError, networkError, TollgateError } from './errors';
import type { QueryInput } from './request-builder';
import { closeError, readClose, type BuiltUpgrade, type UpgradeInput, type UpgradeMode } from './realtime-rules';
import { CallController, describe, type AbortSignalLike } from './transport';
import type { UserTokenCache } from './user-token';
import { encodeUtf8 } from './utf8';

/** One message from the provider. */
export type RealtimeMessage = { readonly type: 'text'; readonly text: string } | { readonly type: 'binary'; readonly bytes: Uint8Array };

/** The WebSocket surface the SDK uses: React Native's WebSocket, the browser's, or the `ws` package's. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly protocol?: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: { message?: string; error?: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  send(data: string | ArrayBuffer | ArrayBufferView): void;
  close(code?: number, reason?: string): void;
  /** The `ws` package only: the refused upgrade's response, so that its status, headers and body can be read. */
  on?(event: 'unexpected-response', listener: (request: unknown, response: IncomingLike) => void): unknown;
}

interface IncomingLike {
  readonly statusCode?: number;
  readonly headers: Record<string, string | string[] | undefined>;
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  on(event: 'end' | 'error', listener: () => void): unknown;
}

/** `new WebSocket(url, protocols, { headers })`: React Native's signature, and the `ws` package's. */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], options?: { headers: Record<string, string> }) => WebSocketLike;

export interface RealtimeOptions {
  /** `{provider}/{version}/{path}[?query]`, e.g. `openai/v1/realtime?model=gpt-realtime`. */
  readonly endpoint: string;
  readonly query?: QueryInput;
  /** The provider's own subprotocols, if it uses any. */
  readonly protocols?: readonly string[];
  /**
   * `headers` (default): the tokens travel as headers, as native WebSockets allow. `subprotocols`: as
   * `tollgate-app.…`/`tollgate-device.…` subprotocols, for WebSockets that cannot set headers (web).
   */
  readonly mode?: UpgradeMode;
  /** The WebSocket implementation; default the global `WebSocket`. */
  readonly WebSocket?: WebSocketConstructor;
  /** Cancels the opening (the session is closed if it already opened). */
  readonly signal?: AbortSignalLike;
  /** Messages kept while the app does not read, at most (default 1024); past it the session fails rather than grow without bound. */
  readonly maxBufferedMessages?: number;
}

/** @internal What the client lends the session. */
export interface RealtimeHost {
  readonly deviceTokens: DeviceTokenCache;
  readonly userTokens: UserTokenCache;
  readonly clock: () => number;
  upgrade(input: Omit<UpgradeInput, 'requestTimeMs'>, call: CallController): Promise<BuiltUpgrade>;
  reportDeviceError(token: string, error: TollgateError): Promise<ReasonAction>;
}

const OPEN = 1;
const CLOSING = 2;

/** Why an opening attempt failed, and the device/user token it used. */
class RefusedUpgrade extends Error {
  constructor(
    readonly error: TollgateError,
    readonly deviceToken: string,
    readonly userToken: string | null,
  ) {
    super(error.message);
  }
}

function bytesOf(data: unknown): Uint8Array | null {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (Array.isArray(data)) {
    // ws delivers a fragmented message as an array of Buffers when binaryType is 'fragments'.
    const parts = data.map((part) => bytesOf(part) ?? new Uint8Array(0));
    const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      out.set(part, offset);
      offset += part.length;
    }
    return out;
  }
  return null;
}

/** Opens a session; resolves once the upgrade succeeded, rejects with a TollgateError otherwise. */
export async function openRealtime(host: RealtimeHost, options: RealtimeOptions): Promise<RealtimeSession> {
  if (!options || typeof options.endpoint !== 'string') throw invalidRequest('realtime() needs an endpoint, e.g. "openai/v1/realtime?model=…".', 'bad_options');
  const Socket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (typeof Socket !== 'function') throw invalidRequest('No WebSocket implementation: pass `WebSocket` in the options.', 'bad_options');
  const mode = options.mode ?? 'headers';
  if (mode !== 'headers' && mode !== 'subprotocols') throw invalidRequest(`Unknown realtime mode "${String(mode)}".`, 'bad_options');
  const call = new CallController(options.signal);
  let forceDevice = false;
  let forceUser = false;
  let retriedDevice = false;
  let retriedUser = false;
  try {
    for (;;) {
      call.throwIfAborted();
      // Fresh tokens before the upgrade: a token that expires during the session does not end it.
      const deviceToken = await call.race(host.deviceTokens.token(forceDevice));
      const userToken = mode === 'headers' ? await call.race(host.userTokens.token(forceUser)) : null;
      forceDevice = false;
      forceUser = false;
      const upgrade = await host.upgrade(
        { endpoint: options.endpoint, mode, deviceToken, userToken, ...(options.query ? { query: options.query } : {}), ...(options.protocols ? { protocols: options.protocols } : {}) },
        call,
      );
      try {
        return await call.race(connect(Socket, upgrade, host, deviceToken, userToken, options, call));
      } catch (failure) {
        if (!(failure instanceof RefusedUpgrade)) throw failure;
        const error = failure.error;
        if (error.kind === 'unauthorized' && error.reason === 'user_token_expired' && !retriedUser && host.userTokens.hasProvider) {
          retriedUser = true;
          host.userTokens.invalidate(failure.userToken);
          forceUser = true;
          continue;
        }
        if (error.kind === 'attestationFailed' && error.status === 403) {
          const action = await host.reportDeviceError(failure.deviceToken, error);
          if (!retriedDevice && (action === 'refresh' || action === 'attest' || action === 'assert')) {
            retriedDevice = true;
            if (action !== 'assert') {
              host.deviceTokens.invalidate(failure.deviceToken);
              forceDevice = true;
            }
            continue;
          }
        }
        throw error;
      }
    }
  } catch (error) {
    if (error instanceof TollgateError) throw error;
    if (call.callerAborted) throw abortedError(error);
    throw networkError(`The realtime session could not be opened: ${describe(error)}`, 'unexpected', error);
  } finally {
    call.dispose();
  }
}

/** The status in an error such as React Native's "Expected HTTP 101 response but was '403 Forbidden'". */
function statusFromMessage(message: string | undefined): number | null {
  const match = /\b([1-5]\d\d)\b/.exec(message ?? '');
  const status = match ? Number(match[1]) : NaN;
  return status >= 300 ? status : null;
}

function connect(
  Socket: WebSocketConstructor,
  upgrade: BuiltUpgrade,
  host: RealtimeHost,
  deviceToken: string,
  userToken: string | null,
  options: RealtimeOptions,
  call: CallController,
): Promise<RealtimeSession> {
  return new Promise<RealtimeSession>((resolve, reject) => {
    let socket: WebSocketLike;
    try {
      socket = new Socket(upgrade.url, [...upgrade.protocols], { headers: { ...upgrade.headers } });
    } catch (error) {
      reject(networkError(`The WebSocket could not be created: ${describe(error)}`, 'unreachable', error));
      return;
    }
    socket.binaryType = 'arraybuffer';
    let settled = false;
    let refused: Promise<TollgateError> | null = null;
    const refuse = (error: TollgateError) => {
      if (settled) return;
      settled = true;
      reject(new RefusedUpgrade(error, deviceToken, userToken));
    };
    if (typeof socket.on === 'function') {
      // The ws package (Node, tests) hands over the refused upgrade's response: status, Tollgate-Error and body.
      socket.on('unexpected-response', (_request, response) => {
        refused = new Promise<TollgateError>((done) => {
          const chunks: Uint8Array[] = [];
          const finish = () => {
            const pairs: Array<[string, string]> = [];
            for (const [name, value] of Object.entries(response.headers)) {
              if (typeof value === 'string') pairs.push([name, value]);
              else if (Array.isArray(value)) for (const item of value) pairs.push([name, item]);
            }
            const body = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
            let offset = 0;
            for (const chunk of chunks) {
              body.set(chunk, offset);
              offset += chunk.length;
            }
            const status = response.statusCode ?? 0;
            done(mapError(status, pairs, body, host.clock()) ?? networkError(`The upgrade was answered with HTTP ${status}.`, 'upgrade_refused'));
          };
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', finish);
          response.on('error', finish);
        });
        // Closed only once the body was read: closing a connecting ws socket destroys the response under the reader.
        refused.then(
          (error) => {
            refuse(error);
            try {
              socket.close();
            } catch {
              // Already failed.
            }
          },
          () => undefined,
        );
      });
    }
    const session = new RealtimeSession(socket, options.maxBufferedMessages ?? 1024, host, deviceToken);
    socket.onopen = () => {
      if (settled) return;
      settled = true;
      session.attach();
      resolve(session);
    };
    socket.onerror = (event) => {
      if (settled || refused) return;
      // React Native reports a refused upgrade as an error whose message names the status, without the body: the
      // status decides the kind (error-mapping.json rule 3, "anything else").
      const message = event?.message ?? describe(event?.error ?? 'WebSocket error');
      const status = statusFromMessage(message);
      if (status !== null) {
        refuse(mapError(status, [['Tollgate-Error', 'upgradeRefused']], null, host.clock())!);
      } else {
        settled = true;
        reject(networkError(`The realtime session could not be opened: ${message}`, 'unreachable'));
      }
    };
    socket.onclose = (event) => {
      if (settled || refused) return;
      settled = true;
      const reading = readClose(event.code, event.reason);
      reject(reading ? closeError(reading) : networkError('The realtime session closed before it opened.', 'unreachable'));
    };
    if (call.signal) {
      call.signal.addEventListener(
        'abort',
        () => {
          if (!settled) {
            settled = true;
            try {
              socket.close();
            } catch {
              // Nothing to close.
            }
            reject(abortedError());
          }
        },
        { once: true },
      );
    }
  });
}

/**
 * An open realtime session. Read messages with `for await (const message of session)`; send with `send(text)` or
 * `send(bytes)`; end with `close()`. The iterator ends after a normal close (1000) and fails with a TollgateError after
 * any other: `kind`, `reason`, `closeCode`, and `mayReconnect` (4503: the gateway is draining; open a new session).
 */
export class RealtimeSession implements AsyncIterable<RealtimeMessage> {
  private readonly queue: RealtimeMessage[] = [];
  private waiting: { resolve: (result: IteratorResult<RealtimeMessage>) => void; reject: (error: unknown) => void } | null = null;
  private ended: { error: TollgateError | null } | null = null;
  private closedResolve!: (value: { code: number; reason: string }) => void;
  /** Settles when the socket closed, with the code and reason received. */
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>;

  constructor(
    private readonly socket: WebSocketLike,
    private readonly maxBuffered: number,
    private readonly host: RealtimeHost,
    private readonly deviceToken: string,
  ) {
    this.closed = new Promise((resolve) => {
      this.closedResolve = resolve;
    });
  }

  /** The subprotocol the provider chose ('' when none). */
  get protocol(): string {
    return this.socket.protocol ?? '';
  }

  /** @internal Called once the upgrade succeeded. */
  attach(): void {
    this.socket.onmessage = (event) => {
      const data = event.data;
      const message: RealtimeMessage | null =
        typeof data === 'string' ? { type: 'text', text: data } : ((bytes) => (bytes ? { type: 'binary', bytes } : null))(bytesOf(data));
      if (!message || this.ended) return;
      if (this.waiting) {
        const waiting = this.waiting;
        this.waiting = null;
        waiting.resolve({ done: false, value: message });
        return;
      }
      if (this.queue.length >= this.maxBuffered) {
        // The app stopped reading: fail the session instead of buffering without bound.
        this.finish(networkError(`More than ${this.maxBuffered} unread realtime messages: read the session faster.`, 'buffer_full'));
        this.socket.close(1008, 'buffer_full');
        return;
      }
      this.queue.push(message);
    };
    this.socket.onerror = () => undefined; // the close event that follows says what happened
    this.socket.onclose = (event) => {
      this.closedResolve({ code: event.code, reason: event.reason });
      const reading = readClose(event.code, event.reason ?? '');
      if (!reading) {
        this.finish(null);
        return;
      }
      const error = closeError(reading);
      if (reading.action === 'stop') {
        // device_revoked: as for an HTTP answer; the device is not re-keyed and nothing more is refreshed.
        this.host.reportDeviceError(this.deviceToken, error).catch(() => undefined);
        this.host.deviceTokens.stop(error);
      }
      this.finish(error);
    };
  }

  /** Sends a text frame (a string) or a binary frame (bytes). */
  send(data: string | Uint8Array | ArrayBuffer): void {
    if (this.ended || this.socket.readyState !== OPEN) throw new TollgateError('networkError', 'The realtime session is closed.', { reason: 'session_closed' });
    if (typeof data === 'string') this.socket.send(data);
    else if (data instanceof ArrayBuffer) this.socket.send(data);
    else if (data instanceof Uint8Array) this.socket.send(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer);
    else throw invalidRequest('send() takes a string or bytes.', 'bad_body');
  }

  /** Sends a JSON message as text (most realtime APIs speak JSON events). */
  sendJson(value: unknown): void {
    this.send(JSON.stringify(value));
  }

  /** Closes the session (1000 by default); the iterator then ends. */
  close(code = 1000, reason = ''): void {
    if (this.socket.readyState < CLOSING) this.socket.close(code, reason);
  }

  /** Bytes of a text message, for apps that forward frames. */
  static textBytes(message: RealtimeMessage): Uint8Array {
    return message.type === 'text' ? encodeUtf8(message.text) : message.bytes;
  }

  private finish(error: TollgateError | null): void {
    if (this.ended) return;
    this.ended = { error };
    if (this.waiting) {
      const waiting = this.waiting;
      this.waiting = null;
      if (this.queue.length === 0) {
        if (error) waiting.reject(error);
        else waiting.resolve({ done: true, value: undefined });
      }
    }
  }

  next(): Promise<IteratorResult<RealtimeMessage>> {
    if (this.queue.length > 0) return Promise.resolve({ done: false, value: this.queue.shift()! });
    if (this.ended) {
      const error = this.ended.error;
      if (error) {
        this.ended = { error: null }; // reported once
        return Promise.reject(error);
      }
      return Promise.resolve({ done: true, value: undefined });
    }
    if (this.waiting) return Promise.reject(invalidRequest('Only one reader at a time may wait for realtime messages.', 'concurrent_read'));
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  /** Leaving a `for await` loop early closes the session. */
  return(): Promise<IteratorResult<RealtimeMessage>> {
    this.close();
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): AsyncIterator<RealtimeMessage> {
    return { next: () => this.next(), return: () => this.return() };
  }

  /** Babel's for-await helper looks here when the runtime has no `Symbol.asyncIterator`. */
  '@@asyncIterator'(): AsyncIterator<RealtimeMessage> {
    return this[Symbol.asyncIterator]();
  }
}
