/**
 * Marks the requests that arrived as WebSocket upgrades (core/realtime/upgrade-handler.ts) so that `injectKey` admits
 * them on declared realtime routes only. A header cannot say it: a plain HTTP request may carry any header, while only
 * the server's `upgrade` event puts a request here.
 */
import type { IncomingMessage } from 'node:http';

const upgrades = new WeakSet<IncomingMessage>();

export function markRealtimeUpgrade(request: IncomingMessage): void {
  upgrades.add(request);
}

export function isRealtimeUpgrade(request: IncomingMessage): boolean {
  return upgrades.has(request);
}
