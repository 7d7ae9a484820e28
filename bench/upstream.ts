/**
 * A fake OpenAI-shaped provider: a JSON chat completion, or an SSE stream of ten chunks when the URL contains `stream`
 * or the body asks for `"stream":true`, answered at once so that a benchmark measures the proxies, not the provider;
 * with `hold` in the URL, a stream that sends a frame a second until the client leaves (`npm run bench:streams`).
 * Also the README walkthrough's stand-in for OpenAI. Usage: node dist/bench/upstream.js [port]; prints its port.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'x'.repeat(600) }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 150, total_tokens: 160 },
});
const frames = Array.from({ length: 10 }, (_, index) => `data: ${JSON.stringify({ id: 'c', choices: [{ index: 0, delta: { content: `token-${index} ` } }] })}\n\n`);
frames.push('data: [DONE]\n\n');

const server = http.createServer((request, response) => {
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => {
    if (body.length < 4096) body += chunk;
  });
  request.on('end', () => {
    if (request.url?.includes('hold')) {
      // A long stream (npm run bench:streams): one frame at once, then one a second until the client goes away.
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(frames[0]);
      const timer = setInterval(() => response.write(frames[1]), 1000);
      response.on('close', () => clearInterval(timer));
      return;
    }
    if (request.url?.includes('stream') || /"stream"\s*:\s*true/.test(body)) {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const frame of frames) response.write(frame);
      response.end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
    response.end(completion);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
