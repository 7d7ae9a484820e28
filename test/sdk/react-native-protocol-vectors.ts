/**
 * Runners for the realtime, user-token and /v1/me conformance vectors (sdk/conformance/README.md, last four sections),
 * used by react-native-conformance.test.ts. Each vector is asserted on the SDK's pure function and, where the rule is
 * about what crosses the wire, through a client whose fetch records what was sent.
 */
import { expect } from 'chai';
import {
  buildUpgrade,
  closeError,
  createTollgateClient,
  readClose,
  RequestBuilder,
  TollgateError,
  type TollgateClient,
} from '../../sdk/react-native/src';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function field<T extends Json>(object: JsonObject, name: string, where: string): T {
  if (!(name in object)) throw new Error(`${where}: missing field "${name}"`);
  return object[name] as T;
}

const lowerKeys = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

/** A development-attested client on a fake gateway: attestation answers a device token, every other call `respond`. */
function recordingClient(nowMs: number, respond: (url: string, headers: Record<string, string>) => Response): { client: TollgateClient; sent: Array<Record<string, string>> } {
  const sent: Array<Record<string, string>> = [];
  const client = createTollgateClient({
    appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
    gatewayUrl: 'https://gateway.example.com',
    development: { token: 'dt_conformance', deviceId: 'conformance-device' },
    isDevelopmentBuild: true,
    warmUp: false,
    clock: () => nowMs,
    fetch: async (url: string, init: { headers: Record<string, string> }) => {
      if (url.includes('/v1/attest/')) {
        return new Response(JSON.stringify({ deviceToken: 'e30.e30.c2ln', expiresIn: 3600 }), { status: 200, headers: { 'content-type': 'application/json' } });
      }
      sent.push(init.headers);
      return respond(url, init.headers);
    },
  });
  return { client, sent };
}

function gatewayError(status: number, type: string, reason: string | null): Response {
  const body = { error: { type, ...(reason === null ? {} : { reason }), message: 'refused', requestId: 'req_1' } };
  return new Response(JSON.stringify(body), { status, headers: { 'tollgate-error': type, 'content-type': 'application/json' } });
}

export function realtimeCloseTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject | null>(vector, 'expected', where);
    const reading = readClose(field<number>(input, 'code', where), field<string>(input, 'reason', where));
    if (expected === null) {
      expect(reading, 'a normal end').to.equal(null);
      return;
    }
    expect(reading).to.not.equal(null);
    for (const name of ['kind', 'errorType', 'closeCode', 'reason', 'message', 'action', 'mayReconnect', 'newKey']) {
      expect((reading as unknown as Record<string, unknown>)[name], name).to.deep.equal(field(expected, name, where));
    }
    const error = closeError(reading!);
    expect(error).to.be.instanceOf(TollgateError);
    expect([error.kind, error.reason ?? null, error.closeCode, error.mayReconnect]).to.deep.equal([expected.kind, expected.reason, expected.closeCode, expected.mayReconnect]);
  };
}

export function subprotocolTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    const appToken = field<string>(input, 'appToken', where);
    const run = () =>
      buildUpgrade(new RequestBuilder(field<string>(input, 'baseUrl', where), appToken, field<string>(input, 'sdk', where)), appToken, {
        endpoint: field<string>(input, 'endpoint', where),
        mode: field<'headers' | 'subprotocols'>(input, 'mode', where),
        deviceToken: field<string>(input, 'deviceToken', where),
        userToken: typeof input.userToken === 'string' ? input.userToken : null,
        requestTimeMs: field<number>(input, 'requestTimeMs', where),
        protocols: field<string[]>(input, 'providerProtocols', where),
      });
    if ('error' in expected) {
      let thrown: unknown;
      try {
        run();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).to.be.instanceOf(TollgateError);
      expect((thrown as TollgateError).kind).to.equal(expected.error);
      return;
    }
    const built = run();
    expect(built.url).to.equal(field(expected, 'url', where));
    expect(built.pathWithQuery).to.equal(field(expected, 'pathWithQuery', where));
    expect(lowerKeys({ ...built.headers })).to.deep.equal(lowerKeys(field<Record<string, string>>(expected, 'headers', where)));
    expect([...built.protocols]).to.deep.equal(field(expected, 'protocols', where));
    expect(built.protocols.length ? built.protocols.join(', ') : null).to.equal(field(expected, 'secWebSocketProtocol', where));
    if ('digest' in expected) {
      expect(built.canonicalRequest).to.equal(expected.canonicalRequest);
      expect(built.digest).to.equal(expected.digest);
    }
  };
}

export function userTokenTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    const answers = [...field<JsonObject[]>(input, 'answers', where)];
    const results = field<Json[] | null>(input, 'callbackResults', where);
    const { client, sent } = recordingClient(field<number>(input, 'nowMs', where), () => {
      const answer = answers.shift();
      if (!answer) throw new Error(`${where}: more requests than answers`);
      const status = field<number>(answer, 'status', where);
      if (status === 200) return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
      return gatewayError(status, field<string>(answer, 'errorType', where), (answer.reason ?? null) as string | null);
    });
    const forced: boolean[] = [];
    if (results !== null) {
      const queue = [...results];
      client.setUserTokenProvider(({ forceRefresh }) => {
        forced.push(forceRefresh);
        const next = queue.shift();
        if (next === undefined) throw new Error(`${where}: the callback was called more often than the vector allows`);
        if (next !== null && typeof next === 'object' && !Array.isArray(next) && 'throws' in next) throw new Error(String(next.throws));
        return next as string | null;
      });
    }
    if (typeof input.cached === 'string') client.userTokens.prime(input.cached);
    let outcome: TollgateError | null = null;
    const requests = field<number>(input, 'requests', where);
    for (let index = 0; index < requests; index += 1) {
      try {
        await client.request({ endpoint: 'openai/v1/chat/completions', body: {} });
      } catch (error) {
        expect(error).to.be.instanceOf(TollgateError);
        outcome = error as TollgateError;
        break;
      }
    }
    expect(forced.length, 'callback calls').to.equal(field(expected, 'callbackCalls', where));
    expect(forced, 'forced').to.deep.equal(field(expected, 'callbackForced', where));
    expect(sent.map((headers) => headers['Tollgate-User-Token'] ?? null), 'Tollgate-User-Token sent').to.deep.equal(field(expected, 'sentUserTokens', where));
    const want = field<JsonObject | null>(expected, 'outcome', where);
    expect(outcome === null ? null : { kind: outcome.kind, reason: outcome.reason ?? null }).to.deep.equal(want);
    // No user-token answer ever touched the device token (one attestation for the whole run).
    expect(client.deviceTokens.attestationCount, 'device attestations').to.equal(1);
  };
}

export function meTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    const status = field<number>(input, 'status', where);
    const body = field<string>(input, 'body', where);
    const urls: string[] = [];
    const { client, sent } = recordingClient(1764000000000, (url) => {
      urls.push(url);
      if (status === 200) return new Response(body, { status, headers: { 'content-type': 'application/json' } });
      const type = (JSON.parse(body) as { error: { type: string } }).error.type;
      return new Response(body, { status, headers: { 'tollgate-error': type, 'content-type': 'application/json' } });
    });
    let result: Awaited<ReturnType<TollgateClient['me']>> | null = null;
    let failure: TollgateError | null = null;
    try {
      result = await client.me();
    } catch (error) {
      expect(error).to.be.instanceOf(TollgateError);
      failure = error as TollgateError;
    }
    expect(urls).to.deep.equal(['https://gateway.example.com/v1/me']);
    expect(Object.keys(sent[0]!).sort()).to.deep.equal(['Tollgate-App-Token', 'Tollgate-Device-Token', 'Tollgate-Request-Time', 'Tollgate-SDK']);
    if ('error' in expected) {
      expect(failure, 'fails').to.not.equal(null);
      expect(failure!.kind).to.equal(expected.error);
      if ('reason' in expected) expect(failure!.reason).to.equal(expected.reason);
      return;
    }
    expect(failure, failure?.message).to.equal(null);
    expect({ deviceId: result!.deviceId, userId: result!.userId, signedIn: result!.signedIn, limits: result!.limits }).to.deep.equal(expected);
  };
}
