/**
 * Leaks: 10,000 streams opened and closed through the gateway (half read to the end, half abandoned mid-stream by the
 * client). Afterwards the heap returns to within a bound of where it started, and no socket is left open upstream.
 */
import { expect } from 'chai';
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { FakeUpstream, respondChunks, sseEvents } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function heapAfterGc(): number {
  for (let round = 0; round < 3; round += 1) gc();
  return process.memoryUsage().heapUsed;
}

describe('stream leaks', function () {
  this.timeout(180_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_LOG_LEVEL: 'warn' } });
    device = await gateway.provision({ openai: 'sk-leaks-0123456789abcdef' }, { deviceLimitPerMinute: 1_000_000, appLimitPerMinute: 10_000_000, maxConcurrentStreamsPerDevice: 1000 });
    upstream.respond(respondChunks(sseEvents([{ a: 1 }, { b: 2 }, { c: 3 }]), { intervalMs: 1 }));
  });
  after(async () => {
    agent.destroy();
    await gateway.close();
    await upstream.close();
  });

  function oneStream(abandon: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        `${gateway.url}/v1/proxy/openai/v1/chat/completions`,
        { method: 'POST', agent: abandon ? false : agent, headers: { ...device.headers, 'content-type': 'application/json' } },
        (response) => {
          if (abandon) {
            response.once('data', () => {
              request.destroy();
              resolve();
            });
          } else {
            response.resume();
            response.once('end', resolve);
          }
          response.once('error', () => resolve());
        },
      );
      request.once('error', (error) => (abandon ? resolve() : reject(error)));
      request.end('{"stream":true}');
    });
  }

  async function run(count: number): Promise<void> {
    const parallel = 32;
    let next = 0;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (next < count) {
          const index = next++;
          await oneStream(index % 2 === 1);
        }
      }),
    );
    await gateway.gateway.usage.flush();
    // Let aborted upstream exchanges and their sockets settle.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }

  it('keeps the heap within 8 MiB of its start after 10,000 streams, and leaves no upstream exchange open', async () => {
    await run(1_000);
    const before = heapAfterGc();
    await run(10_000);
    const settled = await Promise.race([Promise.all(upstream.requests.map((request) => request.closed)).then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 5000))]);
    expect(settled, 'every upstream exchange ended').to.equal(true);
    expect(upstream.requests.length).to.equal(11_000);
    // The fake upstream's records (11,000 requests with their heads and bodies) are the test's own memory, not the
    // gateway's: dropped before the heap is measured.
    upstream.requests.length = 0;
    const after = heapAfterGc();
    const growth = after - before;
    expect(growth, `heap grew by ${(growth / 1048576).toFixed(1)} MiB`).to.be.below(8 * 1024 * 1024);
  });
});
