/**
 * Spend estimates from the dated default price table: a request to a model the table knows is estimated from its
 * published price, with that price's date (`priceAsOf`) in the request log (JSON and CSV) and the usage summary; an
 * operator's own price overrides it ("operator price"); removing the operator's price brings the default back; the
 * defaults are listed with each provider's price page; `TOLLGATE_DEFAULT_PRICES=false` estimates from operator prices only.
 */
import { expect } from 'chai';
import { DEFAULT_PRICES, DEFAULT_PRICE_SOURCES } from '../../providers/_shared/prices';
import { FakeUpstream, type Responder } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

/** An OpenAI chat completion reporting its usage (https://platform.openai.com/docs/api-reference/chat/object). */
function completion(model: string, input: number, output: number): Responder {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }));
  };
}

interface LogRow {
  readonly model: string | null;
  readonly inputTokens: number | null;
  readonly estimatedUsd: number | null;
  readonly priceAsOf: string | null;
}

interface Spend {
  readonly totalUsd: number;
  readonly priceAsOf: string[];
  readonly byModel: Array<{ provider: string; model: string; usd: number; priceAsOf: string }>;
}

describe('default prices', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;
  const asOf = DEFAULT_PRICE_SOURCES.openai!.asOf;
  const published = DEFAULT_PRICES.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')!;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'prices' }));
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  const admin = async <T>(method: string, route: string, body?: unknown): Promise<{ status: number; json: T; text: string }> => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await response.text();
    return { status: response.status, json: (text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : null) as T, text };
  };

  const chat = async (device: Provisioned, model: string) => {
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hi' }] }) });
    expect(response.status, await response.text()).to.equal(200);
  };

  it('estimates a known model from the dated default table, an operator price overrides it, and the API names the price date each time', async () => {
    const device = await gateway.provision({ openai: 'sk-default-prices-0123456789abcdef' });
    const since = Date.now() - 1000;
    upstream.respond(completion('gpt-4o-mini-2024-07-18', 1200, 300));
    await chat(device, 'gpt-4o-mini');
    await gateway.recordedEvent(device.appId, since, (event) => event.inputTokens === 1200);
    const defaultUsd = (1200 * published.inputUsdPerMillion + 300 * published.outputUsdPerMillion) / 1_000_000;

    // The request log: the row's estimate from the default table, with the table's date (JSON and CSV).
    const log = await admin<{ requests: LogRow[] }>('GET', `/apps/${device.appId}/requests`);
    expect(log.status).to.equal(200);
    const row = log.json.requests.find((entry) => entry.inputTokens === 1200)!;
    expect(row.model).to.equal('gpt-4o-mini-2024-07-18');
    expect(row.priceAsOf).to.equal(asOf);
    expect(row.estimatedUsd).to.be.closeTo(defaultUsd, 1e-12);
    const csv = await admin<null>('GET', `/apps/${device.appId}/requests.csv`);
    const [header, first] = csv.text.trim().split('\r\n');
    // userId (the signed-in user, none here) comes last, after the estimate and its price date.
    expect(header!.split(',').slice(-3)).to.deep.equal(['estimatedUsd', 'priceAsOf', 'userId']);
    expect(first!.split(',').at(-2)).to.equal(asOf);

    // The usage summary (the charts' data): the total and the model's row carry the date.
    const usage = await admin<{ spend: Spend }>('GET', `/apps/${device.appId}/usage?minutes=60`);
    expect(usage.json.spend.totalUsd).to.be.closeTo(defaultUsd, 1e-12);
    expect(usage.json.spend.priceAsOf).to.deep.equal([asOf]);
    expect(usage.json.spend.byModel).to.have.length(1);
    expect(usage.json.spend.byModel[0]).to.include({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', priceAsOf: asOf });

    // The defaults, each with its provider's price page.
    const defaults = await admin<{ enabled: boolean; prices: Array<{ provider: string; model: string; priceAsOf: string; source: string; overridden: boolean }> }>('GET', '/prices/defaults');
    expect(defaults.json.enabled).to.equal(true);
    expect(defaults.json.prices.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')).to.deep.include({ priceAsOf: asOf, source: 'https://platform.openai.com/docs/pricing', overridden: false });

    // An operator price for the undated name overrides the default for the dated model, past requests included.
    const set = await admin<Record<string, unknown>>('PUT', '/prices', { provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 10, outputUsdPerMillion: 20 });
    expect(set.status).to.equal(200);
    const operatorUsd = (1200 * 10 + 300 * 20) / 1_000_000;
    const overridden = (await admin<{ requests: LogRow[] }>('GET', `/apps/${device.appId}/requests`)).json.requests.find((entry) => entry.inputTokens === 1200)!;
    expect(overridden.priceAsOf).to.equal('operator price');
    expect(overridden.estimatedUsd).to.be.closeTo(operatorUsd, 1e-12);
    const operatorUsage = (await admin<{ spend: Spend }>('GET', `/apps/${device.appId}/usage?minutes=60`)).json.spend;
    expect(operatorUsage.totalUsd).to.be.closeTo(operatorUsd, 1e-12);
    expect(operatorUsage.priceAsOf).to.deep.equal(['operator price']);
    expect(operatorUsage.byModel[0]!.priceAsOf).to.equal('operator price');
    expect((await admin<{ prices: Array<{ model: string; overridden: boolean }> }>('GET', '/prices/defaults')).json.prices.find((price) => price.model === 'gpt-4o-mini')!.overridden).to.equal(true);

    // Removing the operator's price brings the default (and its date) back.
    expect((await admin('DELETE', '/prices?provider=openai&model=gpt-4o-mini')).status).to.equal(200);
    const back = (await admin<{ requests: LogRow[] }>('GET', `/apps/${device.appId}/requests`)).json.requests.find((entry) => entry.inputTokens === 1200)!;
    expect(back).to.include({ priceAsOf: asOf });
    expect(back.estimatedUsd).to.be.closeTo(defaultUsd, 1e-12);
  });

  it('leaves a model the table does not know unpriced, never estimated from another model', async () => {
    const device = await gateway.provision({ openai: 'sk-default-prices-unknown-0123456789ab' });
    const since = Date.now() - 1000;
    upstream.respond(completion('my-fine-tune-7', 50, 5));
    await chat(device, 'my-fine-tune-7');
    await gateway.recordedEvent(device.appId, since, (event) => event.model === 'my-fine-tune-7');
    const row = (await admin<{ requests: LogRow[] }>('GET', `/apps/${device.appId}/requests`)).json.requests[0]!;
    expect(row).to.include({ model: 'my-fine-tune-7', estimatedUsd: null, priceAsOf: null });
    const spend = (await admin<{ spend: Spend & { unpricedTokens: number } }>('GET', `/apps/${device.appId}/usage?minutes=60`)).json.spend;
    expect(spend).to.include({ totalUsd: 0, unpricedTokens: 55 });
    expect(spend.priceAsOf).to.deep.equal([]);
  });

  it('with TOLLGATE_DEFAULT_PRICES=false, estimates from operator prices only', async () => {
    const off = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_DEFAULT_PRICES: 'false' } });
    try {
      const device = await off.provision({ openai: 'sk-default-prices-off-0123456789abcdef' });
      const since = Date.now() - 1000;
      upstream.respond(completion('gpt-4o-mini', 100, 10));
      const response = await fetch(`${off.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }) });
      expect(response.status).to.equal(200);
      await response.text();
      await off.recordedEvent(device.appId, since, (event) => event.inputTokens === 100);
      expect((await off.gateway.management.usageSummary(device.appId, since, Date.now() + 1000)).spend).to.equal(null);
      expect((await off.gateway.management.requestLog({ appId: device.appId, limit: 5 })).requests[0]).to.include({ estimatedUsd: null, priceAsOf: null });
      expect((await off.gateway.management.listDefaultPrices()).enabled).to.equal(false);
    } finally {
      await off.close();
    }
  });
});
