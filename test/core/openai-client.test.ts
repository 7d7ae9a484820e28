/**
 * The official `openai` npm client completes a chat call and a streamed chat call through the gateway, with `baseURL`
 * set to the gateway's openai route and the Tollgate headers added as default headers. Its own apiKey is a placeholder
 * that must never reach the provider.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { FakeUpstream, chatCompletion, respondChunks, respondJson, sseEvents } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

describe('official openai client through the gateway', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  let client: OpenAI;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    device = await gateway.provision({ openai: 'sk-real-openai-key-0123456789' });
    client = new OpenAI({ apiKey: 'not-a-key-the-gateway-injects-it', baseURL: `${gateway.url}/v1/proxy/openai/v1`, defaultHeaders: device.headers, maxRetries: 0 });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('completes a chat call', async () => {
    upstream.respond(
      respondJson(200, chatCompletion('Hello from upstream', { prompt: 3, completion: 3 }, { id: 'chatcmpl-1', model: 'gpt-4o-mini', created: 1_700_000_000 })),
    );
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    expect(completion.choices[0]!.message.content).to.equal('Hello from upstream');
    const request = upstream.last();
    expect(request.url).to.equal('/v1/chat/completions');
    expect(request.headers.authorization).to.equal('Bearer sk-real-openai-key-0123456789');
    expect(JSON.parse(request.body.toString())).to.deep.include({ model: 'gpt-4o-mini' });
    expect(JSON.stringify(request.rawHeaders)).not.to.include('not-a-key-the-gateway-injects-it');
  });

  it('streams a chat call', async () => {
    const chunk = (content: string, finish: string | null = null) => ({
      id: 'chatcmpl-2',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta: { content }, finish_reason: finish }],
    });
    upstream.respond(respondChunks(sseEvents([chunk('Hel'), chunk('lo'), chunk('!', 'stop')]), { intervalMs: 5 }));
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    expect(text).to.equal('Hello!');
    expect(JSON.parse(upstream.last().body.toString())).to.deep.include({ stream: true });
  });

  it('surfaces a gateway error as an APIError with the protocol type', async () => {
    const stranger = new OpenAI({ apiKey: 'x', baseURL: `${gateway.url}/v1/proxy/openai/v1`, defaultHeaders: { 'Tollgate-App-Token': device.appToken }, maxRetries: 0 });
    try {
      await stranger.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
      expect.fail('the call without a device token must fail');
    } catch (error) {
      expect(error).to.be.instanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).to.equal(403);
      expect((error as InstanceType<typeof OpenAI.APIError>).headers?.get('tollgate-error')).to.equal('attestationFailed');
    }
  });
});
