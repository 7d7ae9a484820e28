/**
 * The realtime benchmark's provider: a `ws` server on loopback that echoes every message back as it came (text stays
 * text, binary stays binary). No permessage-deflate, as a provider's socket is reached by the gateway. Prints its port.
 */
import { WebSocketServer } from 'ws';

const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 4 * 1024 * 1024 });
server.on('connection', (socket) => {
  socket.on('message', (data: Buffer, isBinary: boolean) => socket.send(data, { binary: isBinary }));
  socket.on('error', () => undefined);
});
server.on('listening', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
