import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

describe('gateway smoke: a proxied call reaches the fake upstream with the key injected', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('injects Authorization: Bearer <secret> and answers the upstream body', async () => {
    const device = await gateway.provision({ openai: 'sk-smoke-0123456789abcdef' });
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { ...device.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test' }),
    });
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal({ ok: true, method: 'POST', url: '/v1/chat/completions' });
    expect(upstream.last().headers.authorization).to.equal('Bearer sk-smoke-0123456789abcdef');
  });

  it('counts the request in Prometheus metrics, labelled by provider and status class only', async () => {
    const metrics = await fetch(`${gateway.url}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(metrics.headers.get('content-type')).to.match(/^text\/plain; version=0.0.4/);
    const text = await metrics.text();
    expect(text).to.match(/^tollgate_proxy_requests_total\{provider="openai",code="2xx",error=""\} [1-9]\d*$/m);
    expect(text).to.match(/^tollgate_upstream_queued_requests 0$/m);
    expect(text).not.to.match(/app_|device-/);
  });
});
