/**
 * The alerts that watch a quantity (operations.md, "Webhook events"), as a receiver on loopback sees them:
 * `spend.threshold` arrives once, signed per Standard Webhooks, after requests through a fake provider push the app's
 * estimated spend of the UTC day over `dailySpendAlertUsd`, and not before; `attestation.failure_rate` arrives once
 * after enough refused development attestations, and not while attempts are under `minAttempts`. Bad values of both
 * settings are refused with a typed error naming the field, changing nothing (API and CLI).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { WebhookReceiver, until } from '../support/webhook-receiver';


const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('alerts: spend.threshold and attestation.failure_rate', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;
  const receiver = new WebhookReceiver();

  before(async () => {
    upstream = await FakeUpstream.start();
    await receiver.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_WEBHOOK_RETRY_MS: '100' } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'alerts' }));
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
    await receiver.stop();
  });

  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> & { error?: { type: string; reason: string; fields?: Record<string, string[]> } } };
  };
  const subscribe = async (appId: string, events: string[]) => {
    const created = await admin('POST', `/apps/${appId}/webhooks`, { url: receiver.url, events });
    expect(created.status).to.equal(201);
    return created.json.secret as string;
  };
  const deliveriesOf = async (appId: string) => (await admin('GET', `/apps/${appId}/webhook-deliveries`)).json as unknown as Array<{ type: string; status: string }>;

  it('raises spend.threshold once when the day\'s estimated spend passes dailySpendAlertUsd, and not before', async () => {
    // An operator price that makes the arithmetic plain: 1,000 tokens cost 1 USD. The fake provider reports the dated
    // model name (gpt-4o-mini-2024-07-18), priced as gpt-4o-mini.
    await gateway.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 1000 });
    const device = await gateway.provision({ openai: 'sk-alerts-0123456789abcdef' }, { dailySpendAlertUsd: 1.5 });
    const secret = await subscribe(device.appId, ['spend.threshold']);
    // https://platform.openai.com/docs/api-reference/chat/object: usage.prompt_tokens and completion_tokens.
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 400, completion: 600 })));
    const chat = async () => {
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
      expect(response.status).to.equal(200);
      await response.text();
    };
    const startedAt = Date.now() - 1000;

    // 1 USD of 1.5: recorded, judged, nothing raised.
    await chat();
    await gateway.recordedUsage(device.appId, startedAt, (events) => events.length === 1);
    await pause(1000);
    expect(receiver.of(device.appId, 'spend.threshold')).to.have.length(0);
    expect(await deliveriesOf(device.appId)).to.have.length(0);

    // 2 USD: passed.
    await chat();
    const [delivery] = await until(() => receiver.of(device.appId, 'spend.threshold'), (list) => list.length === 1, 'the spend.threshold delivery');
    expect(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).to.deep.equal(delivery!.json);
    const today = new Date().toISOString().slice(0, 10);
    expect(delivery!.json.data).to.deep.equal({ amount: 1.5, spent: 2, currency: 'USD', day: today, unpricedTokens: 0 });

    // More spend the same day raises nothing more.
    await chat();
    await chat();
    await gateway.recordedUsage(device.appId, startedAt, (events) => events.length === 4);
    await pause(1000);
    expect(receiver.of(device.appId, 'spend.threshold')).to.have.length(1);
    expect((await deliveriesOf(device.appId)).map((entry) => entry.type)).to.deep.equal(['spend.threshold']);
    // The mark that keeps it once per day (across restarts and nodes) is in the database.
    expect(await gateway.gateway.webhooks.raised(device.appId, 'spend.threshold', today)).to.equal(true);
  });

  const attest = async (appToken: string, developmentToken: string) => {
    const response = await fetch(`${gateway.url}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken },
      body: JSON.stringify({ developmentToken, deviceId: 'device-alerts' }),
    });
    return { status: response.status, json: (await response.json()) as { error?: { reason: string } } };
  };

  it('raises attestation.failure_rate once the refused share passes percent over at least minAttempts, and not under minAttempts', async () => {
    const watched = await gateway.createApp({ attestationFailureAlert: { percent: 50, minAttempts: 4 } });
    const quiet = await gateway.createApp({ attestationFailureAlert: { percent: 50, minAttempts: 10 } });
    const secret = await subscribe(watched.appId, ['attestation.failure_rate']);
    await subscribe(quiet.appId, ['attestation.failure_rate']);

    // Three refused development tokens: 3 of 3 refused, but under 4 attempts.
    for (let index = 0; index < 3; index += 1) {
      const refused = await attest(watched.appToken, 'dt_not-a-real-token');
      expect(refused.status).to.equal(403);
      expect(refused.json.error?.reason).to.equal('development_token_invalid');
    }
    // The other app: 6 refused of 6, under its 10.
    for (let index = 0; index < 6; index += 1) expect((await attest(quiet.appToken, 'dt_not-a-real-token')).status).to.equal(403);
    await pause(1000);
    expect(receiver.of(watched.appId, 'attestation.failure_rate')).to.have.length(0);
    expect(await deliveriesOf(watched.appId)).to.have.length(0);

    // A fourth attempt, accepted: 3 of 4 refused (75 % >= 50 %) over 4 attempts.
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(watched.appId);
    expect((await attest(watched.appToken, developmentToken)).status).to.equal(200);
    const [delivery] = await until(() => receiver.of(watched.appId, 'attestation.failure_rate'), (list) => list.length === 1, 'the attestation.failure_rate delivery');
    expect(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).to.deep.equal(delivery!.json);
    expect(delivery!.json.data).to.deep.equal({ percent: 50, minAttempts: 4, attempts: 4, failures: 3, failurePercent: 75, windowSeconds: 900 });

    // Still over the threshold: not raised again.
    for (let index = 0; index < 2; index += 1) expect((await attest(watched.appToken, 'dt_not-a-real-token')).status).to.equal(403);
    await pause(1000);
    expect(receiver.of(watched.appId, 'attestation.failure_rate')).to.have.length(1);
    expect(receiver.of(quiet.appId, 'attestation.failure_rate')).to.have.length(0);
    expect(await deliveriesOf(quiet.appId)).to.have.length(0);
  });

  it('raises attestation.failure_rate again only after the share fell back below the threshold', async () => {
    const app = await gateway.createApp({ attestationFailureAlert: { percent: 60, minAttempts: 2 } });
    await subscribe(app.appId, ['attestation.failure_rate']);
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(app.appId);
    // 2 of 2 refused: raised.
    await attest(app.appToken, 'dt_bad');
    await attest(app.appToken, 'dt_bad');
    await until(() => receiver.of(app.appId, 'attestation.failure_rate'), (list) => list.length === 1, 'the first event');
    // 2 of 4 (50 % < 60 %): below again.
    expect((await attest(app.appToken, developmentToken)).status).to.equal(200);
    expect((await attest(app.appToken, developmentToken)).status).to.equal(200);
    await pause(300);
    expect(receiver.of(app.appId, 'attestation.failure_rate')).to.have.length(1);
    // 3 of 5 (60 %): over once more, raised a second time.
    await attest(app.appToken, 'dt_bad');
    const events = await until(() => receiver.of(app.appId, 'attestation.failure_rate'), (list) => list.length === 2, 'the second event');
    expect(events[1]!.json.data).to.include({ attempts: 5, failures: 3, failurePercent: 60 });
  });

  it('refuses bad alert settings with a typed error naming the field, changing nothing; null clears them', async () => {
    const { appId } = await gateway.createApp({ dailySpendAlertUsd: 10, attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    const before = (await admin('GET', `/apps/${appId}`)).json;
    expect(before.settings).to.deep.include({ dailySpendAlertUsd: 10, attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ dailySpendAlertUsd: 0 }, 'dailySpendAlertUsd'],
      [{ dailySpendAlertUsd: -5 }, 'dailySpendAlertUsd'],
      [{ dailySpendAlertUsd: '12' }, 'dailySpendAlertUsd'],
      [{ attestationFailureAlert: { percent: 0, minAttempts: 5 } }, 'attestationFailureAlert'],
      [{ attestationFailureAlert: { percent: 101, minAttempts: 5 } }, 'attestationFailureAlert'],
      [{ attestationFailureAlert: { percent: 50 } }, 'attestationFailureAlert'],
      [{ attestationFailureAlert: { percent: 50, minAttempts: 0 } }, 'attestationFailureAlert'],
      [{ attestationFailureAlert: { percent: 50, minAttempts: 5, window: 60 } }, 'attestationFailureAlert'],
      [{ attestationFailureAlert: 50 }, 'attestationFailureAlert'],
    ];
    for (const [body, field] of bad) {
      const answer = await admin('PATCH', `/apps/${appId}`, { ...body, name: 'renamed' });
      expect(answer.status, JSON.stringify(body)).to.equal(400);
      expect(answer.json.error).to.include({ type: 'invalidRequest', reason: 'validation' });
      expect(answer.json.error!.fields).to.have.keys(field);
    }
    expect((await admin('GET', `/apps/${appId}`)).json).to.deep.equal(before);

    const cleared = await admin('PATCH', `/apps/${appId}`, { dailySpendAlertUsd: null, attestationFailureAlert: null });
    expect(cleared.status).to.equal(200);
    expect(cleared.json.settings).to.not.have.any.keys('dailySpendAlertUsd', 'attestationFailureAlert');
  });

  it('sets and clears them with the CLI (kebab-case options), refusing a malformed value', async () => {
    const { appId } = await gateway.createApp();
    // Run without blocking this process (the gateway under test serves from it meanwhile), against its database.
    const cli = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js'), ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env }, encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
        });
      });
    const set = await cli('apps', 'update', '--app', appId, '--daily-spend-alert-usd', '12.5', '--attestation-failure-alert', '30:20');
    expect(set.status, set.stderr).to.equal(0);
    expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ dailySpendAlertUsd: 12.5, attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    const malformed = await cli('apps', 'update', '--app', appId, '--attestation-failure-alert', 'thirty');
    expect(malformed.status).to.not.equal(0);
    expect(malformed.stderr).to.match(/PERCENT:MIN_ATTEMPTS/);
    const outOfRange = await cli('apps', 'update', '--app', appId, '--attestation-failure-alert', '130:20');
    expect(outOfRange.status).to.not.equal(0);
    expect(outOfRange.stderr).to.match(/attestationFailureAlert/);
    expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    const cleared = await cli('apps', 'update', '--app', appId, '--daily-spend-alert-usd', '', '--attestation-failure-alert', '');
    expect(cleared.status, cleared.stderr).to.equal(0);
    const settings = (await gateway.gateway.management.getApp(appId)).settings;
    expect(settings.dailySpendAlertUsd).to.equal(undefined);
    expect(settings.attestationFailureAlert).to.equal(undefined);
  });
});
