/**
 * The storage suite, run against both engines: SQLite (a real file) and PostgreSQL (a throwaway server). Same migrations,
 * same management operations, same read model.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TollgateError } from '../../core/contract';
import { DeviceTokenService } from '../../core/attestation/device-tokens';
import { createGatewayCore } from '../../core/server/gateway';
import { CachedDirectory } from '../../core/storage/cached-directory';
import { AuditRepository, DeviceRepository, UsageRepository, bumpChangeSequence, readChangeSequence } from '../../core/storage/repositories';
import { UsageRecorder } from '../../core/storage/usage-recorder';
import { DEFAULT_PRICES, DEFAULT_PRICE_SOURCES } from '../../providers/_shared/prices';
import { hashToken } from '../../core/security/tokens';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

const ENGINES = ['sqlite', 'postgres'] as const;

for (const engine of ENGINES) {
  describe(`storage on ${engine}`, function () {
    this.timeout(60_000);
    let postgres: RunningPostgres | undefined;
    let directory: string;
    let core: Awaited<ReturnType<typeof createGatewayCore>>;

    before(async function () {
      directory = mkdtempSync(path.join(os.tmpdir(), `tollgate-storage-${engine}-`));
      const env: Record<string, string> = { TOLLGATE_DATA_DIR: directory, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_LOG_LEVEL: 'warn' };
      if (engine === 'postgres') {
        postgres = await requireService(this, startPostgres);
        env.TOLLGATE_DATABASE_URL = postgres.url;
      }
      core = await createGatewayCore({ env, workingDirectory: directory });
    });
    after(async () => {
      await core?.close();
      postgres?.stop();
      rmSync(directory, { recursive: true, force: true });
    });

    it('applies the migrations (idempotently) on the configured engine', async () => {
      expect(core.database.client.config.client).to.equal(engine === 'postgres' ? 'pg' : 'better-sqlite3');
      const [, pending] = (await core.database.migrate.list({ migrationSource: new (require('../../core/storage/migrations').CodeMigrationSource)() })) as [unknown, unknown[]];
      expect(pending).to.have.length(0);
      expect(await readChangeSequence(core.database)).to.be.a('number');
    });

    it('stores apps with a token hash only, and every write bumps the change feed', async () => {
      const before = await readChangeSequence(core.database);
      const app = await core.management.createApp({ name: `App on ${engine}`, deviceLimitPerMinute: 7 });
      expect(await readChangeSequence(core.database)).to.equal(before + 1);
      const row = await core.database('apps').where({ id: app.id }).first();
      expect(row.token_hash).to.equal(hashToken(app.appToken));
      expect(JSON.stringify(row)).not.to.include(app.appToken);
      const updated = await core.management.updateApp(app.id, { appLimitPerMinute: 70 });
      expect(updated.settings).to.deep.include({ deviceLimitPerMinute: 7, appLimitPerMinute: 70 });
      expect((await core.management.listApps()).map((listed) => listed.id)).to.include(app.id);
    });

    it('encrypts secrets at rest and reads them back through the cached read model', async () => {
      const app = await core.management.createApp({ name: 'Secrets' });
      const value = `sk-${engine}-secret-0123456789abcdef`;
      await core.management.setSecret({ appId: app.id, provider: 'openai', value });
      const row = await core.database('secrets').where({ app_id: app.id, provider: 'openai' }).first();
      expect(row.sealed_value).to.match(/^v1\./).and.not.include(value);
      const directory = new CachedDirectory(core.database, core.cipher, { pollIntervalMs: 60_000, onError: () => undefined });
      await directory.start();
      try {
        expect((await directory.findSecret(app.id, 'openai'))!.value.reveal()).to.equal(value);
        expect(await directory.findSecret(app.id, 'anthropic')).to.equal(null);
        expect((await directory.findAppByTokenHash(hashToken(app.appToken)))!.id).to.equal(app.id);
        await core.management.deleteSecret(app.id, 'openai');
        await directory.poll();
        expect(await directory.findSecret(app.id, 'openai')).to.equal(null);
      } finally {
        directory.stop();
      }
    });

    it('drops the read model once for a change made in this process, and on the next poll for one made elsewhere', async () => {
      await core.directory.poll();
      const app = await core.management.createApp({ name: 'Change feed' });
      const loaded = await core.directory.findAppById(app.id);
      expect(loaded!.id).to.equal(app.id);
      // The feed shows this process's own write: nothing new, the cached entry stays (it was not dropped a second time).
      await core.directory.poll();
      expect(await core.directory.findAppById(app.id)).to.equal(loaded);
      // Another process's write (the CLI, another node): the next poll drops the caches.
      await bumpChangeSequence(core.database);
      await core.directory.poll();
      const reloaded = await core.directory.findAppById(app.id);
      expect(reloaded).not.to.equal(loaded);
      expect(reloaded!.id).to.equal(app.id);
    });

    it('refuses bad input without writing anything', async () => {
      const before = await readChangeSequence(core.database);
      const count = Number((await core.database('apps').count({ n: '*' }).first())!.n);
      for (const attempt of [() => core.management.createApp({ name: '' }), () => core.management.createApp({ name: 'x', bogus: true }), () => core.management.setSecret({ appId: 'app_missing', provider: 'openai', value: 'k' })]) {
        try {
          await attempt();
          expect.fail('accepted bad input');
        } catch (error) {
          expect(error).to.be.instanceOf(TollgateError);
        }
      }
      expect(await readChangeSequence(core.database)).to.equal(before);
      expect(Number((await core.database('apps').count({ n: '*' }).first())!.n)).to.equal(count);
    });

    it('keeps development tokens, devices and revocations', async () => {
      const app = await core.management.createApp({ name: 'Devices', allowDevelopmentAttestation: true });
      const { developmentToken } = await core.management.createDevelopmentToken(app.id);
      expect(await core.management.findDevelopmentTokenOwner(developmentToken)).to.deep.equal({ appId: app.id });
      expect(await core.management.findDevelopmentTokenOwner(`dt_${'A'.repeat(32)}`)).to.equal(null);
      const devices = new DeviceRepository(core.database);
      await devices.recordAttestation({ appId: app.id, deviceId: 'phone-1', method: 'development', publicKey: null, now: Date.now() });
      await devices.recordAttestation({ appId: app.id, deviceId: 'phone-1', method: 'development', publicKey: null, now: Date.now() + 1 });
      await core.management.revokeDevice(app.id, 'phone-1');
      expect((await devices.listRevoked()).map((device) => device.deviceId)).to.include('phone-1');
      expect((await core.management.listDevices(app.id))[0]!.revokedAt).to.be.a('string');
    });

    it('searches devices by id prefix (any case, wildcards literal) and platform, paged with the total (issue 19)', async () => {
      const app = await core.management.createApp({ name: 'Device search' });
      const devices = new DeviceRepository(core.database);
      const now = Date.now();
      const seeded: Array<[string, string]> = [['ios-1', 'apple-app-attest'], ['ios-2', 'apple-app-attest'], ['droid-1', 'android-play-integrity'], ['droid_2', 'android-key-attestation'], ['sim-1', 'development']];
      for (const [index, [deviceId, method]] of seeded.entries()) await devices.recordAttestation({ appId: app.id, deviceId, method, publicKey: null, now: now + index });
      const search = (query: Partial<{ prefix: string; platform: 'ios' | 'android' | 'development' | 'other' }>, limit = 50, offset = 0) => core.management.searchDevices(app.id, { ...query, limit, offset });
      const ids = async (...args: Parameters<typeof search>) => (await search(...args)).devices.map((device) => device.deviceId);
      expect(await ids({})).to.deep.equal(['sim-1', 'droid_2', 'droid-1', 'ios-2', 'ios-1']);
      expect(await search({}, 2, 2)).to.deep.include({ total: 5, limit: 2, offset: 2, nextOffset: 4 });
      expect(await ids({}, 2, 4)).to.deep.equal(['ios-1']);
      expect(await ids({ prefix: 'IOS' })).to.deep.equal(['ios-2', 'ios-1']);
      expect(await ids({ prefix: 'droid_' })).to.deep.equal(['droid_2']);
      expect(await ids({ prefix: 'd%' })).to.deep.equal([]);
      expect(await ids({ platform: 'android' })).to.deep.equal(['droid_2', 'droid-1']);
      expect((await search({ platform: 'ios' })).devices.every((device) => device.platform === 'ios')).to.equal(true);
      expect(await ids({ platform: 'development', prefix: 'sim' })).to.deep.equal(['sim-1']);
      expect((await search({ platform: 'other' })).total).to.equal(0);
    });

    it('moves a provider key\'s "last used" forward with each usage batch, never back, and only for forwarded requests (issue 19)', async () => {
      const app = await core.management.createApp({ name: 'Last used' });
      await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-last-used-storage-0123456789' });
      const recorder = new UsageRecorder(core.database);
      const now = Date.now();
      const event = { appId: app.id, deviceId: 'd', provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: now };
      recorder.record({ ...event, createdAt: now + 5 });
      recorder.record({ ...event, createdAt: now + 9, status: 401 });
      recorder.record({ ...event, createdAt: now + 20, status: 403, errorType: 'attestationFailed' });
      await recorder.flush();
      const lastUsed = async () => (await core.management.listSecrets(app.id))[0]!.lastUsedAt;
      expect(await lastUsed()).to.equal(new Date(now + 9).toISOString());
      recorder.record({ ...event, createdAt: now + 1 });
      await recorder.flush();
      expect(await lastUsed()).to.equal(new Date(now + 9).toISOString());
    });

    it('once started, writes events by itself soon after they arrive (no flush call), and a key\'s "last used" at most once per interval', async () => {
      const app = await core.management.createApp({ name: 'Self-writing' });
      await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-self-writing-0123456789abcd' });
      // A long "last used" interval: an event that arrives while only the mark's timer is set must not wait for it.
      const recorder = new UsageRecorder(core.database, { flushIntervalMs: 20, batchSize: 500, maxBuffered: 1000, markIntervalMs: 60_000, onError: () => undefined });
      recorder.start();
      const until = async (condition: () => Promise<boolean>) => {
        for (let attempt = 0; attempt < 100 && !(await condition()); attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      };
      const stored = async () => (await new UsageRepository(core.database).listForApp(app.id, 0, Date.now() + 1)).length;
      const lastUsed = async () => (await core.management.listSecrets(app.id))[0]!.lastUsedAt;
      const now = Date.now();
      const event = { appId: app.id, deviceId: 'd', provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: now };
      try {
        recorder.record(event);
        await until(async () => (await stored()) === 1);
        expect(await stored()).to.equal(1);
        // The first batch marks its key at once (nothing was marked before).
        await until(async () => (await lastUsed()) !== null);
        expect(await lastUsed()).to.equal(new Date(now).toISOString());
        recorder.record({ ...event, createdAt: now + 7 });
        await until(async () => (await stored()) === 2);
        expect(await stored()).to.equal(2);
        expect(recorder.buffered).to.equal(0);
        // Within the interval the newer use waits for the next mark: stop() writes it.
        expect(await lastUsed()).to.equal(new Date(now).toISOString());
      } finally {
        await recorder.stop();
      }
      expect(await lastUsed()).to.equal(new Date(now + 7).toISOString());
    });

    it('stores a usage event once when its batch is written twice, in whichever order the writes land (unique created_at and request id)', async () => {
      const app = await core.management.createApp({ name: 'Twice' });
      const now = Date.now();
      const event = { appId: app.id, deviceId: 'd', provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: now };
      // 20 events: one wide statement of 16 rows and 4 single rows on SQLite; one unnest on PostgreSQL.
      const batch = Array.from({ length: 20 }, (_, index) => ({ ...event, createdAt: now + index, requestId: `twice-${index}` }));
      const repository = new UsageRepository(core.database);
      await repository.insertBatch(batch.slice(0, 12));
      // The retry, then the first attempt's late commit: each stores only what is missing.
      await repository.insertBatch(batch);
      await repository.insertBatch(batch.slice(0, 12));
      const stored = await repository.listForApp(app.id, now, now + 100);
      expect(stored.map((row) => row.createdAt).sort((a, b) => a - b)).to.deep.equal(batch.map((row) => row.createdAt));
      // Events without a request id are not deduplicated.
      const anonymous = { ...event, createdAt: now + 50 };
      await repository.insertBatch([anonymous, anonymous]);
      expect(await repository.listForApp(app.id, now, now + 100)).to.have.length(22);
    });

    it('writes a batch whose answer was lost after its commit once, not again on the retry', async () => {
      const app = await core.management.createApp({ name: 'Lost answer' });
      const recorder = new UsageRecorder(core.database);
      const now = Date.now();
      const event = { appId: app.id, deviceId: 'd', provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: now };
      for (let index = 0; index < 3; index += 1) recorder.record({ ...event, createdAt: now + index, requestId: `lost-${index}` });
      // A write that committed and still failed for its caller: the answer lost when the connection dropped.
      const insertBatch = UsageRepository.prototype.insertBatch;
      let failed = false;
      UsageRepository.prototype.insertBatch = async function (this: UsageRepository, events) {
        await insertBatch.call(this, events);
        failed = true;
        throw new Error('connection lost after the commit');
      };
      try {
        await recorder.flush();
      } finally {
        UsageRepository.prototype.insertBatch = insertBatch;
      }
      expect(failed).to.equal(true);
      expect(recorder.buffered, 'the batch stays buffered after the failure').to.equal(3);
      const stored = async () => (await new UsageRepository(core.database).listForApp(app.id, now, now + 10)).length;
      expect(await stored()).to.equal(3);
      recorder.record({ ...event, createdAt: now + 5, requestId: 'after' });
      await recorder.flush();
      expect(await stored()).to.equal(4);
      expect(recorder.buffered).to.equal(0);
    });

    it('persists device-token signing keys sealed under the master key', async () => {
      const service = new DeviceTokenService(core.database, core.cipher);
      await service.initialize();
      const { token } = await service.issue({ appId: 'app_x', deviceId: 'd', method: 'development', ttlSeconds: 60 });
      const reloaded = new DeviceTokenService(core.database, core.cipher);
      await reloaded.initialize();
      expect((await reloaded.verify(token)).deviceId).to.equal('d');
      const rows = await core.database('signing_keys');
      expect(JSON.stringify(rows)).not.to.match(/"d":"/);
    });

    it('verifies a token signed by a key another node created right after this node read its keys (within the 100 ms between reloads)', async () => {
      // This node's clock stands still at the instant of its last reload: for it, every token below arrives 0 ms later.
      const frozen = Date.now();
      const thisNode = new DeviceTokenService(core.database, core.cipher, () => frozen);
      await thisNode.initialize();
      const otherNode = new DeviceTokenService(core.database, core.cipher);
      await otherNode.initialize();
      const kid = await otherNode.rotate();
      const { token } = await otherNode.issue({ appId: 'app_x', deviceId: 'peer-device', method: 'development', ttlSeconds: 60 });
      expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid).to.equal(kid);
      expect((await thisNode.verify(token)).deviceId).to.equal('peer-device');
      // A kid that no node created is still refused, after that reload.
      const [header, payload, signature] = token.split('.');
      const forgedHeader = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(header!, 'base64url').toString()), kid: 'dk_nobodymade' })).toString('base64url');
      let refusal: unknown;
      try {
        await thisNode.verify(`${forgedHeader}.${payload}.${signature}`);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).to.include({ type: 'attestationFailed', reason: 'device_token_invalid' });
    });

    it('writes usage events in batches and queries them per app and time window', async () => {
      const app = await core.management.createApp({ name: 'Usage' });
      const recorder = new UsageRecorder(core.database);
      const now = Date.now();
      for (let index = 0; index < 1200; index += 1) {
        recorder.record({ appId: app.id, deviceId: 'd', provider: 'openai', status: index % 10 === 0 ? 429 : 200, errorType: index % 10 === 0 ? 'rateLimited' : null, latencyMs: 5, bytesIn: 10, bytesOut: 100, truncated: false, createdAt: now + index });
      }
      await recorder.flush();
      expect(recorder.written).to.equal(1200);
      const events = await new UsageRepository(core.database).listForApp(app.id, now, now + 600, 5000);
      expect(events).to.have.length(600);
      expect(events.filter((event) => event.errorType === 'rateLimited')).to.have.length(60);
    });

    it('keeps writing after a flush of an empty buffer, and a flush during a flush waits for both', async () => {
      const app = await core.management.createApp({ name: 'Idle first' });
      const recorder = new UsageRecorder(core.database);
      await recorder.flush(); // an idle tick, as the timer makes at start
      const now = Date.now();
      const event = { appId: app.id, deviceId: 'd', provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: now };
      recorder.record(event);
      const first = recorder.flush();
      recorder.record({ ...event, createdAt: now + 1 });
      await Promise.all([first, recorder.flush()]);
      expect(recorder.written).to.equal(2);
      expect(await new UsageRepository(core.database).listForApp(app.id, now, now + 10)).to.have.length(2);
    });

    it('summarizes usage per minute, error type, provider latency and device', async () => {
      const app = await core.management.createApp({ name: 'Summary' });
      const recorder = new UsageRecorder(core.database);
      const start = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      const base = { appId: app.id, provider: 'openai', bytesIn: 1, bytesOut: 1, truncated: false };
      for (let index = 0; index < 20; index += 1) {
        recorder.record({ ...base, deviceId: index < 15 ? 'busy' : 'quiet', status: 200, errorType: null, latencyMs: index + 1, createdAt: start + index * 1000 });
      }
      recorder.record({ ...base, deviceId: 'busy', status: 429, errorType: 'rateLimited', latencyMs: 1, createdAt: start + 61_000 });
      recorder.record({ ...base, provider: 'anthropic', deviceId: null, status: 500, errorType: null, latencyMs: 100, createdAt: start + 62_000 });
      // A token-budget refusal: an error of its own series, per minute too.
      recorder.record({ ...base, deviceId: null, status: 429, errorType: 'rateLimited', reason: 'token_budget', latencyMs: 1, createdAt: start + 63_000 });
      await recorder.flush();
      const summary = await new UsageRepository(core.database).summary(app.id, start, start + 180_000);
      expect(summary.totalRequests).to.equal(23);
      expect(summary.requestsPerMinute).to.deep.equal([
        { minute: start, requests: 20, errors: 0, tokens: 0, budgetRefusals: 0 },
        { minute: start + 60_000, requests: 3, errors: 3, tokens: 0, budgetRefusals: 1 },
      ]);
      expect(summary.errorsByType).to.deep.equal([
        { type: 'providerError', count: 1 },
        { type: 'rateLimited', count: 1 },
        { type: 'tokenBudget', count: 1 },
      ]);
      // Latency is the provider's: the request the gateway refused (rateLimited) never reached it and is left out.
      expect(summary.latencyByProvider).to.deep.equal([
        { provider: 'openai', requests: 20, p50Ms: 10, p95Ms: 19 },
        { provider: 'anthropic', requests: 1, p50Ms: 100, p95Ms: 100 },
      ]);
      expect(summary.topDevices).to.deep.equal([
        { deviceId: 'busy', requests: 16 },
        { deviceId: 'quiet', requests: 5 },
      ]);
      expect((await new UsageRepository(core.database).summary(null, start, start + 180_000)).totalRequests).to.be.at.least(23);
      // No realtime session among them.
      expect(summary.realtime).to.deep.equal({ sessions: 0, seconds: 0 });
    });

    it('sums realtime sessions apart from HTTP requests: their count and open seconds (the row\'s duration)', async () => {
      const app = await core.management.createApp({ name: 'Realtime summary' });
      const recorder = new UsageRecorder(core.database);
      const start = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      const base = { appId: app.id, provider: 'openai', deviceId: 'voice', bytesIn: 1, bytesOut: 1, truncated: false, errorType: null };
      const session = { framesIn: 4, framesOut: 9, closeCode: 1000, closeReason: '', closedBy: 'client' as const };
      recorder.record({ ...base, status: 101, latencyMs: 90_400, createdAt: start, session });
      recorder.record({ ...base, status: 101, latencyMs: 29_700, createdAt: start + 1000, session: { ...session, closeCode: 4429, closeReason: 'session_too_long', closedBy: 'gateway' } });
      recorder.record({ ...base, status: 200, latencyMs: 5_000, createdAt: start + 2000 });
      await recorder.flush();
      const summary = await new UsageRepository(core.database).summary(app.id, start, start + 180_000);
      expect(summary.totalRequests).to.equal(3);
      expect(summary.realtime).to.deep.equal({ sessions: 2, seconds: 120 });
      expect((await new UsageRepository(core.database).summary(app.id, start + 1500, start + 180_000)).realtime).to.deep.equal({ sessions: 0, seconds: 0 });
    });

    it('stores the tokens of each usage event and sums them per minute, app, device, provider and model', async () => {
      const app = await core.management.createApp({ name: 'Tokens' });
      const recorder = new UsageRecorder(core.database);
      const start = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      const base = { appId: app.id, provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false };
      recorder.record({ ...base, deviceId: 'a', createdAt: start, inputTokens: 100, outputTokens: 20, cachedTokens: 64, reasoningTokens: 5, model: 'gpt-4o-mini' });
      recorder.record({ ...base, deviceId: 'a', createdAt: start + 1000, inputTokens: 1_000_000_000, outputTokens: 1_500_000_000, model: 'gpt-4o-mini' });
      recorder.record({ ...base, deviceId: 'b', provider: 'anthropic', createdAt: start + 61_000, inputTokens: 7, outputTokens: 3, model: 'claude-3-5-haiku' });
      // Usage unknown: left out of the token sums, still a request.
      recorder.record({ ...base, deviceId: 'b', createdAt: start + 62_000 });
      await recorder.flush();
      const repository = new UsageRepository(core.database);
      const [stored] = (await repository.listForApp(app.id, start, start + 1)).filter((event) => event.deviceId === 'a');
      expect(stored).to.deep.include({ inputTokens: 100, outputTokens: 20, cachedTokens: 64, reasoningTokens: 5, model: 'gpt-4o-mini' });
      const summary = await repository.summary(app.id, start, start + 180_000);
      expect(summary.requestsPerMinute.map((row) => row.tokens)).to.deep.equal([2_500_000_120, 10]);
      expect(summary.tokens).to.deep.include({ inputTokens: 1_000_000_107, outputTokens: 1_500_000_023, cachedTokens: 64, reasoningTokens: 5, requestsWithUsage: 3 });
      expect(summary.tokens.byDevice.map((row) => [row.deviceId, row.inputTokens, row.outputTokens])).to.deep.equal([
        ['a', 1_000_000_100, 1_500_000_020],
        ['b', 7, 3],
      ]);
      expect(summary.tokens.byModel.map((row) => row.model)).to.deep.equal(['gpt-4o-mini', 'claude-3-5-haiku']);
      expect(summary.tokens.byProvider.map((row) => [row.provider, row.requests])).to.deep.equal([
        ['openai', 2],
        ['anthropic', 1],
      ]);
      const all = await repository.summary(null, start, start + 180_000);
      expect(all.tokens.byApp.find((row) => row.appId === app.id)).to.deep.include({ inputTokens: 1_000_000_107, requests: 3 });
    });

    it('keeps the signed-in user of each event: the request log and the summary (with its spend per minute) by user, and the devices a user used', async () => {
      const app = await core.management.createApp({ name: 'Users in the log' });
      const recorder = new UsageRecorder(core.database);
      const start = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      const base = { appId: app.id, provider: 'openai', status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, model: 'gpt-4o-mini' };
      // Several rows in one batch: the wide SQLite insert (16 rows a statement) and PostgreSQL's unnest both carry the user.
      for (let index = 0; index < 17; index += 1) recorder.record({ ...base, deviceId: 'phone', userId: 'auth0|ada', createdAt: start + index, requestId: `ada-${index}`, inputTokens: 1_000_000, outputTokens: 0 });
      recorder.record({ ...base, deviceId: 'tablet', userId: 'auth0|ada', createdAt: start + 61_000, requestId: 'ada-tablet', inputTokens: 2_000_000, outputTokens: 0 });
      recorder.record({ ...base, deviceId: 'phone', userId: 'auth0|bob', createdAt: start + 1000, requestId: 'bob-0', inputTokens: 5, outputTokens: 5 });
      recorder.record({ ...base, deviceId: 'phone', createdAt: start + 2000, requestId: 'nobody-0' });
      await recorder.flush();
      await core.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 0.5, outputUsdPerMillion: 1 });
      const usage = new UsageRepository(core.database);
      const ada = await usage.requestLog({ appId: app.id, userId: 'auth0|ada', limit: 100 });
      expect(ada).to.have.length(18);
      expect(new Set(ada.map((entry) => entry.userId))).to.deep.equal(new Set(['auth0|ada']));
      expect((await usage.requestLog({ appId: app.id, limit: 100 })).find((entry) => entry.requestId === 'nobody-0')!.userId).to.equal(null);
      expect(await usage.devicesOfUser(app.id, 'auth0|ada')).to.deep.equal([
        { deviceId: 'tablet', requests: 1, firstSeenAt: start + 61_000, lastSeenAt: start + 61_000 },
        { deviceId: 'phone', requests: 17, firstSeenAt: start, lastSeenAt: start + 16 },
      ]);
      const summary = await usage.summary(app.id, start, start + 180_000, undefined, { userId: 'auth0|ada' });
      expect(summary.totalRequests).to.equal(18);
      expect(summary.tokens.inputTokens).to.equal(19_000_000);
      expect(summary.spend!.totalUsd).to.be.closeTo(9.5, 1e-9);
      expect(summary.spend!.perMinute!.map((entry) => [entry.minute, +entry.usd.toFixed(6)])).to.deep.equal([
        [start, 8.5],
        [start + 60_000, 1],
      ]);
      // The whole app's summary has no spend per minute; one user's excludes the others.
      expect((await usage.summary(app.id, start, start + 180_000)).spend!.perMinute).to.equal(undefined);
      expect((await usage.summary(app.id, start, start + 180_000, undefined, { userId: 'auth0|bob' })).totalRequests).to.equal(1);
      await core.management.deletePrice({ provider: 'openai', model: 'gpt-4o-mini' });
    });

    it('estimates spend from the dated default table, an operator price overriding it, by exact model or the model without its dated version', async () => {
      const app = await core.management.createApp({ name: 'Spend' });
      const recorder = new UsageRecorder(core.database);
      const start = Math.floor(Date.now() / 60_000) * 60_000 - 120_000;
      const base = { appId: app.id, status: 200, errorType: null, latencyMs: 5, bytesIn: 1, bytesOut: 1, truncated: false, createdAt: start };
      recorder.record({ ...base, provider: 'openai', deviceId: 'a', inputTokens: 2_000_000, outputTokens: 1_000_000, model: 'gpt-4o-mini-2024-07-18' });
      recorder.record({ ...base, provider: 'openai', deviceId: 'b', inputTokens: 1_000_000, outputTokens: 0, model: 'gpt-4o-mini' });
      recorder.record({ ...base, provider: 'anthropic', deviceId: 'b', inputTokens: 500, outputTokens: 500, model: 'claude-unpriced' });
      await recorder.flush();
      // No operator price and no default table: no estimate, never a guess.
      expect((await new UsageRepository(core.database, []).summary(app.id, start, start + 60_000)).spend).to.equal(null);
      // The default table: gpt-4o-mini's published price, dated.
      const asOf = DEFAULT_PRICE_SOURCES.openai!.asOf;
      const row = DEFAULT_PRICES.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')!;
      expect(row).to.include({ priceAsOf: asOf, source: DEFAULT_PRICE_SOURCES.openai!.url });
      const repository = new UsageRepository(core.database, DEFAULT_PRICES);
      const byDefault = (await repository.summary(app.id, start, start + 60_000)).spend!;
      expect(byDefault.totalUsd).to.be.closeTo(3 * row.inputUsdPerMillion + row.outputUsdPerMillion, 1e-9);
      expect(byDefault.unpricedTokens).to.equal(1000);
      expect(byDefault.priceAsOf).to.deep.equal([asOf]);
      expect(byDefault.byModel.map((entry) => [entry.model, entry.priceAsOf])).to.deep.equal([
        ['gpt-4o-mini-2024-07-18', asOf],
        ['gpt-4o-mini', asOf],
      ]);
      await core.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 0.5, outputUsdPerMillion: 1 });
      // A price of the same name under another provider is not this one's.
      await core.management.setPrice({ provider: 'anthropic', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 1000 });
      const spend = (await repository.summary(app.id, start, start + 60_000)).spend!;
      expect(spend.currency).to.equal('USD');
      // The operator's undated price wins over the default row for the dated model too.
      expect(spend.totalUsd).to.be.closeTo(3 * 0.5 + 1, 1e-9);
      expect(spend.unpricedTokens).to.equal(1000);
      expect(spend.priceAsOf).to.deep.equal(['operator price']);
      expect(spend.byModel.map((entry) => [entry.model, +entry.usd.toFixed(6), entry.priceAsOf])).to.deep.equal([
        ['gpt-4o-mini-2024-07-18', 2, 'operator price'],
        ['gpt-4o-mini', 0.5, 'operator price'],
      ]);
      expect(spend.byDevice.map((entry) => [entry.deviceId, +entry.usd.toFixed(6)])).to.deep.equal([
        ['a', 2],
        ['b', 0.5],
      ]);
      // Per app on the all-apps summary only.
      expect(spend.byApp).to.deep.equal([]);
      const everyApp = (await repository.summary(null, start, start + 60_000)).spend!;
      expect(+everyApp.byApp.find((entry) => entry.appId === app.id)!.usd.toFixed(6)).to.equal(2.5);
      expect(everyApp.totalUsd).to.be.at.least(2.5 - 1e-9);
      // The request log carries each row's estimate and the date of its price.
      const log = (await core.management.requestLog({ appId: app.id, limit: 10 })).requests;
      const estimate = (model: string) => log.find((entry) => entry.model === model)!;
      expect(estimate('gpt-4o-mini')).to.include({ estimatedUsd: 0.5, priceAsOf: 'operator price' });
      expect(estimate('claude-unpriced')).to.include({ estimatedUsd: null, priceAsOf: null });
      expect((await core.management.listPrices()).map((price) => `${price.provider}/${price.model}`)).to.include.members(['openai/gpt-4o-mini', 'anthropic/gpt-4o-mini']);
      const defaults = await core.management.listDefaultPrices();
      expect(defaults.enabled).to.equal(true);
      expect(defaults.prices.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')).to.include({ overridden: true, priceAsOf: asOf });
      expect(defaults.prices.find((price) => price.provider === 'openai' && price.model === 'gpt-4o')).to.include({ overridden: false });
      await core.management.deletePrice({ provider: 'anthropic', model: 'gpt-4o-mini' });
      await core.management.deletePrice({ provider: 'openai', model: 'gpt-4o-mini' });
      expect(await core.management.listPrices()).to.deep.equal([]);
      // Without the operator's price, the default is back (and its date with it).
      const after = (await core.management.requestLog({ appId: app.id, limit: 10 })).requests.find((entry) => entry.model === 'gpt-4o-mini')!;
      expect(after.priceAsOf).to.equal(asOf);
      expect(after.estimatedUsd).to.be.closeTo(row.inputUsdPerMillion, 1e-12);
    });

    it('appends and lists the audit log', async () => {
      await new AuditRepository(core.database).append({ actor: 'ops', action: 'test.action', target: 'app_1', details: { field: 'x' }, createdAt: Date.now() });
      const entries = await new AuditRepository(core.database).list({ limit: 5 });
      expect(entries[0]).to.deep.include({ actor: 'ops', action: 'test.action', target: 'app_1' });
    });
  });
}
