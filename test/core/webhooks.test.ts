/**
 * Webhooks, as a receiver on loopback sees them: each event type the gateway raises (user.blocked, device.revoked,
 * budget.threshold, provider.key_rejected) and a test delivery arrive once, with a Standard Webhooks signature the
 * specification's reference verifier (the `standardwebhooks` package) accepts under the endpoint's secret; a receiver
 * that is down gets the delivery once it is back (retried with back-off from the queue in the database), and the
 * deliveries with their outcomes are listed by the management API. Bodies as operations.md, "Webhook events".
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { WebhookReceiver, until } from '../support/webhook-receiver';
import { FakeSignInProvider, signingKey } from '../support/sign-in-provider';


describe('webhooks', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let signIn: FakeSignInProvider;
  let adminKey: string;
  const receiver = new WebhookReceiver();

  before(async () => {
    upstream = await FakeUpstream.start();
    signIn = await FakeSignInProvider.start();
    signIn.publish([await signingKey('hooks')]);
    await receiver.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_WEBHOOK_RETRY_MS: '100' } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'webhooks' }));
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
    await signIn.close();
    await receiver.stop();
  });

  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  it('delivers each event once with a valid Standard Webhooks signature, and a test delivery', async () => {
    const device = await gateway.provision({ openai: 'sk-hooks-0123456789abcdef' }, { deviceDailyTokens: 1000, userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' } });
    const created = await admin('POST', `/apps/${device.appId}/webhooks`, { url: receiver.url, events: ['budget.threshold', 'provider.key_rejected', 'device.revoked', 'user.blocked', 'spend.threshold', 'attestation.failure_rate'] });
    expect(created.status).to.equal(201);
    const secret = created.json.secret as string;
    expect(secret).to.match(/^whsec_/);
    expect((await admin('GET', `/apps/${device.appId}/webhooks`)).json).to.satisfy((list: unknown) => JSON.stringify(list).includes(created.json.id as string) && !JSON.stringify(list).includes(secret));
    expect((await admin('POST', `/apps/${device.appId}/webhooks`, { url: 'ftp://example.com', events: ['user.blocked'] })).status).to.equal(400);

    // budget.threshold: 900 of 1,000 tokens crosses 80 % (https://platform.openai.com/docs/api-reference/chat/object). The
    // requests name a small output limit, so that their reservations fit in the budget.
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 450, completion: 450 })));
    const chat = () => fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[],"max_tokens":10}' }).then((response) => response.text());
    await chat();
    // provider.key_rejected: the provider answers 401 to the operator's key (https://platform.openai.com/docs/guides/error-codes), twice: one event.
    upstream.respond(respondJson(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }));
    await chat();
    await chat();
    // device.revoked and user.blocked.
    await gateway.gateway.management.revokeDevice(device.appId, device.deviceId);
    expect((await admin('POST', `/apps/${device.appId}/users/ada/block`)).status).to.equal(200);
    // A test delivery.
    expect((await admin('POST', `/apps/${device.appId}/webhooks/${created.json.id as string}/test`)).status).to.equal(202);

    await until(() => receiver.types(), (types) => types.length >= 5, 'five deliveries');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.types().sort()).to.deep.equal(['budget.threshold', 'device.revoked', 'provider.key_rejected', 'user.blocked', 'webhook.test']);
    const verifier = new Webhook(secret);
    for (const delivery of receiver.received) {
      const body = JSON.parse(delivery.body) as { type: string; timestamp: string; app: string; data: Record<string, unknown> };
      expect(verifier.verify(delivery.body, delivery.headers as Record<string, string>)).to.deep.equal(body);
      expect(body.app).to.equal(device.appId);
      expect(Date.parse(body.timestamp)).to.be.greaterThan(0);
      expect(delivery.headers['webhook-id']).to.match(/^msg_/);
    }
    // A signature under another secret does not verify (the check can fail).
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>)).to.throw();
    const data = (type: string) => (JSON.parse(receiver.received.find((delivery) => delivery.body.includes(`"type":"${type}"`))!.body) as { data: Record<string, unknown> }).data;
    expect(data('budget.threshold')).to.include({ budget: 'device', limit: 1000, spent: 900, percent: 80 });
    expect(data('provider.key_rejected')).to.include({ provider: 'openai', status: 401 });
    expect(data('device.revoked')).to.include({ device: device.deviceId });
    expect(data('user.blocked')).to.include({ user: 'ada' });
    const deliveries = (await admin('GET', `/apps/${device.appId}/webhook-deliveries`)).json as unknown as Array<{ status: string; attempts: number; lastStatus: number }>;
    expect(deliveries).to.have.length(5);
    expect(deliveries.every((delivery) => delivery.status === 'delivered' && delivery.attempts === 1 && delivery.lastStatus === 204)).to.equal(true);
  });

  it('keeps a delivery queued while the receiver is down and delivers it once it is back', async () => {
    const down = new WebhookReceiver();
    await down.start();
    const port = down.port;
    await down.stop();
    const { appId } = await gateway.createApp({ userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' } });
    const created = await admin('POST', `/apps/${appId}/webhooks`, { url: `http://127.0.0.1:${port}/hooks`, events: ['user.blocked'] });
    expect((await admin('POST', `/apps/${appId}/users/mallory/block`)).status).to.equal(200);
    const failing = await until(
      async () => (await admin('GET', `/apps/${appId}/webhook-deliveries`)).json as unknown as Array<{ status: string; attempts: number; lastError: string | null }>,
      (list) => list.length === 1 && list[0]!.attempts >= 2,
      'two failed attempts',
    );
    expect(failing[0]).to.include({ status: 'pending' });
    expect(failing[0]!.lastError).to.be.a('string');
    await down.start(port);
    await until(() => down.types(), (types) => types.length === 1, 'the delivery after the receiver came back');
    expect(new Webhook(created.json.secret as string).verify(down.received[0]!.body, down.received[0]!.headers as Record<string, string>)).to.deep.include({ type: 'user.blocked' });
    const delivered = await until(
      async () => (await admin('GET', `/apps/${appId}/webhook-deliveries`)).json as unknown as Array<{ status: string; attempts: number }>,
      (list) => list[0]!.status === 'delivered',
      'the delivery recorded as delivered',
    );
    expect(delivered[0]!.attempts).to.be.greaterThan(2);
    await down.stop();
  });
});
