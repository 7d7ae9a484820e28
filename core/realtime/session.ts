/**
 * One realtime session: the client's socket and the provider's, relayed frame for frame (protocol.md, "Realtime
 * sessions"). Text and binary messages pass unchanged, in order, both ways; each hop answers its own pings (`ws` does,
 * per RFC 6455 §5.5.2); a slow side slows the other (the sending side's socket is paused while the receiving side's
 * buffer is over {@link HIGH_WATER_BYTES}, and resumed once the write that crossed it is flushed); a provider close
 * reaches the client with the provider's code; a client that closes or vanishes closes the provider's socket at once.
 */
import { WebSocket } from 'ws';
import { GatewayError, type ProxyContext, type RealtimeUsage, type RealtimeUsageReader, type TokenUsage } from '../contract';
import type { ClientFramePolicy } from './frame-policy';

/** A peer whose send buffer holds more than this pauses the side that feeds it (a few seconds of 48 kHz PCM). */
export const HIGH_WATER_BYTES = 1024 * 1024;

/** Close codes the gateway uses, by error type (protocol.md, "Gateway closes"). */
export const CLOSE_CODES: Readonly<Record<string, number>> = {
  invalidRequest: 4400,
  unauthorized: 4401,
  attestationFailed: 4403,
  rateLimited: 4429,
  upstreamUnavailable: 4502,
  serviceUnavailable: 4503,
  upstreamTimeout: 4504,
};

/** A close code that may be sent in a close frame (RFC 6455 §7.4: 1004-1006 and 1015 never are; 1000-1014 and 3000-4999). */
export function sendableCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
}

/** At most 123 bytes of UTF-8 (RFC 6455 §5.5: a control frame's payload is at most 125 bytes, 2 of them the code). */
export function closeReason(reason: string | Buffer): string {
  const bytes = typeof reason === 'string' ? Buffer.from(reason) : reason;
  if (bytes.length <= 123) return bytes.toString('utf8');
  let text = bytes.subarray(0, 123).toString('utf8');
  // A character cut in half decodes to U+FFFD (3 bytes): drop whole characters until it fits.
  while (Buffer.byteLength(text) > 123) text = text.slice(0, -1);
  return text;
}

/** The close reason of a client message over the frame cap. */
const FRAME_TOO_LARGE = 'frame_too_large';

/**
 * The client's side of a session (the upgrade handler's `WebSocketServer` makes its sockets of this class, an option
 * `ws` documents for this). A message over the frame cap (`maxPayload`) is refused by `ws` as its header arrives, before
 * it is buffered, by closing with 1009 (RFC 6455 §7.4.1); the gateway's protocol closes it with 4400 `frame_too_large`
 * instead. `ws` closes such a socket with a code and no reason; every other close passes unchanged.
 */
export class ClientSocket extends WebSocket {
  override close(code?: number, data?: string | Buffer): void {
    if (code === 1009 && data === undefined) return super.close(CLOSE_CODES.invalidRequest!, FRAME_TOO_LARGE);
    super.close(code, data);
  }
}

/** What the session tells its registry. */
export interface SessionHost {
  readonly clock: () => number;
  /** A usage frame arrived: charge it; a rejection with a GatewayError closes the session with that error. */
  charge(session: RealtimeSession, usage: TokenUsage): Promise<void> | undefined;
  /** Counted as they pass (metrics). */
  countFrame(direction: 'in' | 'out', bytes: number): void;
  /** Both sockets are done: record, release, forget. Called once. */
  ended(session: RealtimeSession): void;
  /** A failure worth a debug line (socket errors). */
  debug(message: string, error: unknown): void;
}

export class RealtimeSession {
  framesIn = 0;
  framesOut = 0;
  bytesIn = 0;
  bytesOut = 0;
  /** Tokens of every usage frame, added up (absent: none reported). */
  usage: TokenUsage | undefined;
  audioSeconds = 0;
  /** Unix ms of the last frame either way (the idle deadline counts from it). */
  lastFrameAt: number;
  /** Session seconds already charged to the session-seconds budgets. */
  chargedSeconds = 0;
  closeCode = 1005;
  closeReason = '';
  closedBy: 'client' | 'provider' | 'gateway' | undefined;
  /** The gateway's error, when it closed the session. */
  closedWith: GatewayError | undefined;
  private ended = false;
  private readonly markers: readonly Buffer[];

  constructor(
    readonly id: string,
    readonly context: ProxyContext,
    readonly client: WebSocket,
    readonly upstream: WebSocket,
    private readonly reader: RealtimeUsageReader | undefined,
    /** SHA-256 of the app token the session was opened with (a rotation past its grace closes it). */
    readonly appTokenHash: string,
    readonly startedAt: number,
    private readonly host: SessionHost,
    /** The app's model policy over client frames; absent when none applies (frames are then not read). */
    private readonly clientFrames?: ClientFramePolicy,
  ) {
    this.lastFrameAt = startedAt;
    this.markers = (reader?.markers ?? []).map((marker) => Buffer.from(marker));
  }

  get appId(): string {
    return this.context.get('app').id;
  }

  get deviceId(): string {
    return this.context.get('device').deviceId;
  }

  /** Starts relaying. The client's handshake is complete and the provider's socket is open. */
  start(): void {
    const { client, upstream } = this;
    client.on('message', (data: Buffer, isBinary: boolean) => {
      this.framesIn += 1;
      this.bytesIn += data.length;
      this.lastFrameAt = this.host.clock();
      this.host.countFrame('in', data.length);
      if (this.clientFrames !== undefined) {
        try {
          data = this.clientFrames.apply(data, isBinary);
        } catch (error) {
          // Refused by the policy: nothing of it goes upstream; both sockets close (the client's with 4400).
          if (error instanceof GatewayError) this.closeWith(error);
          else this.closeWith(new GatewayError('invalidRequest', 'The frame could not be checked against the app\'s model policy.', { reason: 'frame_not_json' }));
          return;
        }
      }
      this.relay(data, isBinary, upstream, client);
    });
    upstream.on('message', (data: Buffer, isBinary: boolean) => {
      this.framesOut += 1;
      this.bytesOut += data.length;
      this.lastFrameAt = this.host.clock();
      this.host.countFrame('out', data.length);
      this.relay(data, isBinary, client, upstream);
      // Read after the frame went on its way: metering never holds a frame back.
      if (!isBinary && this.markers.length !== 0) this.meter(data);
    });
    client.on('close', (code: number, reason: Buffer) => {
      if (this.closedBy === undefined) {
        this.closedBy = 'client';
        this.closeCode = code;
        this.closeReason = closeReason(reason);
      }
      // The client is gone: the provider's socket goes at once (a clean close is passed on, a vanished client ends it).
      if (upstream.readyState === upstream.OPEN || upstream.readyState === upstream.CONNECTING) {
        if (this.closedBy === 'client' && sendableCloseCode(code)) upstream.close(code, closeReason(reason));
        else upstream.terminate();
      }
      this.end();
    });
    upstream.on('close', (code: number, reason: Buffer) => {
      if (this.closedBy === undefined) {
        this.closedBy = 'provider';
        // A provider socket that dropped without a close frame (1006) reaches the client as 4502 `upstream_closed`.
        if (code === 1006 || (!sendableCloseCode(code) && code !== 1005)) {
          this.closedWith = new GatewayError('upstreamUnavailable', 'The provider closed the socket without a close frame.', { reason: 'upstream_closed' });
          this.closeCode = 4502;
          this.closeReason = 'upstream_closed';
        } else {
          this.closeCode = code;
          this.closeReason = closeReason(reason);
        }
      }
      if (client.readyState === client.OPEN) {
        if (this.closeCode === 1005) client.close();
        else client.close(this.closeCode, this.closeReason);
      }
    });
    client.on('error', (error: Error & { code?: string }) => {
      // A message over the frame cap: `ws` has already sent the close (4400 frame_too_large, see ClientSocket).
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' && this.closedBy === undefined) {
        this.closedBy = 'gateway';
        this.closedWith = new GatewayError('invalidRequest', 'A client message was larger than the gateway\'s frame cap.', { reason: 'frame_too_large' });
        this.closeCode = CLOSE_CODES.invalidRequest!;
        this.closeReason = FRAME_TOO_LARGE;
        if (upstream.readyState === upstream.OPEN) upstream.close(1000);
        else upstream.terminate();
        return;
      }
      this.host.debug('realtime client socket error', error);
    });
    upstream.on('error', (error) => this.host.debug('realtime provider socket error', error));
  }

  /**
   * Sends a message on to `to`, unchanged (a text message stays text, its bytes as received). When `to`'s buffer would
   * pass the high-water mark, `from` is paused until this write is flushed (the write callback: everything before it
   * is flushed too).
   */
  private relay(data: Buffer, isBinary: boolean, to: WebSocket, from: WebSocket): void {
    if (to.readyState !== to.OPEN) return;
    if (to.bufferedAmount + data.length > HIGH_WATER_BYTES) {
      from.pause();
      to.send(data, { binary: isBinary }, () => {
        if (from.readyState === from.OPEN) from.resume();
      });
      return;
    }
    to.send(data, { binary: isBinary });
  }

  /** A provider text frame that may report usage: parsed only when it contains a marker. */
  private meter(data: Buffer): void {
    if (!this.markers.some((marker) => data.includes(marker))) return;
    let usage: RealtimeUsage | undefined;
    try {
      usage = this.reader!.read(JSON.parse(data.toString('utf8')));
    } catch {
      return;
    }
    if (!usage) return;
    if (usage.audioSeconds) this.audioSeconds += usage.audioSeconds;
    const tokens: TokenUsage = {};
    if (usage.inputTokens !== undefined) tokens.inputTokens = usage.inputTokens;
    if (usage.outputTokens !== undefined) tokens.outputTokens = usage.outputTokens;
    if (usage.cachedTokens !== undefined) tokens.cachedTokens = usage.cachedTokens;
    if (usage.reasoningTokens !== undefined) tokens.reasoningTokens = usage.reasoningTokens;
    if (usage.model !== undefined) tokens.model = usage.model;
    if (tokens.inputTokens === undefined && tokens.outputTokens === undefined) {
      if (tokens.model !== undefined) this.usage = { ...this.usage, model: tokens.model };
      return;
    }
    const total = this.usage ?? {};
    this.usage = {
      inputTokens: (total.inputTokens ?? 0) + (tokens.inputTokens ?? 0),
      outputTokens: (total.outputTokens ?? 0) + (tokens.outputTokens ?? 0),
      cachedTokens: (total.cachedTokens ?? 0) + (tokens.cachedTokens ?? 0),
      reasoningTokens: (total.reasoningTokens ?? 0) + (tokens.reasoningTokens ?? 0),
      ...(tokens.model ?? total.model ? { model: tokens.model ?? total.model } : {}),
    };
    this.host.charge(this, tokens)?.catch((error: unknown) => {
      if (error instanceof GatewayError) this.closeWith(error);
    });
  }

  /**
   * Closes both sockets because of `error`: the client gets the code of the error's type and its reason; the provider's
   * socket is closed normally (1000).
   */
  closeWith(error: GatewayError): void {
    if (this.closedBy !== undefined) return;
    this.closedBy = 'gateway';
    this.closedWith = error;
    this.closeCode = CLOSE_CODES[error.type] ?? 1011;
    this.closeReason = closeReason(error.reason);
    if (this.upstream.readyState === this.upstream.OPEN) this.upstream.close(1000);
    else this.upstream.terminate();
    if (this.client.readyState === this.client.OPEN) this.client.close(this.closeCode, this.closeReason);
    else this.client.terminate();
  }

  /** Ends sockets that did not close on their own (shutdown, after a close that got no answer). */
  terminate(): void {
    this.upstream.terminate();
    this.client.terminate();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.host.ended(this);
  }
}
