/**
 * The benchmark's fake provider: a JSON chat completion and an SSE stream of ten chunks, answered at once so that the
 * measurement is the proxies' cost, not the provider's. Prints its port on stdout.
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
  request.resume();
  request.on('end', () => {
    if (request.url?.includes('stream')) {
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
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
