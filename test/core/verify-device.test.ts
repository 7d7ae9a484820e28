/**
 * The `verifyDevice` stage on its own (core/pipeline/verify-device.ts), with the gateway's clock in the test's hands: the
 * every-request checks (the request digest of protocol.md, `Tollgate-Request-Time` within five minutes to the
 * millisecond, the assertion's size, one use per proof and the window that remembers them), the device-token refusals
 * around the app's revoke-all instant, and monitor mode (what still refuses, and what an unverified request is recorded
 * as). The attestation plugins' route specs drive the same stage through HTTP with real signatures.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { GatewayError, ProxyContext, attestationSecretKey, type AppIdentity, type AppSettings, type AttestationVerifier, type RequestAssertionInput } from '../../core/contract';
import { DeviceTokenService, type DeviceTokenClaims } from '../../core/attestation/device-tokens';
import { REQUEST_TIME_SKEW_MS, VerifyDeviceStage, monitorModeEffective, requestDigest } from '../../core/pipeline/verify-device';

const START = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const METHOD = 'android-key-attestation';
const PATH = '/v1/proxy/openai/v1/chat/completions?v=2';
const BODY = '{"model":"gpt-4o-mini","messages":[]}';
/** The stage's replay window holds this many proofs (RECENT_PROOFS_LIMIT). */
const WINDOW = 200_000;

interface Setup {
  readonly assertionMode?: 'every-request' | 'attestation-only';
  readonly attestationMode?: 'enforce' | 'monitor';
  readonly production?: boolean;
  readonly devicesRevokedBefore?: number;
  /** Methods with a per-request verifier (default: android-key-attestation). */
  readonly verifierMethods?: readonly string[];
  readonly tokens?: { verify(token: string): DeviceTokenClaims | Promise<DeviceTokenClaims> };
  readonly secrets?: Record<string, string>;
}

function harness(setup: Setup = {}) {
  const clock = { now: START };
  const calls: RequestAssertionInput[] = [];
  const revoked = new Set<string>();
  let verdict: (input: RequestAssertionInput) => Promise<void> = async () => {};
  const claims = (overrides: Partial<DeviceTokenClaims> = {}): DeviceTokenClaims => ({
    appId: 'app_1', deviceId: 'a1b2c3', method: METHOD, tokenId: 'jti-1', issuedAt: START - 60_000, expiresAt: START + 3_600_000, ...overrides,
  });
  const issued = new Map<string, DeviceTokenClaims>([['token-1', claims()]]);
  const tokens = setup.tokens ?? {
    verify(token: string): DeviceTokenClaims {
      const found = issued.get(token);
      if (!found) throw new GatewayError('attestationFailed', 'The device token is malformed.', { reason: 'device_token_invalid' });
      return found;
    },
  };
  const directory = {
    isDeviceRevoked: (appId: string, deviceId: string) => revoked.has(`${appId}/${deviceId}`),
    findSecret: async (appId: string, key: string) => {
      const value = appId === 'app_1' ? setup.secrets?.[key] : undefined;
      return value === undefined ? null : { value: { reveal: () => value } };
    },
  };
  const configuration = { production: setup.production ?? false, monitorMode: 'allow', trustProxy: false, maxBodyBytes: 1024 * 1024 };
  const verifiers = (setup.verifierMethods ?? [METHOD]).map((method) => ({
    method,
    verify: async () => ({ deviceId: 'unused' }),
    verifyRequestAssertion: async (input: RequestAssertionInput) => {
      calls.push(input);
      await verdict(input);
    },
  })) as unknown as AttestationVerifier[];
  const stage = new VerifyDeviceStage(tokens as never, directory as never, configuration as never, verifiers, {} as never, () => clock.now);
  const settings = { attestationMode: setup.attestationMode ?? 'enforce', assertionMode: setup.assertionMode ?? 'every-request' } as unknown as AppSettings;
  const app: AppIdentity = { id: 'app_1', name: 'App', settings, devicesRevokedBefore: setup.devicesRevokedBefore ?? 0 };

  /** A proxied request as it reaches the stage: headers as Node hands them over, the body already read. */
  function context(headers: Record<string, string | undefined>, body = BODY): ProxyContext {
    const request = { method: 'POST', url: PATH, headers: Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined)), socket: { remoteAddress: '203.0.113.7' } };
    const result = new ProxyContext('request-1', request as never, {} as never, { slug: 'openai', version: 'v1', providerPath: '/v1/chat/completions', query: 'v=2' } as never, { slug: 'openai' } as never, clock.now);
    result.set('app', app);
    result.requestBody = Buffer.from(body);
    return result;
  }

  /** Runs the stage: 'admitted' or the refusal's reason (anything else is rethrown). */
  async function outcome(ctx: ProxyContext): Promise<string> {
    try {
      await stage.run(ctx);
      return 'admitted';
    } catch (error) {
      if (error instanceof GatewayError) return error.reason;
      throw error;
    }
  }

  /** A signed request: the device token, a request time (default: the gateway's now) and the assertion; `null` leaves a header out. */
  const send = (assertion: string | null, time: string | null = String(clock.now), token: string | null = 'token-1') =>
    outcome(context({ 'tollgate-device-token': token ?? undefined, 'tollgate-request-time': time ?? undefined, 'tollgate-assertion': assertion ?? undefined }));

  return {
    clock, calls, revoked, issued, claims, stage, app, context, outcome, send,
    refuseWith(reason: string) {
      verdict = async () => {
        throw new GatewayError('attestationFailed', 'The assertion signature does not verify.', { reason });
      };
    },
    acceptAll() {
      verdict = async () => {};
    },
  };
}

describe('verifyDevice stage: every-request assertions', () => {
  it('hands the verifier the request digest of protocol.md: SHA-256 of METHOD, path with query, request time and the body hash', async () => {
    const bodyHash = createHash('sha256').update(BODY).digest('hex');
    const expected = createHash('sha256').update(`POST\n${PATH}\n${START}\n${bodyHash}`).digest();
    expect(requestDigest('POST', PATH, String(START), Buffer.from(BODY))).to.deep.equal(expected);
    // The method is upper-cased: a client that writes it in lower case signs the same digest.
    expect(requestDigest('post', PATH, String(START), Buffer.from(BODY))).to.deep.equal(expected);
    expect(expected.toString('hex')).to.have.length(64);

    const { send, calls } = harness();
    expect(await send('c2lnbmF0dXJl')).to.equal('admitted');
    expect(calls).to.have.length(1);
    expect(calls[0]!.digest).to.deep.equal(expected);
    expect(calls[0]!.header).to.equal('c2lnbmF0dXJl');
    expect(calls[0]!.assertion).to.deep.equal(Buffer.from('signature'));
    expect(calls[0]!.deviceId).to.equal('a1b2c3');
  });

  it('accepts Tollgate-Request-Time up to exactly five minutes from the gateway clock either way, and not a millisecond more', async () => {
    const { send, calls } = harness();
    expect(REQUEST_TIME_SKEW_MS).to.equal(300_000);
    const results = [
      await send('bGF0ZXN0LXBhc3Q', String(START - REQUEST_TIME_SKEW_MS)),
      await send('bGF0ZXN0LWZ1dHVyZQ', String(START + REQUEST_TIME_SKEW_MS)),
      await send('dG9vLWxhdGU', String(START - REQUEST_TIME_SKEW_MS - 1)),
      await send('dG9vLWVhcmx5', String(START + REQUEST_TIME_SKEW_MS + 1)),
    ];
    expect(results).to.deep.equal(['admitted', 'admitted', 'request_time_skew', 'request_time_skew']);
    // The refused ones never reached the signature check.
    expect(calls.map((call) => call.header)).to.deep.equal(['bGF0ZXN0LXBhc3Q', 'bGF0ZXN0LWZ1dHVyZQ']);
  });

  it('refuses a request time that is missing or not 10 to 16 plain digits, even when it reads as a number near now', async () => {
    const { send, calls } = harness();
    const times = [null, '', `+${START}`, `${START}x`, `x${START}`, ` ${START}`, `${START}.0`, `0${START}0000`, '999999999'];
    const results = [];
    for (const [index, time] of times.entries()) results.push(await send(`dGltZS0${index}`, time));
    expect(results).to.deep.equal(times.map(() => 'request_time_skew'));
    expect(calls).to.have.length(0);
    // 16 digits are read (a time in microseconds would be refused by the skew, not the format).
    expect(await send('c2l4dGVlbg', `000${START}`)).to.equal('admitted');
  });

  it('requires a Tollgate-Assertion of 1 to 16,384 characters', async () => {
    const { send, calls } = harness();
    expect(await send(null)).to.equal('assertion_required');
    expect(await send('')).to.equal('assertion_required');
    expect(await send('A'.repeat(16_385))).to.equal('assertion_required');
    expect(calls).to.have.length(0);
    expect(await send('A'.repeat(16_384))).to.equal('admitted');
    expect(calls).to.have.length(1);
  });

  it('refuses a replayed assertion without asking the verifier again, and lets a rejected one be retried', async () => {
    const h = harness();
    expect(await h.send('Zmlyc3Q')).to.equal('admitted');
    expect(await h.send('Zmlyc3Q')).to.equal('assertion_replayed');
    // The same proof with another request time is the same proof.
    expect(await h.send('Zmlyc3Q', String(START + 1000))).to.equal('assertion_replayed');
    expect(h.calls).to.have.length(1);
    // A proof is one device's: another device may send the same bytes (its signature check decides).
    h.issued.set('token-2', h.claims({ deviceId: 'd4e5f6', tokenId: 'jti-2' }));
    expect(await h.send('Zmlyc3Q', String(START), 'token-2')).to.equal('admitted');
    // A proof the verifier rejected is released: it is not remembered as used.
    h.refuseWith('signature_invalid');
    expect(await h.send('cmVqZWN0ZWQ')).to.equal('signature_invalid');
    h.acceptAll();
    expect(await h.send('cmVqZWN0ZWQ')).to.equal('admitted');
    expect(h.calls.map((call) => call.header)).to.deep.equal(['Zmlyc3Q', 'Zmlyc3Q', 'cmVqZWN0ZWQ', 'cmVqZWN0ZWQ']);
  });

  it('remembers a proof for as long as its request time passes the skew check, to the millisecond, and forgets it after', async () => {
    const h = harness();
    expect(await h.send('b25jZQ', String(START))).to.equal('admitted');
    // The last instant at which a copy with the same request time passes the time check: still a replay.
    h.clock.now = START + REQUEST_TIME_SKEW_MS;
    expect(await h.send('b25jZQ', String(START))).to.equal('assertion_replayed');
    // One millisecond later the time check refuses the copy...
    h.clock.now = START + REQUEST_TIME_SKEW_MS + 1;
    expect(await h.send('b25jZQ', String(START))).to.equal('request_time_skew');
    // ...and the proof is forgotten: the same bytes with a fresh time reach the verifier (whose signature check decides).
    expect(await h.send('b25jZQ', String(h.clock.now))).to.equal('admitted');
    expect(h.calls).to.have.length(2);
  });

  it('holds 200,000 proofs: at the limit, with none expired, the oldest is forgotten first', async function () {
    this.timeout(60_000);
    const h = harness();
    for (let index = 0; index < WINDOW; index += 1) {
      if ((await h.send(`p${index}`)) !== 'admitted') throw new Error(`proof ${index} was refused`);
    }
    expect(await h.send('cDA')).to.equal('admitted');
    expect(await h.send('p1')).to.equal('assertion_replayed');
    expect(await h.send(`p${WINDOW - 1}`)).to.equal('assertion_replayed');
    expect(await h.send('p0')).to.equal('admitted');
  });

  it('at the limit, drops the proofs whose window has passed before an older one that is still held', async function () {
    this.timeout(60_000);
    const h = harness();
    // A proof with a request time in the future is held longest, although it came first...
    expect(await h.send('ZWFybHk', String(START + REQUEST_TIME_SKEW_MS))).to.equal('admitted');
    // ...then proofs whose request time was five minutes ago, held until one millisecond from now.
    for (let index = 1; index < WINDOW; index += 1) {
      if ((await h.send(`q${index}`, String(START - REQUEST_TIME_SKEW_MS))) !== 'admitted') throw new Error(`proof ${index} was refused`);
    }
    h.clock.now = START + 1;
    expect(await h.send('ZnJlc2g', String(h.clock.now))).to.equal('admitted');
    // The expired ones went, the first one is still held.
    expect(await h.send('ZWFybHk', String(h.clock.now))).to.equal('assertion_replayed');
    expect(await h.send('ZnJlc2g', String(h.clock.now))).to.equal('assertion_replayed');
    expect(await h.send('q1', String(h.clock.now))).to.equal('admitted');
  });

  it('refuses a method without a per-request proof, and reads the app’s attestation secrets for the verifier (null when absent)', async () => {
    const unsupported = harness({ verifierMethods: ['apple-app-attest'] });
    expect(await unsupported.send('bm9uZQ')).to.equal('assertion_method_unsupported');
    expect(unsupported.calls).to.have.length(0);

    const h = harness({ secrets: { [attestationSecretKey('play-integrity-service-account')]: '{"type":"service_account"}' } });
    expect(await h.send('cmVhZA')).to.equal('admitted');
    const reads = [await h.calls[0]!.readAttestationSecret('play-integrity-service-account'), await h.calls[0]!.readAttestationSecret('missing')];
    expect(reads).to.deep.equal(['{"type":"service_account"}', null]);
  });
});

describe('verifyDevice stage: device tokens', () => {
  it('refuses an empty Tollgate-Device-Token as missing', async () => {
    const { send } = harness({ assertionMode: 'attestation-only' });
    expect(await send(null, null, '')).to.equal('device_token_missing');
    expect(await send(null, null, null)).to.equal('device_token_missing');
    expect(await send(null, null, 'token-1')).to.equal('admitted');
  });

  it('refuses a token issued before the app’s revoke-all instant, and admits one issued at that instant', async () => {
    const before = harness({ assertionMode: 'attestation-only', devicesRevokedBefore: START - 60_000 + 1 });
    expect(await before.send(null, null)).to.equal('device_revoked');
    const at = harness({ assertionMode: 'attestation-only', devicesRevokedBefore: START - 60_000 });
    expect(await at.send(null, null)).to.equal('admitted');
  });
});

describe('verifyDevice stage: monitor mode', () => {
  it('takes effect outside production, and in production only for an app that opted in; never with TOLLGATE_MONITOR_MODE=off', () => {
    const settings = (allowMonitorInProduction?: boolean) => ({ allowMonitorInProduction }) as unknown as AppSettings;
    expect(monitorModeEffective(settings(), { production: false, monitorMode: 'allow' })).to.equal(true);
    expect(monitorModeEffective(settings(), { production: true, monitorMode: 'allow' })).to.equal(false);
    expect(monitorModeEffective(settings(false), { production: true, monitorMode: 'allow' })).to.equal(false);
    expect(monitorModeEffective(settings(true), { production: true, monitorMode: 'allow' })).to.equal(true);
    expect(monitorModeEffective(settings(true), { production: false, monitorMode: 'off' })).to.equal(false);
  });

  it('records a request without a device token as unverified, keyed by the client address', async () => {
    const h = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only' });
    const ctx = h.context({});
    expect(await h.outcome(ctx)).to.equal('admitted');
    expect(ctx.get('device')).to.deep.equal({ deviceId: 'unverified:203.0.113.7', method: 'unverified', tokenId: '', issuedAt: 0, expiresAt: 0, verified: false });
  });

  it('still refuses a revoked device whose token is valid', async () => {
    const h = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only' });
    h.revoked.add('app_1/a1b2c3');
    expect(await h.send(null, null)).to.equal('device_revoked');
    const all = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only', devicesRevokedBefore: START });
    expect(await all.send(null, null)).to.equal('device_revoked');
  });

  it('lets a failure that is not a refused attestation through as the failure, never as an unverified request', async () => {
    const storeDown = new Error('signing keys could not be read');
    const broken = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only', tokens: { verify: () => Promise.reject(storeDown) } });
    const thrown = await broken.stage.run(broken.context({ 'tollgate-device-token': 'token-1' }))!.then(() => undefined, (error: unknown) => error);
    expect(thrown).to.equal(storeDown);

    const unavailable = new GatewayError('serviceUnavailable', 'The device tokens cannot be checked now.', { reason: 'store_unavailable' });
    const gatewayFault = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only', tokens: { verify: () => { throw unavailable; } } });
    const ctx = gatewayFault.context({ 'tollgate-device-token': 'token-1' });
    expect(await gatewayFault.outcome(ctx)).to.equal('store_unavailable');
    expect(ctx.peek('device')).to.equal(undefined);
  });

  it('recognises an expired token of a revoked device, from this app only, before the revoke-all instant only', async () => {
    const expiredIssuer = (claims: DeviceTokenClaims) => {
      // A genuine expiry refusal of the token service: the claims ride along with it.
      const service = new DeviceTokenService(null as never, null as never, () => claims.expiresAt + 1);
      (service as unknown as { verified: Map<string, DeviceTokenClaims> }).verified.set('token-1', claims);
      return { verify: (token: string) => service.verify(token) };
    };
    const claims = (overrides: Partial<DeviceTokenClaims> = {}): DeviceTokenClaims => ({
      appId: 'app_1', deviceId: 'a1b2c3', method: METHOD, tokenId: 'jti-1', issuedAt: START - 7_200_000, expiresAt: START - 3_600_000, ...overrides,
    });
    const run = async (tokenClaims: DeviceTokenClaims, setup: { revoked?: string; devicesRevokedBefore?: number } = {}) => {
      const h = harness({ attestationMode: 'monitor', assertionMode: 'attestation-only', tokens: expiredIssuer(tokenClaims), devicesRevokedBefore: setup.devicesRevokedBefore ?? 0 });
      if (setup.revoked) h.revoked.add(setup.revoked);
      const ctx = h.context({ 'tollgate-device-token': 'token-1' });
      const result = await h.outcome(ctx);
      return result === 'admitted' ? ctx.get('device').deviceId : result;
    };
    expect(await run(claims())).to.equal('unverified:203.0.113.7');
    expect(await run(claims(), { revoked: 'app_1/a1b2c3' })).to.equal('device_revoked');
    // Device ids of this method are compared in normal form (lower case).
    expect(await run(claims({ deviceId: 'A1B2C3' }), { revoked: 'app_1/a1b2c3' })).to.equal('device_revoked');
    // Another app's token names a device of that app, not of this one.
    expect(await run(claims({ appId: 'app_2' }), { revoked: 'app_1/a1b2c3' })).to.equal('unverified:203.0.113.7');
    expect(await run(claims(), { devicesRevokedBefore: START - 7_200_000 + 1 })).to.equal('device_revoked');
    expect(await run(claims(), { devicesRevokedBefore: START - 7_200_000 })).to.equal('unverified:203.0.113.7');
  });
});
