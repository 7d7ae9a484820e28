/**
 * The process figures an operator sizes and alerts on, in `/metrics` beside the gateway's own: CPU time, descriptors
 * (each proxied stream holds two), collection pauses. Named as every Prometheus client library names them.
 */
import { expect } from 'chai';
import net from 'node:net';
import { TestGateway } from '../support/gateway';
import { metricSample as sample, scrapeMetrics } from '../support/metrics';

/** Waits (20 ms steps, at most 2 s) until `check` holds. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < 100 && !(await check()); waited += 1) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('/metrics: the process figures (CPU, descriptors, collection pauses)', () => {
  let gateway: TestGateway;

  before(async () => {
    gateway = await TestGateway.start();
  });
  after(async () => {
    await gateway.close();
  });

  const scrape = () => scrapeMetrics(gateway);

  it('counts the process CPU time as counters that only go up, user plus system', async () => {
    const first = await scrape();
    const user = sample(first, 'process_cpu_user_seconds_total');
    const system = sample(first, 'process_cpu_system_seconds_total');
    expect(sample(first, 'process_cpu_seconds_total')).to.be.closeTo(user + system, 0.000002);
    expect(first).to.match(/^# TYPE process_cpu_seconds_total counter$/m);
    // Some CPU between two scrapes (hashing is synchronous work on this thread).
    const { createHash } = await import('node:crypto');
    for (let index = 0; index < 20_000; index += 1) createHash('sha256').update(String(index)).digest();
    const second = await scrape();
    expect(sample(second, 'process_cpu_seconds_total')).to.be.greaterThan(sample(first, 'process_cpu_seconds_total'));
    const started = sample(second, 'process_start_time_seconds');
    expect(started).to.be.at.most(Date.now() / 1000);
    expect(started).to.be.at.least(Date.now() / 1000 - 24 * 3600);
  });

  it('reports the open descriptors as they change, and the limit they are bounded by', async () => {
    if (process.platform !== 'linux') {
      // Read from /proc/self: where there is none, the gauges are left out rather than made up.
      expect(await scrape()).not.to.match(/^process_(open|max)_fds /m);
      return;
    }
    const before = sample(await scrape(), 'process_open_fds');
    // 25 connections held open to the gateway: each is two descriptors of this process (the test client's socket and
    // the gateway's accepted one).
    const port = Number(new URL(gateway.url).port);
    const sockets = await Promise.all(
      Array.from({ length: 25 }, () => new Promise<net.Socket>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
        socket.once('error', reject);
      })),
    );
    // Accepted by the server (its connection count), not only connected by the kernel.
    const server = gateway.gateway.server;
    await until(async () => (await new Promise<number>((resolve, reject) => server.getConnections((error, value) => (error ? reject(error) : resolve(value))))) >= 25);
    const text = await scrape();
    const held = sample(text, 'process_open_fds');
    // The scrape's own connection comes and goes; other descriptors of this process may open meanwhile.
    expect(held - before).to.be.at.least(50);
    const limit = sample(text, 'process_max_fds');
    expect(limit).to.be.greaterThan(held);
    expect(limit).to.equal(Number(/^Max open files\s+(\d+)/m.exec((await import('node:fs')).readFileSync('/proc/self/limits', 'utf8'))![1]));
    for (const socket of sockets) socket.destroy();
    await until(async () => sample(await scrape(), 'process_open_fds') <= held - 40);
    expect(sample(await scrape(), 'process_open_fds')).to.be.at.most(held - 40);
  });

  it('counts the collector pauses by kind as a histogram whose buckets add up', async () => {
    // Short-lived garbage, far more than a young generation holds: scavenges happen.
    let kept = 0;
    for (let round = 0; round < 40; round += 1) {
      const garbage = Array.from({ length: 50_000 }, (_, index) => ({ index, text: `x${index}` }));
      kept += garbage.length;
    }
    expect(kept).to.equal(2_000_000);
    // The observer hears of each collection after it, in a later turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = await scrape();
    expect(text).to.match(/^# TYPE nodejs_gc_duration_seconds histogram$/m);
    const count = sample(text, 'nodejs_gc_duration_seconds_count{kind="minor"}');
    expect(count).to.be.at.least(1);
    expect(sample(text, 'nodejs_gc_duration_seconds_bucket{kind="minor",le="+Inf"}')).to.equal(count);
    expect(sample(text, 'nodejs_gc_duration_seconds_sum{kind="minor"}')).to.be.greaterThan(0);
    const buckets = [...text.matchAll(/^nodejs_gc_duration_seconds_bucket\{kind="minor",le="([\d.]+)"\} (\d+)$/gm)].map((match) => Number(match[2]));
    expect(buckets).to.have.length(10);
    // Cumulative: each bucket holds the ones below it.
    for (let index = 1; index < buckets.length; index += 1) expect(buckets[index]).to.be.at.least(buckets[index - 1]!);
    expect(buckets[buckets.length - 1]).to.be.at.most(count);
  });
});
