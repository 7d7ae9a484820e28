/**
 * Route patterns and the route decision (core/pipeline/route-class.ts), unit by unit: what a pattern matches, what a
 * pattern may not contain, and the order deny > extra route > account route > allow-list.
 */
import { expect } from 'chai';
import { GatewayError, DEFAULT_APP_SETTINGS, type AppSettings } from '../../core/contract';
import { matchesPrefix } from '../../core/pipeline/proxy-path';
import { compileAccountRoutes, compileCredentialRoutes, compileRealtimeRoutes, compileRoutePattern, decideRoute, findCredentialRoute, findRealtimeRoute, normalizeForMatching, routePatternProblem, type RouteTable } from '../../core/pipeline/route-class';
import { versionRoots } from '../../core/pipeline/upstream-views';
import { ProviderRegistry } from '../../core/registry/provider-registry';
import { loadConfiguration } from '../../core/configuration/configuration';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';

function matches(pattern: string, path: string): boolean {
  const normalized = normalizeForMatching(path);
  return normalized !== undefined && compileRoutePattern(pattern).test(normalized);
}

describe('route classes (units)', () => {
  it('matches literal segments exactly, {name} and * as one segment, a final ** as the rest', () => {
    expect(matches('files', 'files')).to.equal(true);
    expect(matches('files', 'files/file-1')).to.equal(false);
    expect(matches('files', 'filesx')).to.equal(false);
    expect(matches('files/{file_id}/**', 'files/file-1')).to.equal(true);
    expect(matches('files/{file_id}/**', 'files/file-1/content')).to.equal(true);
    expect(matches('files/{file_id}/**', 'files')).to.equal(false);
    expect(matches('vector_stores/**', 'vector_stores')).to.equal(true);
    expect(matches('vector_stores/**', 'vector_stores/vs_1/files/f')).to.equal(true);
    expect(matches('models/ft:*', 'models/ft:gpt-4o-mini:acme::abc')).to.equal(true);
    expect(matches('models/ft:*', 'models/gpt-4o')).to.equal(false);
    expect(matches('{owner}/{app}/requests', 'fal-ai/flux/requests')).to.equal(true);
    expect(matches('{owner}/{app}/requests', 'fal-ai/flux/requests/1')).to.equal(false);
    expect(matches('files/{file}:download', 'files/abc:download')).to.equal(true);
    expect(matches('**', 'anything/at/all')).to.equal(true);
  });

  it('sees through disguises: case, a trailing slash, matrix parameters, one round of percent-encoding', () => {
    for (const path of ['FILES', 'files/', 'files;v=1', 'fil%65s', 'Files%2F']) expect(matches('files', path), path).to.equal(true);
    expect(normalizeForMatching('%E0%A4%A')).to.equal(undefined);
    expect(normalizeForMatching('files//')).to.equal('files');
  });

  it('names what is wrong with each malformed pattern (one check each, not the first that happens to fire)', () => {
    const problems: Array<[unknown, string]> = [
      ['', 'must be 1 to 300 characters'],
      ['x'.repeat(301), 'must be 1 to 300 characters'],
      [5, 'must be 1 to 300 characters'],
      ['/files', 'must not start with "/"'],
      ['a//b', 'must not start with "/"'],
      ['..', 'must not contain "." or ".." segments'],
      ['./a', 'must not contain "." or ".." segments'],
      // Dots hidden behind "*" (a segment of dots once the wildcard matches nothing) and more than two dots.
      ['a/.*', 'must not contain "." or ".." segments'],
      ['...', 'must not contain "." or ".." segments'],
      ['**/x', '"**" may only be the last segment'],
      ['a/**b', '"**" must be a whole segment'],
      ['a?b', 'may hold letters, digits'],
    ];
    for (const [pattern, problem] of problems) expect(routePatternProblem(pattern as string), JSON.stringify(pattern)).to.include(problem);
    expect(routePatternProblem('x'.repeat(300))).to.equal(null);
    expect(() => compileRoutePattern('a//b')).to.throw('route pattern "a//b" must not start with "/"');
  });

  it('refuses malformed or unsafe patterns', () => {
    for (const pattern of ['', '/files', 'files/', 'a//b', '..', 'a/../b', './a', 'a\\b', '**/x', 'a**', 'a/**b', 'http://evil', 'a\u0000b', 'a b', 'a?b', 'a#b', 'x'.repeat(301)]) {
      expect(routePatternProblem(pattern), JSON.stringify(pattern)).to.be.a('string');
    }
    for (const pattern of ['files', 'files/{file_id}/content', 'vector_stores/**', 'models/ft:*', '**', 'v1.2/a-b_c~d', '.well-known/x', 'v1./x', 'a.*']) {
      expect(routePatternProblem(pattern), pattern).to.equal(null);
    }
  });

  it('matches allow and deny prefixes with * segments (fal: {owner}/{app}/…)', () => {
    expect(matchesPrefix('fal-ai/flux/dev', '*/*')).to.equal(true);
    expect(matchesPrefix('fal-ai/flux', '*/*')).to.equal(true);
    expect(matchesPrefix('fal-ai', '*/*')).to.equal(false);
    expect(matchesPrefix('', '*/*')).to.equal(false);
    expect(matchesPrefix('a/b/c', '*/b/')).to.equal(true);
    expect(matchesPrefix('a/b', '*/b/')).to.equal(false);
    expect(matchesPrefix('models/x', 'models')).to.equal(true);
  });

  describe('decideRoute', () => {
    const table: RouteTable = {
      slug: 'acme',
      policy: { methods: ['GET', 'POST'], allow: ['chat', 'files'], deny: ['admin/'] },
      methods: new Set(['GET', 'POST']),
      accountRoutes: compileAccountRoutes([
        { methods: ['GET'], path: 'files', why: 'lists every file of the account' },
        { methods: ['GET', 'DELETE'], path: 'files/{id}/**', why: 'reads or deletes any file of the account' },
      ]),
    };
    const settings = (changes: Partial<AppSettings>) => ({ ...DEFAULT_APP_SETTINGS, ...changes });
    const reason = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).to.be.instanceOf(GatewayError);
        return `${(error as GatewayError).status} ${(error as GatewayError).reason}`;
      }
      return 'admitted';
    };

    it('keeps inference open, account closed by default, and opens account routes per app', () => {
      expect(decideRoute(table, settings({}), 'POST', 'chat')).to.equal('inference');
      expect(decideRoute(table, settings({}), 'POST', 'files')).to.equal('inference');
      expect(reason(() => decideRoute(table, settings({}), 'GET', 'files'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(table, settings({}), 'DELETE', 'files/f1'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(table, settings({ openAccountRoutes: ['other'] }), 'GET', 'files'))).to.equal('400 route_not_allowed');
      expect(decideRoute(table, settings({ openAccountRoutes: ['acme'] }), 'GET', 'files')).to.equal('account');
      // Opened, an account route is reachable outside `methods` (DELETE) and outside `allow`.
      expect(decideRoute(table, settings({ openAccountRoutes: ['acme'] }), 'DELETE', 'files/f1')).to.equal('account');
      expect(reason(() => decideRoute(table, settings({}), 'DELETE', 'chat'))).to.equal('405 method_not_allowed');
      expect(reason(() => decideRoute(table, settings({}), 'GET', 'other'))).to.equal('400 route_not_allowed');
    });

    it('each refusal by its type: a method outside the provider\'s list is methodNotAllowed 405, a path invalidRequest 400', () => {
      const typeOf = (run: () => unknown): string => {
        try {
          run();
        } catch (error) {
          return `${(error as GatewayError).type} ${(error as GatewayError).status}`;
        }
        return 'admitted';
      };
      expect(typeOf(() => decideRoute(table, settings({}), 'DELETE', 'chat'))).to.equal('invalidRequest 405');
      expect(typeOf(() => decideRoute(table, settings({}), 'GET', 'other'))).to.equal('invalidRequest 400');
      // A path that does not decode is not a route at all (and no TypeError reaches the client).
      expect(reason(() => decideRoute(table, settings({}), 'POST', 'chat%E0%A4%A'))).to.equal('400 route_not_allowed');
    });

    it('a provider without a route policy allows every path of its methods; a malformed extra route of the app is skipped', () => {
      const open: RouteTable = { slug: 'acme', policy: undefined, methods: new Set(['GET', 'POST']), accountRoutes: [] };
      expect(decideRoute(open, settings({}), 'POST', 'anything/at/all')).to.equal('inference');
      const broken = settings({ extraRoutes: [{ provider: 'acme', methods: ['PUT'], path: 'a//b' }, { provider: 'acme', methods: ['PUT'], path: 'jobs' }] });
      expect(decideRoute(open, broken, 'PUT', 'jobs')).to.equal('extra');
      expect(reason(() => decideRoute(open, broken, 'PUT', 'a//b'))).to.equal('405 method_not_allowed');
    });

    it('deny holds below every version root, in any case, with or without its trailing slash', () => {
      const rooted: RouteTable = {
        ...table,
        policy: { methods: ['GET', 'POST'], deny: ['organization', 'keys/'] },
        roots: versionRoots({ v1: '/v1', root: '' }),
      };
      expect(decideRoute(rooted, settings({}), 'GET', 'v1/models', 'root')).to.equal('inference');
      expect(reason(() => decideRoute(rooted, settings({}), 'GET', 'organization/users', 'v1'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(rooted, settings({}), 'GET', 'v1/organization/users', 'root'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(rooted, settings({}), 'GET', 'V1/Organization/users', 'root'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(rooted, settings({}), 'GET', 'v1/keys', 'root')), 'the prefix keys/ holds the path keys').to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(rooted, settings({}), 'GET', 'v1/Keys', 'root'))).to.equal('400 route_not_allowed');
    });

    it('an upgrade opens a declared realtime route by GET only, and nothing else; a provider without realtime routes opens none', () => {
      const voice: RouteTable = { ...table, realtimeRoutes: compileRealtimeRoutes([{ path: 'realtime', doc: 'test' }]) };
      expect(decideRoute(voice, settings({}), 'GET', 'realtime', undefined, true)).to.equal('realtime');
      expect(reason(() => decideRoute(voice, settings({}), 'GET', 'chat', undefined, true))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(voice, settings({}), 'POST', 'realtime', undefined, true))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(table, settings({}), 'GET', 'realtime', undefined, true))).to.equal('400 route_not_allowed');
    });

    it('finds credential and realtime routes by method and normalized path; an undecodable path finds none', () => {
      const credentials = compileCredentialRoutes([{ methods: ['POST'], path: 'realtime/sessions', doc: 'test' }, { methods: ['GET', 'POST'], path: 'tokens/**', doc: 'test' }]);
      expect(findCredentialRoute(credentials, 'POST', 'realtime/sessions')?.route.path).to.equal('realtime/sessions');
      expect(findCredentialRoute(credentials, 'POST', 'Realtime/Sessions/')?.route.path).to.equal('realtime/sessions');
      expect(findCredentialRoute(credentials, 'GET', 'realtime/sessions')).to.equal(undefined);
      expect(findCredentialRoute(credentials, 'GET', 'tokens/a')?.route.path).to.equal('tokens/**');
      expect(findCredentialRoute(credentials, 'POST', 'tokens%E0%A4%A')).to.equal(undefined);
      expect(compileCredentialRoutes(undefined)).to.deep.equal([]);
      const realtime = compileRealtimeRoutes([{ path: '**', doc: 'test' }]);
      expect(findRealtimeRoute(realtime, 'listen')?.route.path).to.equal('**');
      expect(findRealtimeRoute(realtime, 'listen%E0%A4%A')).to.equal(undefined);
      expect(compileRealtimeRoutes(undefined)).to.deep.equal([]);
    });

    it('holds the allow-list for every decoded form: a segment a second decoding splits is no longer the allowed one', () => {
      // `*` matches within one segment: once decoded, `a%2Fb` is one segment and matches; a server that decodes twice
      // sees `models/a/b:generateContent`, outside the allow-list.
      const wildcard: RouteTable = { ...table, policy: { methods: ['POST'], allow: ['models/*:generateContent'] } };
      expect(decideRoute(wildcard, settings({}), 'POST', 'models/gemini-2.0-flash:generateContent')).to.equal('inference');
      expect(reason(() => decideRoute(wildcard, settings({}), 'POST', 'models/a%252Fb:generateContent'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(wildcard, settings({}), 'POST', 'models/a%2Fb:generateContent'))).to.equal('400 route_not_allowed');
    });

    it('lets an extra route allow its own method and pattern, even an account one, but never a denied prefix', () => {
      const extra = settings({ extraRoutes: [{ provider: 'acme', methods: ['GET'], path: 'files' }, { provider: 'acme', methods: ['PUT'], path: 'jobs/*' }, { provider: 'acme', methods: ['GET'], path: 'admin/**' }, { provider: 'other', methods: ['GET'], path: 'reports' }] });
      expect(decideRoute(table, extra, 'GET', 'files')).to.equal('extra');
      expect(decideRoute(table, extra, 'PUT', 'jobs/j1')).to.equal('extra');
      expect(reason(() => decideRoute(table, extra, 'PUT', 'jobs/j1/x'))).to.equal('405 method_not_allowed');
      expect(reason(() => decideRoute(table, extra, 'GET', 'files/f1'))).to.equal('400 route_not_allowed');
      expect(reason(() => decideRoute(table, extra, 'GET', 'reports'))).to.equal('400 route_not_allowed');
      for (const path of ['admin/keys', 'ADMIN/keys', 'admin;x/keys', 'admin/']) expect(reason(() => decideRoute(table, extra, 'GET', path)), path).to.equal('400 route_not_allowed');
    });

    it('names the warning of the closed route in the message', () => {
      try {
        decideRoute(table, settings({}), 'GET', 'files');
        expect.fail('admitted');
      } catch (error) {
        expect((error as Error).message).to.include('lists every file of the account').and.include('account routes');
      }
    });
  });

  it('every built-in manifest compiles: each account route has methods, a pattern and a one-line why', () => {
    const registry = new ProviderRegistry(discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY), loadConfiguration({}, '/tmp'));
    const withAccount = registry.list().filter((provider) => provider.accountRoutes.length > 0).map((provider) => provider.manifest.slug);
    for (const slug of ['openai', 'azure-openai', 'anthropic', 'gemini', 'mistral', 'together', 'cohere', 'replicate', 'assemblyai', 'fal', 'elevenlabs', 'cartesia', 'deepl', 'vertex-ai']) {
      expect(withAccount, slug).to.include(slug);
    }
    expect(registry.credentialHeaderPrefixes).to.include('x-amz-');
  });
});
