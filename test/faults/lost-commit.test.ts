/**
 * A COMMIT whose answer is lost: a TCP proxy between the gateway and PostgreSQL forwards the client's COMMIT to the
 * server and then cuts the connection before the server's answer comes back. The change was made; the gateway must not
 * say "nothing was changed". It answers 503 `outcome_unknown`, and a retry with the same `Idempotency-Key` returns the
 * committed change's answer instead of making a second one: one app, and for a rotation the token that is stored.
 */
import { expect } from 'chai';
import net from 'node:net';
import knexFactory, { type Knex } from 'knex';
import { hashToken } from '../../core/security/tokens';
import { TestGateway } from '../support/gateway';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

/** A TCP proxy to PostgreSQL that, once armed, cuts the next connection that sends COMMIT right after forwarding it. */
class CommitCutter {
  armed = false;
  cuts = 0;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly server: net.Server, readonly port: number) {}

  static async start(target: number): Promise<CommitCutter> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const cutter = new CommitCutter(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (client) => {
      const upstream = net.connect(target, '127.0.0.1');
      cutter.sockets.add(client).add(upstream);
      let cut = false;
      client.on('data', (chunk: Buffer) => {
        upstream.write(chunk);
        // A simple-protocol Query message ('Q') carrying COMMIT (knex's transaction end).
        if (cutter.armed && chunk[0] === 0x51 && chunk.includes('COMMIT')) {
          cutter.armed = false;
          cutter.cuts += 1;
          cut = true;
          // The server gets the COMMIT and commits; the client never hears back.
          client.destroy();
          setTimeout(() => upstream.destroy(), 2000).unref();
        }
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!cut) client.write(chunk);
      });
      const close = () => {
        client.destroy();
        if (!cut) upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', () => client.destroy());
    });
    return cutter;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('a lost answer to COMMIT (PostgreSQL behind a proxy that cuts after COMMIT)', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let cutter: CommitCutter;
  let gateway: TestGateway;
  let direct: Knex;
  let adminKey: string;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    const url = postgres.createDatabase('lost_commit');
    cutter = await CommitCutter.start(Number(new URL(url).port));
    const proxied = new URL(url);
    proxied.port = String(cutter.port);
    gateway = await TestGateway.start({ env: { TOLLGATE_DATABASE_URL: proxied.toString() } });
    direct = knexFactory({ client: 'pg', connection: url });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'ops' }));
  });
  after(async () => {
    await gateway?.close();
    await direct?.destroy();
    await cutter?.close();
    postgres?.stop();
  });

  const call = (method: string, path: string, body: unknown, key?: string) =>
    fetch(`${gateway.url}/v1/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });

  it('answers outcome_unknown (never "nothing was changed"), and a retry with the same key makes one app', async () => {
    cutter.armed = true;
    const first = await call('POST', '/apps', { name: 'Lost commit' }, 'create-lost-commit-1');
    expect(cutter.cuts).to.equal(1);
    expect(first.status).to.equal(503);
    const refusal = (await first.json()) as { error: { reason: string; message: string } };
    expect(refusal.error.reason).to.equal('outcome_unknown');
    expect(refusal.error.message).to.not.match(/nothing (was )?changed/i);
    // What was acknowledged against what was stored: the server has the app.
    const stored = await direct('apps').where({ name: 'Lost commit' }).select('id');
    expect(stored).to.have.length(1);

    const retry = await call('POST', '/apps', { name: 'Lost commit' }, 'create-lost-commit-1');
    expect(retry.status).to.equal(201);
    expect(retry.headers.get('idempotency-replayed')).to.equal('true');
    const app = (await retry.json()) as { id: string; appToken: string };
    expect(app.id).to.equal(stored[0].id);
    expect((await direct('apps').where({ id: app.id }).first()).token_hash).to.equal(hashToken(app.appToken));
    expect(await direct('apps').where({ name: 'Lost commit' }).select('id')).to.have.length(1);

    // The same key for another body is refused; without a key a create is a new app, as before.
    const reused = await call('POST', '/apps', { name: 'Another' }, 'create-lost-commit-1');
    expect(reused.status).to.equal(409);
    expect(((await reused.json()) as { error: { reason: string } }).error.reason).to.equal('idempotency_key_reused');
    expect(await direct('apps').where({ name: 'Another' }).select('id')).to.have.length(0);
  });

  it('a rotation with no grace behind a lost COMMIT: the retry returns the token that is stored', async () => {
    const created = (await (await call('POST', '/apps', { name: 'Rotated' }, 'create-rotated')).json()) as { id: string; appToken: string };
    cutter.armed = true;
    const first = await call('POST', `/apps/${created.id}/rotate-token`, { graceHours: 0 }, 'rotate-1');
    expect(first.status).to.equal(503);
    expect(((await first.json()) as { error: { reason: string } }).error.reason).to.equal('outcome_unknown');
    const storedHash = (await direct('apps').where({ id: created.id }).first()).token_hash as string;
    expect(storedHash, 'the rotation was committed').to.not.equal(hashToken(created.appToken));

    const retry = await call('POST', `/apps/${created.id}/rotate-token`, { graceHours: 0 }, 'rotate-1');
    expect(retry.status).to.equal(200);
    const rotated = (await retry.json()) as { appToken: string };
    expect(hashToken(rotated.appToken)).to.equal(storedHash);
    expect((await direct('apps').where({ id: created.id }).first()).token_hash).to.equal(storedHash);
  });
});
