/**
 * The path rules one function at a time, each refusal by its typed `reason` (docs/reference/errors.md):
 * checkProviderPath's unsafe forms, parseProxyRoute's route shape, matchesPrefix's wildcards and its `:` suffix rule,
 * and the path-model functions (pathModelOf, applyPolicyToPath) on a manifest written for the purpose: decoding
 * rounds, version-root views, aliases split over captures. The end-to-end behaviour through a gateway is in
 * unsafe-paths.test.ts and path-model-policy.test.ts.
 */
import { expect } from 'chai';
import { GatewayError, type ProviderManifest } from '../../core/contract';
import { applyPolicyToPath, compilePathModel, pathModelOf } from '../../core/pipeline/path-model';
import { checkProviderPath, hostMatches, joinUpstreamUrl, matchesPrefix, parseProxyRoute } from '../../core/pipeline/proxy-path';
import { refusal } from '../support/refusals';

describe('checkProviderPath: each unsafe form refused with its own reason', () => {
  const cases: ReadonlyArray<[string, string]> = [
    ['chat%00x', 'control_character'],
    ['chat\u0085x', 'control_character'],
    ['a%5Cb', 'backslash'],
    ['a@b/c', 'at_sign'],
    ['a@b', 'at_sign'],
    ['a//b', 'empty_segment'],
    ['/a', 'absolute_path'],
    ['http:x', 'url_scheme'],
    ['a/http%3A%2F%2Fx', 'empty_segment'],
    ['a/../b', 'dot_segment'],
    ['a/.', 'dot_segment'],
    ['a/..;x/b', 'matrix_parameter'],
    ['a/.;x', 'matrix_parameter'],
    ['a/;x/b', 'matrix_parameter'],
    ['a#b', 'fragment'],
    ['a%zz', 'malformed_encoding'],
    ['a%25zz', 'malformed_encoding'],
    // Four rounds of encoding around a dot segment: the fourth is never decoded, the path is refused as nested.
    ['a/%2525252e%2525252e/b', 'nested_encoding'],
    ['a/%25252525', 'nested_encoding'],
  ];
  for (const [path, reason] of cases) {
    it(`${JSON.stringify(path)}: unsafe_path_${reason}`, () => {
      const error = refusal(() => checkProviderPath(path));
      expect(error.type).to.equal('invalidRequest');
      expect(error.reason).to.equal(`unsafe_path_${reason}`);
      expect(error.status).to.equal(400);
    });
  }

  it('passes "@" below the first segment, ";" on an ordinary segment, and two levels of encoding', () => {
    for (const path of ['models/claude@20250514:rawPredict', 'a/b;c', 'a/%2541b', 'a/b@', 'x;y/z']) {
      expect(checkProviderPath(path), path).to.equal(path);
    }
  });
});

describe('parseProxyRoute: the route shape before the provider path', () => {
  it('splits slug, version, provider path and query; an empty provider path is allowed', () => {
    expect(parseProxyRoute('/openai/v1/chat/completions?a=1')).to.deep.equal({ slug: 'openai', version: 'v1', providerPath: 'chat/completions', query: 'a=1' });
    expect(parseProxyRoute('/google-translate/v2?q=1')).to.deep.equal({ slug: 'google-translate', version: 'v2', providerPath: '', query: 'q=1' });
    expect(parseProxyRoute('/openai/v1/')).to.deep.equal({ slug: 'openai', version: 'v1', providerPath: '', query: '' });
  });

  const refused: ReadonlyArray<[string, string, string, number]> = [
    ['/openai', 'invalidRequest', 'malformed_route', 404],
    ['openai/v1/x', 'invalidRequest', 'malformed_route', 404],
    ['/openai?v1/x', 'invalidRequest', 'malformed_route', 404],
    ['/OpenAI/v1/x', 'providerNotFound', 'bad_slug', 404],
    ['//v1/x', 'providerNotFound', 'bad_slug', 404],
    ['/openai/V1/x', 'providerNotFound', 'bad_version', 404],
    ['/openai//x', 'providerNotFound', 'bad_version', 404],
    ['/openai/v1/x?a=1#frag', 'invalidRequest', 'unsafe_path_fragment', 400],
    ['/openai/v1/x?a=\u0001', 'invalidRequest', 'unsafe_path_control_character', 400],
    ['/openai/v1/../x', 'invalidRequest', 'unsafe_path_dot_segment', 400],
  ];
  for (const [rest, type, reason, status] of refused) {
    it(`${JSON.stringify(rest)}: ${type} ${reason}`, () => {
      const error = refusal(() => parseProxyRoute(rest));
      expect([error.type, error.reason, error.status]).to.deep.equal([type, reason, status]);
    });
  }

  it('the same text parsed twice gives the same route; a refusal is refused again', () => {
    expect(parseProxyRoute('/openai/v1/models')).to.equal(parseProxyRoute('/openai/v1/models'));
    expect(refusal(() => parseProxyRoute('/openai/v1/a/../b')).reason).to.equal('unsafe_path_dot_segment');
    expect(refusal(() => parseProxyRoute('/openai/v1/a/../b')).reason).to.equal('unsafe_path_dot_segment');
  });
});

describe('matchesPrefix: whole segments, wildcards and the ":" suffix of the last segment', () => {
  const table: ReadonlyArray<[string, string, boolean]> = [
    ['models', 'models', true],
    ['models/x', 'models', true],
    ['models:list', 'models', true],
    ['modelsx', 'models', false],
    ['audio/speech', 'audio/', true],
    ['audio', 'audio/', false],
    // `*` is exactly one non-empty segment.
    ['projects/p/models', 'projects/*/models', true],
    ['projects//models', 'projects/*/models', false],
    ['projects/p/q/models', 'projects/*/models', false],
    ['projects/p', 'projects/*/models', false],
    // The ":" suffix only on the last segment of a prefix without a trailing slash.
    ['projects/p/models:list', 'projects/*/models', true],
    ['projects/p/models:list/x', 'projects/*/models', true],
    ['a/x/b:z/c', 'a/*/b/c', false],
    ['a/x/b/c:z', 'a/*/b/c', true],
    ['a/x/b/c', 'a/*/b/', true],
    ['a/x/b', 'a/*/b/', false],
    ['a/x/b:z/c', 'a/*/b/', false],
    // A `*` inside a segment: a non-empty run of that one segment.
    ['models/gemini-2.0:generateContent', 'models/*:generateContent', true],
    ['models/:generateContent', 'models/*:generateContent', false],
    ['models/gemini:countTokens', 'models/*:generateContent', false],
    ['models/a.b:generateContent', 'models/*:generateContent', true],
    ['models/ab:generateContentX', 'models/*:generateContent', false],
    ['v1/x.y', 'v1/x.*', true],
    ['v1/xzy', 'v1/x.*', false],
  ];
  for (const [path, prefix, expected] of table) {
    it(`${JSON.stringify(path)} under ${JSON.stringify(prefix)}: ${expected}`, () => {
      expect(matchesPrefix(path, prefix)).to.equal(expected);
    });
  }
});

describe('path models: pathModelOf and applyPolicyToPath (unit)', () => {
  /**
   * A manifest written for these tests. Versions: `v1` and `v1-run` below the base URL's `/v1` and `/v1/run`, `root`
   * at the base URL itself (a version mapped to a parent path), `other` on another host.
   */
  const manifest = {
    slug: 'example',
    baseUrl: 'https://api.example.com',
    versions: { v1: '/v1', 'v1-run': '/v1/run', root: '', other: 'https://other.example.com' },
    pathModels: [
      { methods: ['GET'], path: 'engines/{model}', doc: 'test' },
      { methods: ['POST'], path: 'models/{model}:generate', doc: 'test' },
      { methods: ['POST'], path: 'projects/{project}/models/{model}:predict', doc: 'test' },
      { methods: ['POST'], path: 'model/{model}/converse', doc: 'test' },
      { methods: ['POST'], path: 'run/{model}/{model}', versions: ['v1'], modelPrefix: '@cf/', doc: 'test' },
      { methods: ['POST'], path: 'stream/{model}/**', versions: ['v1'], doc: 'test' },
      { methods: ['POST'], path: '{model}/chat', versions: ['v1'], doc: 'test' },
      { methods: ['POST'], path: 'stream/{model}', versions: ['v1-run'], doc: 'test' },
      { methods: ['POST'], path: 'v1/run/{model}', versions: ['root'], doc: 'test' },
    ],
  } as unknown as ProviderManifest;

  it('pathModelOf names the model a declared route holds, by method and version, with the prefix', () => {
    expect(pathModelOf(manifest, 'post', 'v1', 'models/gem-2:generate')).to.equal('gem-2');
    expect(pathModelOf(manifest, 'POST', 'v1', 'MODELS/gem-2:generate'), 'literals match in any case').to.equal('gem-2');
    expect(pathModelOf(manifest, 'POST', 'v1', 'models/gem-2:GENERATE'), 'around the model too').to.equal('gem-2');
    expect(pathModelOf(manifest, 'POST', 'v1', 'models/gem-2:generate/'), 'a trailing slash').to.equal('gem-2');
    expect(pathModelOf(manifest, 'GET', 'v1', 'models/gem-2:generate'), 'another method').to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'models/gem-2:generateX')).to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'models/:generate'), 'an empty model').to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'projects/acme-1/models/palm:predict'), 'other placeholders match anything').to.equal('palm');
    expect(pathModelOf(manifest, 'POST', 'v1', 'projects/acme/1/models/palm:predict')).to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'model/arn%3Aaws%3Ab%2Fc/converse'), 'decoded once, segment by segment').to.equal('arn:aws:b/c');
    expect(pathModelOf(manifest, 'POST', 'v1', 'run/meta/llama-3')).to.equal('@cf/meta/llama-3');
    expect(pathModelOf(manifest, 'POST', 'root', 'run/meta/llama-3'), 'declared for v1 only').to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'run/meta')).to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'run/meta/llama/x'), 'no rest: the segment count is exact').to.equal(undefined);
    expect(pathModelOf(manifest, 'POST', 'v1', 'stream/m1/a/b'), 'a rest takes more segments').to.equal('m1');
    expect(pathModelOf(manifest, 'POST', 'v1', 'stream/m1'), 'and none').to.equal('m1');
    expect(pathModelOf(manifest, 'POST', 'v1', 'stream'), 'but not fewer').to.equal(undefined);
    expect(pathModelOf(manifest, 'GET', 'v1', 'engines/davinci')).to.equal('davinci');
    expect(pathModelOf(manifest, 'GET', 'v1', 'engines/%zz'), 'a segment that does not decode names nothing').to.equal(undefined);
  });

  /** The model check as model-policy.ts passes it: `allow` listed, `aliases` replaced, anything else refused. */
  function policy(allow: readonly string[], aliases: Record<string, string> = {}): (named: string) => string {
    return (named) => {
      if (aliases[named] !== undefined) return aliases[named]!;
      if (allow.includes(named)) return named;
      throw new GatewayError('invalidRequest', `not allowed: ${named}`, { reason: 'model_not_allowed' });
    };
  }
  const apply = (version: string, path: string, check: (named: string) => string, method = 'POST') => applyPolicyToPath(manifest, method, version, path, check);
  const refused = (version: string, path: string, check: (named: string) => string) => refusal(() => apply(version, path, check)).reason;

  it('an allowed model passes the path through as sent; one outside the list is refused', () => {
    expect(apply('v1', 'models/gem-2:generate?x', policy(['gem-2:generate?x', 'gem-2']))).to.equal('models/gem-2:generate?x');
    expect(refused('v1', 'models/gem-3:generate', policy(['gem-2']))).to.equal('model_not_allowed');
    expect(apply('v1', 'models/gem-3:generate', policy(['gem-2']), 'GET'), 'a method no route declares').to.equal('models/gem-3:generate');
    expect(apply('v1', 'engines/%zz', policy([]), 'GET'), 'a path that does not decode is left to the path rules').to.equal('engines/%zz');
  });

  it('an alias is replaced in the segment that named it, the rest of the segment and the path kept', () => {
    expect(apply('v1', 'models/fast:generate', policy([], { fast: 'gem-2 pro' }))).to.equal('models/gem-2%20pro:generate');
    expect(apply('v1', 'projects/acme/models/fast:predict', policy([], { fast: 'palm' }))).to.equal('projects/acme/models/palm:predict');
  });

  it('one capture takes the whole model, a "/" in it encoded (an ARN); several split on "/" into their segments', () => {
    expect(apply('v1', 'model/fast/converse', policy([], { fast: 'arn:aws:bedrock:x/y' }))).to.equal('model/arn:aws:bedrock:x%2Fy/converse');
    expect(apply('v1', 'run/a/b', policy([], { '@cf/a/b': '@cf/meta/llama-3' }))).to.equal('run/meta/llama-3');
  });

  it('an alias that cannot be written into the captured segments is refused', () => {
    expect(refused('v1', 'run/a/b', policy([], { '@cf/a/b': 'other/meta/llama' })), 'without the route\'s prefix').to.equal('model_not_allowed');
    expect(refused('v1', 'run/a/b', policy([], { '@cf/a/b': '@cf/one/two/three' })), 'more parts than captures').to.equal('model_not_allowed');
    expect(refused('v1', 'run/a/b', policy([], { '@cf/a/b': '@cf/llama' })), 'fewer parts').to.equal('model_not_allowed');
    expect(refused('v1', 'run/a/b', policy([], { '@cf/a/b': '@cf/meta/' })), 'an empty part').to.equal('model_not_allowed');
    expect(refused('v1', 'model/fast/converse', policy([], { fast: '' })), 'an empty model').to.equal('model_not_allowed');
  });

  it('an alias that makes an unsafe path is refused by the path rules', () => {
    expect(refused('v1', 'model/fast/converse', policy([], { fast: '..' }))).to.equal('unsafe_path_dot_segment');
  });

  it('every decoded form is checked: a model only another form names is refused, not rewritten', () => {
    // Decoded segment by segment the path is one segment; decoded whole it is models/fast:generate.
    expect(refused('v1', 'models%2Ffast:generate', policy(['models/fast:generate'], { fast: 'gem-2' }))).to.equal('model_not_allowed');
    expect(refused('v1', 'models%252Fgem-3:generate', policy(['gem-2']))).to.equal('model_not_allowed');
    // A form that does not decode at some round ends the rounds; the forms before it are still checked.
    expect(apply('v1', 'models/gem-2:generate%2525zz', policy(['gem-2']))).to.equal('models/gem-2:generate%2525zz');
    expect(() => apply('v1', 'models/x%2525:generate', policy(['x%25', 'x%', 'x%2525']))).not.to.throw();
  });

  it('a model the first form rewrote is not refused again when another form names it', () => {
    expect(apply('v1', 'stream/fast/a%2Fb', policy([], { fast: 'gem-2' }))).to.equal('stream/gem-2/a%2Fb');
  });

  it('a version mapped to a parent path: the route is checked below every declared version root on its host', () => {
    // `root` is the base URL itself: root/v1/run/... is v1's run/...
    expect(refused('root', 'v1/run/a/b', policy(['@cf/x/y']))).to.equal('model_not_allowed');
    expect(refused('root', 'V1/run/a/b', policy(['@cf/x/y'])), 'version prefixes compared in any case').to.equal('model_not_allowed');
    expect(apply('root', 'v1/run/a/b', policy(['@cf/a/b']))).to.equal('v1/run/a/b');
    // The alias lands on the request's own segments, shifted by the version prefix it stands below.
    expect(apply('root', 'v1/run/a/b', policy([], { '@cf/a/b': '@cf/meta/llama-3' }))).to.equal('v1/run/meta/llama-3');
    // v1-run's own prefix is /v1/run: seen below v1, its a/b is v1's run/a/b, shifted back by one segment.
    expect(apply('v1-run', 'a/b', policy(['@cf/a/b']))).to.equal('a/b');
    expect(refused('v1-run', 'a/b', policy(['@cf/x/y']))).to.equal('model_not_allowed');
    expect(apply('v1-run', 'a/b', policy([], { '@cf/a/b': '@cf/x/y' }))).to.equal('x/y');
    // Below v1, v1-run's "chat" is run/chat: the model "run" is part of the version, which an alias cannot rewrite.
    // (Below root it is v1/run/chat, which names the model "chat".)
    expect(apply('v1-run', 'chat', policy(['run', 'chat']))).to.equal('chat');
    expect(refused('v1-run', 'chat', policy(['walk', 'chat']))).to.equal('model_not_allowed');
    expect(refused('v1-run', 'chat', policy(['chat'], { run: 'walk' }))).to.equal('model_not_allowed');
    // A version below another one sees the host root's routes too.
    expect(refused('v1', 'run/x', policy(['y']))).to.equal('model_not_allowed');
    expect(apply('v1', 'run/x', policy(['x']))).to.equal('run/x');
  });

  it('a view needs the whole version prefix; versions on another host are not views', () => {
    // Below `root`, v1/walk/... is v1's walk/...; it is not under v1-run (/v1/run), which shares only its first segment.
    expect(apply('root', 'v1/walk/stream/m', policy([]))).to.equal('v1/walk/stream/m');
    expect(refused('root', 'v1/run/stream/m', policy([])), 'under v1-run it is its stream/m').to.equal('model_not_allowed');
    expect(apply('root', 'v1', policy([]))).to.equal('v1');
    expect(apply('other', 'v1/run/a/b', policy([])), 'another host: v1 is not a view').to.equal('v1/run/a/b');
  });
});

describe('joinUpstreamUrl and hostMatches (unit)', () => {
  it('a joined URL that leaves the base path is refused (escapes_base), whatever the provider path or version prefix', () => {
    for (const [prefix, path] of [['/v1', '../x'], ['/v1', 'a/../../x'], ['/v1/..', ''], ['/v1', '..']]) {
      const error = refusal(() => joinUpstreamUrl('https://api.example.com/base', prefix!, path!, ''));
      expect(error.reason, `${prefix} ${path}`).to.equal('unsafe_path_escapes_base');
    }
    expect(joinUpstreamUrl('https://api.example.com/base', '/v1', '', '')).to.deep.equal({ origin: 'https://api.example.com', path: '/base/v1' });
    expect(joinUpstreamUrl('https://api.example.com/base', '/v1', 'a/./b', '')).to.deep.equal({ origin: 'https://api.example.com', path: '/base/v1/a/./b' });
  });

  it('a path joined before answers with the query of this request, not the one it was first joined with', () => {
    expect(joinUpstreamUrl('https://api.example.com', '/v1', 'chat', 'a=1').path).to.equal('/v1/chat?a=1');
    expect(joinUpstreamUrl('https://api.example.com', '/v1', 'chat', 'bb=22').path).to.equal('/v1/chat?bb=22');
    expect(joinUpstreamUrl('https://api.example.com', '/v1', 'chat', '').path).to.equal('/v1/chat');
    expect(joinUpstreamUrl('https://api.example.com', '/v1', 'chat', 'c').path).to.equal('/v1/chat?c');
  });

  it('a leading "*." matches one label or several', () => {
    expect(hostMatches('r.openai.azure.com', '*.openai.azure.com')).to.equal(true);
    expect(hostMatches('a.b.openai.azure.com', '*.openai.azure.com')).to.equal(true);
    expect(hostMatches('openai.azure.com', '*.openai.azure.com')).to.equal(false);
  });

  it('compilePathModel refuses a malformed pattern', () => {
    expect(() => compilePathModel({ methods: ['POST'], path: 'a//{model}', doc: 'test' })).to.throw('path model pattern "a//{model}"');
    expect(() => compilePathModel({ methods: ['POST'], path: 'models/{model}:x', doc: 'test' })).not.to.throw();
  });
});
