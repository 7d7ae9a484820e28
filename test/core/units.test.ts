/** Unit tests of the pieces the gateway's guarantees rest on. */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ProxyContext, SecretValue, TollgateError, maskSecret } from '../../core/contract';
import { loadConfiguration } from '../../core/configuration/configuration';
import { redactUrl } from '../../core/security/redact';
import { generateToken, hashToken, isWellFormedToken } from '../../core/security/tokens';
import { SecretCipher } from '../../core/storage/encryption';
import { MemoryRateLimitStore } from '../../core/stores/memory-rate-limit-store';
import { InFlightList } from '../../core/pipeline/in-flight-list';
import { decodedForms, upstreamViews, versionRoots } from '../../core/pipeline/upstream-views';
import { toGatewayError } from '../../core/routes/errors';
import { BUILT_IN_PROVIDERS_DIRECTORY } from '../../core/server/plugin-loader';
import { TestGateway } from '../support/gateway';

const SOURCE_ROOT = path.resolve(__dirname, '..', '..', '..');

describe('InFlightList (what a node keeps per request in flight, without a hash table)', () => {
  const member = (name: string) => ({ name, inFlightIndex: -1 });
  const names = (list: InFlightList<{ name: string; inFlightIndex: number }>) => {
    const seen: string[] = [];
    list.forEach((entry) => seen.push(entry.name));
    return seen.sort();
  };

  it('adds, deletes any member in any order, and refuses a member it does not hold', () => {
    const list = new InFlightList<{ name: string; inFlightIndex: number }>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(member) as [ReturnType<typeof member>, ReturnType<typeof member>, ReturnType<typeof member>, ReturnType<typeof member>];
    for (const entry of [a, b, c, d]) list.add(entry);
    expect(list.size).to.equal(4);
    expect(list.delete(b)).to.equal(true);
    expect(b.inFlightIndex).to.equal(-1);
    expect(list.delete(b), 'a second delete').to.equal(false);
    expect(names(list)).to.deep.equal(['a', 'c', 'd']);
    expect(list.delete(member('stranger'))).to.equal(false);
    expect(list.delete(d)).to.equal(true);
    expect(list.delete(a)).to.equal(true);
    expect(names(list)).to.deep.equal(['c']);
    expect(c.inFlightIndex).to.equal(0);
    list.clear();
    expect(list.size).to.equal(0);
    expect(c.inFlightIndex).to.equal(-1);
    expect(list.delete(c)).to.equal(false);
  });

  it('visits every member once while the visitor deletes some of them (the sweeps)', () => {
    const list = new InFlightList<{ name: string; inFlightIndex: number }>();
    const entries = Array.from({ length: 10 }, (_, index) => member(String(index)));
    for (const entry of entries) list.add(entry);
    const visited: string[] = [];
    list.forEach((entry) => {
      visited.push(entry.name);
      if (Number(entry.name) % 3 !== 1) list.delete(entry);
    });
    expect(visited.sort()).to.deep.equal(entries.map((entry) => entry.name).sort());
    expect(names(list)).to.deep.equal(['1', '4', '7']);
  });
});

describe('upstream views of a provider path (upstream-views.ts)', () => {
  it('reads version roots case-insensitively, without trailing slashes, absolute targets by origin', () => {
    expect(versionRoots({ v1: '/V1//', 'v1-root': '', abs: 'https://Upload.Example.com/Up/', plain: 'http://127.0.0.1:9/x' })).to.deep.equal([
      { name: 'v1', host: 'base', prefix: '/v1' },
      { name: 'v1-root', host: 'base', prefix: '' },
      { name: 'abs', host: 'https://upload.example.com', prefix: '/up' },
      { name: 'plain', host: 'http://127.0.0.1:9', prefix: '/x' },
    ]);
  });

  it('lists every distinct decoded form, up to four rounds, without matrix parameters or trailing slashes', () => {
    expect(decodedForms('files')).to.deep.equal(['files']);
    expect(decodedForms('%2566iles')).to.deep.equal(['%66iles', 'files']);
    expect(decodedForms('a;x=1/b//')).to.deep.equal(['a/b']);
    // Two rounds that normalize to the same form count once.
    expect(decodedForms('a;%2541')).to.deep.equal(['a']);
    // Undecodable at once: no forms; undecodable at a later round: the forms so far.
    expect(decodedForms('%E0%A4%A')).to.equal(undefined);
    expect(decodedForms('%25E0%25A4%25A')).to.deep.equal(['%E0%A4%A']);
    // `f` encoded five times: four rounds stop one short of it.
    expect(decodedForms('%2525252566')).to.deep.equal(['%25252566', '%252566', '%2566', '%66']);
  });

  it('sees a path from every other version root on the same host', () => {
    const roots = versionRoots({ v1: '/v1', alias: '/v1', 'v1-root': '', v1beta: '/v1beta', other: 'https://other.example.com/v1/x' });
    expect(upstreamViews(roots, 'v1', 'files')).to.deep.equal(['files', 'v1/files']);
    expect(upstreamViews(roots, 'v1', '')).to.deep.equal(['', 'v1']);
    expect(upstreamViews(roots, 'v1-root', 'v1/Files')).to.deep.equal(['v1/Files', 'Files']);
    expect(upstreamViews(roots, 'v1-root', 'V1')).to.deep.equal(['V1', '']);
    expect(upstreamViews(roots, 'v1-root', 'v1betax/y')).to.deep.equal(['v1betax/y']);
    // Another host's root with a matching prefix is not the same upstream call.
    expect(upstreamViews(roots, 'v1-root', 'v1/x/y')).to.deep.equal(['v1/x/y', 'x/y']);
    expect(upstreamViews(roots, 'unknown', 'files')).to.deep.equal(['files']);
  });
});

describe('GCRA in-process rate-limit store', () => {
  const rule = (limit: number, key = 'k') => ({ policy: 'device', key, limit, windowSeconds: 60 });

  it('admits exactly the limit in a burst, then one per emission interval', () => {
    const store = new MemoryRateLimitStore();
    const start = 1_000_000;
    const admitted = Array.from({ length: 10 }, () => store.consume([rule(6)], start)[0]!.allowed).filter(Boolean).length;
    expect(admitted).to.equal(6);
    const refused = store.consume([rule(6)], start)[0]!;
    expect(refused.allowed).to.equal(false);
    expect(refused.retryAfterSeconds).to.equal(10);
    expect(store.consume([rule(6)], start + 9_999)[0]!.allowed).to.equal(false);
    expect(store.consume([rule(6)], start + 10_000)[0]!.allowed).to.equal(true);
    store.close();
  });

  it('never admits more than the limit across a window edge (no fixed-window double burst)', () => {
    const store = new MemoryRateLimitStore();
    let admitted = 0;
    for (let t = 0; t < 120_000; t += 500) if (store.consume([rule(10)], 5_000_000 + t)[0]!.allowed) admitted += 1;
    // 10 in the first instant, then one per 6 s over the remaining 120 s.
    expect(admitted).to.equal(10 + 19);
    store.close();
  });

  it('charges all rules or none', () => {
    const store = new MemoryRateLimitStore();
    const now = 7_000_000;
    store.consume([rule(1, 'app')], now);
    const results = store.consume([rule(5, 'device'), rule(1, 'app')], now);
    expect(results.map((result) => result.allowed)).to.deep.equal([true, false]);
    // The device rule was not charged: five more are still admitted on their own.
    expect(Array.from({ length: 5 }, () => store.consume([rule(5, 'device')], now)[0]!.allowed)).to.deep.equal([true, true, true, true, true]);
    store.close();
  });
});

describe('open-request slots as leases (in-process store)', () => {
  it('frees a holder that stopped renewing after its lease, and refused attempts extend nothing', () => {
    const store = new MemoryRateLimitStore();
    const t = 1_000_000;
    expect(store.acquireSlot('{app}s', 2, 1000, 'a', t)).to.equal(true);
    expect(store.acquireSlot('{app}s', 2, 1000, 'b', t)).to.equal(true);
    // Refused attempts while both leases run: none of them moves an expiry.
    for (let step = 0; step < 9; step += 1) expect(store.acquireSlot('{app}s', 2, 1000, `x${step}`, t + step * 100)).to.equal(false);
    // 'a' renews (its request still runs), 'b' does not (its node crashed).
    store.renewSlot('{app}s', 'a', 1000, t + 900);
    expect(store.acquireSlot('{app}s', 2, 1000, 'c', t + 1000)).to.equal(true);
    expect(store.acquireSlot('{app}s', 2, 1000, 'd', t + 1000)).to.equal(false);
    // An expired lease is not brought back by a late renewal.
    store.renewSlot('{app}s', 'b', 1000, t + 1001);
    store.releaseSlot('{app}s', 'a');
    expect(store.acquireSlot('{app}s', 2, 1000, 'e', t + 1002)).to.equal(true);
    expect(store.acquireSlot('{app}s', 2, 1000, 'f', t + 1002)).to.equal(false);
    store.close();
  });
});

describe('database outages are told apart from gateway faults', () => {
  it('types driver timeouts, refused connections and server shutdowns as database_unavailable, and nothing else', () => {
    const unavailable = [
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }),
      new Error('Query read timeout'),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014', severity: 'ERROR' }),
      Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
    ];
    for (const error of unavailable) {
      const mapped = toGatewayError(error);
      expect([mapped.type, mapped.status, mapped.reason], error.message).to.deep.equal(['serviceUnavailable', 503, 'database_unavailable']);
      expect(mapped.retryAfterSeconds).to.be.greaterThan(0);
    }
    const faults = [
      new TypeError('Cannot read properties of undefined'),
      Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED', syscall: 'connect' }) }),
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505', severity: 'ERROR' }),
    ];
    for (const error of faults) expect(toGatewayError(error).reason, error.message).to.equal('internal');
  });
});

describe('secret encryption at rest (AES-256-GCM)', () => {
  const cipher = new SecretCipher(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const sealed = cipher.seal('sk-plaintext-value', 'secret\u0000app_1\u0000openai');
    expect(sealed).to.match(/^v1\.[0-9a-f]{16}\./).and.not.include('plaintext');
    expect(cipher.open(sealed, 'secret\u0000app_1\u0000openai')).to.equal('sk-plaintext-value');
    expect(cipher.seal('same', 'ad')).to.not.equal(cipher.seal('same', 'ad'));
  });

  it('refuses a ciphertext moved to another row, altered, or opened with another key', () => {
    const sealed = cipher.seal('sk-plaintext-value', 'secret\u0000app_1\u0000openai');
    expect(() => cipher.open(sealed, 'secret\u0000app_2\u0000openai')).to.throw(TollgateError, /failed authentication/);
    const parts = sealed.split('.');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => cipher.open(parts.join('.'), 'secret\u0000app_1\u0000openai')).to.throw(TollgateError);
    expect(() => new SecretCipher(randomBytes(32)).open(sealed, 'secret\u0000app_1\u0000openai')).to.throw(/master key/);
  });
});

describe('credentials and redaction', () => {
  it('issues well-formed tokens and stores only their SHA-256', () => {
    const token = generateToken('app');
    expect(isWellFormedToken('app', token)).to.equal(true);
    expect(isWellFormedToken('admin', token)).to.equal(false);
    expect(hashToken(token)).to.match(/^[0-9a-f]{64}$/).and.not.include(token.slice(3));
  });

  it('masks secrets in every textual form', () => {
    const value = new SecretValue('sk-live-0123456789abcdefWXYZ');
    expect(String(value)).to.equal('[secret]');
    expect(`${value}`).to.equal('[secret]');
    expect(JSON.stringify({ value })).to.equal('{"value":"[secret]"}');
    expect(require('node:util').inspect(value)).to.not.include('sk-live');
    expect(value.masked()).to.equal('sk-…WXYZ');
    expect(maskSecret('short')).to.equal('…');
  });

  it('redacts credential query parameters and keeps the rest', () => {
    expect(redactUrl('/v1/x?q=hello&key=AIza123&api_key=s&X-Amz-Signature=abc&alt=sse')).to.equal(
      '/v1/x?q=hello&key=[redacted]&api_key=[redacted]&X-Amz-Signature=[redacted]&alt=sse',
    );
  });
});

describe('configuration', () => {
  it('has the documented defaults', () => {
    const configuration = loadConfiguration({}, '/tmp');
    expect(configuration).to.deep.include({ port: 8080, host: '127.0.0.1', environment: 'development', logLevel: 'info', maxBodyBytes: 25 * 1024 * 1024 });
    expect(configuration.dataDirectory).to.equal('/tmp/data');
    expect(loadConfiguration({ NODE_ENV: 'production' }, '/tmp').environment).to.equal('production');
  });

  it('refuses malformed values naming the variable', () => {
    expect(() => loadConfiguration({ TOLLGATE_PORT: 'eighty' }, '/tmp')).to.throw(/TOLLGATE_PORT/);
    expect(() => loadConfiguration({ TOLLGATE_ENV: 'staging' }, '/tmp')).to.throw(/TOLLGATE_ENV/);
    expect(() => loadConfiguration({ TOLLGATE_DATABASE_URL: 'mysql://x' }, '/tmp')).to.throw(/TOLLGATE_DATABASE_URL/);
  });
});

describe('typed per-stage context', () => {
  it('reading a fact before its stage ran is a coded error, not undefined', () => {
    const context = new ProxyContext('id', {} as never, {} as never, { slug: 's', version: 'v1', providerPath: '', query: '' }, {} as never, 0);
    expect(() => context.get('secret')).to.throw(TollgateError, /resolveSecret/).with.property('code', 'TG_ERR_STAGE_ORDER');
  });
});

describe('device-token signing keys', () => {
  it('rotate without downtime: tokens signed by the old key keep working, new tokens use the new key', async () => {
    const gateway = await TestGateway.start({});
    try {
      const { appId, appToken } = await gateway.createApp();
      const before = await gateway.deviceToken(appId, appToken, 'rotating-device');
      const oldKid = JSON.parse(Buffer.from(before.split('.')[0]!, 'base64url').toString()).kid as string;
      const newKid = await gateway.gateway.deviceTokens.rotate();
      expect(newKid).to.not.equal(oldKid);
      const claims = await gateway.gateway.deviceTokens.verify(before);
      expect(claims.deviceId).to.equal('rotating-device');
      const after = await gateway.deviceToken(appId, appToken, 'rotating-device');
      expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).to.equal(newKid);
    } finally {
      await gateway.close();
    }
  });
});

describe('core never names a provider', () => {
  it('no registered slug appears as a string literal in core/', () => {
    const slugs = readdirSync(BUILT_IN_PROVIDERS_DIRECTORY).filter((name) => !name.startsWith('_') && statSync(path.join(BUILT_IN_PROVIDERS_DIRECTORY, name)).isDirectory());
    expect(slugs.length).to.be.greaterThan(2);
    const files: string[] = [];
    const walk = (directory: string) => {
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        const full = path.join(directory, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.endsWith('.ts')) files.push(full);
      }
    };
    walk(path.join(SOURCE_ROOT, 'core'));
    expect(files.length).to.be.greaterThan(10);
    for (const file of files) {
      const source = readFileSync(file, 'utf8');
      for (const slug of slugs) {
        expect(new RegExp(`['"\`]${slug}['"\`/]`).test(source), `${path.relative(SOURCE_ROOT, file)} names "${slug}"`).to.equal(false);
      }
    }
  });
});
