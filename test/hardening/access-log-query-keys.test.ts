/**
 * Query keys in the access log: a client may put a credential in the query under a name a server still reads as a
 * key (`x-goog-api-key=`, Google's header name as a parameter; `;key=`, a `;` separator; `key%00=`, a NUL some servers
 * drop; `key[]=`, a PHP/Rails array form; `%256Bey=`, encoded twice). The access line of each request must not hold
 * the value. A real gateway with its access log captured, in front of a recording fake upstream.
 */
import { expect } from 'chai';
import { redactUrl } from '../../core/security/redact';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const FORMS = ['x-goog-api-key=', 'a=1;key=', 'key%00=', 'key[]=', 'key[0]=', '%256Bey=', 'client_secret=', 'X-Goog-Api-Key='];

describe('query keys are redacted in the access log, in every form a server may read as a key', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_LOG_LEVEL: 'info' } });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('redactUrl replaces each form and keeps the rest as sent', () => {
    expect(redactUrl('/x?alt=sse&x-goog-api-key=AIzaSECRET1&max_tokens=5')).to.equal('/x?alt=sse&x-goog-api-key=[redacted]&max_tokens=5');
    expect(redactUrl('/x?a=1;key=AIzaSECRET2')).to.equal('/x?a=1;key=[redacted]');
    expect(redactUrl('/x?key%00=AIzaSECRET3')).to.equal('/x?key%00=[redacted]');
    expect(redactUrl('/x?key[]=AIzaSECRET4&monkey=1')).to.equal('/x?key[]=[redacted]&monkey=1');
  });

  it('no access line holds a credential sent under any of those names', async () => {
    const { appToken } = await gateway.createApp();
    for (const [index, form] of FORMS.entries()) {
      const secret = `AIzaQUERYKEY${index}zz${'q'.repeat(20)}`;
      // Unauthenticated on purpose: the access line is written for refusals too, and the refusal needs no device.
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models?${form}${secret}`, { headers: { 'Tollgate-App-Token': appToken } });
      await response.text();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const lines = gateway.logs.filter((line) => line.includes('/v1/proxy/openai/v1/models'));
    expect(lines.length).to.be.at.least(FORMS.length);
    expect(gateway.logText()).to.not.include('AIzaQUERYKEY');
  });
});
