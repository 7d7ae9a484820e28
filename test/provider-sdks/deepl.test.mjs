/**
 * Official DeepL client (`deepl-node`) through the gateway: translateText, getUsage, rephraseText (DeepL API for Write),
 * listGlossaries (v2) and listMultilingualGlossaries (v3); `write/correct` (no deepl-node method yet) by plain fetch.
 * The client writes `/v2/…` and `/v3/…` itself, so its serverUrl is the provider root.
 * Wire formats: https://developers.deepl.com/api-reference/translate, https://developers.deepl.com/api-reference/usage-and-quota,
 * https://developers.deepl.com/api-reference/improve-text/request-text-improvement,
 * https://developers.deepl.com/api-reference/improve-text/correct-text,
 * https://developers.deepl.com/api-reference/glossaries, https://developers.deepl.com/api-reference/multilingual-glossaries
 * (`Authorization: DeepL-Auth-Key <key>`).
 */
import * as deepl from 'deepl-node';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, assert } from './harness.mjs';

describe('official SDK: deepl-node', function () {
  let suite;
  let client;
  const credential = ['Authorization', `DeepL-Auth-Key ${serverKey('deepl')}`];
  before(async function () {
    suite = await startSuite({ deepl: '' });
    client = new deepl.DeepLClient(CLIENT_KEY, { serverUrl: suite.base('deepl'), headers: suite.headers, maxRetries: 0, sendPlatformInfo: false });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('translateText', async function () {
    suite.upstream.on(/\/v2\/translate/, respondJson(200, { translations: [{ detected_source_language: 'EN', text: 'Hallo, Welt!' }] }));
    const result = await client.translateText('Hello, world!', null, 'de');
    assert.equal(result.text, 'Hallo, Welt!');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/translate', header: credential });
  });

  it('rephraseText (POST /v2/write/rephrase)', async function () {
    suite.upstream.on(/\/v2\/write\/rephrase/, respondJson(200, { improvements: [{ text: 'I could really use a nap.', detected_source_language: 'en', target_language: 'en-US' }] }));
    const result = await client.rephraseText('I could real use a nap.', 'en-US');
    assert.equal(result.text, 'I could really use a nap.');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/write/rephrase', header: credential });
  });

  it('write/correct (POST /v2/write/correct)', async function () {
    suite.upstream.on(/\/v2\/write\/correct/, respondJson(200, { improvements: [{ text: 'I could really use a nap.', detected_source_language: 'en', target_language: 'en-US' }] }));
    const response = await fetch(`${suite.base('deepl', 'v2')}/write/correct`, { method: 'POST', headers: { ...suite.headers, 'content-type': 'application/json', authorization: `DeepL-Auth-Key ${CLIENT_KEY}` }, body: JSON.stringify({ text: ['I could real use a nap.'], target_lang: 'en-US' }) });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).improvements[0].text, 'I could really use a nap.');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/write/correct', header: credential });
  });

  describe("glossaries and usage: account routes (the account's glossaries and quota are shared by every user of the key)", function () {
    // Account routes are closed by default and opened per app with openAccountRoutes.
    it('are refused by default, with nothing sent upstream', async function () {
      await assert.rejects(client.listGlossaries());
      await assert.rejects(client.listMultilingualGlossaries());
      await assert.rejects(client.getUsage(), /Bad request/);
      assert.equal(suite.upstream.requests.length, 0);
    });

    describe('opened for the app', function () {
      before(async function () {
        await suite.gateway.gateway.management.updateApp(suite.provisioned.appId, { openAccountRoutes: ['deepl'] });
      });
      after(async function () {
        await suite.gateway.gateway.management.updateApp(suite.provisioned.appId, { openAccountRoutes: null });
      });

      it('getUsage (GET /v2/usage)', async function () {
        suite.upstream.on(/\/v2\/usage/, respondJson(200, { character_count: 180118, character_limit: 1250000 }));
        const usage = await client.getUsage();
        assert.equal(usage.character.count, 180118);
        assertUpstream(only(suite.upstream), { method: 'GET', path: '/v2/usage', header: credential });
      });

      it('listGlossaries (GET /v2/glossaries)', async function () {
        suite.upstream.on(/\/v2\/glossaries/, respondJson(200, { glossaries: [{ glossary_id: 'g1', name: 'My glossary', ready: true, source_lang: 'en', target_lang: 'de', creation_time: '2021-08-03T14:16:18.329Z', entry_count: 1 }] }));
        const glossaries = await client.listGlossaries();
        assert.equal(glossaries[0].glossaryId, 'g1');
        assertUpstream(only(suite.upstream), { method: 'GET', path: '/v2/glossaries', header: credential });
      });

      it('listMultilingualGlossaries (GET /v3/glossaries)', async function () {
        suite.upstream.on(/\/v3\/glossaries/, respondJson(200, { glossaries: [{ glossary_id: 'g2', name: 'Multi', dictionaries: [{ source_lang: 'en', target_lang: 'de', entry_count: 1 }], creation_time: '2024-08-03T14:16:18.329Z' }] }));
        const glossaries = await client.listMultilingualGlossaries();
        assert.equal(glossaries[0].glossaryId, 'g2');
        assertUpstream(only(suite.upstream), { method: 'GET', path: '/v3/glossaries', header: credential });
      });
    });
  });
});
