/**
 * App Attest policy checks the route tests could not reach, on the verifier itself
 * with a test root standing in for Apple's and the gateway's real device-key store:
 * - in production, a key of Xcode's development environment is refused even when the app allows development keys
 *   (production ignores the test root, so only a direct call can reach this check);
 * - two assertions with the same counter, checked at the same time, are not both accepted: the counter moves by
 *   compare-and-set, and the loser is refused.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { DEFAULT_APP_SETTINGS, GatewayError, type AppIdentity, type AttestationInput, type DeviceKeyStore } from '../../../core/contract';
import { DatabaseDeviceKeys } from '../../../core/storage/device-keys';
import { DeviceRepository } from '../../../core/storage/repositories';
import { TestGateway } from '../../../test/support/gateway';
import { AppleAppAttestVerifier } from '../index';
import { createTestAssertion, createTestAttestation, createTestAuthority, type TestAuthority } from './test-chain';

const APPLE_APP_ID = 'ABCDE12345.com.example.policy';
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

function appWith(settings: Partial<typeof DEFAULT_APP_SETTINGS>): AppIdentity {
  return { id: 'app_policytest00001', name: 'policy', settings: { ...DEFAULT_APP_SETTINGS, appleAppId: APPLE_APP_ID, ...settings }, devicesRevokedBefore: 0 };
}

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(GatewayError);
    return (error as GatewayError).reason;
  }
  return 'accepted';
}

describe('App Attest policies on the verifier', function () {
  this.timeout(60_000);
  let authority: TestAuthority;
  let gateway: TestGateway;
  let devices: DeviceKeyStore;
  const at = new Date();

  before(async () => {
    authority = await createTestAuthority(at);
    gateway = await TestGateway.start({});
    devices = new DatabaseDeviceKeys(gateway.gateway.database);
  });
  after(() => gateway.close());

  const input = (app: AppIdentity, body: Record<string, unknown>, production: boolean): AttestationInput => ({
    app,
    body,
    production,
    consumeChallenge: async () => true,
    useChallenge: async () => undefined,
    devices,
    readAttestationSecret: async () => null,
  });

  it('refuses a development-environment key in production even when the app allows development keys', async () => {
    const verifier = new AppleAppAttestVerifier([authority.rootPem], () => at.getTime());
    const attempt = async (options: { aaguid: 'development' | 'production'; production: boolean; allow: boolean }) => {
      const challenge = `challenge-${Math.random()}`;
      const key = await createTestAttestation({ authority, appId: APPLE_APP_ID, clientDataHash: sha256(challenge), at, aaguid: options.aaguid });
      return reasonOf(verifier.verify(input(appWith({ allowAppAttestDevelopment: options.allow }), { keyId: key.keyId, attestation: key.attestation.toString('base64'), challenge }, options.production)));
    };
    expect(await attempt({ aaguid: 'development', production: true, allow: true })).to.equal('aaguid_not_allowed');
    expect(await attempt({ aaguid: 'development', production: true, allow: false })).to.equal('aaguid_not_allowed');
    // The controls: the same key is accepted outside production when the app allows it, and production keys in production.
    expect(await attempt({ aaguid: 'development', production: false, allow: true })).to.equal('accepted');
    expect(await attempt({ aaguid: 'development', production: false, allow: false })).to.equal('aaguid_not_allowed');
    expect(await attempt({ aaguid: 'production', production: true, allow: true })).to.equal('accepted');
  });

  it('accepts only one of two concurrent assertions with the same counter (compare-and-set)', async () => {
    const app = await gateway.createApp({ appleAppId: APPLE_APP_ID, allowDevelopmentAttestation: false });
    const identity = appWith({});
    const scoped = { ...identity, id: app.appId };
    const key = await createTestAttestation({ authority, appId: APPLE_APP_ID, clientDataHash: sha256('attest'), at });
    await new DeviceRepository(gateway.gateway.database).recordAttestation({ appId: app.appId, deviceId: key.keyId, method: 'apple-app-attest', publicKey: key.publicKeyPem, now: Date.now() });
    // Both checks read the stored counter before either writes it: each waits at the read until both have read.
    let reads = 0;
    let release!: () => void;
    const bothRead = new Promise<void>((resolve) => (release = resolve));
    const racing: DeviceKeyStore = {
      find: async (appId, deviceId) => {
        const found = await devices.find(appId, deviceId);
        reads += 1;
        if (reads === 2) release();
        await bothRead;
        return found;
      },
      advanceCounter: (appId, deviceId, expected, next) => devices.advanceCounter(appId, deviceId, expected, next),
    };
    const verifier = new AppleAppAttestVerifier([authority.rootPem], () => at.getTime());
    const check = (digest: Buffer) =>
      reasonOf(verifier.verifyRequestAssertion({ app: scoped, deviceId: key.keyId, assertion: createTestAssertion({ privateKey: key.privateKey, appId: APPLE_APP_ID, counter: 1, clientDataHash: digest }), header: '', digest, devices: racing, readAttestationSecret: async () => null }));
    const outcomes = await Promise.all([check(sha256('request one')), check(sha256('request two'))]);
    expect(outcomes.sort()).to.deep.equal(['accepted', 'counter_not_increased']);
    expect((await devices.find(app.appId, key.keyId))!.counter).to.equal(1);
    // The next counter is accepted once.
    expect(await reasonOf(verifier.verifyRequestAssertion({ app: scoped, deviceId: key.keyId, assertion: createTestAssertion({ privateKey: key.privateKey, appId: APPLE_APP_ID, counter: 2, clientDataHash: sha256('three') }), header: '', digest: sha256('three'), devices, readAttestationSecret: async () => null }))).to.equal('accepted');
  });
});
