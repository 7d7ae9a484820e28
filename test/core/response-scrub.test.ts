/**
 * The credential's forms and the error-body checks of core/pipeline/response-scrub.ts, function by function: which
 * forms of an injected key are searched for, how a non-2xx body is decoded before it is searched (every coding the
 * gateway lets the provider use, stacked and nested), how JSON escapes are undone, and how a streamed body is masked
 * across chunk boundaries (docs/security.md, "Provider responses").
 */
import zlib from 'node:zlib';
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import type { ProxyContext } from '../../core/contract';
import {
  StreamRedactor,
  credentialForms,
  credentialFormsOf,
  inspectableAcceptEncoding,
  inspectionMode,
  inspectsBody,
  isIdentity,
  redactErrorBody,
  withheldBody,
} from '../../core/pipeline/response-scrub';

const KEY = 'a/bcdefghijklmnopqrstuvwxyz0123';

/** base64 text of `prefix + value + suffix`, as an upstream that base64-encodes the request it got would print it. */
function base64Around(value: string, prefix: string): string {
  return Buffer.from(`${prefix}${value}-tail`, 'utf8').toString('base64');
}

describe('response scrub: the forms of the credential', () => {
  it('an 8-character credential is searched for, a 7-character one is not', () => {
    expect([...credentialFormsOf(['12345678'])]).to.deep.equal(['12345678']);
    expect([...credentialFormsOf(['1234567'])]).to.deep.equal([]);
  });

  it('raw, percent-encoded and JSON-escaped forms, longest first', () => {
    const key = 'sk-"quoted"/plus+key';
    const forms = credentialFormsOf([key]);
    expect([...forms]).to.have.members([key, encodeURIComponent(key), 'sk-\\"quoted\\"/plus+key']);
    for (let index = 1; index < forms.length; index += 1) expect(forms[index - 1]!.length).to.be.at.least(forms[index]!.length);
    expect(forms.shortest).to.equal(key.length);
    expect(forms.lower).to.include(encodeURIComponent(key).toLowerCase());
  });

  it('the base64 and base64url text of the credential at each of the three byte alignments', () => {
    const key = 'sk-live-???>>>~~~0123456789abcdef';
    const forms = credentialFormsOf([key]);
    const encoded = forms.encoded!;
    expect(encoded.length).to.be.greaterThan(0);
    for (const prefix of ['', 'x', 'xy', 'xyz']) {
      const standard = base64Around(key, prefix);
      const url = standard.replace(/\+/g, '-').replace(/\//g, '_');
      expect(encoded.some((form) => standard.includes(form)), `base64 after ${prefix.length} bytes`).to.equal(true);
      expect(encoded.some((form) => url.includes(form)), `base64url after ${prefix.length} bytes`).to.equal(true);
    }
    // Each form depends on the credential's bytes alone: all of it is found inside the encoded credential.
    for (const form of encoded) expect(form.length).to.be.at.least(16);
    for (let index = 1; index < encoded.length; index += 1) expect(encoded[index - 1]!.length).to.be.at.least(encoded[index]!.length);
    expect(forms.shortestEncoded).to.equal(Math.min(...encoded.map((form) => form.length)));
  });

  it('the base64 forms are those of the credential, not of its percent-encoded or escaped forms', () => {
    const forms = credentialFormsOf([KEY]);
    const ofKey = ['', 'x', 'xy'].flatMap((prefix) => [base64Around(KEY, prefix), base64Around(KEY, prefix).replace(/\+/g, '-').replace(/\//g, '_')]);
    expect(forms.encoded!.filter((form) => !ofKey.some((text) => text.includes(form)))).to.deep.equal([]);
  });

  it('a credential too short for a base64 form has none; no credential has no forms at all', () => {
    const short = credentialFormsOf(['12345678']);
    expect(short.encoded).to.deep.equal([]);
    expect(short.shortestEncoded).to.equal(Infinity);
    const none = credentialFormsOf([]);
    expect(none.shortest).to.equal(Infinity);
    expect(none.shortestEncoded).to.equal(Infinity);
  });
});

describe('response scrub: the forms of the credential this request injected', () => {
  type Auth = ProxyContext['provider']['auth'];
  function context(plain: string, auth: Auth, headers: Record<string, string | string[]> | undefined, secretObject?: object): ProxyContext {
    const value = (secretObject ?? { reveal: () => plain }) as { reveal(): string };
    const values: Record<string, unknown> = { secret: { value }, upstream: headers === undefined ? undefined : { headers } };
    return { peek: (name: string) => values[name], provider: { auth } } as unknown as ProxyContext;
  }

  it('the value sent in the declared header (any case), and the token after its scheme', () => {
    const forms = credentialForms(context('sk-header-secret-0001', { kind: 'header', header: 'X-Api-Key' } as Auth, { 'x-api-key': 'Token sk-derived-value-0002' }));
    expect([...forms]).to.include.members(['sk-header-secret-0001', 'Token sk-derived-value-0002', 'sk-derived-value-0002']);
  });

  it('a computed signature: the Authorization value and the session token sent, repeated values each', () => {
    const forms = credentialForms(
      context('{"accessKeyId":"AKIAEXAMPLE00000001","secretAccessKey":"secret-access-key-0003","tokenUri":"https://example.com/a","credentialUrl":"https://example.com/b","sessionTokenTtl":3600,"credentialSource":{"kind":"file-0000001"},"securityToken":"security-token-0009","region":"us-east-1"}', { kind: 'computed' } as Auth, {
        authorization: 'AWS4-HMAC-SHA256 Signature=sig0123456789abcdef',
        'x-amz-security-token': ['session-token-part-one', 'session-token-part-two'],
      }),
    );
    expect([...forms]).to.include.members([
      'secret-access-key-0003', 'AKIAEXAMPLE00000001', 'Signature=sig0123456789abcdef', 'session-token-part-one', 'session-token-part-two', 'security-token-0009',
    ]);
    expect([...forms]).to.not.include('https://example.com/a');
    expect([...forms]).to.not.include('us-east-1');
    expect([...forms]).to.not.include('https://example.com/b');
    for (const form of forms) expect(form).to.be.a('string').and.not.include('object');
  });

  it('a JSON secret that is not an object, or not JSON, is one credential', () => {
    expect([...credentialForms(context('["sk-array-secret-000"]', { kind: 'query', parameter: 'key' } as Auth, {}))]).to.deep.equal([
      '["sk-array-secret-000"]', '%5B%22sk-array-secret-000%22%5D', '[\\"sk-array-secret-000\\"]',
    ].sort((a, b) => b.length - a.length));
    expect([...credentialForms(context('{not json secret', { kind: 'query', parameter: 'key' } as Auth, {}))]).to.include('{not json secret');
  });

  it('a computed signature with no session token: the secret and the signature only', () => {
    const forms = credentialForms(context('sk-computed-secret-0010', { kind: 'computed' } as Auth, { authorization: 'Sig sig-value-000000009' }));
    expect([...forms]).to.have.members(['sk-computed-secret-0010', 'Sig sig-value-000000009', 'Sig%20sig-value-000000009', 'sig-value-000000009']);
  });

  it('nothing sent upstream yet: the secret alone', () => {
    const forms = credentialForms(context('sk-not-sent-secret-0011', { kind: 'header', header: 'x-api-key' } as Auth, undefined));
    expect([...forms]).to.deep.equal(['sk-not-sent-secret-0011']);
  });

  it('a credential in the query: the sent headers are not credentials', () => {
    const forms = credentialForms(context('sk-query-secret-0004', { kind: 'query', parameter: 'key' } as Auth, { authorization: 'Bearer not-a-credential-here' }));
    expect([...forms]).to.deep.equal(['sk-query-secret-0004']);
  });

  it('the same secret with another signature sent: the new signature is searched for', () => {
    const secret = { reveal: () => 'sk-cached-secret-0005' };
    const first = credentialForms(context('', { kind: 'computed' } as Auth, { authorization: 'Sig first-signature-0006' }, secret));
    const again = credentialForms(context('', { kind: 'computed' } as Auth, { authorization: 'Sig first-signature-0006' }, secret));
    expect(again).to.equal(first);
    const second = credentialForms(context('', { kind: 'computed' } as Auth, { authorization: 'Sig second-signature-0007' }, secret));
    expect([...second]).to.include('second-signature-0007');
    expect([...second]).to.not.include('first-signature-0006');
    const repeated = credentialForms(context('', { kind: 'computed' } as Auth, { authorization: ['Sig second-signature-0007', 'Sig third-signature-0008'] }, secret));
    expect([...repeated]).to.include('third-signature-0008');
  });
});

describe('response scrub: which answers are inspected, and how', () => {
  const forms = credentialFormsOf([KEY]);

  it('every non-2xx answer with a body while a credential was injected', () => {
    expect(inspectsBody(400, 'GET', forms)).to.equal(true);
    expect(inspectsBody(300, 'GET', forms)).to.equal(true);
    expect(inspectsBody(500, 'POST', forms)).to.equal(true);
    expect(inspectsBody(200, 'GET', forms)).to.equal(false);
    expect(inspectsBody(299, 'GET', forms)).to.equal(false);
    expect(inspectsBody(304, 'GET', forms)).to.equal(false);
    expect(inspectsBody(404, 'HEAD', forms)).to.equal(false);
    expect(inspectsBody(404, 'GET', [])).to.equal(false);
  });

  it('a compressed or short body is read whole; a long or streamed uncompressed one is masked as it passes', () => {
    expect(inspectionMode({ 'content-encoding': 'gzip', 'content-length': '100000' })).to.equal('whole');
    expect(inspectionMode({ 'content-encoding': 'gzip', 'content-type': 'text/event-stream' })).to.equal('whole');
    expect(inspectionMode({ 'content-length': '65537' })).to.equal('stream');
    expect(inspectionMode({ 'content-length': '65536' })).to.equal('whole');
    expect(inspectionMode({ 'content-type': 'text/event-stream; charset=utf-8' })).to.equal('stream');
    expect(inspectionMode({ 'content-type': 'application/json' })).to.equal('whole');
    expect(inspectionMode({})).to.equal('whole');
  });

  it('identity: no Content-Encoding, empty, or identity in any case', () => {
    expect(isIdentity({})).to.equal(true);
    expect(isIdentity({ 'content-encoding': '' })).to.equal(true);
    expect(isIdentity({ 'content-encoding': ' Identity ' })).to.equal(true);
    expect(isIdentity({ 'content-encoding': 'gzip' })).to.equal(false);
    expect(isIdentity({ 'content-encoding': 'identity, gzip' })).to.equal(false);
  });

  it('a client Accept-Encoding keeps only codings the gateway decodes', () => {
    expect(inspectableAcceptEncoding('gzip, zstd, BR;q=0.5, *')).to.equal('gzip, BR;q=0.5');
    expect(inspectableAcceptEncoding('gzip, zstd, BR;q=0.5, *')).to.equal('gzip, BR;q=0.5');
    expect(inspectableAcceptEncoding(['deflate', 'x-gzip'])).to.equal('deflate, x-gzip');
    expect(inspectableAcceptEncoding('zstd')).to.equal('identity');
    expect(inspectableAcceptEncoding('compress, *;q=0')).to.equal('identity');
  });
});

describe('response scrub: an error body read whole', () => {
  const forms = credentialFormsOf([KEY, `Bearer ${KEY}`]);
  const body = (text: string) => Buffer.from(text, 'utf8');
  const leaked = `{"error":"bad key ${KEY}"}`;
  const redactedText = '{"error":"bad key REDACTED"}';

  function headersFor(encoding?: string): IncomingHttpHeaders {
    return {
      ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
      'content-length': '999', 'content-md5': 'x', digest: 'x', 'content-digest': 'x', 'repr-digest': 'x', etag: '"x"', 'content-type': 'application/json',
    };
  }

  function expectRedacted(raw: Buffer, encoding: string | undefined, expected = redactedText): void {
    const headers = headersFor(encoding);
    const result = redactErrorBody(raw, headers, forms);
    expect(result.kind, String(encoding)).to.equal('redacted');
    const out = (result as { body: Buffer }).body;
    expect(out.toString('utf8')).to.equal(expected);
    expect(headers).to.deep.equal({ 'content-length': String(out.length), 'content-type': 'application/json' });
  }

  it('a clean body passes as it came, headers untouched', () => {
    const headers = headersFor();
    expect(redactErrorBody(body('{"error":"bad request"}'), headers, forms)).to.deep.equal({ kind: 'clean' });
    expect(headers).to.deep.equal(headersFor());
  });

  it('the credential is redacted, and every header describing the provider bytes goes', () => {
    expectRedacted(body(leaked), undefined);
    expectRedacted(body(leaked), 'identity');
    expectRedacted(body(`{"error":"Bearer ${KEY}"}`), undefined, '{"error":"REDACTED"}');
  });

  it('every coding the gateway asks for is decoded, in any case', () => {
    expectRedacted(zlib.gzipSync(body(leaked)), 'gzip');
    expectRedacted(zlib.gzipSync(body(leaked)), 'x-gzip');
    expectRedacted(zlib.gzipSync(body(leaked)), ' GZIP ');
    expectRedacted(zlib.deflateSync(body(leaked)), 'deflate');
    expectRedacted(zlib.brotliCompressSync(body(leaked)), 'br');
  });

  it('stacked codings are undone last first, up to four', () => {
    expectRedacted(zlib.brotliCompressSync(zlib.gzipSync(body(leaked))), 'gzip, br');
    expectRedacted(zlib.deflateSync(zlib.gzipSync(body(leaked))), 'gzip, identity, deflate');
    const four = zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(body(leaked)))));
    expectRedacted(four, 'gzip, gzip, gzip, gzip');
    expectRedacted(four, 'gzip, identity, gzip,, gzip, gzip');
  });

  it('an unknown, broken, too deeply stacked or over 1 MiB inflated coding: the body is withheld', () => {
    for (const [raw, encoding] of [
      [body(leaked), 'zstd'],
      [body(leaked), 'gzip'],
      [zlib.gzipSync(body(leaked)), 'deflate'],
      [zlib.gzipSync(body(leaked)), 'br'],
      [zlib.brotliCompressSync(body(leaked)), 'zstd'],
      [zlib.gzipSync(Buffer.concat([body(leaked), Buffer.alloc(2 * 1024 * 1024, 0x20)])), 'gzip'],
      [zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(body(leaked)))))), 'gzip, gzip, gzip, gzip, gzip'],
    ] as Array<[Buffer, string]>) {
      const headers = headersFor(encoding);
      expect(redactErrorBody(raw, headers, forms), encoding).to.deep.equal({ kind: 'withheld' });
      expect(headers['content-length'], encoding).to.equal('0');
      expect(headers['content-encoding'], encoding).to.equal(undefined);
    }
    const headers: IncomingHttpHeaders = { 'content-length': '5', etag: '"x"', 'content-encoding': 'gzip' };
    withheldBody(headers);
    expect(headers).to.deep.equal({ 'content-length': '0' });
  });

  it('a compressed body inside the declared one (gzip or zlib, nested) is decoded too', () => {
    expectRedacted(zlib.gzipSync(body(leaked)), undefined);
    expectRedacted(zlib.deflateSync(body(leaked)), undefined);
    expectRedacted(zlib.gzipSync(zlib.deflateSync(body(leaked))), 'identity');
    expectRedacted(zlib.gzipSync(zlib.gzipSync(body(leaked))), 'gzip');
  });

  it('a body starting like a compressed one that does not decode, inflates past 1 MiB or nests too deep is withheld; a short one is searched as it is', () => {
    // Too short to be a compressed stream: searched as text.
    expect(redactErrorBody(Buffer.from([0x1f, 0x8b]), headersFor(), forms)).to.deep.equal({ kind: 'clean' });
    expect(redactErrorBody(Buffer.from('{"error":"clean"}'), headersFor(), forms)).to.deep.equal({ kind: 'clean' });
    for (const [name, raw] of [
      ['zlib magic that is not zlib', Buffer.from([0x78, 0x01, 0x02, 0x03])],
      ['gzip magic that is not gzip', Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01])],
      // The key behind 2 MiB of padding, nested in an uncompressed answer: the client could inflate it, the gateway stops at 1 MiB.
      ['a nested bomb', zlib.gzipSync(Buffer.concat([Buffer.alloc(2 * 1024 * 1024, 0x20), body(leaked)]))],
      // Four nested layers (none declared): the gateway undoes three.
      ['four nested layers', zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(body(leaked)))))],
    ] as Array<[string, Buffer]>) {
      const headers = headersFor();
      expect(redactErrorBody(raw, headers, forms), name).to.deep.equal({ kind: 'withheld' });
      expect(headers['content-length'], name).to.equal('0');
    }
    // Three nested layers are undone and redacted.
    expectRedacted(zlib.gzipSync(zlib.gzipSync(zlib.gzipSync(body(leaked)))), undefined);
  });

  it('JSON \\uXXXX and \\/ escapes of the credential are undone; other escapes are kept as they were', () => {
    const escaped = [...KEY].map((character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    expectRedacted(body(`{"error":"bad key ${escaped}"}`), undefined);
    expectRedacted(body(`{"error":"bad key ${KEY.replace('/', '\\/')}"}`), undefined);
    expectRedacted(body(`{"error":"bad key ${KEY.replace('/', '\\u002f')}"}`), undefined);
    // Quote, backslash, controls and DEL stay escaped (the JSON stays valid); a space is undone like any printable.
    const kept = '\\u0022\\u005c\\u000a\\u001f\\u007f';
    expectRedacted(body(`{"error":"${kept} Bearer\\u0020${KEY}"}`), undefined, `{"error":"${kept} REDACTED"}`);
    expect(JSON.parse(`{"error":"${kept} REDACTED"}`).error).to.equal('"\\\n\u001f\u007f REDACTED');
  });

  it('the bytes around the credential are sent exactly as they came (not re-encoded)', () => {
    const raw = Buffer.concat([Buffer.from('{"error":"clé '), Buffer.from([0xff, 0xfe]), Buffer.from(` ${KEY}"}`)]);
    const result = redactErrorBody(raw, headersFor(), forms) as { kind: string; body: Buffer };
    expect(result.kind).to.equal('redacted');
    expect(result.body.equals(Buffer.concat([Buffer.from('{"error":"clé '), Buffer.from([0xff, 0xfe]), Buffer.from(' REDACTED"}')]))).to.equal(true);
  });

  it('the base64 text of the credential is redacted from its first character on', () => {
    const encoded = base64Around(KEY, '');
    const result = redactErrorBody(body(`{"echo":"${encoded}"}`), headersFor(), forms) as { kind: string; body: Buffer };
    const whole = 4 * Math.floor(Buffer.byteLength(KEY) / 3);
    expect(result.body.toString('latin1')).to.equal(`{"echo":"REDACTED${encoded.slice(whole)}"}`);
  });

  it('a base64 form of the credential in the body is redacted', () => {
    const encoded = base64Around(KEY, 'xy');
    const result = redactErrorBody(body(`{"echo":"${encoded}"}`), headersFor(), forms) as { kind: string; body: Buffer };
    expect(result.kind).to.equal('redacted');
    for (const form of forms.encoded!) expect(result.body.toString('latin1')).to.not.include(form);
  });
});

describe('response scrub: a long body masked as it streams', () => {
  const forms = credentialFormsOf([KEY]);

  function run(chunks: Buffer[], redactor = new StreamRedactor(forms)): Buffer | null {
    const out: Buffer[] = [];
    for (const chunk of chunks) {
      const piece = redactor.push(chunk);
      if (piece === null) return null;
      out.push(piece);
    }
    const rest = redactor.flush();
    if (rest === null) return null;
    out.push(rest);
    return Buffer.concat(out);
  }

  it('the credential cut between chunks, byte by byte, is masked in place with the length kept', () => {
    const text = `data: {"error":"${KEY}"} é\n`;
    const raw = Buffer.from(text, 'utf8');
    const sent = run([...raw].map((byte) => Buffer.from([byte])));
    expect(sent).to.not.equal(null);
    expect(sent!.length).to.equal(raw.length);
    expect(sent!.toString('utf8')).to.equal(`data: {"error":"${'REDACTED'.repeat(4).slice(0, KEY.length)}"} é\n`);
  });

  it('a body with no credential passes byte for byte, escapes and all', () => {
    const raw = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`{"error":"caf\\u00e9 \\/ plain ${'é'.repeat(400)}"} é`, 'utf8')]);
    expect(run([raw.subarray(0, 5), raw.subarray(5)])!.equals(raw)).to.equal(true);
  });

  it('after the end the redactor holds nothing', () => {
    const redactor = new StreamRedactor(forms);
    redactor.push(Buffer.from('tail text'));
    expect(redactor.flush()!.toString()).to.equal('tail text');
    expect(redactor.flush()!.length).to.equal(0);
  });

  it('no credential: nothing to mask, nothing held back', () => {
    const redactor = new StreamRedactor(credentialFormsOf([]));
    expect(redactor.push(Buffer.from('abc'))!.toString()).to.equal('abc');
    expect(redactor.flush()!.length).to.equal(0);
  });

  it('the credential only visible once escapes are undone: the stream is cut', () => {
    expect(run([Buffer.from(`{"error":"${KEY.replace('/', '\\/')}"}`)])).to.equal(null);
  });
});
