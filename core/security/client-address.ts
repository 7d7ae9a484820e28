/**
 * The client's address, for per-address limits: the socket's peer, or behind one trusted reverse proxy
 * (`TOLLGATE_TRUST_PROXY`) the address that proxy appended last to `X-Forwarded-For` (earlier entries are the client's
 * own claims and are never trusted).
 */
import type { IncomingMessage } from 'node:http';

export function clientAddress(request: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const raw = request.headers['x-forwarded-for'];
    const list = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).split(',').map((entry) => entry.trim()).filter(Boolean);
    const last = list.at(-1);
    if (last) return last;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
