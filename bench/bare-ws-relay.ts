/**
 * A bare `ws` relay of our own, the realtime benchmark's yardstick: per client socket, one upstream socket to the
 * address given; messages relayed both ways as they come (no checks, no metering, no backpressure), with the gateway's
 * per-hop settings (no permessage-deflate, a 4 MiB message cap). Prints its port.
 */
import { WebSocket, WebSocketServer } from 'ws';

const upstreamPort = Number(process.argv[2]);
const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 4 * 1024 * 1024 });
server.on('connection', (client, request) => {
  const upstream = new WebSocket(`ws://127.0.0.1:${upstreamPort}${request.url ?? '/'}`, { perMessageDeflate: false, maxPayload: 4 * 1024 * 1024 });
  const early: Array<[Buffer, boolean]> = [];
  client.on('message', (data: Buffer, isBinary: boolean) => {
    if (upstream.readyState === upstream.OPEN) upstream.send(data, { binary: isBinary });
    else early.push([data, isBinary]);
  });
  upstream.on('open', () => {
    for (const [data, isBinary] of early.splice(0)) upstream.send(data, { binary: isBinary });
  });
  upstream.on('message', (data: Buffer, isBinary: boolean) => client.send(data, { binary: isBinary }));
  client.on('close', () => upstream.terminate());
  upstream.on('close', () => client.terminate());
  client.on('error', () => undefined);
  upstream.on('error', () => undefined);
});
server.on('listening', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
