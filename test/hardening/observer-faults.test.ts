/**
 * A plugin's pipeline observer that throws (core/routes/proxy.ts, `onObserverError`): the gateway keeps serving, every
 * request is answered and recorded (usage event, access line) as without the plugin, and the operator sees the failure:
 * one error line with its stack, then at most one a minute, and every failure in `tollgate_observer_failures_total`.
 * Before, the exception left the report uncaught and stopped the process.
 */
import { expect } from 'chai';
import path from 'node:path';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { ThrowingObserverCalls } from '../support/throwing-observer-plugin';

const THROWING_OBSERVER_PLUGIN = path.resolve(__dirname, '..', 'support', 'throwing-observer-plugin.js');

describe('a plugin observer that throws', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;

  before(async () => {
    upstream = await FakeUpstream.start();
    // The Chat Completions object, trimmed (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(respondJson(200, { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-x', choices: [], usage: { prompt_tokens: 3, completion_tokens: 5 } }));
  });
  after(() => upstream.close());

  it('does not stop the gateway or change any answer; it is logged once with its stack and counted every time', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_PLUGINS: THROWING_OBSERVER_PLUGIN } });
    try {
      const device = await gateway.provision({ openai: 'sk-observer-faults-00000000000' });
      const calls = ThrowingObserverCalls.onResponse;
      const written = gateway.gateway.usage.written;
      const answered = upstream.requests.length;
      // Answers, concurrent (several finish in one turn and are reported together) and then one by one.
      const concurrent = await Promise.all(
        Array.from({ length: 8 }, () => fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"model":"gpt-x","messages":[]}' })),
      );
      for (const response of concurrent) expect(((await response.json()) as { id: string }).id).to.equal('chatcmpl-1');
      for (let index = 0; index < 3; index += 1) {
        const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{}' });
        expect(response.status).to.equal(200);
        await response.arrayBuffer();
      }
      // A refusal: the observer's onError throws too, and the protocol error still goes out whole.
      const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { 'tollgate-app-token': device.appToken, 'content-type': 'application/json' }, body: '{}' });
      expect(refused.status).to.equal(403);
      expect(((await refused.json()) as { error: { reason: string } }).error.reason).to.be.a('string');
      expect(upstream.requests.length - answered).to.equal(11);

      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(ThrowingObserverCalls.onResponse - calls).to.equal(12);
      expect(ThrowingObserverCalls.onError).to.be.at.least(1);
      // The gateway's own observers ran for every request: usage events (with the tokens the tap read) and access lines.
      await gateway.gateway.usage.flush();
      expect(gateway.gateway.usage.written - written).to.equal(12);
      const accessLines = gateway.logs.map((line) => JSON.parse(line) as { msg: string; path?: string; status?: number }).filter((line) => line.msg === 'request' && line.path === '/v1/proxy/openai/v1/chat/completions');
      expect(accessLines).to.have.length(12);
      // Told once, with the stack, not once per request.
      const failures = gateway.logs.filter((line) => line.includes('a pipeline observer failed'));
      expect(failures).to.have.length(1);
      const failure = JSON.parse(failures[0]!) as { level: number; hook: string; err: { message: string; stack: string } };
      expect(failure.level).to.equal(50);
      expect(failure.err.message).to.match(/exporter bug/);
      expect(failure.err.stack).to.include('throwing-observer-plugin');
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).to.match(/tollgate_observer_failures_total\{hook="onResponse"\} 12\n/);
      expect(metrics).to.match(/tollgate_observer_failures_total\{hook="onError"\} [1-9]/);
      // Still serving.
      expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{}' })).status).to.equal(200);
    } finally {
      await gateway.close();
    }
  });
});
