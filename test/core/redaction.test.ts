/**
 * core/security on its own: which query parameters and headers are redacted (every listed name, the suffix rule, the
 * spellings a server would still read as the same name), the token formats and their hashes, the constant-time digest
 * comparison, and the client address behind a trusted proxy. The same code behind a gateway: secret-leaks.test.ts,
 * access-log-query-keys.test.ts, echo-paths.test.ts.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { REDACTED, redactHeaders, redactUrl } from '../../core/security/redact';
import { TOKEN_PREFIXES, digestsEqual, generateId, generateToken, hashToken, isWellFormedToken, randomBase62, tokenHint } from '../../core/security/tokens';
import { clientAddress } from '../../core/security/client-address';

describe('redaction of URLs: every credential parameter, however spelled', () => {
  const listed = [
    'key', 'api_key', 'api-key', 'apikey', 'access_token', 'access-token', 'accesstoken', 'development_token', 'development-token', 'developmenttoken',
    'token', 'auth', 'authorization', 'secret', 'password', 'sig', 'signature', 'x-amz-signature', 'x-amz-credential', 'x-amz-security-token', 'code',
  ];

  it('redacts each listed name, in any case', () => {
    for (const name of listed) {
      expect(redactUrl(`/p?${name}=v1`), name).to.equal(`/p?${name}=${REDACTED}`);
      expect(redactUrl(`/p?${name.toUpperCase()}=v1`), name).to.equal(`/p?${name.toUpperCase()}=${REDACTED}`);
    }
  });

  it('redacts names ending in key, token, secret, password or signature after a separator, and nothing else', () => {
    for (const name of ['x-goog-api-key', 'x_apikey', 'client_secret', 'id_token', 'refresh.token', 'db-password', 'url_signature', 'my.key', 'user_api-key']) {
      expect(redactUrl(`/p?${name}=v`), name).to.equal(`/p?${name}=${REDACTED}`);
    }
    // Names that only contain a listed word, or end in one without a separator, are kept: they are not credentials.
    for (const name of ['monkey', 'keyword', 'tokens', 'authority', 'codec', 'signatures', 'unsigned', 'xkey', 'q', 'secretary', 'passwords', 'sigma', 'keys']) {
      expect(redactUrl(`/p?${name}=v`), name).to.equal(`/p?${name}=v`);
    }
  });

  it('redacts the spellings a server decodes to a listed name: percent-encoded (up to three times), +, control characters, [] suffixes, spaces', () => {
    const spellings: Array<[string, string]> = [
      ['%6Bey', 'key'],
      ['%256Bey', 'double'],
      ['%25256Bey', 'triple'],
      ['key%00', 'NUL'],
      ['k%1Fey', 'unit separator'],
      ['key%7F', 'DEL'],
      ['key[]', 'array'],
      ['key[0]', 'indexed'],
      ['%20key%20', 'spaces'],
      ['+key+', 'plus as space'],
      ['api%5Fkey', 'encoded underscore'],
      ['client%5Fsecret', 'encoded suffix'],
    ];
    for (const [name, label] of spellings) expect(redactUrl(`/p?${name}=v`), label).to.equal(`/p?${name}=${REDACTED}`);
    // A name that does not decode is read as it is; a [] in the middle is not a suffix.
    expect(redactUrl('/p?%E0%A4%A=v')).to.equal('/p?%E0%A4%A=v');
    expect(redactUrl('/p?%ZZkey=v')).to.equal('/p?%ZZkey=v');
    expect(redactUrl('/p?ke[]y=v')).to.equal('/p?ke[]y=v');
    // + is a space, not nothing: `to+ken` reads as `to ken`, which is no credential name.
    expect(redactUrl('/p?to+ken=v')).to.equal('/p?to+ken=v');
    // Decoded four times it would be `key`, but a server decodes at most as often as redaction does.
    expect(redactUrl('/p?%2525256Bey=v')).to.equal('/p?%2525256Bey=v');
  });

  it('splits pairs on & and ; keeps the rest byte for byte, and redacts a bare name too', () => {
    expect(redactUrl('/p?a=1;key=s&b=2;;&token')).to.equal(`/p?a=1;key=${REDACTED}&b=2;;&token=${REDACTED}`);
    expect(redactUrl('https://h.example/p/q?alt=sse&x=a=b')).to.equal('https://h.example/p/q?alt=sse&x=a=b');
    expect(redactUrl('/p?key=a=b')).to.equal(`/p?key=${REDACTED}`);
    expect(redactUrl('/p/key=1')).to.equal('/p/key=1');
    expect(redactUrl('/p?')).to.equal('/p?');
    expect(redactUrl('?key=1')).to.equal(`?key=${REDACTED}`);
  });
});

describe('redaction of headers', () => {
  it('redacts every credential header and any name containing key, token or secret; keeps the others as they are', () => {
    const sensitive = [
      'authorization', 'Proxy-Authorization', 'cookie', 'set-cookie', 'x-api-key', 'api-key', 'xi-api-key', 'x-goog-api-key', 'X-Subscription-Token',
      'tollgate-app-token', 'tollgate-device-token', 'tollgate-assertion', 'x-amz-security-token', 'x-custom-key', 'keyring', 'my-token-id', 'client-secret-2',
    ];
    const kept = { 'content-type': 'application/json', 'x-request-id': 'r1', 'user-agent': 'ua', 'x-authorization-hint': 'h', 'cookies-policy': 'c', accept: ['a', 'b'] };
    const headers: Record<string, unknown> = { ...kept };
    for (const name of sensitive) headers[name] = 'secret-value';
    const out = redactHeaders(headers);
    for (const name of sensitive) expect(out[name], name).to.equal(REDACTED);
    for (const [name, value] of Object.entries(kept)) expect(out[name], name).to.equal(value);
    expect(Object.keys(out)).to.deep.equal(Object.keys(headers));
    // The input is not changed.
    expect(headers.authorization).to.equal('secret-value');
  });
});

describe('issued tokens and their hashes', () => {
  it('issues a prefix and 32 base62 characters, matching only its own kind', () => {
    for (const [kind, prefix] of Object.entries(TOKEN_PREFIXES) as Array<[keyof typeof TOKEN_PREFIXES, string]>) {
      const token = generateToken(kind);
      expect(token).to.match(new RegExp(`^${prefix}[0-9A-Za-z]{32}$`));
      expect(isWellFormedToken(kind, token)).to.equal(true);
      for (const other of Object.keys(TOKEN_PREFIXES) as Array<keyof typeof TOKEN_PREFIXES>) if (other !== kind) expect(isWellFormedToken(other, token)).to.equal(false);
      expect(isWellFormedToken(kind, `${token}x`)).to.equal(false);
      expect(isWellFormedToken(kind, token.slice(0, -1))).to.equal(false);
      expect(isWellFormedToken(kind, `${token.slice(0, -1)}-`)).to.equal(false);
      expect(isWellFormedToken(kind, ` ${token}`)).to.equal(false);
    }
    expect(TOKEN_PREFIXES).to.deep.equal({ app: 'at_', development: 'dt_', admin: 'ak_' });
  });

  it('draws every base62 character, uniformly, and exactly as many as asked', () => {
    expect(randomBase62(0)).to.equal('');
    expect(randomBase62(1)).to.have.length(1);
    const sample = randomBase62(62 * 1000);
    expect(sample).to.have.length(62 * 1000).and.match(/^[0-9A-Za-z]+$/);
    const counts = new Map<string, number>();
    for (const character of sample) counts.set(character, (counts.get(character) ?? 0) + 1);
    expect(counts.size).to.equal(62);
    // 1000 expected each (standard deviation about 31). Keeping the bytes 248..255 that rejection drops would give
    // '0'..'7' 5/4 of the others (1250 each); keeping 248 alone would give '0' 1250.
    const low = [...'01234567'].reduce((sum, character) => sum + counts.get(character)!, 0);
    expect(low).to.be.within(8000 - 500, 8000 + 500);
    expect(counts.get('0')).to.be.below(1150);
    for (const [character, count] of counts) expect(count, character).to.be.within(800, 1200);
    const generated = new Set(Array.from({ length: 50 }, () => generateToken('app')));
    expect(generated.size).to.equal(50);
  });

  it('hashes to the lower-case hex SHA-256 of the whole token, and hints at its prefix and last four characters', () => {
    const token = 'at_0123456789abcdefghijABCDEFGHIJwxyz';
    expect(hashToken(token)).to.equal(createHash('sha256').update(token).digest('hex'));
    expect(tokenHint(token)).to.equal('at_…wxyz');
  });

  it('compares digests: equal only when the same non-empty bytes', () => {
    const a = hashToken('a');
    expect(digestsEqual(a, a)).to.equal(true);
    expect(digestsEqual(a, hashToken('b'))).to.equal(false);
    expect(digestsEqual(a, a.slice(0, 62))).to.equal(false);
    expect(digestsEqual('', '')).to.equal(false);
  });

  it('makes readable random identifiers', () => {
    expect(generateId('app')).to.match(/^app_[0-9A-Za-z]{16}$/);
    expect(generateId('app')).to.not.equal(generateId('app'));
  });
});

describe('the client address for per-address limits', () => {
  const request = (forwarded: string | string[] | undefined, remoteAddress: string | null = '10.0.0.1') =>
    ({ headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded }, socket: { remoteAddress: remoteAddress ?? undefined } }) as unknown as IncomingMessage;

  it('is the socket peer unless a trusted proxy is configured', () => {
    expect(clientAddress(request('203.0.113.9'), false)).to.equal('10.0.0.1');
    expect(clientAddress(request(undefined, null), false)).to.equal('unknown');
  });

  it('behind a trusted proxy, is the last X-Forwarded-For entry (the one the proxy appended)', () => {
    expect(clientAddress(request('198.51.100.7, 203.0.113.9'), true)).to.equal('203.0.113.9');
    expect(clientAddress(request(['198.51.100.7', '203.0.113.9 ,  ']), true)).to.equal('203.0.113.9');
    expect(clientAddress(request(' 203.0.113.9 '), true)).to.equal('203.0.113.9');
    // No usable entry: the socket peer.
    expect(clientAddress(request(' , '), true)).to.equal('10.0.0.1');
    expect(clientAddress(request(undefined), true)).to.equal('10.0.0.1');
  });
});
