/**
 * Model policy, as the requests arrive at a fake provider: a model outside the allow-list is refused
 * (`model_not_allowed`) and nothing reaches the provider; an alias is replaced by its model and the output-token field
 * the manifest declares (`requestFields`) is clamped, both in the body the provider receives (with its own
 * Content-Length); a profile's policy holds for the users its tier claim names; without a policy for the provider the
 * body arrives byte for byte as sent. Bodies as in https://platform.openai.com/docs/api-reference/chat/create and
 * https://docs.anthropic.com/en/api/messages.
 */
import { expect } from 'chai';
import { GatewayError } from '../../core/contract';
import { applyPolicyToBody, applyPolicyToQuery, clampOutputLimit, policyModel, readMember, requestFieldsFor, writeMember } from '../../core/pipeline/model-policy';
import type { ProviderManifest } from '../../core/contract';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { FakeSignInProvider, signingKey, type SigningKey } from '../support/sign-in-provider';

describe('model policy', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let signIn: FakeSignInProvider;
  let key: SigningKey;

  before(async () => {
    upstream = await FakeUpstream.start();
    signIn = await FakeSignInProvider.start();
    key = await signingKey('policy');
    signIn.publish([key]);
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url, elevenlabs: upstream.url } });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
    await signIn.close();
  });

  const send = async (device: Provisioned, path: string, body: string, userToken?: string) => {
    const headers: Record<string, string> = { ...device.headers, 'content-type': 'application/json' };
    if (userToken) headers['Tollgate-User-Token'] = userToken;
    const response = await fetch(`${gateway.url}/v1/proxy/${path}`, { method: 'POST', headers, body });
    const json = (await response.json()) as { error?: { reason?: string } };
    return { status: response.status, reason: json.error?.reason };
  };
  const received = () => {
    const request = upstream.last();
    expect(Number(request.headers['content-length'])).to.equal(request.body.length);
    return JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
  };

  it('refuses a model outside the allow-list before anything reaches the provider', async () => {
    const device = await gateway.provision({ openai: 'sk-policy-0123456789abcdef' }, { modelPolicy: { openai: { allow: ['gpt-4o-mini'] } } });
    expect(await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o","messages":[]}')).to.deep.equal({ status: 400, reason: 'model_not_allowed' });
    expect(await send(device, 'openai/v1/chat/completions', '{"messages":[]}')).to.deep.equal({ status: 400, reason: 'model_not_allowed' });
    expect(await send(device, 'openai/v1/chat/completions', 'not json')).to.deep.equal({ status: 400, reason: 'body_not_json' });
    expect(upstream.requests).to.have.length(0);
    expect((await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o-mini","messages":[]}')).status).to.equal(200);
    expect(received().model).to.equal('gpt-4o-mini');
  });

  it('ElevenLabs: the model_id of speech, dialogue and sound requests is checked and an alias replaced; a multipart transcription passes', async () => {
    // Bodies as in https://elevenlabs.io/docs/api-reference/text-to-speech/convert (model_id beside text).
    const device = await gateway.provision(
      { elevenlabs: 'xi-policy-0123456789abcdef' },
      { modelPolicy: { elevenlabs: { allow: ['eleven_flash_v2_5'], aliases: { voice: 'eleven_flash_v2_5' } } } },
    );
    for (const path of ['text-to-speech/21m00Tcm4TlvDq8ikWAM', 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream/with-timestamps', 'text-to-dialogue', 'text-to-dialogue/stream', 'sound-generation']) {
      expect(await send(device, `elevenlabs/v1/${path}`, '{"text":"Hi","model_id":"eleven_v3"}'), path).to.deep.equal({ status: 400, reason: 'model_not_allowed' });
      // No model_id: ElevenLabs would pick its default, which the allow-list does not name.
      expect(await send(device, `elevenlabs/v1/${path}`, '{"text":"Hi"}'), path).to.deep.equal({ status: 400, reason: 'model_not_allowed' });
    }
    expect(upstream.requests).to.have.length(0);
    expect((await send(device, 'elevenlabs/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', '{"text":"Hi","model_id":"voice"}')).status).to.equal(200);
    expect(received()).to.deep.equal({ text: 'Hi', model_id: 'eleven_flash_v2_5' });
    expect(upstream.last().url).to.equal('/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream');
    // Speech-to-text is multipart (https://elevenlabs.io/docs/api-reference/speech-to-text/convert): not read, passed.
    const form = new FormData();
    form.append('model_id', 'scribe_v1');
    form.append('file', new Blob([Buffer.alloc(64)], { type: 'audio/mpeg' }), 'a.mp3');
    const response = await fetch(`${gateway.url}/v1/proxy/elevenlabs/v1/speech-to-text`, { method: 'POST', headers: device.headers, body: form });
    expect(response.status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1/speech-to-text');
  });

  it('replaces an alias and clamps the declared output-token field in the body the provider receives', async () => {
    const device = await gateway.provision(
      { openai: 'sk-policy-0123456789abcdef', anthropic: 'sk-ant-policy-0123456789abcdef' },
      { modelPolicy: { openai: { allow: ['gpt-4o-mini'], aliases: { fast: 'gpt-4o-mini' }, maxOutputTokens: 256 }, anthropic: { aliases: { smart: 'claude-sonnet-4-5' }, maxOutputTokens: 1024 } } },
    );
    expect((await send(device, 'openai/v1/chat/completions', '{"model":"fast","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":4000}')).status).to.equal(200);
    expect(received()).to.deep.equal({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], max_completion_tokens: 256 });
    // The legacy member, when it is the one present, is the one clamped; a smaller request is left as asked.
    await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o-mini","messages":[],"max_tokens":9000}');
    expect(received()).to.deep.equal({ model: 'gpt-4o-mini', messages: [], max_tokens: 256 });
    await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o-mini","messages":[],"max_completion_tokens":100}');
    expect(received().max_completion_tokens).to.equal(100);
    // No limit asked: the cap is set in the first declared member.
    await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o-mini","messages":[]}');
    expect(received().max_completion_tokens).to.equal(256);
    // Anthropic Messages: `max_tokens`.
    expect((await send(device, 'anthropic/v1/messages', '{"model":"smart","max_tokens":8192,"messages":[]}')).status).to.equal(200);
    expect(received()).to.deep.equal({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [] });
  });

  it('applies the policy of the profile the user token names instead of the app\'s', async () => {
    const device = await gateway.provision(
      { openai: 'sk-policy-0123456789abcdef' },
      {
        userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test', tierClaim: 'entitlements' },
        userTokenMode: 'optional',
        modelPolicy: { openai: { allow: ['gpt-4o-mini'] } },
        profiles: { pro: { modelPolicy: { openai: { allow: ['gpt-4o-mini', 'gpt-4o'] } } } },
      },
    );
    const free = await signIn.token(key, 'free-user');
    const pro = await signIn.token(key, 'pro-user', { entitlements: ['beta', 'pro'] });
    expect((await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o","messages":[]}', free)).reason).to.equal('model_not_allowed');
    expect((await send(device, 'openai/v1/chat/completions', '{"model":"gpt-4o","messages":[]}', pro)).status).to.equal(200);
    expect(received().model).to.equal('gpt-4o');
  });

  it('passes a body byte for byte when no policy applies to the provider or the route', async () => {
    const device = await gateway.provision({ openai: 'sk-policy-0123456789abcdef', anthropic: 'sk-ant-policy-0123456789abcdef' }, { modelPolicy: { anthropic: { allow: ['claude-sonnet-4-5'] } } });
    const body = '{ "model" : "gpt-4o",\n  "messages": [ ],   "max_tokens": 99999, "x": 1.50 }';
    const plain = await send(device, 'openai/v1/chat/completions', body);
    expect(plain.status, plain.reason).to.equal(200);
    expect(upstream.last().body.toString('utf8')).to.equal(body);
    // A route whose body fields the manifest does not declare is not touched either.
    const policed = await gateway.provision({ openai: 'sk-policy-0123456789abcdef' }, { modelPolicy: { openai: { allow: ['gpt-4o-mini'] } } });
    const moderation = '{"model":"omni-moderation-latest",  "input":"hi"}';
    expect((await send(policed, 'openai/v1/moderations', moderation)).status).to.equal(200);
    expect(upstream.last().body.toString('utf8')).to.equal(moderation);
    // Embeddings name their model where chat does (the manifest declares it): the allow-list holds there too.
    expect((await send(policed, 'openai/v1/embeddings', '{"model":"text-embedding-3-small","input":"hi"}')).reason).to.equal('model_not_allowed');
  });

  it('a realtime URL naming its model parameter without a value, or a JSON body that is not an object, is refused', async () => {
    const policy = { allow: ['gpt-realtime'], aliases: { voice: 'gpt-realtime' } };
    const reason = (query: string) => {
      try {
        return applyPolicyToQuery(query, 'model', policy, 'openai');
      } catch (error) {
        return (error as GatewayError).reason;
      }
    };
    // A bare `model` (no `=`) reads as an empty model upstream, the provider's default: not an allowed one.
    expect(reason('model')).to.equal('model_not_allowed');
    expect(reason('x=1&model')).to.equal('model_not_allowed');
    expect(reason('model=')).to.equal('model_not_allowed');
    expect(reason('modelx=1&model=gpt-realtime')).to.equal('modelx=1&model=gpt-realtime');
    expect(reason('x=1&model=voice&y')).to.equal('x=1&model=gpt-realtime&y');
    expect(reason('mod%65l=gpt-4o')).to.equal('model_not_allowed');
    const device = await gateway.provision({ openai: 'sk-policy-0123456789abcdef' }, { modelPolicy: { openai: { allow: ['gpt-4o-mini'] } } });
    for (const body of ['[]', '"gpt-4o-mini"', 'null', '1']) expect(await send(device, 'openai/v1/chat/completions', body), body).to.deep.equal({ status: 400, reason: 'body_not_json' });
    expect(upstream.requests).to.have.length(0);
  });
});

describe('model policy, function by function (unit)', () => {
  const refusedWith = (run: () => unknown): string => {
    try {
      run();
    } catch (error) {
      expect(error, 'a typed refusal, not a crash').to.be.instanceOf(GatewayError);
      return (error as GatewayError).reason;
    }
    return 'admitted';
  };

  it('policyModel: a resource-name prefix is compared with and without it, and kept on an alias\'s model', () => {
    expect(policyModel('models/gem', { allow: ['gem'] }, 's', 'models/')).to.equal('models/gem');
    expect(policyModel('gem', { allow: ['gem'] }, 's', 'models/')).to.equal('gem');
    expect(policyModel('models/gem', { allow: ['models/gem'] }, 's', 'models/')).to.equal('models/gem');
    expect(refusedWith(() => policyModel('models/other', { allow: ['gem'] }, 's', 'models/'))).to.equal('model_not_allowed');
    expect(policyModel('models/fast', { aliases: { fast: 'gem-2' } }, 's', 'models/')).to.equal('models/gem-2');
    expect(policyModel('models/fast', { aliases: { fast: 'models/gem-2' } }, 's', 'models/')).to.equal('models/gem-2');
    expect(policyModel('fast', { aliases: { fast: 'gem-2' } }, 's', 'models/'), 'a bare name gets a bare model').to.equal('gem-2');
  });

  it('policyModel: a model that is not a string is refused under an allow-list and never aliased; a name starting "undefined" is a name', () => {
    expect(refusedWith(() => policyModel(5, { allow: ['5'] }, 's', 'models/'))).to.equal('model_not_allowed');
    expect(refusedWith(() => policyModel(5, { allow: ['5'] }, 's'))).to.equal('model_not_allowed');
    expect(refusedWith(() => policyModel(undefined, { allow: ['gem'] }, 's'))).to.equal('model_not_allowed');
    expect(policyModel(5, { aliases: { 5: 'gem' } }, 's')).to.equal(5);
    expect(refusedWith(() => policyModel('undefinedgem', { allow: ['gem'] }, 's'))).to.equal('model_not_allowed');
    expect(refusedWith(() => policyModel('other', { allow: ['gem'] }, 's'))).to.equal('model_not_allowed');
  });

  it('readMember and writeMember walk dotted members; what is in the way of a write is replaced by an object', () => {
    expect(readMember({ a: { b: 3 } }, 'a.b')).to.equal(3);
    expect(readMember({ a: null }, 'a.b')).to.equal(undefined);
    expect(readMember({ a: [1, 2] }, 'a.0')).to.equal(undefined);
    expect(readMember({ a: 'text' }, 'a.length')).to.equal(undefined);
    const body: Record<string, unknown> = { a: null, b: 'text', c: [1], d: { keep: true } };
    writeMember(body, 'a.x', 1);
    writeMember(body, 'b.x', 2);
    writeMember(body, 'c.x', 3);
    writeMember(body, 'd.x', 4);
    expect(body).to.deep.equal({ a: { x: 1 }, b: { x: 2 }, c: { x: 3 }, d: { keep: true, x: 4 } });
  });

  it('clampOutputLimit and applyPolicyToBody report a change only when they made one', () => {
    expect(clampOutputLimit({ max_tokens: 5 }, ['max_tokens'], 10)).to.equal(false);
    expect(clampOutputLimit({}, [], 10)).to.equal(false);
    const body: Record<string, unknown> = { max_tokens: 50, max_completion_tokens: 'inf' };
    expect(clampOutputLimit(body, ['max_tokens', 'max_completion_tokens'], 10)).to.equal(true);
    expect(body).to.deep.equal({ max_tokens: 10, max_completion_tokens: 10 });
    expect(applyPolicyToBody({ model: 'gem' }, { allow: ['gem'] }, { model: 'model' }, 's')).to.equal(false);
    expect(applyPolicyToBody({ model: 'gem' }, { maxOutputTokens: 5 }, { model: 'model' }, 's'), 'no output members declared').to.equal(false);
    const aliased: Record<string, unknown> = { model: 'fast' };
    expect(applyPolicyToBody(aliased, { aliases: { fast: 'gem' } }, { model: 'model' }, 's')).to.equal(true);
    expect(aliased).to.deep.equal({ model: 'gem' });
  });

  it('applyPolicyToQuery: an allowed model keeps its bytes; "+" reads as a space; an alias is written encoded', () => {
    expect(applyPolicyToQuery('model=gpt%2D4o&x=1', 'model', { allow: ['gpt-4o'] }, 's')).to.equal('model=gpt%2D4o&x=1');
    expect(applyPolicyToQuery('model=my+model', 'model', { allow: ['my model'] }, 's')).to.equal('model=my+model');
    expect(refusedWith(() => applyPolicyToQuery('model=my+model', 'model', { allow: ['mymodel'] }, 's'))).to.equal('model_not_allowed');
    expect(applyPolicyToQuery('model=fast&x=1', 'model', { aliases: { fast: 'gpt 4o' } }, 's')).to.equal('model=gpt%204o&x=1');
  });

  it('requestFieldsFor: none for a manifest without declared fields or a path that does not decode', () => {
    const manifest = { slug: 'x', requestFields: [{ methods: ['POST'], path: '**', model: 'model' }] } as unknown as ProviderManifest;
    expect(requestFieldsFor(manifest, 'post', 'chat')?.model).to.equal('model');
    expect(requestFieldsFor(manifest, 'GET', 'chat')).to.equal(undefined);
    expect(requestFieldsFor(manifest, 'POST', 'chat%E0%A4%A')).to.equal(undefined);
    expect(requestFieldsFor({ slug: 'y' } as unknown as ProviderManifest, 'POST', 'chat')).to.equal(undefined);
  });
});
