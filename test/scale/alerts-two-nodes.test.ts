/**
 * The quantity alerts across a fleet: two gateway processes share PostgreSQL and Redis. `spend.threshold` is raised
 * once when the spend written by both nodes together passes the amount (each node alone stays under it), and
 * `attestation.failure_rate` once when the refused attestations of both nodes together pass the share (each node alone
 * stays under `minAttempts`). A receiver on loopback gets each event once, with a valid Standard Webhooks signature.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { attestOnNode, serveNode, fleetEnvironment } from '../support/nodes';
import { requireService, startPostgres, startRedis, type RunningPostgres, type RunningRedis } from '../support/services';

interface Delivery {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly json: { type: string; app: string; data: Record<string, unknown> };
}

async function until<T>(read: () => T, done: (value: T) => boolean, what: string, waitMs = 20_000): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const value = read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${waitMs} ms (last: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('spend and attestation alerts raised once by a fleet of two nodes', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  let receiver: http.Server;
  const received: Delivery[] = [];
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let spendApp: { id: string; appToken: string };
  let attestApp: { id: string; appToken: string };
  const secrets: Record<string, string> = {};

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    // https://platform.openai.com/docs/api-reference/chat/object: 1,000 tokens, 1 USD at the price set below.
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 500, completion: 500 })));
    receiver = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        received.push({ headers: request.headers, body, json: JSON.parse(body) as Delivery['json'] });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    env = fleetEnvironment(postgres.url, redis.url, upstream.url);
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-alerts-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    try {
      await core.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 1000 });
      spendApp = await core.management.createApp({ name: 'fleet spend', allowDevelopmentAttestation: true, dailySpendAlertUsd: 1.5 });
      await core.management.setSecret({ appId: spendApp.id, provider: 'openai', value: 'sk-fleet-alerts-0123456789abcdef' });
      attestApp = await core.management.createApp({ name: 'fleet attestations', allowDevelopmentAttestation: true, attestationFailureAlert: { percent: 50, minAttempts: 4 } });
      secrets[spendApp.id] = (await core.webhooks.create(spendApp.id, { url: hooks, events: ['spend.threshold'] })).secret;
      secrets[attestApp.id] = (await core.webhooks.create(attestApp.id, { url: hooks, events: ['attestation.failure_rate'] })).secret;
    } finally {
      await core.close();
    }
    const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
    for (const node of started) nodes.push(node.child);
    urls = [started[0]!.url, started[1]!.url];
  });
  after(async () => {
    for (const node of nodes) node.kill('SIGKILL');
    await upstream?.close();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    redis?.stop();
    postgres?.stop();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  const of = (appId: string, type: string) => received.filter((delivery) => delivery.json.app === appId && delivery.json.type === type);
  const verified = (delivery: Delivery) => new Webhook(secrets[delivery.json.app]!).verify(delivery.body, delivery.headers as Record<string, string>);

  it('raises spend.threshold once when both nodes together pass the amount', async () => {
    const devices = [await attestOnNode(urls[0], { env, dataDirectory: directories[0]! }, spendApp, 'spend-a'), await attestOnNode(urls[1], { env, dataDirectory: directories[0]! }, spendApp, 'spend-b')];
    const chat = async (node: 0 | 1) => {
      const response = await fetch(`${urls[node]}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...devices[node]!, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
      expect(response.status).to.equal(200);
      await response.text();
    };
    // 1 USD through node 0: under the amount.
    await chat(0);
    await pause(1500);
    expect(of(spendApp.id, 'spend.threshold')).to.have.length(0);
    // 1 USD more through node 1, whose first read of the day sees node 0's spend too: 2 USD.
    await chat(1);
    const [delivery] = await until(() => of(spendApp.id, 'spend.threshold'), (list) => list.length === 1, 'spend.threshold');
    expect(verified(delivery!)).to.deep.equal(delivery!.json);
    expect(delivery!.json.data).to.include({ amount: 1.5, spent: 2, currency: 'USD' });
    // Both nodes keep spending: nothing more that day.
    await chat(0);
    await chat(1);
    await chat(0);
    await pause(2000);
    expect(of(spendApp.id, 'spend.threshold')).to.have.length(1);
  });

  it('raises attestation.failure_rate once from the refusals of both nodes together', async () => {
    const refused = async (node: 0 | 1) => {
      const response = await fetch(`${urls[node]}/v1/attest/development`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': attestApp.appToken }, body: JSON.stringify({ developmentToken: 'dt_not-a-real-token', deviceId: 'fleet-device' }) });
      expect(response.status).to.equal(403);
      await response.text();
    };
    // Two refused on each node: 4 of 4 in the fleet, 2 on each node (under minAttempts 4 alone).
    await refused(0);
    await refused(0);
    await refused(1);
    await pause(500);
    expect(of(attestApp.id, 'attestation.failure_rate')).to.have.length(0);
    await refused(1);
    const [delivery] = await until(() => of(attestApp.id, 'attestation.failure_rate'), (list) => list.length === 1, 'attestation.failure_rate');
    expect(verified(delivery!)).to.deep.equal(delivery!.json);
    expect(delivery!.json.data).to.include({ attempts: 4, failures: 4, percent: 50, minAttempts: 4 });
    for (let index = 0; index < 4; index += 1) await refused((index % 2) as 0 | 1);
    await pause(1500);
    expect(of(attestApp.id, 'attestation.failure_rate')).to.have.length(1);
  });
});
