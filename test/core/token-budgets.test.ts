/**
 * Token budgets on one node (in-process rate-limit store): set through the management API, the CLI and MCP, cleared by
 * null / 0 / an empty value; device, app and provider budgets, per UTC day and per UTC minute, refuse a request whose
 * reservation does not fit, with reason `token_budget` and `Retry-After` to the end of their window; tokens of a stream
 * count as the provider reported them in its last event; usage unknown is charged the reservation. The fleet case (two nodes on
 * Redis) is test/scale/token-budgets.test.ts.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_APP_SETTINGS } from '../../core/contract';
import { budgetsFor, secondsToNextUtcMinute, secondsToUtcMidnight } from '../../core/pipeline/token-budget';
import { DEFAULT_PRICE_SOURCES } from '../../providers/_shared/prices';
import { FakeUpstream, sseEvents, type Responder } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

/**
 * The request every test sends: 29 bytes (8 input tokens at 4 bytes a token) and an output limit of 10 tokens
 * (`max_tokens`, https://platform.openai.com/docs/api-reference/chat/create): each reserves 18 tokens on admission.
 */
const CHAT_BODY = '{"model":"m","max_tokens":10}';

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
    const response = await fetch(`${gateway.url}/v1/proxy/${slug}/${path}`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: CHAT_BODY });
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

    upstream.respond(completion(600, 380));
    expect((await chat(spender)).status).to.equal(200); // 980 of 1,000
    expect((await chat(spender)).status).to.equal(200); // its 18 reserved fit (998); it reports 980 and crosses: 1,960
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

  // Before reservations a response whose usage was unknown counted nothing, which let any device step around its budget
  // (a compressed answer, a stream without usage): it is now charged what it reserved.
  it('a response whose usage is unknown is charged its reservation, never nothing', async () => {
    const device = await gateway.provision({ openai: 'sk-budget-three-0123456789abcdef' }, { deviceDailyTokens: 40 });
    // An answer that reports no usage (an SSE stream without a usage chunk, https://platform.openai.com/docs/api-reference/chat-streaming).
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(sseEvents([{ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'x' } }] }]).join(''));
    });
    expect((await chat(device)).status).to.equal(200); // 18 of 40
    expect((await chat(device)).status).to.equal(200); // 36 of 40
    expect(await chat(device)).to.include({ status: 429, reason: 'token_budget' });
    expect(upstream.requests).to.have.length(2);
    // Not a streaming request: its body went up byte for byte.
    expect(upstream.last().body.toString()).to.equal(CHAT_BODY);
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
    settings = cli('--device-minute-tokens', '300', '--app-minute-tokens', '4000', '--provider-minute-tokens', 'openai=2000', '--provider-device-daily-tokens', 'anthropic=700', '--provider-device-daily-tokens', 'openai=900');
    expect(settings).to.deep.include({ deviceMinuteTokens: 300, appMinuteTokens: 4000, providerMinuteTokens: { openai: 2000 }, providerDeviceDailyTokens: { anthropic: 700, openai: 900 } });
    settings = cli('--device-minute-tokens', '', '--app-minute-tokens', '0', '--provider-minute-tokens', '', '--provider-device-daily-tokens', 'openai=0');
    expect(settings.deviceMinuteTokens ?? null).to.equal(null);
    expect(settings.appMinuteTokens ?? null).to.equal(null);
    expect(settings.providerMinuteTokens ?? null).to.equal(null);
    expect(settings.providerDeviceDailyTokens).to.deep.equal({ anthropic: 700 });

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
    // No tokens yet: an estimate of nothing (the default price table is on), with no price date used.
    expect(JSON.parse(usage.stdout)).to.deep.include({ app: appId, requests: 0, inputTokens: 0, by: 'model', groups: [], spend: { currency: 'USD', totalUsd: 0, unpricedTokens: 0, priceAsOf: [], byModel: [], byDevice: [], byApp: [] } });
    // The dated default table, each row with its provider's price page.
    const defaults = prices('defaults') as { enabled: boolean; prices: Array<{ provider: string; model: string; priceAsOf: string; source: string }> };
    expect(defaults.enabled).to.equal(true);
    expect(defaults.prices.find((price) => price.provider === 'anthropic' && price.model === 'claude-3-5-haiku')).to.deep.include({ inputUsdPerMillion: 0.8, outputUsdPerMillion: 4, overridden: false });
    expect(defaults.prices.every((price) => /^\d{4}-\d{2}-\d{2}$/.test(price.priceAsOf) && price.source.startsWith('https://'))).to.equal(true);

    const client = new Client({ name: 'budget-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const updated = await client.callTool({ name: 'update_app', arguments: { appId, deviceDailyTokens: 2000, providerDailyTokens: { openai: 9000 } } });
      expect((updated as { isError?: boolean }).isError ?? false, JSON.stringify(updated)).to.equal(false);
      expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ deviceDailyTokens: 2000, providerDailyTokens: { openai: 9000 } });
      const perMinute = await client.callTool({ name: 'update_app', arguments: { appId, deviceMinuteTokens: 500, appMinuteTokens: 5000, providerMinuteTokens: { openai: 3000 }, providerDeviceDailyTokens: { openai: 800 } } });
      expect((perMinute as { isError?: boolean }).isError ?? false, JSON.stringify(perMinute)).to.equal(false);
      expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ deviceMinuteTokens: 500, appMinuteTokens: 5000, providerMinuteTokens: { openai: 3000 }, providerDeviceDailyTokens: { openai: 800 } });
      const cleared = await client.callTool({ name: 'update_app', arguments: { appId, deviceMinuteTokens: null, providerMinuteTokens: null } });
      expect((cleared as { isError?: boolean }).isError ?? false, JSON.stringify(cleared)).to.equal(false);
      const after = (await gateway.gateway.management.getApp(appId)).settings;
      expect(after.deviceMinuteTokens ?? null).to.equal(null);
      expect(after.providerMinuteTokens ?? null).to.equal(null);
      expect(after.appMinuteTokens).to.equal(5000);
      const refused = (await client.callTool({ name: 'update_app', arguments: { appId, appMinuteTokens: 0 } })) as { isError?: boolean };
      expect(refused.isError).to.equal(true);
    } finally {
      await client.close();
    }
  });

  it('MCP get_usage returns the tokens per device, provider and model, and budget refusals are their own error series', async () => {
    const device = await gateway.provision({ openai: 'sk-budget-mcp-0123456789abcdef' }, { deviceDailyTokens: 100 });
    upstream.respond(completion(90, 30));
    expect((await chat(device)).status).to.equal(200);
    expect(await chat(device)).to.include({ status: 429, reason: 'token_budget' });
    await gateway.recordedUsage(device.appId, 0, (events) => events.length === 2);
    const client = new Client({ name: 'budget-usage', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const result = (await client.callTool({ name: 'get_usage', arguments: { appId: device.appId, sinceMinutes: 5 } })) as { content: Array<{ text: string }>; isError?: boolean };
      expect(result.isError ?? false).to.equal(false);
      // Device ids and model names are device-chosen: under `untrusted` (core/mcp/server.ts).
      const usage = JSON.parse(result.content[0]!.text) as { requests: number; tokens: { inputTokens: number; outputTokens: number; byProvider: Array<Record<string, unknown>> }; untrusted: { tokensByDevice: Array<Record<string, unknown>>; tokensByModel: Array<Record<string, unknown>> } };
      expect(usage.requests).to.equal(2);
      expect(usage.tokens).to.deep.include({ inputTokens: 90, outputTokens: 30 });
      expect(usage.untrusted.tokensByDevice).to.have.length(1);
      expect(usage.untrusted.tokensByDevice[0]).to.deep.include({ deviceId: device.deviceId, inputTokens: 90, outputTokens: 30, requests: 1 });
      expect(usage.untrusted.tokensByModel[0]).to.deep.include({ model: 'gpt-4o-mini', inputTokens: 90 });
      expect(usage.tokens.byProvider[0]).to.deep.include({ provider: 'openai', outputTokens: 30 });
      // No operator price: estimated from the dated default table (gpt-4o-mini's published price), with its date.
      const byDefault = usage as unknown as { spend: { totalUsd: number; priceAsOf: string[] }; untrusted: { spendByModel: Array<{ model: string; priceAsOf: string }> } };
      expect(byDefault.spend.totalUsd).to.be.closeTo((90 * 0.15 + 30 * 0.6) / 1_000_000, 1e-12);
      expect(byDefault.spend.priceAsOf).to.deep.equal([DEFAULT_PRICE_SOURCES.openai!.asOf]);
      expect(byDefault.untrusted.spendByModel[0]).to.deep.include({ model: 'gpt-4o-mini', priceAsOf: DEFAULT_PRICE_SOURCES.openai!.asOf });
      // Prices over the admin API (USD per million tokens) override it; spend follows at once.
      const price = await admin('PUT', '/prices', { provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 2000 });
      expect(price.status).to.equal(200);
      const priced = (await client.callTool({ name: 'get_usage', arguments: { appId: device.appId, sinceMinutes: 5 } })) as { content: Array<{ text: string }> };
      const pricedUsage = JSON.parse(priced.content[0]!.text) as { spend: { totalUsd: number; priceAsOf: string[] }; untrusted: { spendByDevice: Array<{ deviceId: string; usd: number }> } };
      expect(pricedUsage.spend.totalUsd).to.be.closeTo(0.09 + 0.06, 1e-9);
      expect(pricedUsage.spend.priceAsOf).to.deep.equal(['operator price']);
      expect(pricedUsage.untrusted.spendByDevice[0]!.deviceId).to.equal(device.deviceId);
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
    for (const body of [
      { deviceDailyTokens: 0 },
      { appDailyTokens: 1.5 },
      { providerDailyTokens: { openai: -1 } },
      { providerDailyTokens: { 'Not A Slug': 5 } },
      { deviceMinuteTokens: 0 },
      { appMinuteTokens: '100' },
      { appMinuteTokens: 1e13 },
      { providerMinuteTokens: { openai: 2.5 } },
      { providerMinuteTokens: [100] },
      { providerDeviceDailyTokens: { toString: 5 } },
      { providerDeviceDailyTokens: 'openai=5' },
    ]) {
      const response = await admin('PATCH', `/apps/${appId}`, body);
      expect(response.status, JSON.stringify(body)).to.equal(400);
      const error = (response.json as unknown as { error: { type: string; reason: string; fields: Record<string, string[]> } }).error;
      expect(error.type, JSON.stringify(body)).to.equal('invalidRequest');
      expect(Object.keys(error.fields), JSON.stringify(body)).to.deep.equal([Object.keys(body)[0]!]);
    }
    // Nothing of the refused changes was kept.
    const settings = (await gateway.gateway.management.getApp(appId)).settings;
    for (const key of ['deviceMinuteTokens', 'appMinuteTokens', 'providerMinuteTokens', 'providerDeviceDailyTokens'] as const) expect(settings[key] ?? null, key).to.equal(null);
    // An empty map sets no budget (stored as none), as null does.
    const empty = await admin('PATCH', `/apps/${appId}`, { providerMinuteTokens: {}, providerDeviceDailyTokens: {} });
    expect(empty.status).to.equal(200);
    expect(empty.json.settings.providerMinuteTokens ?? null).to.equal(null);
    expect(empty.json.settings.providerDeviceDailyTokens ?? null).to.equal(null);
  });
});

describe('per-minute token budgets and per-provider device budgets (one node, a clock the test moves)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  // 20 s into the current UTC minute; the test moves it, never the wall clock.
  let now = Math.floor(Date.now() / 60_000) * 60_000 + 20_000;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url }, clock: () => now });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const chat = async (device: Provisioned, slug = 'openai', path = 'v1/chat/completions') => {
    const response = await fetch(`${gateway.url}/v1/proxy/${slug}/${path}`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: CHAT_BODY });
    const text = await response.text();
    await new Promise((resolve) => setImmediate(resolve));
    const error = response.status === 429 ? (JSON.parse(text) as { error: { reason: string; message: string } }).error : undefined;
    return { status: response.status, reason: error?.reason, message: error?.message, retryAfter: Number(response.headers.get('retry-after')) };
  };
  const another = async (device: Provisioned, deviceId: string): Promise<Provisioned> => {
    const deviceToken = await gateway.deviceToken(device.appId, device.appToken, deviceId);
    return { ...device, deviceId, deviceToken, headers: { 'Tollgate-App-Token': device.appToken, 'Tollgate-Device-Token': deviceToken } };
  };
  /** Anthropic Messages JSON (https://docs.anthropic.com/en/api/messages) with the given usage. */
  const anthropicMessage = (input: number, output: number): Responder => (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-latest', content: [], usage: { input_tokens: input, output_tokens: output } }));
  };

  it('a device budget per minute refuses until the next UTC minute (Retry-After to it), for that device only', async () => {
    const spender = await gateway.provision({ openai: 'sk-minute-one-0123456789abcdef' }, { deviceMinuteTokens: 1000, deviceDailyTokens: 100_000 });
    const other = await another(spender, 'minute-other');
    upstream.respond(completion(400, 200));
    expect((await chat(spender)).status).to.equal(200); // 600 of 1,000
    expect((await chat(spender)).status).to.equal(200); // crosses: 1,200
    const refused = await chat(spender);
    expect(refused).to.include({ status: 429, reason: 'token_budget', retryAfter: secondsToNextUtcMinute(now) });
    expect(refused.retryAfter).to.equal(40);
    expect(refused.message).to.contain('device per minute');
    expect(upstream.requests).to.have.length(2);
    expect((await chat(other)).status).to.equal(200);

    // 30 s later, still the same minute: still refused, Retry-After shorter.
    now += 30_000;
    expect(await chat(spender)).to.include({ status: 429, reason: 'token_budget', retryAfter: 10 });
    // The next minute: a new counter (the day's 1,800 of 100,000 are still counted).
    now += 10_000;
    expect((await chat(spender)).status).to.equal(200);
    now += 20_000;
  });

  it('when a day and a minute budget are both used up, Retry-After runs to the later end (00:00 UTC)', async () => {
    const device = await gateway.provision({ openai: 'sk-minute-two-0123456789abcdef' }, { deviceMinuteTokens: 500, appDailyTokens: 500 });
    upstream.respond(completion(400, 200));
    expect((await chat(device)).status).to.equal(200);
    const refused = await chat(device);
    expect(refused).to.include({ status: 429, reason: 'token_budget', retryAfter: secondsToUtcMidnight(now) });
    expect(refused.message).to.contain('app per day').and.to.contain('device per minute');
  });

  it('an app budget per minute counts every device; a provider budget per minute counts only that provider', async () => {
    const first = await gateway.provision({ openai: 'sk-minute-three-0123456789abcdef', anthropic: 'sk-ant-minute-three-0123456789' }, { appMinuteTokens: 1000, providerMinuteTokens: { anthropic: 100 } });
    const second = await another(first, 'app-minute-2');
    upstream.respond(anthropicMessage(80, 40));
    expect((await chat(first, 'anthropic', 'v1/messages')).status).to.equal(200); // anthropic 120 of 100: crossed
    expect(await chat(second, 'anthropic', 'v1/messages')).to.include({ status: 429, reason: 'token_budget', retryAfter: secondsToNextUtcMinute(now) });
    upstream.respond(completion(500, 400));
    expect((await chat(second)).status).to.equal(200); // app: 120 + 900 = 1,020 of 1,000: crossed
    expect(await chat(first)).to.include({ status: 429, reason: 'token_budget' });
    expect(await chat(second)).to.include({ status: 429, reason: 'token_budget' });
    expect(upstream.requests).to.have.length(2);
    now += 60_000;
    expect((await chat(first)).status).to.equal(200);
    upstream.respond(anthropicMessage(1, 1));
    expect((await chat(second, 'anthropic', 'v1/messages')).status).to.equal(200);
  });

  it('a provider budget per device per day refuses that device on that provider only, until 00:00 UTC', async () => {
    const spender = await gateway.provision({ openai: 'sk-pd-0123456789abcdef', anthropic: 'sk-ant-pd-0123456789abcdef' }, { providerDeviceDailyTokens: { anthropic: 100 } });
    const other = await another(spender, 'provider-device-2');
    upstream.respond(anthropicMessage(80, 40));
    expect((await chat(spender, 'anthropic', 'v1/messages')).status).to.equal(200);
    const refused = await chat(spender, 'anthropic', 'v1/messages');
    expect(refused).to.include({ status: 429, reason: 'token_budget', retryAfter: secondsToUtcMidnight(now) });
    expect(refused.message).to.contain('device with this provider per day');
    expect((await chat(other, 'anthropic', 'v1/messages')).status).to.equal(200);
    upstream.respond(completion(1000, 1000));
    expect((await chat(spender)).status, 'another provider is not counted').to.equal(200);
    expect((await chat(spender)).status).to.equal(200);
  });

  it('no budget for the request\'s provider: no counter is read or written (the fast path allocates nothing)', () => {
    const none = budgetsFor(DEFAULT_APP_SETTINGS, 'app_1', 'device', 'openai', now);
    expect(none).to.have.length(0);
    expect(budgetsFor({ ...DEFAULT_APP_SETTINGS, providerMinuteTokens: { anthropic: 5 }, providerDeviceDailyTokens: { anthropic: 5 }, providerDailyTokens: { anthropic: 5 } }, 'app_1', 'device', 'openai', now)).to.equal(none);
    const all = budgetsFor({ ...DEFAULT_APP_SETTINGS, deviceDailyTokens: 1, appDailyTokens: 1, providerDailyTokens: { openai: 1 }, providerDeviceDailyTokens: { openai: 1 }, deviceMinuteTokens: 1, appMinuteTokens: 1, providerMinuteTokens: { openai: 1 } }, 'app_1', 'device', 'openai', now);
    expect(all.map((budget) => budget.policy)).to.deep.equal(['device', 'app', 'provider', 'provider-device', 'device-minute', 'app-minute', 'provider-minute']);
    // Every key carries the app's hash tag (one Redis Cluster slot) and its window; keys are distinct.
    expect(new Set(all.map((budget) => budget.key)).size).to.equal(7);
    for (const budget of all) expect(budget.key.startsWith('{app_1}')).to.equal(true);
    const nextMinute = budgetsFor({ ...DEFAULT_APP_SETTINGS, deviceMinuteTokens: 1 }, 'app_1', 'device', 'openai', now + 60_000);
    expect(nextMinute[0]!.key).to.not.equal(all[4]!.key);
  });
});
