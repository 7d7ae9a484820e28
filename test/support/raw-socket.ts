/**
 * Raw TCP clients for wire-level tests of slow, partial or malformed requests: what a hostile client sends byte by
 * byte, and everything the server sent back until it closed the connection.
 */
import net from 'node:net';

export interface RawExchange {
  readonly socket: net.Socket;
  /** Everything received so far. */
  text(): string;
  /** Resolves with everything received once the connection is closed (the test never closes it first unless it says so). */
  readonly closed: Promise<string>;
  /** Resolves once `pattern` appears in what was received (or rejects when the connection closes without it). */
  waitFor(pattern: RegExp): Promise<string>;
  /** Writes a byte every `intervalMs` until the connection closes; returns how many were written. */
  trickle(intervalMs: number, byte?: string): { written(): number };
}

export function openRaw(url: string): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.off('error', reject);
      let received = '';
      const waiters: Array<() => void> = [];
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        for (const waiter of waiters.splice(0)) waiter();
      });
      socket.on('error', () => undefined);
      const closed = new Promise<string>((done) => socket.once('close', () => {
        for (const waiter of waiters.splice(0)) waiter();
        done(received);
      }));
      const exchange: RawExchange = {
        socket,
        text: () => received,
        closed,
        waitFor(pattern) {
          return new Promise((found, fail) => {
            const check = () => {
              if (pattern.test(received)) found(received);
              else if (socket.destroyed) fail(new Error(`connection closed without ${pattern}; received: ${received.slice(0, 300)}`));
              else waiters.push(check);
            };
            check();
          });
        },
        trickle(intervalMs, byte = 'a') {
          let count = 0;
          const timer = setInterval(() => {
            if (socket.destroyed || !socket.writable) return clearInterval(timer);
            socket.write(byte);
            count += 1;
          }, intervalMs);
          socket.once('close', () => clearInterval(timer));
          return { written: () => count };
        },
      };
      resolve(exchange);
    });
    socket.once('error', reject);
  });
}

/** A request head (HTTP/1.1, CRLF line ends) with `headers` as given. */
export function head(method: string, path: string, headers: Readonly<Record<string, string | number>>): string {
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
}

/** The status code of the first response in `text`, or 0. */
export function firstStatus(text: string): number {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return match ? Number(match[1]) : 0;
}

/** The JSON body of a single (final) response in `text`. */
export function lastJsonBody<T = { error: { type: string; reason: string } }>(text: string): T {
  const start = text.lastIndexOf('\r\n\r\n');
  return JSON.parse(text.slice(start + 4)) as T;
}
