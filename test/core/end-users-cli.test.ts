/**
 * The command line of end users and webhooks (bin/commands/users.ts, bin/commands/webhooks.ts), run as operators run
 * it, against a gateway's database: a user blocked by `tollgate users block` is refused by the running gateway, listed
 * by `users list`, shown with its device and requests by `users show`; `webhooks create` prints the signing secret once, `list` never does, `delete` removes the endpoint;
 * usage errors exit 2.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { FakeSignInProvider, signingKey } from '../support/sign-in-provider';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

describe('tollgate users and tollgate webhooks', function () {
  this.timeout(90_000);
  let upstream: FakeUpstream;
  let signIn: FakeSignInProvider;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    signIn = await FakeSignInProvider.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
    await signIn.close();
  });

  /** Runs the CLI without blocking this process (the gateway under test serves from it meanwhile). */
  const cli = (...args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string; json: () => Record<string, unknown> }>((resolve) => {
      execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env }, encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
        const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ status, stdout, stderr, json: () => JSON.parse(stdout) as Record<string, unknown> });
      });
    });

  it('blocks, lists and unblocks a user; creates, lists and deletes a webhook', async () => {
    const key = await signingKey('cli');
    signIn.publish([key]);
    const device = await gateway.provision({ openai: 'sk-cli-users-0123456789abcdef' }, { userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' }, userTokenMode: 'required' });
    const token = await signIn.token(key, 'zoe');
    const chat = async () =>
      (await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'Tollgate-User-Token': token, 'content-type': 'application/json' }, body: '{"model":"m"}' })).status;
    expect(await chat()).to.equal(200);

    const blocked = await cli('users', 'block', '--app', device.appId, '--user', 'zoe');
    expect(blocked.status, blocked.stderr).to.equal(0);
    expect(blocked.json()).to.include({ id: 'zoe', blocked: true });
    let status = 200;
    for (let attempt = 0; attempt < 100 && status !== 403; attempt += 1) {
      status = await chat();
      if (status !== 403) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(status).to.equal(403);
    const listed = await cli('users', 'list', '--app', device.appId, '--search', 'zo');
    expect(listed.status, listed.stderr).to.equal(0);
    expect((listed.json().users as Array<Record<string, unknown>>).map((user) => [user.id, user.blocked])).to.deep.equal([['zoe', true]]);
    expect((await cli('users', 'unblock', '--app', device.appId, '--user', 'zoe')).json()).to.include({ blocked: false });
    // show: the user's devices, usage and latest requests from the database; the limits' counters are the gateway's.
    await gateway.recordedUsage(device.appId, 0, (events) => events.some((event) => event.userId === 'zoe'));
    const shown = await cli('users', 'show', '--app', device.appId, '--user', 'zoe', '--minutes', '60');
    expect(shown.status, shown.stderr).to.equal(0);
    const overview = shown.json() as { user: { id: string }; limits: null; limitsNote: string; devices: Array<{ deviceId: string }>; usage: { requests: number }; requests: Array<{ deviceId: string; status: number }> };
    expect(overview.user.id).to.equal('zoe');
    expect(overview.devices.map((entry) => entry.deviceId)).to.deep.equal([device.deviceId]);
    // The requests served before the block reached this node (the refusals of a blocked user come before the user is
    // admitted: no user on them).
    expect(overview.usage.requests).to.be.at.least(1);
    expect(overview.requests).to.have.length(overview.usage.requests);
    expect(new Set(overview.requests.map((entry) => `${entry.deviceId} ${entry.status}`))).to.deep.equal(new Set([`${device.deviceId} 200`]));
    expect(overview.limits).to.equal(null);
    expect(overview.limitsNote).to.include('/limits');
    expect((await cli('users', 'show', '--app', device.appId, '--user', 'zoe', '--minutes', '0')).status).to.equal(2);
    expect((await cli('users', 'show', '--app', device.appId, '--user', 'nobody')).status).to.equal(1);
    expect((await cli('users', 'block', '--app', device.appId)).status).to.equal(2);

    const created = await cli('webhooks', 'create', '--app', device.appId, '--url', 'http://127.0.0.1:9/hooks', '--events', 'user.blocked,budget.threshold');
    expect(created.status, created.stderr).to.equal(0);
    const webhook = created.json();
    expect(webhook.secret).to.match(/^whsec_/);
    expect(webhook.events).to.deep.equal(['user.blocked', 'budget.threshold']);
    const list = await cli('webhooks', 'list', '--app', device.appId);
    expect(list.stdout).to.include(webhook.id as string);
    expect(list.stdout).not.to.include(webhook.secret as string);
    expect((await cli('webhooks', 'create', '--app', device.appId, '--url', 'http://127.0.0.1:9/', '--events', 'no.such')).status).to.equal(1);
    expect((await cli('webhooks', 'delete', '--webhook', webhook.id as string)).json()).to.include({ deleted: true });
    expect(((await cli('webhooks', 'list', '--app', device.appId)).json().webhooks as unknown[]).length).to.equal(0);
  });
});
