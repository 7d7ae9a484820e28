/**
 * Property: every bad admin input is a typed 4xx, never a 500 and never raw text (issue 16, "typed 400 for every bad
 * admin input"). fast-check feeds prototype keys (`__proto__`, `constructor`, `toString`, …), odd types, huge numbers
 * and nested objects, at the top of a body and inside its maps and lists, to every body-taking admin route, to the path
 * and query parameters, and to the MCP tools that write; an input carrying a prototype key anywhere is refused with
 * `400 invalidRequest` / `validation`. Bodies are written as JSON text, so that `__proto__` arrives as an own key, as
 * an attacker would send it.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestGateway } from '../support/gateway';

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];
const INHERITED_KEYS = ['toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];
const SETTINGS_FIELDS = ['name', 'deviceLimitPerMinute', 'appLimitPerMinute', 'allowDevelopmentAttestation', 'deviceTokenTtlSeconds', 'appleAppId', 'androidPackage', 'androidCertSha256', 'allowedProviders', 'allowedRoutes', 'providerLimitsPerMinute', 'deviceDailyQuota', 'appDailyQuota', 'maxConcurrentStreamsPerDevice', 'deviceDailyTokens', 'appDailyTokens', 'providerDailyTokens', 'providerDeviceDailyTokens', 'deviceMinuteTokens', 'appMinuteTokens', 'providerMinuteTokens', 'assertionMode', 'allowAppAttestDevelopment', 'playIntegrityDeviceVerdict'];

/** A JSON value as text: odd scalars, huge numbers, deep nesting, and objects keyed by prototype names. */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string; object: string; array: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('null', 'true', 'false', '0', '-1', '1.5', '1e308', '-1e308', '9007199254740993', '1e400', '""', '"openai"', '"__proto__"', `"${'x'.repeat(20_000)}"`, '"\\u0000"', '"at_00000000000000000000000000000000"'),
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
    fc.string({ maxLength: 40 }).map((value) => JSON.stringify(value)),
    tie('object'),
    tie('array'),
  ),
  object: fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, ...INHERITED_KEYS, 'openai', 'a'), fc.string({ maxLength: 12 })), tie('value')), { maxLength: 4 })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`),
  array: fc.array(tie('value'), { maxLength: 4 }).map((values) => `[${values.join(',')}]`),
})).value;

/** A body: an object whose keys are the route's fields, prototype and inherited names, or anything. */
function bodyText(fields: readonly string[]): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...fields), fc.constantFrom(...PROTOTYPE_KEYS, ...INHERITED_KEYS), fc.string({ maxLength: 12 })), jsonText), { minLength: 1, maxLength: 5 })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`);
}

/** True when the parsed input has a prototype key at any depth. */
function hasPrototypeKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(hasPrototypeKey);
  return Object.keys(value).some((key) => PROTOTYPE_KEYS.includes(key) || hasPrototypeKey((value as Record<string, unknown>)[key]));
}

type ErrorBody = { error?: { type?: unknown; reason?: unknown; message?: unknown } };

describe('admin inputs: every bad input is a typed 4xx (property)', function () {
  this.timeout(10 * 60_000);
  let gateway: TestGateway;
  let adminKey: string;
  let appId: string;

  before(async () => {
    // Behind a trusted proxy each generated request comes from its own address, so that the per-address sign-in limit
    // (10 per 5 minutes, charged before the body is read) does not stand between the public routes and their validator.
    gateway = await TestGateway.start({ env: { TOLLGATE_TRUST_PROXY: 'true' } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'properties' }));
    ({ appId } = await gateway.createApp({}));
    await gateway.setSecret(appId, 'openai', 'sk-properties-000000000000');
  });
  after(() => gateway.close());

  let sender = 0;
  async function send(method: string, route: string, body?: string) {
    sender += 1;
    const forwardedFor = `203.0.113.${Math.floor(sender / 250) % 250}, 198.51.100.${sender % 250}`; // the proxy appends the last one
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', 'x-forwarded-for': forwardedFor }, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    return { status: response.status, type: response.headers.get('tollgate-error'), text };
  }

  /** A refusal is typed: a 4xx with Tollgate-Error and a JSON body naming the type and a snake_case reason. */
  function expectTyped(answer: { status: number; type: string | null; text: string }, context: string): ErrorBody['error'] {
    expect(answer.status, `${context} → ${answer.text.slice(0, 300)}`).to.be.within(400, 499);
    const parsed = JSON.parse(answer.text) as ErrorBody;
    expect(parsed.error?.type, context).to.equal(answer.type);
    expect(parsed.error?.reason, context).to.match(/^[a-z][a-z0-9_]*$/);
    return parsed.error;
  }

  const bodyRoutes = () => [
    { method: 'POST', route: '/apps', fields: SETTINGS_FIELDS },
    { method: 'PATCH', route: `/apps/${appId}`, fields: SETTINGS_FIELDS },
    { method: 'PUT', route: `/apps/${appId}/secrets/openai`, fields: ['value', 'baseUrl'] },
    { method: 'PUT', route: `/apps/${appId}/attestation-secrets/play-integrity-service-account`, fields: ['value'] },
    { method: 'POST', route: `/apps/${appId}/development-tokens`, fields: ['label'] },
    { method: 'POST', route: '/admin-keys', fields: ['name'] },
    // The dashboard's public routes validate before anything else (sign-in limits, scrypt).
    { method: 'POST', route: '/session', fields: ['username', 'password'] },
    { method: 'POST', route: '/setup', fields: ['setupToken', 'username', 'password'] },
  ];

  it('the reported case: {"providerLimitsPerMinute":{"constructor":5}} is 400 validation, on create and update', async () => {
    for (const [method, route] of [['PATCH', `/apps/${appId}`], ['POST', '/apps']] as const) {
      const answer = await send(method, route, '{"name":"x","providerLimitsPerMinute":{"constructor":5}}');
      expect(answer.status, answer.text).to.equal(400);
      expect(expectTyped(answer, route)).to.include({ type: 'invalidRequest', reason: 'validation' });
    }
    for (const body of ['{"__proto__":{"deviceLimitPerMinute":1}}', '{"toString":1}', '{"providerLimitsPerMinute":{"toString":5}}', '{"allowedRoutes":[{"constructor":1}]}']) {
      const answer = await send('PATCH', `/apps/${appId}`, body);
      expect(answer.status, `${body} → ${answer.text}`).to.equal(400);
    }
    // A good map still works.
    expect((await send('PATCH', `/apps/${appId}`, '{"providerLimitsPerMinute":{"openai":5}}')).status).to.equal(200);
  });

  it('every body-taking route answers a typed 4xx or a 2xx, never a 5xx; a prototype key anywhere is 400 validation', async () => {
    for (const { method, route, fields } of bodyRoutes()) {
      await fc.assert(
        fc.asyncProperty(bodyText(fields), async (body) => {
          const answer = await send(method, route, body);
          expect(answer.status, `${method} ${route} ${body.slice(0, 200)} → ${answer.text.slice(0, 300)}`).to.be.below(500);
          if (answer.status >= 400) expectTyped(answer, `${method} ${route} ${body.slice(0, 200)}`);
          if (hasPrototypeKey(JSON.parse(body))) {
            expect(answer.status, body.slice(0, 200)).to.equal(400);
            expect(JSON.parse(answer.text)).to.have.nested.property('error.reason', 'validation');
          }
        }),
        { numRuns: 40, seed: 20261124 },
      );
    }
    // The state is still readable and sane after all that.
    const app = await send('GET', `/apps/${appId}`);
    expect(app.status).to.equal(200);
  });

  it('odd path and query parameters are typed 4xx', async () => {
    const odd = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'prototype', '%00', '..', '%2e%2e', 'x'.repeat(5000), '-1', '1e400', 'NaN'), fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent));
    await fc.assert(
      fc.asyncProperty(odd, async (value) => {
        for (const [method, route] of [
          ['GET', `/apps/${value}`],
          ['GET', `/apps/${appId}/usage?minutes=${value}`],
          ['GET', `/usage?minutes=${value}`],
          ['POST', `/apps/${value}/devices/${value}/revoke`],
          ['DELETE', `/apps/${appId}/secrets/${value}`],
          ['PUT', `/apps/${appId}/attestation-secrets/${value}`],
        ] as const) {
          const answer = await send(method, route, method === 'PUT' ? '{"value":"x"}' : undefined);
          expect(answer.status, `${method} ${route.slice(0, 120)} → ${answer.text.slice(0, 200)}`).to.be.below(500);
          if (answer.status >= 400) expectTyped(answer, `${method} ${route.slice(0, 120)}`);
        }
      }),
      { numRuns: 25, seed: 20261124 },
    );
  });

  it('MCP: the writing tools answer a typed tool error for the same inputs, never raw text', async () => {
    const client = new Client({ name: 'properties', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text?: string }> };
        return { isError: Boolean(result.isError), text: result.content.map((part) => part.text ?? '').join('') };
      };
      const reported = await call('update_app', JSON.parse(`{"appId":${JSON.stringify(appId)},"providerLimitsPerMinute":{"constructor":5}}`) as Record<string, unknown>);
      expect(reported.isError).to.equal(true);
      expect(JSON.parse(reported.text)).to.deep.include({ error: { type: 'invalidRequest', reason: 'validation', message: JSON.parse(reported.text).error.message, fields: JSON.parse(reported.text).error.fields, code: 'TG_ERR_VALIDATION' } });
      for (const tool of ['update_app', 'create_app', 'set_secret']) {
        await fc.assert(
          fc.asyncProperty(bodyText(SETTINGS_FIELDS), async (body) => {
            const args = { ...(JSON.parse(body) as Record<string, unknown>) };
            // The required fields are set unless the generated body replaced them with something odd.
            const base = tool === 'update_app' ? { appId } : tool === 'set_secret' ? { appId, provider: 'openai', value: 'sk-x' } : { name: 'property app' };
            const result = await call(tool, JSON.parse(`{${[...Object.entries(base).map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`), body.slice(1, -1)].join(',')}}`) as Record<string, unknown>);
            if (!result.isError) return;
            let parsed: ErrorBody;
            try {
              parsed = JSON.parse(result.text) as ErrorBody;
            } catch {
              throw new Error(`raw text from ${tool} for ${body.slice(0, 200)}: ${result.text.slice(0, 300)}`);
            }
            expect(parsed.error?.type, result.text).to.be.oneOf(['invalidRequest', 'notFound', 'conflict']);
            expect(parsed.error?.reason, result.text).to.match(/^[a-z][a-z0-9_]*$/);
            if (hasPrototypeKey(args)) expect(parsed.error?.reason, `${tool} ${body.slice(0, 200)}`).to.equal('validation');
          }),
          { numRuns: 30, seed: 20261124 },
        );
      }
    } finally {
      await client.close();
    }
  });
});
