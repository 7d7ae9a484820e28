/**
 * The React Native SDK against the shared conformance vectors (sdk/conformance/*.json, format in its README): every
 * vector of every file, one test each. Each vector is asserted on the SDK's pure function (RequestBuilder, mapError,
 * the stream parsers) and again through the client with a fake fetch, so that what the client sends and reports agrees
 * with the vector too. Stream vectors run fed in the given chunks, as one chunk, and byte by byte.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import {
  buildAttestationRequest,
  createStreamParser,
  createTollgateClient,
  DeviceTokenCache,
  encodeAssertion,
  formatForContentType,
  mapError,
  parseAttestationResponse,
  reasonAction,
  refreshDue,
  retryDecision,
  Tollgate,
  tokenExpiryMs,
  type AttestationMethod,
  type TollgateNativeModule,
  MalformedStreamError,
  prepareBody,
  RequestBuilder,
  SDK_HEADER,
  STREAM_FORMATS,
  TollgateError,
  type StreamEvent,
  type StreamFormat,
  type TollgateClient,
} from '../../sdk/react-native/src';

import { meTest, realtimeCloseTest, subprotocolTest, userTokenTest } from './react-native-protocol-vectors';

const KNOWN_VERSION = 1;

/** The repository root: the first directory above this file (or the working directory) holding sdk/conformance. */
function repositoryRoot(): string {
  for (const start of [__dirname, process.cwd()]) {
    let directory = start;
    for (;;) {
      if (fs.existsSync(path.join(directory, 'sdk', 'conformance', 'README.md'))) return directory;
      const parent = path.dirname(directory);
      if (parent === directory) break;
      directory = parent;
    }
  }
  throw new Error(`sdk/conformance not found above ${__dirname} or ${process.cwd()}`);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function field<T extends Json>(object: JsonObject, name: string, where: string): T {
  if (!(name in object)) throw new Error(`${where}: missing field "${name}"`);
  return object[name] as T;
}

/** `{"text"}` or `{"base64"}` → bytes. */
function bytesOf(value: Json, where: string): Uint8Array {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${where}: bytes must be an object`);
  if (typeof value.text === 'string') return new Uint8Array(Buffer.from(value.text, 'utf8'));
  if (typeof value.base64 === 'string') return new Uint8Array(Buffer.from(value.base64, 'base64'));
  throw new Error(`${where}: bytes need "text" or "base64"`);
}

const concat = (chunks: readonly Uint8Array[]) => new Uint8Array(Buffer.concat(chunks.map((chunk) => Buffer.from(chunk))));

interface RecordedFetch {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** A string for text and JSON bodies (fetch encodes it as UTF-8), bytes otherwise. */
  body: Uint8Array | string | undefined;
}

/**
 * A client whose fetch answers attestation with `deviceToken` and every proxy call with `respond`. `calls` records
 * the proxy calls.
 */
function fakeClient(options: {
  baseUrl: string;
  appToken: string;
  deviceToken?: string;
  clock: number;
  respond?: (call: RecordedFetch) => Response | Promise<Response>;
}): { client: TollgateClient; calls: RecordedFetch[] } {
  const calls: RecordedFetch[] = [];
  const client = createTollgateClient({
    appToken: options.appToken,
    baseUrl: options.baseUrl,
    development: { token: 'dt_conformance', deviceId: 'conformance-device' },
    isDevelopmentBuild: true,
    warmUp: false,
    clock: () => options.clock,
    fetch: async (url: string, init: { method: string; headers: Record<string, string>; body?: Uint8Array | string }) => {
      if (url.includes('/v1/attest/')) {
        return new Response(
          JSON.stringify({ deviceToken: options.deviceToken ?? 'e30.e30.c2ln', expiresAt: new Date(options.clock + 3_600_000).toISOString() }),
          { status: 200, headers: { 'content-type': 'application/json' } },
        );
      }
      const call = { url, method: init.method, headers: init.headers, body: init.body };
      calls.push(call);
      if (!options.respond) throw new Error('no proxy call expected');
      return options.respond(call);
    },
  });
  return { client, calls };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

// ---------------------------------------------------------------------------------------------------------------------

function requestBuildingTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    const baseUrl = field<string>(input, 'baseUrl', where);
    const endpoint = field<string>(input, 'endpoint', where);
    const method = field<string>(input, 'method', where);
    const appToken = field<string>(input, 'appToken', where);
    const deviceToken = field<string>(input, 'deviceToken', where);
    const requestTimeMs = field<number>(input, 'requestTimeMs', where);
    const sdk = field<string>(input, 'sdk', where);
    const query = input.query === undefined ? undefined : (input.query as Array<[string, string]>);
    const headers = input.headers === undefined ? undefined : (input.headers as Record<string, string>);
    // {"text"} is a string body (default application/json), {"base64"} bytes (default application/octet-stream).
    const rawBody = input.body === undefined ? undefined : (input.body as JsonObject);
    const body = rawBody === undefined ? undefined : typeof rawBody.text === 'string' ? rawBody.text : bytesOf(rawBody, where);
    const call = { method, endpoint, ...(query ? { query } : {}), ...(headers ? { headers } : {}) };

    const build = () => new RequestBuilder(baseUrl, appToken, sdk).build({ ...call, body: prepareBody(body) }, deviceToken, requestTimeMs);

    if ('error' in expected) {
      expect(expected.error, `${where}: expected.error`).to.equal('invalidRequest');
      let thrown: unknown;
      try {
        build();
      } catch (error) {
        thrown = error;
      }
      expect(thrown, 'the builder refuses').to.be.instanceOf(TollgateError);
      expect((thrown as TollgateError).kind).to.equal('invalidRequest');

      // Through the client: refused before anything is sent (no attestation, no proxy call).
      let sent = 0;
      let clientError: unknown;
      try {
        const client = createTollgateClient({
          appToken,
          baseUrl,
          development: { token: 'dt_x', deviceId: 'device-1' },
          isDevelopmentBuild: true,
          warmUp: false,
          fetch: async () => {
            sent += 1;
            throw new Error('nothing may be sent');
          },
        });
        clientError = await rejection(client.request({ ...call, ...(body !== undefined ? { body } : {}) }));
      } catch (error) {
        clientError = error;
      }
      expect(clientError).to.be.instanceOf(TollgateError);
      expect((clientError as TollgateError).kind).to.equal('invalidRequest');
      expect(sent, 'requests sent').to.equal(0);
      return;
    }

    const built = build();
    expect(built.method).to.equal(field(expected, 'method', where));
    expect(built.url).to.equal(field(expected, 'url', where));
    expect(built.pathWithQuery).to.equal(field(expected, 'pathWithQuery', where));
    const lower = (pairs: Iterable<readonly [string, string]>) => Object.fromEntries([...pairs].map(([name, value]) => [name.toLowerCase(), value]));
    const expectedHeaders = lower(Object.entries(field<Record<string, string>>(expected, 'headers', where)));
    expect(built.headers.length, 'no header twice').to.equal(new Set(built.headers.map(([name]) => name.toLowerCase())).size);
    expect(lower(built.headers)).to.deep.equal(expectedHeaders);
    expect(built.bodySha256).to.equal(field(expected, 'bodySha256', where));
    expect(built.canonicalRequest).to.equal(field(expected, 'canonicalRequest', where));
    expect(built.digest).to.equal(field(expected, 'digest', where));

    // Through the client: what reaches fetch is the same (with this SDK's own Tollgate-SDK value).
    const { client, calls } = fakeClient({
      baseUrl,
      appToken,
      deviceToken,
      clock: requestTimeMs,
      respond: () => new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }),
    });
    await client.request({ ...call, ...(body !== undefined ? { body } : {}) });
    expect(calls).to.have.length(1);
    const sent = calls[0]!;
    expect(sent.method).to.equal(expected.method);
    expect(sent.url).to.equal(expected.url);
    expect(lower(Object.entries(sent.headers))).to.deep.equal({ ...expectedHeaders, 'tollgate-sdk': SDK_HEADER });
    const sentBody = typeof sent.body === 'string' ? Buffer.from(sent.body, 'utf8') : Buffer.from(sent.body ?? new Uint8Array(0));
    expect(sentBody.equals(Buffer.from(built.body)), 'body bytes').to.equal(true);
  };
}

// ---------------------------------------------------------------------------------------------------------------------

function errorMappingTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject | null>(vector, 'expected', where);
    const status = field<number | null>(input, 'status', where);
    const headers = field<Array<[string, string]>>(input, 'headers', where);
    const body = field<string | null>(input, 'body', where);
    const nowMs = field<number>(input, 'nowMs', where);

    const check = (error: TollgateError | null) => {
      if (expected === null) {
        expect(error).to.equal(null);
        return;
      }
      expect(error).to.be.instanceOf(TollgateError);
      const actual = error!;
      expect(actual.kind).to.equal(field(expected, 'kind', where));
      if ('errorType' in expected) expect(actual.errorType).to.equal(expected.errorType);
      if ('message' in expected) expect(actual.message).to.equal(expected.message);
      if ('requestId' in expected) expect(actual.requestId).to.equal(expected.requestId);
      if ('retryAfterSeconds' in expected) expect(actual.retryAfter ?? null).to.equal(expected.retryAfterSeconds);
      if ('status' in expected) expect(actual.status).to.equal(expected.status);
      if ('body' in expected) expect(actual.body).to.equal(expected.body);
      if ('reason' in expected) expect(actual.reason ?? null, 'reason').to.equal(expected.reason);
      expect(actual.message, 'every error has a message').to.be.a('string').and.not.equal('');
    };

    check(mapError(status, headers, body === null ? null : new Uint8Array(Buffer.from(body, 'utf8')), nowMs));

    // Through the client: the same response (or no response) gives the same error.
    const { client } = fakeClient({
      baseUrl: 'https://gateway.example.com',
      appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
      clock: nowMs,
      respond: () => {
        if (status === null) throw new TypeError('fetch failed');
        const nullBody = status === 204 || status === 205 || status === 304 || body === null || body === '';
        return new Response(nullBody ? null : body, { status, headers });
      },
    });
    if (expected === null) {
      await client.send({ endpoint: 'openai/v1/chat/completions', body: {} });
    } else {
      const error = await rejection(client.request({ endpoint: 'openai/v1/chat/completions', body: {} }));
      check(error as TollgateError);
    }
  };
}

// ---------------------------------------------------------------------------------------------------------------------

interface StreamOutcome {
  events: StreamEvent[];
  error: string | null;
}

function parse(format: StreamFormat, chunks: readonly Uint8Array[], end: 'clean' | 'cut'): StreamOutcome {
  const parser = createStreamParser(format);
  const events: StreamEvent[] = [];
  try {
    for (const chunk of chunks) parser.feed(chunk, events);
    if (end === 'cut') return { events, error: 'networkError' };
    parser.finish(events);
    return { events, error: null };
  } catch (error) {
    if (!(error instanceof MalformedStreamError)) throw error;
    return { events, error: 'networkError' };
  }
}

/** The events in the vectors' shape: sse `{event, data, id?, retry?}`, json `{json}`. */
function comparable(events: readonly StreamEvent[]): unknown[] {
  return events.map((event) => {
    if (event.type === 'sse') {
      return { event: event.event, data: event.data, ...(event.id !== null ? { id: event.id } : {}), ...(event.retry !== null ? { retry: event.retry } : {}) };
    }
    if (event.type === 'json') return { json: event.json };
    throw new Error('unexpected bytes event');
  });
}

function checkOutcome(format: StreamFormat, outcome: StreamOutcome, expected: JsonObject, where: string, how: string): void {
  if (format === 'raw') {
    const bytes = concat(outcome.events.map((event) => (event.type === 'bytes' ? event.bytes : new Uint8Array(0))));
    expect(outcome.events.every((event) => event.type === 'bytes'), `${how}: raw events`).to.equal(true);
    expect(Buffer.from(bytes).toString('base64'), `${how}: bytes`).to.equal(field(expected, 'bytes', where));
  } else {
    expect(comparable(outcome.events), `${how}: events`).to.deep.equal(field(expected, 'events', where));
  }
  expect(outcome.error, `${how}: error`).to.equal(field(expected, 'error', where));
}

/** The same body through the client: a fake fetch whose body stream delivers `chunks`, then closes or errors (cut). */
async function throughClient(format: StreamFormat, chunks: readonly Uint8Array[], end: 'clean' | 'cut'): Promise<StreamOutcome> {
  const { client } = fakeClient({
    baseUrl: 'https://gateway.example.com',
    appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
    clock: Date.now(),
    respond: () => {
      let index = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (index < chunks.length) {
            controller.enqueue(chunks[index++]!);
          } else if (end === 'clean') {
            controller.close();
          } else {
            controller.error(new TypeError('terminated'));
          }
        },
      });
      return new Response(stream, { status: 200, headers: { 'content-type': 'application/octet-stream' } });
    },
  });
  const events: StreamEvent[] = [];
  try {
    for await (const event of client.stream({ endpoint: 'openai/v1/chat/completions', body: {}, format })) events.push(event);
    return { events, error: null };
  } catch (error) {
    expect(error).to.be.instanceOf(TollgateError);
    return { events, error: (error as TollgateError).kind };
  }
}

function streamParsingTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const format = field<string>(vector, 'format', where);
    if (!STREAM_FORMATS.includes(format as StreamFormat)) throw new Error(`${where}: unknown format "${format}"`);
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    const chunks = field<Json[]>(input, 'chunks', where).map((chunk, index) => bytesOf(chunk, `${where} chunk ${index}`));
    const end = field<string>(input, 'end', where);
    if (end !== 'clean' && end !== 'cut') throw new Error(`${where}: unknown end "${end}"`);
    const whole = concat(chunks);
    if (typeof input.base64 === 'string') expect(Buffer.from(whole).toString('base64'), 'chunks = base64').to.equal(input.base64);
    if (typeof input.text === 'string') expect(Buffer.from(whole).equals(Buffer.from(input.text, 'utf8')), 'chunks = text').to.equal(true);
    const oneByteEach = Array.from(whole, (byte) => Uint8Array.of(byte));

    const kind = format as StreamFormat;
    checkOutcome(kind, parse(kind, chunks, end), expected, where, 'given chunks');
    checkOutcome(kind, parse(kind, [whole], end), expected, where, 'one chunk');
    checkOutcome(kind, parse(kind, oneByteEach, end), expected, where, 'byte by byte');
    checkOutcome(kind, await throughClient(kind, chunks, end), expected, where, 'client, given chunks');
    checkOutcome(kind, await throughClient(kind, oneByteEach, end), expected, where, 'client, byte by byte');
  };
}

// ---------------------------------------------------------------------------------------------------------------------

const hex = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString('hex'));
const fromHexField = (value: string) => new Uint8Array(Buffer.from(value, 'hex'));

/** A TollgateNative module that answers like the native SDKs would, from the shared rules (for the client checks). */
function scriptedNative(gatewayUrl: string | null): { native: TollgateNativeModule; calls: Array<[string, unknown]> } {
  const calls: Array<[string, unknown]> = [];
  let tokens = 0;
  const native: TollgateNativeModule = {
    getConfiguration: async () => (calls.push(['getConfiguration', null]), { gatewayUrl }),
    configure: async (options) => (calls.push(['configure', options]), null),
    deviceToken: async (options) => {
      calls.push(['deviceToken', options]);
      tokens += 1;
      return { deviceToken: `e30.eyJuIjo${tokens}fQ.c2ln`, expiresAtMs: Date.now() + 3_600_000, deviceId: 'native-1' };
    },
    reportError: async (options) => (calls.push(['reportError', options]), { action: reasonAction('attestationFailed', options.reason).action }),
    assertion: async (options) => (calls.push(['assertion', options]), { assertion: 'c2ln' }),
    clear: async () => (calls.push(['clear', null]), null),
  };
  return { native, calls };
}

/** client-behaviour.json: dispatch on `rule`; an unknown rule fails. */
function clientBehaviourTest(vector: JsonObject, where: string): () => Promise<void> {
  return async () => {
    const rule = field<string>(vector, 'rule', where);
    const input = field<JsonObject>(vector, 'input', where);
    const expected = field<JsonObject>(vector, 'expected', where);
    switch (rule) {
      case 'assertion-encoding': {
        const bytes = fromHexField(field<string>(input, 'bytesHex', where));
        if ('error' in expected) {
          expect(() => encodeAssertion(bytes)).to.throw(TollgateError).with.property('kind', field<string>(expected, 'error', where));
        } else {
          expect(encodeAssertion(bytes)).to.equal(field(expected, 'header', where));
        }
        return;
      }
      case 'attestation-request': {
        const method = field<string>(input, 'method', where) as AttestationMethod;
        const appToken = field<string>(input, 'appToken', where);
        const fields = field<JsonObject>(input, 'fields', where);
        const built = buildAttestationRequest(method, appToken, fields);
        expect(built.method).to.equal(field(expected, 'method', where));
        expect(built.path).to.equal(field(expected, 'path', where));
        const lower = (pairs: ReadonlyArray<readonly [string, string]>) => Object.fromEntries(pairs.map(([name, value]) => [name.toLowerCase(), value]));
        const expectedHeaders = lower(field<Array<[string, string]>>(expected, 'headers', where));
        expect(lower(built.headers), 'exact headers').to.deep.equal(expectedHeaders);
        expect(built.body).to.deep.equal(field(expected, 'body', where));
        if ('clientDataHashHex' in expected) expect(hex(built.clientDataHash)).to.equal(expected.clientDataHashHex);
        if ('attestationChallengeHex' in expected) expect(hex(built.attestationChallenge)).to.equal(expected.attestationChallengeHex);
        if ('signedMessageHex' in expected) expect(hex(built.signedMessage)).to.equal(expected.signedMessageHex);
        if ('requestHash' in expected) expect(built.requestHash).to.equal(expected.requestHash);
        if ('nonce' in expected) expect(built.nonce).to.equal(expected.nonce);
        if (method === 'development') {
          // Through the client (pure-JS development session): exactly this request reaches fetch.
          const sent: RecordedFetch[] = [];
          const client = createTollgateClient({
            appToken,
            gatewayUrl: 'https://gateway.example.com',
            development: { token: String(fields.developmentToken), deviceId: String(fields.deviceId) },
            isDevelopmentBuild: true,
            nativeModule: null,
            warmUp: false,
            fetch: async (url: string, init: { method: string; headers: Record<string, string>; body?: Uint8Array }) => {
              sent.push({ url, method: init.method, headers: init.headers, body: init.body });
              return new Response(JSON.stringify({ deviceToken: 'e30.e30.c2ln', expiresAt: new Date(Date.now() + 3_600_000).toISOString() }), { status: 200 });
            },
          });
          await client.warmUp();
          expect(sent).to.have.length(1);
          expect(sent[0]!.url).to.equal(`https://gateway.example.com${String(expected.path)}`);
          expect(sent[0]!.method).to.equal(expected.method);
          expect(lower(Object.entries(sent[0]!.headers)), 'exact headers sent').to.deep.equal(expectedHeaders);
          expect(JSON.parse(Buffer.from(sent[0]!.body as Uint8Array).toString('utf8'))).to.deep.equal(expected.body);
        }
        return;
      }
      case 'attestation-response': {
        const status = field<number>(input, 'status', where);
        const body = field<string>(input, 'body', where);
        const receivedAtMs = field<number>(input, 'receivedAtMs', where);
        expect(status).to.equal(200);
        const outcome = (run: () => { token: string; deviceId?: string; expiresAtMs: number }) => {
          try {
            const issued = run();
            return { deviceToken: issued.token, deviceId: issued.deviceId, expiresAtMs: issued.expiresAtMs };
          } catch (error) {
            expect(error).to.be.instanceOf(TollgateError);
            return { error: (error as TollgateError).kind };
          }
        };
        expect(outcome(() => parseAttestationResponse(body, receivedAtMs))).to.deep.equal(expected);
        // Through the client: the development session caches exactly that, or nothing.
        const client = createTollgateClient({
          appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
          gatewayUrl: 'https://gateway.example.com',
          development: { token: 'dt_x', deviceId: 'sim-1' },
          isDevelopmentBuild: true,
          nativeModule: null,
          warmUp: false,
          clock: () => receivedAtMs,
          fetch: async () => new Response(body, { status }),
        });
        if ('error' in expected) {
          const error = (await rejection(client.warmUp())) as TollgateError;
          expect(error.kind).to.equal(expected.error);
          expect(client.deviceTokens.cached).to.equal(null);
        } else {
          // A token already due (or used once) is returned but not kept for reuse: compare what the session issued.
          await client.warmUp();
          const cached = client.deviceTokens.cached!;
          expect({ deviceToken: cached.token, deviceId: cached.deviceId, expiresAtMs: cached.expiresAtMs }).to.deep.equal(expected);
        }
        return;
      }
      case 'token-expiry': {
        const expiresAt = field<string | null>(input, 'expiresAt', where);
        expect(tokenExpiryMs(field<string>(input, 'deviceToken', where), expiresAt, field<number>(input, 'receivedAtMs', where))).to.equal(
          field(expected, 'expiresAtMs', where),
        );
        return;
      }
      case 'refresh-due': {
        const receivedAtMs = field<number>(input, 'receivedAtMs', where);
        const expiresAtMs = field<number>(input, 'expiresAtMs', where);
        const nowMs = field<number>(input, 'nowMs', where);
        const due = field<boolean>(expected, 'refresh', where);
        expect(refreshDue(receivedAtMs, expiresAtMs, nowMs)).to.equal(due);
        // Through the cache: a second token() asks the session again exactly when due.
        let now = receivedAtMs;
        let asked = 0;
        const cache = new DeviceTokenCache(async () => ({ token: `t${++asked}`, receivedAtMs, expiresAtMs }), () => now);
        await cache.token();
        now = nowMs;
        await cache.token();
        expect(asked - 1, 'asked again').to.equal(due ? 1 : 0);
        return;
      }
      case 'stream-format': {
        expect(formatForContentType(field<string | null>(input, 'contentType', where))).to.equal(field(expected, 'format', where));
        return;
      }
      case 'retry': {
        const options = field<JsonObject | null>(input, 'options', where);
        const decision = retryDecision(
          field<string>(input, 'errorKind', where),
          field<number | null>(input, 'retryAfterSeconds', where),
          field<number>(input, 'retriesDone', where),
          field<number>(input, 'waitedSeconds', where),
          options === null ? null : { maxRetries: field<number>(options, 'maxRetries', where), maxWaitSeconds: field<number>(options, 'maxWaitSeconds', where) },
        );
        expect(decision).to.deep.equal({ retry: field(expected, 'retry', where), delaySeconds: field(expected, 'delaySeconds', where) });
        return;
      }
      case 'not-initialized': {
        const state = field<string>(input, 'state', where);
        const callName = field<string>(input, 'call', where);
        let sent = 0;
        const fetch = async () => {
          sent += 1;
          throw new Error('nothing may be sent');
        };
        Tollgate.reset();
        try {
          if (state === 'no-gateway-url') {
            const { native } = scriptedNative(null);
            const failed = (await rejection(Tollgate.initialize({ appToken: 'at_0123456789abcdefghijABCDEFGHIJkl', nativeModule: native, fetch }))) as TollgateError;
            expect([failed.kind, failed.reason], 'initialize').to.deep.equal([expected.kind, expected.reason]);
          } else if (state !== 'not-initialized') {
            throw new Error(`${where}: unknown state "${state}"`);
          }
          let error: unknown;
          if (callName === 'request') {
            error = await rejection(Tollgate.request({ endpoint: 'openai/v1/chat/completions', body: {} }));
          } else if (callName === 'stream') {
            error = await rejection(Tollgate.stream({ endpoint: 'openai/v1/chat/completions', body: {} }).forEach(() => undefined));
          } else {
            throw new Error(`${where}: unknown call "${callName}"`);
          }
          expect(error).to.be.instanceOf(TollgateError);
          expect([(error as TollgateError).kind, (error as TollgateError).reason]).to.deep.equal([field(expected, 'kind', where), field(expected, 'reason', where)]);
          expect(sent, 'requests sent').to.equal(0);
        } finally {
          Tollgate.reset();
        }
        return;
      }
      case 'reason-action': {
        const status = field<number>(input, 'status', where);
        const errorType = field<string>(input, 'errorType', where);
        const reason = field<string | null>(input, 'reason', where);
        const rule = reasonAction(errorType, reason);
        expect(rule).to.deep.equal({ action: field(expected, 'action', where), retryOnce: field(expected, 'retryOnce', where), newKey: field(expected, 'newKey', where) });
        if ('during' in input) return; // A refresh answered this: the native module handles it inside deviceToken.
        // Through the client, with a native module answering reportError by the same rule: the client acts on it.
        const { native, calls } = scriptedNative('https://gateway.example.com');
        const proxy: RecordedFetch[] = [];
        const client = createTollgateClient({
          appToken: 'at_0123456789abcdefghijABCDEFGHIJkl',
          gatewayUrl: 'https://gateway.example.com',
          nativeModule: native,
          warmUp: false,
          fetch: async (url: string, init: { method: string; headers: Record<string, string> }) => {
            proxy.push({ url, method: init.method, headers: init.headers, body: undefined });
            if (proxy.length > 1) return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
            const error = { error: { type: errorType, ...(reason === null ? {} : { reason }), message: 'refused', requestId: 'req_1' } };
            return new Response(JSON.stringify(error), { status, headers: { 'tollgate-error': errorType, 'content-type': 'application/json' } });
          },
        });
        const outcome = await client.request({ endpoint: 'openai/v1/chat/completions', body: {} }).then(
          () => null,
          (error: unknown) => error as TollgateError,
        );
        expect(proxy.length, 'proxy calls').to.equal(rule.retryOnce ? 2 : 1);
        expect(outcome === null, 'the resend succeeded').to.equal(rule.retryOnce);
        expect(calls.some(([name]) => name === 'reportError'), 'reportError called').to.equal(status === 403 && errorType === 'attestationFailed');
        const forced = calls.filter(([name, options]) => name === 'deviceToken' && (options as { forceRefresh: boolean }).forceRefresh);
        expect(forced.length, 'forced refreshes').to.equal(rule.action === 'refresh' || rule.action === 'attest' ? 1 : 0);
        expect(client.sendsAssertions).to.equal(rule.action === 'assert');
        if (rule.action === 'assert') expect(proxy[1]!.headers['Tollgate-Assertion']).to.equal('c2ln');
        expect(client.deviceTokens.isStopped).to.equal(rule.action === 'stop');
        if (rule.action === 'stop') {
          const again = (await rejection(client.request({ endpoint: 'openai/v1/chat/completions', body: {} }))) as TollgateError;
          expect([again.kind, again.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
          expect(proxy.length, 'nothing sent after stop').to.equal(1);
          expect(calls.filter(([name]) => name === 'deviceToken').length, 'no token asked after stop').to.equal(1);
        }
        return;
      }
      default:
        throw new Error(`${where}: unknown rule "${rule}"`);
    }
  };
}

// ---------------------------------------------------------------------------------------------------------------------

const RUNNERS: Record<string, (vector: JsonObject, where: string) => () => Promise<void>> = {
  'request-building': requestBuildingTest,
  'error-mapping': errorMappingTest,
  'stream-parsing': streamParsingTest,
  'client-behaviour': clientBehaviourTest,
  'realtime-close-codes': realtimeCloseTest,
  subprotocols: subprotocolTest,
  'user-token': userTokenTest,
  me: meTest,
};

describe('react-native SDK: conformance vectors', () => {
  const directory = path.join(repositoryRoot(), 'sdk', 'conformance');
  const files = fs.readdirSync(directory).filter((name) => name.endsWith('.json')).sort();

  it('finds the eight vector files', () => {
    expect(files).to.include.members(['client-behaviour.json', 'error-mapping.json', 'request-building.json', 'stream-parsing.json', 'realtime-close-codes.json', 'subprotocols.json', 'user-token.json', 'me.json']);
  });

  for (const file of files) {
    describe(file, () => {
      let document: JsonObject;
      try {
        document = JSON.parse(fs.readFileSync(path.join(directory, file), 'utf8')) as JsonObject;
      } catch (error) {
        it('is valid JSON', () => {
          throw error;
        });
        return;
      }
      it(`has format version ${KNOWN_VERSION} and a known kind`, () => {
        expect(document.version, 'version').to.equal(KNOWN_VERSION);
        expect(Object.keys(RUNNERS), 'kind').to.include(document.kind);
      });
      const runner = RUNNERS[String(document.kind)];
      const vectors = Array.isArray(document.vectors) ? (document.vectors as JsonObject[]) : [];
      it('has vectors with unique names', () => {
        expect(vectors.length).to.be.greaterThan(0);
        expect(new Set(vectors.map((vector) => vector.name)).size).to.equal(vectors.length);
      });
      if (document.version !== KNOWN_VERSION || !runner) return;
      for (const vector of vectors) {
        const name = typeof vector.name === 'string' ? vector.name : '(unnamed)';
        it(name, runner(vector, `${file} ${name}`));
      }
    });
  }
});
