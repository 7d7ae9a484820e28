/**
 * The baseline: a bare Node pipe proxy with the same keep-alive upstream pool Tollgate uses and nothing else (no auth, no
 * limits, no header hygiene). Usage: node bare-proxy.js <upstream port>. Prints its own port on stdout.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstreamPort = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 2048, maxFreeSockets: 256, scheduling: 'lifo' });

const server = http.createServer((request, response) => {
  // A proxy in service answers its load balancer's health check itself (npm run bench sends one now and then).
  if (request.url === '/healthz') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"status":"ok"}');
    return;
  }
  const upstream = http.request(
    { host: '127.0.0.1', port: upstreamPort, method: request.method, path: request.url, headers: { ...request.headers, host: `127.0.0.1:${upstreamPort}` }, agent },
    (upstreamResponse) => {
      response.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
      upstreamResponse.pipe(response);
    },
  );
  upstream.on('error', () => response.destroy());
  request.pipe(upstream);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
