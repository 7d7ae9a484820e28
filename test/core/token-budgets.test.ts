/**
 * Token budgets on one node (in-process rate-limit store): set through the management API, the CLI and MCP, cleared by
 * null / 0 / an empty value; device, app and provider budgets refuse the request after the one that crossed them, with
 * reason `token_budget`; tokens of a stream count as the provider reported them in its last event; usage unknown
 * counts nothing. The fleet case (two nodes on Redis) is test/scale/token-budgets.test.ts.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { FakeUpstream, sseEvents, type Responder } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

/** OpenAI chat completion with the given usage (https://platform.openai.com/docs/api-reference/chat/object). */
function completion(input: number, output: number): Responder {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }));
  };
}

describe('token budgets (one node)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'budgets' }));
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const chat = async (device: Provisioned, slug = 'openai', path = 'v1/chat/completions') => {
    const response = await fetch(`${gateway.url}/v1/proxy/${slug}/${path}`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"model":"m"}' });
    const text = await response.text();
    // The charge is made when the answer ends; let it land before the next request (no waiting on time).
    await new Promise((resolve) => setImmediate(resolve));
    return { status: response.status, reason: response.status === 429 ? (JSON.parse(text) as { error: { reason: string } }).error.reason : undefined, retryAfter: response.headers.get('retry-after') };
  };

  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, json: (await response.json()) as { settings: Record<string, unknown> } };
  };

  it('a device budget refuses the request after the one that crossed it, for that device only; null clears it', async () => {
    const spender = await gateway.provision({ openai: 'sk-budget-one-0123456789abcdef' });
    const set = await admin('PATCH', `/apps/${spender.appId}`, { deviceDailyTokens: 1000 });
    expect(set.status).to.equal(200);
    expect(set.json.settings.deviceDailyTokens).to.equal(1000);
    const otherToken = await gateway.deviceToken(spender.appId, spender.appToken, 'second-device');
    const other: Provisioned = { ...spender, deviceId: 'second-device', deviceToken: otherToken, headers: { 'Tollgate-App-Token': spender.appToken, 'Tollgate-Device-Token': otherToken } };

    upstream.respond(completion(600, 399));
    expect((await chat(spender)).status).to.equal(200); // 999 of 1,000
    expect((await chat(spender)).status).to.equal(200); // crosses: 1,998
    const refused = await chat(spender);
    expect(refused).to.include({ status: 429, reason: 'token_budget' });
    expect(Number(refused.retryAfter)).to.be.within(1, 86_400);
    expect(upstream.requests).to.have.length(2);
    expect((await chat(other)).status).to.equal(200);

    const cleared = await admin('PATCH', `/apps/${spender.appId}`, { deviceDailyTokens: null });
    expect(cleared.json.settings.deviceDailyTokens ?? null).to.equal(null);
    expect((await chat(spender)).status).to.equal(200);
  });

  it('an app budget counts every device; a provider budget counts only that provider', async () => {
    const first = await gateway.provision({ openai: 'sk-budget-two-0123456789abcdef', anthropic: 'sk-ant-budget-two-0123456789' }, { appDailyTokens: 500, providerDailyTokens: { anthropic: 100 } });
    const secondToken = await gateway.deviceToken(first.appId, first.appToken, 'app-budget-2');
    const second: Provisioned = { ...first, deviceId: 'app-budget-2', deviceToken: secondToken, headers: { 'Tollgate-App-Token': first.appToken, 'Tollgate-Device-Token': secondToken } };

    // Anthropic Messages JSON (https://docs.anthropic.com/en/api/messages): 80 + 40 crosses the provider's 100.
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-latest', content: [], usage: { input_tokens: 80, output_tokens: 40 } }));
    });
    expect((await chat(first, 'anthropic', 'v1/messages')).status).to.equal(200);
    expect(await chat(second, 'anthropic', 'v1/messages')).to.include({ status: 429, reason: 'token_budget' });

    // OpenAI, streamed with include_usage (https://platform.openai.com/docs/api-reference/chat-streaming/streaming):
    // 120 (anthropic) + 400 crosses the app's 500; every device of the app is then refused.
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const frame of sseEvents([{ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'x' } }] }, { id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 300, completion_tokens: 100, total_tokens: 400 } }])) response.write(frame);
      response.end();
    });
    expect((await chat(first)).status).to.equal(200);
    expect(await chat(first)).to.include({ status: 429, reason: 'token_budget' });
    expect(await chat(second)).to.include({ status: 429, reason: 'token_budget' });
  });

  it('a response whose usage is unknown counts nothing', async () => {
    const device = await gateway.provision({ openai: 'sk-budget-three-0123456789abcdef' }, { deviceDailyTokens: 10 });
    // A stream without usage (the client did not set stream_options.include_usage; the gateway does not add it).
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(sseEvents([{ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'x' } }] }]).join(''));
    });
    for (let index = 0; index < 3; index += 1) expect((await chat(device)).status).to.equal(200);
    expect(JSON.parse(upstream.last().body.toString())).to.deep.equal({ model: 'm' });
  });

  it('is set and cleared by the CLI (0 or empty clears; SLUG=0 removes one provider) and by MCP update_app', async () => {
    const { appId } = await gateway.createApp();
    // The CLI opens the same SQLite database as the running gateway (the data directory's lock admits CLI commands).
    const cli = (...args: string[]) => {
      const result = spawnSync(process.execPath, [CLI, 'apps', 'update', '--app', appId, ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env }, encoding: 'utf8' });
      expect(result.status, result.stderr).to.equal(0);
      return (JSON.parse(result.stdout) as { settings: Record<string, unknown> }).settings;
    };
    let settings = cli('--device-daily-tokens', '1000', '--app-daily-tokens', '50000', '--provider-daily-tokens', 'openai=20000', '--provider-daily-tokens', 'anthropic=30000');
    expect(settings).to.deep.include({ deviceDailyTokens: 1000, appDailyTokens: 50000, providerDailyTokens: { openai: 20000, anthropic: 30000 } });
    settings = cli('--device-daily-tokens', '0', '--app-daily-tokens', '', '--provider-daily-tokens', 'openai=0');
    expect(settings.deviceDailyTokens ?? null).to.equal(null);
    expect(settings.appDailyTokens ?? null).to.equal(null);
    expect(settings.providerDailyTokens).to.deep.equal({ anthropic: 30000 });
    settings = cli('--provider-daily-tokens', '');
    expect(settings.providerDailyTokens ?? null).to.equal(null);

    const prices = (...args: string[]) => {
      const result = spawnSync(process.execPath, [CLI, 'prices', ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env }, encoding: 'utf8' });
      expect(result.status, result.stderr).to.equal(0);
      return JSON.parse(result.stdout) as Record<string, unknown>;
    };
    expect(prices('set', '--provider', 'anthropic', '--model', 'claude-3-5-haiku', '--input-usd', '0.8', '--output-usd', '4')).to.deep.include({ provider: 'anthropic', model: 'claude-3-5-haiku', inputUsdPerMillion: 0.8, outputUsdPerMillion: 4 });
    expect((prices('list') as { prices: Array<{ model: string }> }).prices.map((price) => price.model)).to.deep.equal(['claude-3-5-haiku']);
    expect(prices('delete', '--provider', 'anthropic', '--model', 'claude-3-5-haiku')).to.deep.include({ deleted: true });
    const usage = spawnSync(process.execPath, [CLI, 'usage', '--app', appId, '--by', 'model'], { env: { PATH: process.env.PATH ?? '', ...gateway.env }, encoding: 'utf8' });
    expect(usage.status, usage.stderr).to.equal(0);
    expect(JSON.parse(usage.stdout)).to.deep.include({ app: appId, requests: 0, inputTokens: 0, by: 'model', groups: [], spend: null });

    const client = new Client({ name: 'budget-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const updated = await client.callTool({ name: 'update_app', arguments: { appId, deviceDailyTokens: 2000, providerDailyTokens: { openai: 9000 } } });
      expect((updated as { isError?: boolean }).isError ?? false, JSON.stringify(updated)).to.equal(false);
      expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ deviceDailyTokens: 2000, providerDailyTokens: { openai: 9000 } });
    } finally {
      await client.close();
    }
  });

  it('MCP get_usage returns the tokens per device, provider and model, and budget refusals are their own error series', async () => {
    const device = await gateway.provision({ openai: 'sk-budget-mcp-0123456789abcdef' }, { deviceDailyTokens: 100 });
    upstream.respond(completion(90, 30));
    expect((await chat(device)).status).to.equal(200);
    expect(await chat(device)).to.include({ status: 429, reason: 'token_budget' });
    await gateway.gateway.usage.flush();
    const client = new Client({ name: 'budget-usage', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const result = (await client.callTool({ name: 'get_usage', arguments: { appId: device.appId, sinceMinutes: 5 } })) as { content: Array<{ text: string }>; isError?: boolean };
      expect(result.isError ?? false).to.equal(false);
      const usage = JSON.parse(result.content[0]!.text) as { requests: number; tokens: { inputTokens: number; outputTokens: number; byDevice: Array<Record<string, unknown>>; byModel: Array<Record<string, unknown>>; byProvider: Array<Record<string, unknown>> } };
      expect(usage.requests).to.equal(2);
      expect(usage.tokens).to.deep.include({ inputTokens: 90, outputTokens: 30 });
      expect(usage.tokens.byDevice).to.have.length(1);
      expect(usage.tokens.byDevice[0]).to.deep.include({ deviceId: device.deviceId, inputTokens: 90, outputTokens: 30, requests: 1 });
      expect(usage.tokens.byModel[0]).to.deep.include({ model: 'gpt-4o-mini', inputTokens: 90 });
      expect(usage.tokens.byProvider[0]).to.deep.include({ provider: 'openai', outputTokens: 30 });
      expect((usage as unknown as { spend: unknown }).spend, 'no price set: no spend').to.equal(null);
      // Prices over the admin API (USD per million tokens); spend follows at once.
      const price = await admin('PUT', '/prices', { provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 2000 });
      expect(price.status).to.equal(200);
      const priced = (await client.callTool({ name: 'get_usage', arguments: { appId: device.appId, sinceMinutes: 5 } })) as { content: Array<{ text: string }> };
      const spend = (JSON.parse(priced.content[0]!.text) as { spend: { totalUsd: number; byDevice: Array<{ deviceId: string; usd: number }> } }).spend;
      expect(spend.totalUsd).to.be.closeTo(0.09 + 0.06, 1e-9);
      expect(spend.byDevice[0]!.deviceId).to.equal(device.deviceId);
      const deleted = await fetch(`${gateway.url}/v1/admin/prices?provider=openai&model=gpt-4o-mini`, { method: 'DELETE', headers: { authorization: `Bearer ${adminKey}` } });
      expect(deleted.status).to.equal(200);
      expect((await admin('GET', '/prices')).json).to.deep.equal([]);
      expect((await admin('PUT', '/prices', { provider: 'openai', model: 'x', inputUsdPerMillion: -1, outputUsdPerMillion: 1 })).status).to.equal(400);
      expect((await admin('PUT', '/prices', { provider: 'no-such-provider', model: 'x', inputUsdPerMillion: 1, outputUsdPerMillion: 1 })).status).to.equal(400);
    } finally {
      await client.close();
    }
    const summary = await gateway.gateway.management.usageSummary(device.appId, 0, Date.now() + 1000);
    expect(summary.errorsByType).to.deep.equal([{ type: 'tokenBudget', count: 1 }]);
  });

  it('refuses invalid budgets with 400 naming the field', async () => {
    const { appId } = await gateway.createApp();
    for (const body of [{ deviceDailyTokens: 0 }, { appDailyTokens: 1.5 }, { providerDailyTokens: { openai: -1 } }, { providerDailyTokens: { 'Not A Slug': 5 } }]) {
      const response = await admin('PATCH', `/apps/${appId}`, body);
      expect(response.status, JSON.stringify(body)).to.equal(400);
      expect(JSON.stringify(response.json), JSON.stringify(body)).to.contain(Object.keys(body)[0]!);
    }
  });
});
