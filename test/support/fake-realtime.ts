/**
 * A fake provider socket on loopback: records every handshake (path, query, headers, subprotocols) and every message
 * (bytes and whether binary), and lets a test answer as the provider documents. Subprotocols offered are answered with
 * the first one (as OpenAI and Deepgram do) unless `protocol` says otherwise.
 */
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface RecordedHandshake {
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly rawHeaders: readonly string[];
  readonly protocols: readonly string[];
}

export interface RecordedMessage {
  readonly data: Buffer;
  readonly binary: boolean;
}

export interface FakeSession {
  readonly handshake: RecordedHandshake;
  readonly socket: WebSocket;
  readonly messages: RecordedMessage[];
  readonly closed: Promise<{ code: number; reason: string }>;
}

export class FakeRealtimeUpstream {
  readonly sessions: FakeSession[] = [];
  /** Called for each new session (the provider's greeting, scripted answers). */
  onSession: (session: FakeSession) => void = () => undefined;
  /** An HTTP status to refuse handshakes with (and its body); 0: accept. */
  refuseWith = 0;
  refuseBody = '';
  private waiters: Array<(session: FakeSession) => void> = [];

  private constructor(
    private readonly server: http.Server,
    private readonly sockets: WebSocketServer,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeRealtimeUpstream> {
    const server = http.createServer((_request, response) => response.writeHead(404).end());
    const sockets = new WebSocketServer({ noServer: true, perMessageDeflate: false, handleProtocols: (offered) => [...offered][0] ?? false });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fake = new FakeRealtimeUpstream(server, sockets, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('upgrade', (request: IncomingMessage, socket, head) => fake.accept(request, socket, head));
    return fake;
  }

  private accept(request: IncomingMessage, socket: import('node:stream').Duplex, head: Buffer): void {
    const handshake: RecordedHandshake = {
      url: request.url ?? '',
      headers: request.headers,
      rawHeaders: request.rawHeaders,
      protocols: (request.headers['sec-websocket-protocol'] ?? '').split(',').map((entry) => entry.trim()).filter(Boolean),
    };
    if (this.refuseWith) {
      this.sessions.push({ handshake, socket: undefined as never, messages: [], closed: Promise.resolve({ code: 0, reason: '' }) });
      socket.end(`HTTP/1.1 ${this.refuseWith} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(this.refuseBody)}\r\nConnection: close\r\n\r\n${this.refuseBody}`);
      return;
    }
    this.sockets.handleUpgrade(request, socket, head, (ws) => {
      const messages: RecordedMessage[] = [];
      ws.on('message', (data: Buffer, binary: boolean) => messages.push({ data: Buffer.from(data), binary }));
      const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
      const session: FakeSession = { handshake, socket: ws, messages, closed };
      this.sessions.push(session);
      this.onSession(session);
      for (const waiter of this.waiters.splice(0)) waiter(session);
    });
  }

  /** The next session to open (or the latest one, if one opened since `after` sessions). */
  nextSession(after = this.sessions.length): Promise<FakeSession> {
    if (this.sessions.length > after) return Promise.resolve(this.sessions[after]!);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<void> {
    for (const client of this.sockets.clients) client.terminate();
    this.sockets.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Resolves once `predicate` holds (checked every 10 ms), or rejects after `ms`. */
export async function eventually(predicate: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
