/**
 * A webhook endpoint on loopback for the alert and webhook tests: answers 204 and keeps every delivery it received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

export interface ParsedDelivery extends Received {
  readonly json: { type: string; app: string; timestamp: string; data: Record<string, unknown> };
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private server: http.Server | undefined;
  port = 0;

  /** Listens on `port` (0: a free one; a receiver restarted on its old port shows a receiver that came back). */
  async start(port = 0): Promise<void> {
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The event types received, in order. */
  types(): string[] {
    return this.received.map((delivery) => (JSON.parse(delivery.body) as { type: string }).type);
  }

  /** The deliveries of one app and event type, parsed. */
  of(app: string, type: string): ParsedDelivery[] {
    return this.received
      .map((delivery) => ({ ...delivery, json: JSON.parse(delivery.body) as ParsedDelivery['json'] }))
      .filter((delivery) => delivery.json.app === app && delivery.json.type === type);
  }
}

/** Reads until `done` holds, every 25 ms, for at most `waitMs`; throws naming `what` and the last value. */
export async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, waitMs = 15_000): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${waitMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
