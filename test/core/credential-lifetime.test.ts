/**
 * The lifetime of a credential minted for a device, clamped to the app's `credentialTtlSeconds`
 * (core/pipeline/credential-lifetime.ts), function by function: in the query (AssemblyAI's `expires_in_seconds`), as
 * seconds in the JSON body (OpenAI's `expires_after.seconds`) and as a time in the body (Gemini's `expireTime`). What
 * the provider would read is what is asserted: the rewritten query or body.
 */
import { expect } from 'chai';
import { GatewayError, ProxyContext } from '../../core/contract';
import { clampBodyLifetime, clampQueryLifetime } from '../../core/pipeline/credential-lifetime';

function contextWithBody(body: string): ProxyContext {
  const context = new ProxyContext('r', { headers: {} } as never, {} as never, { slug: 'openai', version: 'v1', providerPath: 'realtime/client_secrets', query: '' }, { slug: 'openai' } as never, 0);
  // A body read before (readRequestBody hands it back as it is).
  context.requestBody = Buffer.from(body);
  return context;
}

async function clampedBody(body: string, lifetime: Parameters<typeof clampBodyLifetime>[1], ceiling = 60): Promise<{ document: unknown; context: ProxyContext }> {
  const context = contextWithBody(body);
  await clampBodyLifetime(context, lifetime, ceiling, 1 << 20);
  return { document: JSON.parse(context.requestBody!.toString()), context };
}

describe('credential lifetimes (unit)', () => {
  it('in the query: absent, zero, negative, not a number or infinite is the ceiling; less is kept (whole seconds); more is the ceiling', () => {
    const cases: Array<[string, string]> = [
      ['', 'expires_in_seconds=60'],
      ['sample_rate=16000', 'sample_rate=16000&expires_in_seconds=60'],
      ['expires_in_seconds=30&x=1', 'expires_in_seconds=30&x=1'],
      ['expires_in_seconds=30.9', 'expires_in_seconds=30'],
      ['expires_in_seconds=600', 'expires_in_seconds=60'],
      ['expires_in_seconds=60', 'expires_in_seconds=60'],
      ['expires_in_seconds=0', 'expires_in_seconds=60'],
      ['expires_in_seconds=-5', 'expires_in_seconds=60'],
      ['expires_in_seconds=abc', 'expires_in_seconds=60'],
      ['expires_in_seconds=Infinity', 'expires_in_seconds=60'],
      ['expires_in_seconds=1&expires_in_seconds=9999', 'expires_in_seconds=1'],
    ];
    for (const [query, expected] of cases) expect(clampQueryLifetime(query, 'expires_in_seconds', 60), query).to.equal(expected);
  });

  it('as seconds in the body: the same rules, the member created on its way; the body and its length rewritten', async () => {
    const lifetime = { kind: 'body-seconds', member: 'expires_after.seconds' } as const;
    const seconds = async (body: string) => ((await clampedBody(body, lifetime)).document as { expires_after: { seconds: number } }).expires_after.seconds;
    expect(await seconds('')).to.equal(60);
    expect(await seconds('{"expires_after":{"seconds":30}}')).to.equal(30);
    expect(await seconds('{"expires_after":{"seconds":30.9}}')).to.equal(30);
    expect(await seconds('{"expires_after":{"seconds":600}}')).to.equal(60);
    for (const asked of ['0', '-1', '"abc"', 'null', '{}']) expect(await seconds(`{"expires_after":{"seconds":${asked}}}`), asked).to.equal(60);
    // Whatever stands in the way of the member becomes an object; the rest of the body is kept.
    for (const inTheWay of ['null', '5', '"text"', '[1]']) {
      const { document } = await clampedBody(`{"expires_after":${inTheWay},"session":{"model":"m"}}`, lifetime);
      expect(document, inTheWay).to.deep.equal({ expires_after: { seconds: 60 }, session: { model: 'm' } });
    }
    const { document, context } = await clampedBody('{"expires_after":{"anchor":"created_at","seconds":9999},"x":[1]}', lifetime);
    expect(document).to.deep.equal({ expires_after: { anchor: 'created_at', seconds: 60 }, x: [1] });
    expect(context.outcome.bytesIn).to.equal(context.requestBody!.length);
  });

  it('as a time in the body: a time in the past, unreadable or beyond the ceiling is now + ceiling; an earlier one is kept', async () => {
    const lifetime = { kind: 'body-expire-time', member: 'expireTime' } as const;
    const time = async (body: string) => Date.parse(((await clampedBody(body, lifetime)).document as { expireTime: string }).expireTime);
    const before = Date.now();
    const latest = await time('{}');
    expect(latest).to.be.within(before + 60_000, Date.now() + 60_000);
    const soon = new Date(Date.now() + 10_000).toISOString();
    expect(await time(`{"expireTime":"${soon}"}`)).to.equal(Date.parse(soon));
    for (const asked of [new Date(Date.now() - 1000).toISOString(), new Date(Date.now() + 3_600_000).toISOString(), 'not a time', '']) {
      const at = Date.now();
      expect(await time(`{"expireTime":"${asked}"}`), asked).to.be.within(at + 59_000, Date.now() + 60_000);
    }
  });

  it('a body that is not a JSON object is refused (400 invalid_body) and not rewritten', async () => {
    for (const body of ['[1]', 'null', '"s"', '5', 'not json', '{"a":']) {
      const context = contextWithBody(body);
      let refused: unknown;
      await clampBodyLifetime(context, { kind: 'body-seconds', member: 'ttl' }, 60, 1 << 20).catch((error: unknown) => { refused = error; });
      expect(refused, body).to.be.instanceOf(GatewayError);
      expect([(refused as GatewayError).type, (refused as GatewayError).status, (refused as GatewayError).reason], body).to.deep.equal(['invalidRequest', 400, 'invalid_body']);
      expect(context.requestBody!.toString()).to.equal(body);
    }
  });
});
