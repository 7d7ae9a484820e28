/**
 * The second baseline: a bare pipe on the client Tollgate forwards with (undici's pool, dispatch API, writing to Node's
 * `ServerResponse`), nothing else. Reported beside the `node:http` pipe so that the comparison stays honest: part of the
 * gateway's gain over its old self is the client, not the pipeline. Usage: node bare-undici-proxy.js <upstream port>.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Agent = require('undici/lib/dispatcher/agent') as typeof UndiciAgent;

const upstreamPort = Number(process.argv[2]);
const origin = `http://127.0.0.1:${upstreamPort}`;
const agent = new Agent({ connections: null, pipelining: 1 });

const server = http.createServer((request, response) => {
  // A proxy in service answers its load balancer's health check itself (npm run bench sends one now and then).
  if (request.url === '/healthz') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"status":"ok"}');
    return;
  }
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) if (value !== undefined && name !== 'connection' && name !== 'host') headers[name] = value;
  const hasBody = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;
  if (hasBody) delete headers['transfer-encoding'];
  // undici's core handler interface, the one Tollgate's forward stage implements (core/pipeline/forward.ts).
  let resume: () => void = () => {};
  const handler: Dispatcher.DispatchHandler = {
    onConnect() {},
    onHeaders(statusCode, rawHeaders, resumeUpstream) {
      resume = resumeUpstream;
      const responseHeaders: string[] = [];
      for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
        const name = rawHeaders[index]!.toString('latin1');
        const lower = name.toLowerCase();
        if (lower === 'transfer-encoding' || lower === 'connection' || lower === 'keep-alive') continue;
        responseHeaders.push(name, rawHeaders[index + 1]!.toString('latin1'));
      }
      response.writeHead(statusCode, responseHeaders);
      return true;
    },
    onData(chunk) {
      if (response.write(chunk)) return true;
      response.once('drain', resume);
      return false;
    },
    onComplete() {
      response.end();
    },
    onError() {
      response.destroy();
    },
  };
  agent.dispatch({ origin, path: request.url ?? '/', method: (request.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: hasBody ? request : null }, handler);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
