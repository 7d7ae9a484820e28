/**
 * TOLLGATE_ADMIN_PORT: the dashboard, the management API, MCP and metrics answer only on the admin listener; the public
 * port answers them `404 no_route` (case and encoding variants included, since Express matches those too), serves the
 * proxy and attestation, and both serve the health endpoints. Without the setting one listener serves everything.
 */
import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest, type ErrorBody } from '../support/http';

const OPERATOR_PATHS = ['/dashboard/', '/v1/admin/apps', '/metrics', '/mcp', '/'];

describe('admin listener (TOLLGATE_ADMIN_PORT)', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_ADMIN_PORT: '0', TOLLGATE_ADMIN_HOST: '127.0.0.1' } });
    adminKey = (await gateway.gateway.management.createAdminKey({ name: 'ops' })).adminKey;
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('listens on a second port', () => {
    expect(gateway.gateway.adminUrl).to.be.a('string').and.not.equal(gateway.url);
  });

  for (const path of [...OPERATOR_PATHS, '/V1/ADMIN/apps', '/%761/admin/apps', '/Metrics', '/DASHBOARD/', '/v1/admin/openapi.json']) {
    it(`the public port answers ${path} 404 no_route, credentials or not`, async () => {
      const response = await rawRequest(gateway.url, { method: path === '/mcp' ? 'POST' : 'GET', path, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: path === '/mcp' ? '{}' : undefined });
      expect(response.status, response.text()).to.equal(404);
      expect(response.json<ErrorBody>().error.reason).to.equal('no_route');
      expect(response.text()).to.not.include('tollgate_');
    });
  }

  it('the admin port serves the dashboard, the management API, metrics and MCP', async () => {
    const admin = gateway.gateway.adminUrl!;
    const dashboard = await fetch(`${admin}/dashboard/`);
    expect(dashboard.status).to.equal(200);
    expect(dashboard.headers.get('content-type')).to.match(/text\/html/);
    const apps = await fetch(`${admin}/v1/admin/apps`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(apps.status).to.equal(200);
    expect(await apps.json()).to.be.an('array');
    const metrics = await fetch(`${admin}/metrics`);
    expect(metrics.status).to.equal(200);
    expect(await metrics.text()).to.match(/^tollgate_/m);
    // MCP initialize (https://modelcontextprotocol.io/specification/2025-06-18/basic/lifecycle#initialization).
    const mcp = await fetch(`${admin}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } }),
    });
    expect(mcp.status).to.equal(200);
    expect(((await mcp.json()) as { result: { serverInfo: unknown } }).result).to.have.property('serverInfo');
    expect((await fetch(`${admin}/`, { redirect: 'manual' })).status).to.equal(302);
  });

  it('health endpoints answer on both ports', async () => {
    for (const base of [gateway.url, gateway.gateway.adminUrl!]) {
      expect((await fetch(`${base}/healthz`)).status, base).to.equal(200);
      expect((await fetch(`${base}/readyz`)).status, base).to.equal(200);
    }
  });

  it('the proxy and attestation work on the public port and are absent from the admin port', async () => {
    const device = await gateway.provision({ openai: 'sk-admin-port-0123456789abcdef' });
    const before = upstream.requests.length;
    const proxied = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { ...device.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test' }),
    });
    expect(proxied.status).to.equal(200);
    expect(upstream.last().headers.authorization).to.equal('Bearer sk-admin-port-0123456789abcdef');
    const onAdmin = await rawRequest(gateway.gateway.adminUrl!, {
      method: 'POST',
      path: '/v1/proxy/openai/v1/chat/completions',
      headers: { ...device.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test' }),
    });
    expect(onAdmin.status).to.equal(404);
    expect(onAdmin.json<ErrorBody>().error.reason).to.equal('no_route');
    expect(upstream.requests.length).to.equal(before + 1);
    const attest = await rawRequest(gateway.gateway.adminUrl!, { method: 'POST', path: '/v1/attest/challenge', headers: { 'tollgate-app-token': device.headers['Tollgate-App-Token']! } });
    expect(attest.status).to.equal(404);
  });
});

describe('without TOLLGATE_ADMIN_PORT', () => {
  it('one listener serves the operator surfaces and the proxy', async () => {
    const gateway = await TestGateway.start();
    try {
      expect(gateway.gateway.adminUrl).to.equal(null);
      expect((await fetch(`${gateway.url}/metrics`)).status).to.equal(200);
      expect((await fetch(`${gateway.url}/dashboard/`)).status).to.equal(200);
      expect((await fetch(`${gateway.url}/v1/admin/apps`)).status).to.equal(401);
    } finally {
      await gateway.close();
    }
  });
});
