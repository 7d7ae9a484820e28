/**
 * Shared parts of the official-SDK suite: one real gateway (dist/test/support/gateway.js) per test file, one recording
 * fake upstream on loopback standing in for every provider the file drives, and the wire assertions every test makes.
 *
 * Each provider's base URL is overridden to the fake's origin plus the provider's own documented path prefix, so the
 * path the fake records is the path the provider's documentation gives.
 */
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';

const require = createRequire(import.meta.url);
const { TestGateway } = require('../../dist/test/support/gateway.js');
const fake = require('../../dist/test/support/fake-upstream.js');
/** Node's own fetch, kept before any test wraps the global one. */
const nativeFetch = globalThis.fetch;

export const { FakeUpstream, respondJson, respondChunks, sseEvents } = fake;

/** The key each SDK is built with. The gateway must strip it: it never reaches the provider. */
export const CLIENT_KEY = 'client-dummy-key-must-not-reach-upstream';

/** The operator's key for a provider, as stored in the gateway. */
export const serverKey = (slug) => `server-key-${slug}-0123456789abcdef`;

/**
 * Starts a fake upstream and a gateway whose providers point at it.
 * @param {Record<string, string>} prefixes provider slug -> the documented path prefix of its base URL ('' for none)
 * @param {{ tenants?: Record<string, string>, secrets?: Record<string, string> }} options per provider: the operator's
 *   per-tenant base URL on the secret, and a secret other than {@link serverKey} (a service-account key, AWS keys)
 */
export async function startSuite(prefixes, { tenants = {}, secrets = {} } = {}) {
  const upstream = await FakeUpstream.start();
  const upstreams = Object.fromEntries(Object.entries(prefixes).map(([slug, prefix]) => [slug, `${upstream.url}${prefix}`]));
  const gateway = await TestGateway.start({ upstreams, env: { TOLLGATE_SHUTDOWN_GRACE_MS: '200' } });
  // Per-tenant providers (Azure, Workers AI) need the operator's base URL on the secret; the override still wins.
  const { appId, appToken } = await gateway.createApp();
  for (const slug of Object.keys(prefixes)) await gateway.setSecret(appId, slug, secrets[slug] ?? serverKey(slug), tenants[slug]);
  const deviceToken = await gateway.deviceToken(appId, appToken);
  const provisioned = { appId, appToken, deviceToken, headers: { 'Tollgate-App-Token': appToken, 'Tollgate-Device-Token': deviceToken } };
  return {
    upstream,
    gateway,
    provisioned,
    /** The Tollgate headers an app sends. */
    headers: provisioned.headers,
    /** `${gateway}/v1/proxy/<slug>/<version>` (version omitted: `${gateway}/v1/proxy/<slug>`). */
    base: (slug, version) => `${gateway.url}/v1/proxy/${slug}${version === undefined ? '' : `/${version}`}`,
    /** A fetch that adds the Tollgate headers, for SDKs that take a custom fetch. */
    fetch: (input, init = {}) => {
      const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
      for (const [name, value] of Object.entries(provisioned.headers)) headers.set(name, value);
      return nativeFetch(input, { ...init, headers });
    },
    async close() {
      await gateway.close();
      await upstream.close();
    },
  };
}

/**
 * Asserts what reached the provider: method, path (and query parameters when given), the operator's credential exactly
 * where the provider documents it, and neither a Tollgate header nor the client's own key anywhere.
 * @param {object} request a RecordedRequest
 * @param {{ method: string, path: string, query?: Record<string, string>, header?: [string, string], queryKey?: [string, string] }} expected
 */
export function assertUpstream(request, expected) {
  const url = new URL(request.url, 'http://upstream');
  assert.equal(request.method, expected.method, 'method');
  assert.equal(url.pathname, expected.path, 'path');
  for (const [name, value] of Object.entries(expected.query ?? {})) assert.equal(url.searchParams.get(name), value, `query ${name}`);
  if (expected.header) assert.equal(request.headers[expected.header[0].toLowerCase()], expected.header[1], `credential header ${expected.header[0]}`);
  if (expected.queryKey) assert.deepEqual(url.searchParams.getAll(expected.queryKey[0]), [expected.queryKey[1]], `credential query ${expected.queryKey[0]}`);
  assertNoLeak(request);
}

/** No `Tollgate-*` header and no client credential in the headers, the URL or the body. */
export function assertNoLeak(request) {
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index].toLowerCase();
    const value = request.rawHeaders[index + 1];
    assert.ok(!name.startsWith('tollgate-'), `a Tollgate header reached the provider: ${name}`);
    assert.ok(!value.includes(CLIENT_KEY), `the client's key reached the provider in ${name}`);
  }
  assert.ok(!request.url.includes(CLIENT_KEY), "the client's key reached the provider in the URL");
  assert.ok(!request.body.includes(CLIENT_KEY), "the client's key reached the provider in the body");
}

/** The only request the fake got since the last reset, checked to be the only one. */
export function only(upstream) {
  assert.equal(upstream.requests.length, 1, `expected one upstream request, got ${upstream.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`);
  return upstream.requests[0];
}

/** Answers with raw bytes (audio). */
export function respondBytes(bytes, contentType = 'audio/mpeg', headers = {}) {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length, ...headers });
    response.end(bytes);
  };
}

/** Reads a web ReadableStream, Node stream or async iterable of bytes into one Buffer. */
export async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

export { assert };
