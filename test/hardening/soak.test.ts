/**
 * The short CI variant of `npm run soak`: 20 s of mixed JSON and streaming load. Every request succeeds and memory does
 * not raise its post-GC heap floor once warm. (The documented 10-minute run and its figures are in docs/benchmarks.md.)
 */
import { expect } from 'chai';
import { runSoak } from '../../bench/soak';

describe('soak (short CI variant)', function () {
  this.timeout(120_000);

  it('serves mixed load without errors and without raising the heap floor', async () => {
    const report = await runSoak({ seconds: 20, connections: 10, sampleSeconds: 1 });
    expect(report.requests).to.be.greaterThan(1000);
    expect(report.errors).to.equal(0);
    expect(report.non2xx).to.equal(0);
    expect(report.samples.length).to.be.at.least(10);
    // Twenty seconds is too short to tell a slow leak from warm-up (V8 grows its heap lazily for a while); this bound
    // catches gross per-request leaks only. Slow leaks are the 10,000-stream test's job (forced GC, in process) and the
    // documented 10-minute run's.
    expect(report.heapFloorGrowthBytes, `heap floor grew ${(report.heapFloorGrowthBytes / 1048576).toFixed(1)} MiB`).to.be.below(64 * 1024 * 1024);
    expect(report.rssMaxBytes).to.be.below(512 * 1024 * 1024);
  });
});
