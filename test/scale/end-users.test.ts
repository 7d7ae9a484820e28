/**
 * End users across a fleet: two gateway processes share PostgreSQL and Redis. A user's limit holds across two devices
 * attested on different nodes, `/v1/me` on either node reports what is left from the shared counters, a profile lifts
 * the limit, and a user blocked through another process (the CLI's core) is refused on both nodes, on every device.
 * The sign-in provider is faked on loopback (a JWKS as RFC 7517 describes).
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { EndUserService } from '../../core/users/end-user-service';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { rawRequest } from '../support/http';
import { attestOnNode, serveNode, fleetEnvironment } from '../support/nodes';
import { requireService, startPostgres, startRedis, type RunningPostgres, type RunningRedis } from '../support/services';
import { FakeSignInProvider, signingKey, type SigningKey } from '../support/sign-in-provider';

describe('end users shared by two nodes through Redis and PostgreSQL', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  let signIn: FakeSignInProvider;
  let key: SigningKey;
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let app: { id: string; appToken: string };

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    // https://platform.openai.com/docs/api-reference/chat/object
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 10, completion: 10 })));
    signIn = await FakeSignInProvider.start();
    key = await signingKey('fleet');
    signIn.publish([key]);
    env = fleetEnvironment(postgres.url, redis.url, upstream.url);
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-users-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({
      name: 'fleet users',
      allowDevelopmentAttestation: true,
      userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test', tierClaim: 'tier' },
      userTokenMode: 'required',
      userLimitPerMinute: 3,
      profiles: { pro: { userLimitPerMinute: 6 } },
    });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-fleet-users-0123456789abcdef' });
    await core.close();
    const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
    for (const node of started) nodes.push(node.child);
    urls = [started[0]!.url, started[1]!.url];
  });
  after(async () => {
    for (const node of nodes) node.kill('SIGKILL');
    await upstream?.close();
    await signIn?.close();
    redis?.stop();
    postgres?.stop();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  const attest = (nodeUrl: string, deviceId: string) => attestOnNode(nodeUrl, { env, dataDirectory: directories[0]! }, app, deviceId);
  const chat = async (url: string, headers: Record<string, string>, userToken: string) => {
    const response = await rawRequest(url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...headers, 'tollgate-user-token': userToken, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    return { status: response.status, reason: response.status === 200 ? undefined : (JSON.parse(response.text()) as { error: { reason: string } }).error.reason };
  };
  const userRemaining = async (url: string, headers: Record<string, string>, userToken: string) => {
    const response = await rawRequest(url, { path: '/v1/me', headers: { ...headers, 'tollgate-user-token': userToken } });
    expect(response.status, response.text()).to.equal(200);
    return response.json<{ limits: Array<{ name: string; remaining: number }> }>().limits.find((limit) => limit.name === 'user-requests-minute')!.remaining;
  };

  it('holds a user limit across devices on two nodes, reports it on either node, and lifts it for a profile', async () => {
    const phone = await attest(urls[0], 'fleet-phone');
    const tablet = await attest(urls[1], 'fleet-tablet');
    const ada = await signIn.token(key, 'ada');
    expect(await userRemaining(urls[1], tablet, ada)).to.equal(3);
    expect((await chat(urls[0], phone, ada)).status).to.equal(200);
    expect((await chat(urls[1], tablet, ada)).status).to.equal(200);
    expect(await userRemaining(urls[0], phone, ada)).to.equal(1);
    expect((await chat(urls[0], tablet, ada)).status).to.equal(200);
    expect(await userRemaining(urls[1], phone, ada)).to.equal(0);
    for (const url of urls) {
      expect(await chat(url, phone, ada)).to.deep.equal({ status: 429, reason: 'rate_limited_user' });
      expect(await chat(url, tablet, ada)).to.deep.equal({ status: 429, reason: 'rate_limited_user' });
    }
    const pro = await signIn.token(key, 'grace', { tier: 'pro' });
    for (let index = 0; index < 6; index += 1) expect((await chat(urls[index % 2]!, index % 3 ? phone : tablet, pro)).status).to.equal(200);
    expect(await chat(urls[1], phone, pro)).to.deep.equal({ status: 429, reason: 'rate_limited_user' });
  });

  it('refuses a user blocked by another process on both nodes and every device, and serves them once unblocked', async () => {
    const phone = await attest(urls[0], 'block-phone');
    const tablet = await attest(urls[1], 'block-tablet');
    const eve = await signIn.token(key, 'eve');
    expect((await chat(urls[0], phone, eve)).status).to.equal(200);
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    try {
      await new EndUserService(core.database, Date.now).setBlocked(app.id, 'eve', true);
      const refusedEverywhere = async () => {
        const answers = [await chat(urls[0], phone, eve), await chat(urls[1], tablet, eve), await chat(urls[1], phone, eve)];
        return answers.every((answer) => answer.reason === 'user_blocked');
      };
      let refused = false;
      for (let attempt = 0; attempt < 50 && !refused; attempt += 1) {
        refused = await refusedEverywhere();
        if (!refused) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(refused, 'blocked on both nodes within the change-poll interval').to.equal(true);
      expect(await chat(urls[0], tablet, eve)).to.deep.equal({ status: 403, reason: 'user_blocked' });
      await new EndUserService(core.database, Date.now).setBlocked(app.id, 'eve', false);
    } finally {
      await core.close();
    }
    // Unblocked: no longer refused as blocked (eve's minute of requests may be spent by the polling above).
    let served = false;
    for (let attempt = 0; attempt < 50 && !served; attempt += 1) {
      served = (await chat(urls[1], tablet, eve)).reason !== 'user_blocked';
      if (!served) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(served).to.equal(true);
  });
});
