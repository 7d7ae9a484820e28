/**
 * React Native SDK units the vectors do not pin: the pure-TS SHA-256, UTF-8 and base64 against Node's, the device
 * token cache, native attestation and assertions, response decoding, and fetch implementations without streaming.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  createTollgateClient,
  DeviceTokenCache,
  jwsExpiryMs,
  parseHttpDate,
  parseRetryAfter,
  sha256Hex,
  TollgateError,
  type IssuedDeviceToken,
  type StreamEvent,
  type TollgateNativeModule,
} from '../../sdk/react-native/src';
import { decodeBase64, encodeBase64 } from '../../sdk/react-native/src/base64';
import { decodeUtf8, encodeUtf8 } from '../../sdk/react-native/src/utf8';

const BASE = 'https://gateway.example.com';
const APP_TOKEN = 'at_0123456789abcdefghijABCDEFGHIJkl';

/** A compact JWS-shaped token with `exp` (seconds); the signature is not checked by the SDK. */
function jws(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'EdDSA', typ: 'JWT' })}.${part(claims)}.c2ln`;
}

async function rejection(promise: Promise<unknown>): Promise<TollgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(TollgateError);
    return error as TollgateError;
  }
  throw new Error('expected a rejection');
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

describe('react-native SDK: units', () => {
  describe('SHA-256', () => {
    it('matches node:crypto for lengths around every padding boundary and random data', () => {
      for (const length of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 70_000]) {
        const data = randomBytes(length);
        expect(sha256Hex(new Uint8Array(data)), `length ${length}`).to.equal(createHash('sha256').update(data).digest('hex'));
      }
    });
    it('hashes strings as UTF-8', () => {
      const text = 'Héllo 日本 🎉';
      expect(sha256Hex(text)).to.equal(createHash('sha256').update(text, 'utf8').digest('hex'));
      expect(sha256Hex('')).to.equal('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    });
  });

  describe('UTF-8', () => {
    it('encodes like Buffer, lone surrogates as U+FFFD', () => {
      for (const text of ['', 'ascii', 'é', '日本語', '🎉x', '\u0000\u007f\u0080\u07ff\u0800\uffff', 'a\ud800b', '\udc00']) {
        expect(Buffer.from(encodeUtf8(text)).equals(Buffer.from(text, 'utf8')), JSON.stringify(text)).to.equal(true);
      }
    });
    it('decodes random and adversarial bytes exactly like TextDecoder (replacement and fatal)', () => {
      const samples: Uint8Array[] = [
        Uint8Array.of(0xc0, 0x80),
        Uint8Array.of(0xe0, 0x80, 0x80),
        Uint8Array.of(0xed, 0xa0, 0x80),
        Uint8Array.of(0xf4, 0x90, 0x80, 0x80),
        Uint8Array.of(0xf0, 0x9f, 0x8e),
        Uint8Array.of(0xe6, 0x97, 0x41),
        Uint8Array.of(0xff, 0xfe, 0x41),
        Uint8Array.of(0xef, 0xbb, 0xbf, 0x41),
      ];
      for (let index = 0; index < 2000; index += 1) samples.push(new Uint8Array(randomBytes(1 + (index % 12))));
      // Mostly-valid text with a few flipped bytes.
      for (let index = 0; index < 300; index += 1) {
        const bytes = new Uint8Array(Buffer.from('héllo 日本 🎉 wörld', 'utf8'));
        bytes[index % bytes.length] = index & 0xff;
        samples.push(bytes);
      }
      const loose = new TextDecoder('utf-8', { ignoreBOM: true });
      const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
      for (const sample of samples) {
        expect(decodeUtf8(sample), Buffer.from(sample).toString('hex')).to.equal(loose.decode(sample));
        let expected: string | null;
        try {
          expected = fatal.decode(sample);
        } catch {
          expected = null;
        }
        expect(decodeUtf8(sample, true), `fatal ${Buffer.from(sample).toString('hex')}`).to.equal(expected);
      }
    });
  });

  describe('base64', () => {
    it('round-trips and reads base64url without padding', () => {
      for (let length = 0; length < 40; length += 1) {
        const data = randomBytes(length);
        expect(encodeBase64(new Uint8Array(data))).to.equal(data.toString('base64'));
        expect(Buffer.from(decodeBase64(data.toString('base64'))!).equals(data)).to.equal(true);
        expect(Buffer.from(decodeBase64(data.toString('base64url'))!).equals(data)).to.equal(true);
      }
      expect(decodeBase64('a$b=')).to.equal(null);
    });
  });

  describe('Retry-After and HTTP dates', () => {
    it('reads the three HTTP-date forms', () => {
      const expected = Date.UTC(1994, 10, 6, 8, 49, 37);
      expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).to.equal(expected);
      expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).to.equal(expected);
      expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).to.equal(expected);
      expect(parseHttpDate('Sun, 31 Feb 1994 08:49:37 GMT')).to.equal(null);
      expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 PST')).to.equal(null);
    });
    it('gives whole seconds, rounded up, never negative', () => {
      const now = Date.UTC(1994, 10, 6, 8, 49, 0, 250);
      expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).to.equal(37);
      expect(parseRetryAfter('Sun, 06 Nov 1994 08:40:00 GMT', now)).to.equal(0);
      expect(parseRetryAfter('120', now)).to.equal(120);
      expect(parseRetryAfter('-1', now)).to.equal(undefined);
      expect(parseRetryAfter('1.5', now)).to.equal(undefined);
      expect(parseRetryAfter(undefined, now)).to.equal(undefined);
    });
  });

  describe('device token cache', () => {
    const issued = (token: string, now: number, lifetimeMs = 3_600_000): IssuedDeviceToken => ({
      token,
      receivedAtMs: now,
      expiresAtMs: now + lifetimeMs,
    });

    it('reads exp from the JWS payload without verifying it', () => {
      expect(jwsExpiryMs(jws({ exp: 1_764_000_000 }))).to.equal(1_764_000_000_000);
      expect(jwsExpiryMs('not.a.jws!')).to.equal(null);
      expect(jwsExpiryMs(jws({ sub: 'x' }))).to.equal(null);
    });

    it('reuses the token until less than 60 s remain, then attests again', async () => {
      let now = 1_000_000;
      let count = 0;
      const cache = new DeviceTokenCache(async () => issued(`t${++count}`, now), () => now);
      expect(await cache.token()).to.equal('t1');
      now += 3_600_000 - 60_001;
      expect(await cache.token()).to.equal('t1');
      now += 2;
      expect(await cache.token()).to.equal('t2');
    });

    it('uses a fifth of the lifetime as margin for short-lived tokens', async () => {
      let now = 0;
      let count = 0;
      const cache = new DeviceTokenCache(async () => issued(`t${++count}`, now, 100_000), () => now);
      expect(await cache.token()).to.equal('t1');
      now = 79_999;
      expect(await cache.token()).to.equal('t1');
      now = 80_000;
      expect(await cache.token()).to.equal('t2');
    });

    it('shares one attestation between concurrent callers and does not cache a failure', async () => {
      let release: () => void = () => undefined;
      let calls = 0;
      let fail = true;
      const cache = new DeviceTokenCache(async () => {
        calls += 1;
        await new Promise<void>((resolve) => (release = resolve));
        if (fail) throw new TollgateError('networkError', 'offline', { reason: 'unreachable' });
        return issued('good', 0);
      }, () => 0);
      const first = Promise.allSettled([cache.token(), cache.token(), cache.token()]);
      await new Promise((resolve) => setImmediate(resolve));
      release();
      const results = await first;
      expect(results.map((result) => result.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
      expect(calls).to.equal(1);
      fail = false;
      const second = Promise.all([cache.token(), cache.token()]);
      await new Promise((resolve) => setImmediate(resolve));
      release();
      expect(await second).to.deep.equal(['good', 'good']);
      expect(calls).to.equal(2);
    });

    it('invalidates only the token that is still cached', async () => {
      let count = 0;
      const cache = new DeviceTokenCache(async () => issued(`t${++count}`, 0), () => 0);
      expect(await cache.token()).to.equal('t1');
      cache.invalidate('t0');
      expect(await cache.token()).to.equal('t1');
      cache.invalidate('t1');
      expect(await cache.token()).to.equal('t2');
    });
  });

  describe('client', () => {
    interface Sent {
      url: string;
      method: string;
      headers: Record<string, string>;
      body?: Uint8Array;
    }

    /** A scripted TollgateNative module: records every call, answers as told. */
    function scriptedNative(script: {
      reportAction?: (reason: string | null) => string;
      assertion?: (digest: string) => string | null;
      deviceToken?: (forceRefresh: boolean, count: number) => Promise<{ deviceToken: string; expiresAtMs: number; deviceId: string }>;
    } = {}): { native: TollgateNativeModule; calls: Array<[string, unknown]> } {
      const calls: Array<[string, unknown]> = [];
      let tokens = 0;
      const native: TollgateNativeModule = {
        async getConfiguration() {
          calls.push(['getConfiguration', null]);
          return { gatewayUrl: BASE };
        },
        async configure(options) {
          calls.push(['configure', options]);
          return null;
        },
        async deviceToken(options) {
          calls.push(['deviceToken', options]);
          tokens += 1;
          if (script.deviceToken) return script.deviceToken(options.forceRefresh, tokens);
          return { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600, n: tokens }), expiresAtMs: Date.now() + 3_600_000, deviceId: 'native-device' };
        },
        async reportError(options) {
          calls.push(['reportError', options]);
          return { action: script.reportAction ? script.reportAction(options.reason) : 'none' };
        },
        async assertion(options) {
          calls.push(['assertion', options]);
          return { assertion: script.assertion ? script.assertion(options.digest) : null };
        },
        async clear() {
          calls.push(['clear', null]);
          return null;
        },
      };
      return { native, calls };
    }

    const refusal = (reason: string) =>
      json(403, { error: { type: 'attestationFailed', reason, message: reason, requestId: 'r1' } }, { 'tollgate-error': 'attestationFailed' });

    it('gets device tokens from the native module (configure once, no attestation in JS); assertion_required switches Tollgate-Assertion on', async () => {
      const sent: Sent[] = [];
      const { native, calls } = scriptedNative({ reportAction: (reason) => (reason === 'assertion_required' ? 'assert' : 'none'), assertion: (digest) => `sig-${digest.slice(0, 8)}` });
      let proxyCalls = 0;
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        gatewayUrl: BASE,
        nativeModule: native,
        development: { token: 'dt_dev' },
        isDevelopmentBuild: true,
        warmUp: false,
        fetch: async (url: string, init: Sent) => {
          sent.push({ ...init, url });
          proxyCalls += 1;
          return proxyCalls === 1 ? refusal('assertion_required') : json(200, { ok: true });
        },
      });
      expect(client.attestationKind).to.equal('native');
      expect(await client.request({ endpoint: 'openai/v1/chat/completions', body: { a: 1 } })).to.deep.equal({ ok: true });
      expect(await client.request({ endpoint: 'openai/v1/chat/completions', body: { a: 1 } })).to.deep.equal({ ok: true });
      expect(sent.map((call) => call.url), 'nothing but proxy calls from JS').to.deep.equal(Array(3).fill(`${BASE}/v1/proxy/openai/v1/chat/completions`));
      expect(calls[0]).to.deep.equal(['configure', { appToken: APP_TOKEN, gatewayUrl: BASE, developmentToken: 'dt_dev' }]);
      expect(calls.filter(([name]) => name === 'configure')).to.have.length(1);
      expect(calls.filter(([name]) => name === 'deviceToken'), 'the token is cached in JS').to.have.length(1);
      expect(calls.find(([name]) => name === 'reportError')![1]).to.deep.equal({ deviceToken: sent[0]!.headers['Tollgate-Device-Token'], reason: 'assertion_required' });
      expect(sent[0]!.headers['Tollgate-Assertion'], 'no assertion before the gateway asks').to.equal(undefined);
      expect(client.sendsAssertions).to.equal(true);
      for (const proxy of sent.slice(1)) {
        const time = proxy.headers['Tollgate-Request-Time']!;
        const bodyHash = createHash('sha256').update('{"a":1}').digest('hex');
        const digest = createHash('sha256').update(`POST\n/v1/proxy/openai/v1/chat/completions\n${time}\n${bodyHash}`).digest();
        expect(proxy.headers['Tollgate-Assertion']).to.equal(`sig-${digest.toString('base64').slice(0, 8)}`);
      }
      const digests = calls.filter(([name]) => name === 'assertion').map(([, options]) => (options as { digest: string }).digest);
      expect(digests).to.have.length(2);
      for (const digest of digests) expect(Buffer.from(digest, 'base64')).to.have.length(32);
    });

    it('clear() forgets the token in memory and in the native module; the next call asks for one again', async () => {
      const { native, calls } = scriptedNative();
      const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: native, warmUp: false, fetch: async () => json(200, {}) });
      await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
      await client.clear();
      await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
      expect(calls.map(([name]) => name)).to.deep.equal(['configure', 'deviceToken', 'clear', 'deviceToken']);
    });

    it('passes no development token to the native module in a release build', async () => {
      const { native, calls } = scriptedNative();
      const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: native, development: { token: 'dt_dev' }, isDevelopmentBuild: false, warmUp: false, fetch: async () => json(200, {}) });
      await client.ready();
      expect(calls).to.deep.equal([['configure', { appToken: APP_TOKEN, gatewayUrl: BASE, developmentToken: null }]]);
    });

    it('reports a native rejection with its code as the kind and userInfo.reason as the reason', async () => {
      const { native } = scriptedNative({
        deviceToken: async () => {
          throw Object.assign(new Error('App Attest is not supported on this device'), { code: 'attestationFailed', userInfo: { reason: 'app_attest_unsupported' } });
        },
      });
      const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: native, warmUp: false, fetch: async () => json(200, {}) });
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect(error.kind).to.equal('attestationFailed');
      expect(error.reason).to.equal('app_attest_unsupported');
      const offline = scriptedNative({
        deviceToken: async () => {
          throw Object.assign(new Error('offline'), { code: 'networkError', userInfo: { reason: 'unreachable' } });
        },
      });
      const second = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: offline.native, warmUp: false, fetch: async () => json(200, {}) });
      const error2 = await rejection(second.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([error2.kind, error2.reason]).to.deep.equal(['networkError', 'unreachable']);
    });

    for (const [reason, action] of [['device_token_expired', 'refresh'], ['device_key_unknown', 'attest']] as const) {
      it(`on ${reason} the native module answers ${action}: a forced refresh and one resend`, async () => {
        const { native, calls } = scriptedNative({ reportAction: () => action });
        let proxyCalls = 0;
        const client = createTollgateClient({
          appToken: APP_TOKEN,
          gatewayUrl: BASE,
          nativeModule: native,
          warmUp: false,
          fetch: async (_url: string, init: Sent) => {
            proxyCalls += 1;
            return proxyCalls === 1 ? refusal(reason) : json(200, { token: init.headers['Tollgate-Device-Token'] });
          },
        });
        const answer = (await client.request({ endpoint: 'openai/v1/models', method: 'GET' })) as { token: string };
        expect(calls.filter(([name]) => name === 'deviceToken').map(([, options]) => options)).to.deep.equal([{ forceRefresh: false }, { forceRefresh: true }]);
        expect(JSON.parse(Buffer.from(answer.token.split('.')[1]!, 'base64url').toString()).n).to.equal(2);
        expect(proxyCalls).to.equal(2);
      });
    }

    it('on stop (device_revoked) surfaces attestationFailed and never asks the native module for a token again', async () => {
      const { native, calls } = scriptedNative({ reportAction: (reason) => (reason === 'device_revoked' ? 'stop' : 'none') });
      let proxyCalls = 0;
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        gatewayUrl: BASE,
        nativeModule: native,
        warmUp: false,
        fetch: async () => {
          proxyCalls += 1;
          return refusal('device_revoked');
        },
      });
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([error.kind, error.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
      const again = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([again.kind, again.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
      expect(proxyCalls, 'nothing sent after the revocation').to.equal(1);
      expect(calls.filter(([name]) => name === 'deviceToken')).to.have.length(1);
      expect(client.deviceTokens.isStopped).to.equal(true);
    });

    it('surfaces an unrelated 403 (request_time_skew) without refreshing or resending', async () => {
      const { native, calls } = scriptedNative({ reportAction: () => 'none' });
      let proxyCalls = 0;
      const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: native, warmUp: false, fetch: async () => (proxyCalls++, refusal('request_time_skew')) });
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect(error.reason).to.equal('request_time_skew');
      expect(proxyCalls).to.equal(1);
      expect(calls.filter(([name]) => name === 'deviceToken')).to.have.length(1);
      expect(client.sendsAssertions).to.equal(false);
    });

    it('refuses a redirect the fetch followed by itself (React Native ignores redirect: manual), reading nothing', async () => {
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        gatewayUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        nativeModule: null,
        warmUp: false,
        fetch: async (url: string) => {
          if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) });
          const response = json(200, { stolen: true });
          Object.defineProperty(response, 'url', { value: 'https://elsewhere.example.net/v1/proxy/openai/v1/models' });
          return response;
        },
      });
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([error.kind, error.reason]).to.deep.equal(['invalidRequest', 'redirect_refused']);
      const flagged = createTollgateClient({
        appToken: APP_TOKEN,
        gatewayUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        nativeModule: null,
        warmUp: false,
        fetch: async () => {
          const response = json(200, { deviceToken: 'x.y.z' });
          Object.defineProperty(response, 'redirected', { value: true });
          return response;
        },
      });
      const attestError = await rejection(flagged.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([attestError.kind, attestError.reason]).to.deep.equal(['invalidRequest', 'redirect_refused']);
    });

    it('fails with native_module_missing when neither the native module nor development attestation is there', async () => {
      const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: BASE, nativeModule: null, warmUp: false, fetch: async () => json(200, {}) });
      expect(client.attestationKind).to.equal('none');
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect([error.kind, error.reason]).to.deep.equal(['attestationFailed', 'native_module_missing']);
    });

    it('attests again once when the gateway refuses the device token, then resends', async () => {
      let attestations = 0;
      let proxyCalls = 0;
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        baseUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        warmUp: false,
        fetch: async (url: string, init: Sent) => {
          if (url.includes('/v1/attest/')) {
            attestations += 1;
            return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600, n: attestations }) });
          }
          proxyCalls += 1;
          if (proxyCalls === 1) {
            return json(403, { error: { type: 'attestationFailed', message: 'The device token has expired.', requestId: 'r1' } }, { 'tollgate-error': 'attestationFailed' });
          }
          return json(200, { token: init.headers['Tollgate-Device-Token'] });
        },
      });
      const answer = (await client.request({ endpoint: 'openai/v1/models', method: 'GET' })) as { token: string };
      expect(attestations).to.equal(2);
      expect(proxyCalls).to.equal(2);
      expect(jwsExpiryMs(answer.token)).to.be.a('number');
      expect(JSON.parse(Buffer.from(answer.token.split('.')[1]!, 'base64url').toString()).n).to.equal(2);
    });

    it('decodes JSON, text and bytes by Content-Type, or as asked', async () => {
      const replies: Record<string, Response> = {};
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        baseUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        warmUp: false,
        fetch: async (url: string) => {
          if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) });
          const key = url.split('/').pop()!;
          return replies[key]!;
        },
      });
      const call = (path: string, reply: Response, format?: 'json' | 'text' | 'bytes') => {
        replies[path] = reply;
        return client.request({ endpoint: `openai/v1/${path}`, method: 'GET', ...(format ? { format } : {}) });
      };
      expect(await call('a', new Response('{"x":1}', { headers: { 'content-type': 'application/json; charset=utf-8' } }))).to.deep.equal({ x: 1 });
      expect(await call('b', new Response('hello', { headers: { 'content-type': 'text/plain' } }))).to.equal('hello');
      const bytes = await call('c', new Response(Uint8Array.of(1, 2, 3), { headers: { 'content-type': 'audio/mpeg' } }));
      expect(bytes).to.be.instanceOf(Uint8Array);
      expect(Array.from(bytes as Uint8Array)).to.deep.equal([1, 2, 3]);
      expect(await call('d', new Response('{"x":1}', { headers: { 'content-type': 'text/plain' } }), 'json')).to.deep.equal({ x: 1 });
      expect(await call('e', new Response(null, { status: 204, headers: { 'content-type': 'application/json' } }))).to.equal(null);
      const malformed = await rejection(call('f', new Response('{oops', { headers: { 'content-type': 'application/json' } })));
      expect(malformed.kind).to.equal('networkError');
      expect(malformed.reason).to.equal('malformed_response');
    });

    it('parses a stream from a fetch without streaming bodies (React Native built-in fetch)', async () => {
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        baseUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        warmUp: false,
        bufferedStreams: true,
        // Shaped like whatwg-fetch in React Native: no `body`, only arrayBuffer/text.
        fetch: async (url: string) => {
          const real = url.includes('/v1/attest/')
            ? json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) })
            : new Response('{"a":1}\n{"b":2}\n', { headers: { 'content-type': 'application/x-ndjson' } });
          return { status: real.status, headers: real.headers, body: null, arrayBuffer: () => real.arrayBuffer(), text: () => real.text() };
        },
      });
      const events: StreamEvent[] = [];
      for await (const event of client.stream({ endpoint: 'cohere/v2/chat', body: { stream: true } })) events.push(event);
      expect(events).to.deep.equal([
        { type: 'json', json: { a: 1 } },
        { type: 'json', json: { b: 2 } },
      ]);
      // Without Symbol.asyncIterator (older Hermes): Babel's for-await helper finds '@@asyncIterator'; next() and forEach work.
      const stream = client.stream({ endpoint: 'cohere/v2/chat', body: { stream: true } });
      expect(stream['@@asyncIterator']()).to.equal(stream);
      const first = await stream.next();
      expect(first).to.deep.equal({ done: false, value: { type: 'json', json: { a: 1 } } });
      const viaForEach: StreamEvent[] = [];
      await client.stream({ endpoint: 'cohere/v2/chat', body: { stream: true } }).forEach((event) => void viaForEach.push(event));
      expect(viaForEach).to.deep.equal(events);
    });

    it('asks react-native-fetch-api for text streaming on stream calls only', async () => {
      const inits: Array<Record<string, unknown>> = [];
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        gatewayUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        nativeModule: null,
        warmUp: false,
        fetch: async (url: string, init: Record<string, unknown>) => {
          if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) });
          inits.push(init);
          return new Response('data: x\n\n', { headers: { 'content-type': 'text/event-stream' } });
        },
      });
      await client.stream({ endpoint: 'openai/v1/chat/completions', body: {} }).forEach(() => undefined);
      await client.send({ endpoint: 'openai/v1/chat/completions', body: {} });
      expect(inits.map((init) => init.reactNative)).to.deep.equal([{ textStreaming: true }, undefined]);
      expect(inits.map((init) => init.redirect)).to.deep.equal(['manual', 'manual']);
    });

    it('refuses bad options and GET bodies as invalidRequest', async () => {
      const make = (extra: Record<string, unknown>) => () =>
        createTollgateClient({ appToken: APP_TOKEN, baseUrl: BASE, warmUp: false, fetch: async () => json(200, {}), ...extra });
      expect(make({ baseUrl: 'ftp://x' })).to.throw(TollgateError);
      expect(make({ appToken: '' })).to.throw(TollgateError);
      expect(make({ development: { token: 'dt_x', deviceId: 'bad id!' }, isDevelopmentBuild: true })).to.throw(TollgateError);
      expect(make({ retry: { maxRetries: -1 } })).to.throw(TollgateError);
      const client = make({ development: { token: 'dt_x', deviceId: 'sim-1' }, isDevelopmentBuild: true })();
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET', body: { a: 1 } }));
      expect(error.kind).to.equal('invalidRequest');
    });

    it('fails at once when Retry-After is unknown and the budget has no room for the backoff', async () => {
      let calls = 0;
      const client = createTollgateClient({
        appToken: APP_TOKEN,
        baseUrl: BASE,
        development: { token: 'dt_x', deviceId: 'sim-1' },
        isDevelopmentBuild: true,
        warmUp: false,
        retry: { maxRetries: 5, maxWaitSeconds: 0.5 },
        fetch: async (url: string) => {
          if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) });
          calls += 1;
          return json(429, { error: { type: 'rateLimited', message: 'Slow down.', requestId: 'r' } }, { 'tollgate-error': 'rateLimited' });
        },
      });
      const error = await rejection(client.request({ endpoint: 'openai/v1/models', method: 'GET' }));
      expect(error.kind).to.equal('rateLimited');
      expect(error.retryAfter).to.equal(undefined);
      expect(calls).to.equal(1);
    });
  });

  describe('package', () => {
    const PACKAGE = path.resolve(__dirname, '..', '..', '..', 'sdk', 'react-native');

    it('type-checks on its own (its tsconfig, no react-native installed), TurboModule spec included', function () {
      this.timeout(120_000);
      const tsc = path.resolve(PACKAGE, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');
      const result = spawnSync(process.execPath, [tsc, '-p', path.join(PACKAGE, 'tsconfig.json'), '--noEmit'], { encoding: 'utf8' });
      expect(result.status, `${result.stdout}${result.stderr}`).to.equal(0);
    });

    it('declares the TurboModule spec and codegen as React Native expects, with the methods the core calls', () => {
      const manifest = JSON.parse(readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')) as {
        codegenConfig?: { name?: string; type?: string; jsSrcsDir?: string };
        files?: string[];
      };
      expect(manifest.codegenConfig).to.deep.include({ name: 'TollgateNativeSpec', type: 'modules', jsSrcsDir: 'src' });
      expect(manifest.files).to.include.members(['ios', 'android', '*.podspec', 'src', 'lib']);
      const spec = readFileSync(path.join(PACKAGE, 'src', 'NativeTollgate.ts'), 'utf8');
      expect(spec).to.match(/export interface Spec extends TurboModule \{/);
      expect(spec).to.contain("TurboModuleRegistry.get<Spec>('TollgateNative')");
      const declared = [...spec.matchAll(/^  (\w+)\(/gm)].map((match) => match[1]).sort();
      expect(declared).to.deep.equal(['assertion', 'clear', 'configure', 'deviceToken', 'getConfiguration', 'httpCancel', 'httpRead', 'httpStart', 'reportError']);
      const caller = readFileSync(path.join(PACKAGE, 'src', 'native.ts'), 'utf8') + readFileSync(path.join(PACKAGE, 'src', 'native-transport.ts'), 'utf8');
      for (const name of declared) expect(caller, name).to.match(new RegExp(`\\b${name}\\(`));
    });

    it('the native modules implement exactly the spec\'s methods: Android @ReactMethod, the iOS bridge declarations and their Swift selectors', () => {
      const spec = readFileSync(path.join(PACKAGE, 'src', 'NativeTollgate.ts'), 'utf8');
      const declared = [...spec.matchAll(/^  (\w+)\(/gm)].map((match) => match[1]!).sort();
      // Each spec method takes its options object (or nothing) and returns a promise: one argument more natively.
      const argumentsOf = new Map([...spec.matchAll(/^  (\w+)\(([^)]*)\)/gm)].map((match) => [match[1]!, match[2]!.trim() === '' ? 0 : 1]));
      const kotlin = readFileSync(path.join(PACKAGE, 'android', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'reactnative', 'TollgateNativeModule.kt'), 'utf8');
      const android = [...kotlin.matchAll(/@ReactMethod\s+public fun (\w+)\(([^)]*)\)/g)];
      expect(android.map((match) => match[1]).sort(), 'Android @ReactMethod').to.deep.equal(declared);
      for (const [, name, parameters] of android) {
        const types = parameters!.split(',').map((parameter) => parameter.split(':')[1]!.trim());
        expect(types, name).to.deep.equal([...(argumentsOf.get(name!) ? ['ReadableMap'] : []), 'Promise']);
      }
      expect(kotlin).to.match(/const val NAME: String = "TollgateNative"/);
      const bridge = readFileSync(path.join(PACKAGE, 'ios', 'TollgateNative.mm'), 'utf8');
      expect(bridge).to.contain('RCT_EXTERN_MODULE(TollgateNative, NSObject)');
      const selectors = [...bridge.matchAll(/RCT_EXTERN_METHOD\((\w+):([^)]*\)\w+)((?:\s+\w+:\([^)]*\)\w+)*)\)/g)].map((match) => {
        const rest = [...match[3]!.matchAll(/(\w+):/g)].map((part) => `${part[1]}:`);
        return `${match[1]}:${rest.join('')}`;
      });
      expect(selectors.map((selector) => selector.split(':')[0]).sort(), 'iOS bridge declarations').to.deep.equal(declared);
      for (const selector of selectors) {
        const name = selector.split(':')[0]!;
        expect(selector, name).to.equal(argumentsOf.get(name) ? `${name}:resolver:rejecter:` : `${name}:rejecter:`);
      }
      const swift = readFileSync(path.join(PACKAGE, 'ios', 'TollgateNative.swift'), 'utf8');
      expect(swift).to.match(/@objc\(TollgateNative\)\s+final class TollgateNative: NSObject/);
      const exported = [...swift.matchAll(/@objc\((\w+:[\w:]*)\)/g)].map((match) => match[1]!).sort();
      expect(exported, 'Swift selectors').to.deep.equal([...selectors].sort());
    });
  });
});
