/**
 * The integration code the dashboard (`GET /v1/admin/apps/{appId}/integration`) and the assistant server
 * (`generate_integration_code`) generate, held against the SDKs it is for:
 * - the React Native snippet of an app that allows development attestation RUNS as written: transpiled with the
 *   TypeScript compiler API, run against a real gateway (through a loopback front at the `TOLLGATE_PUBLIC_URL` address)
 *   with the React Native SDK of sdk/react-native; only `react-native` (AppRegistry, and the TollgateNative module of a
 *   simulator build, which reads the generated Info.plist entry and trades the development token) and `./App` are
 *   shims. The fake OpenAI upstream must receive the gateway's key, and the snippet's `handle` the answer;
 * - every React Native snippet type-checks under strict TypeScript against the SDK's sources;
 * - every Kotlin, Swift and Dart symbol a snippet uses is found in the SDK's public sources (a renamed API fails here);
 * - a capability the provider does not offer is refused (400 `validation`, naming the ones it has), never generated as
 *   a placeholder path.
 * Swift, Kotlin-for-Android and Dart toolchains are not part of this CI (sdk/README.md).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ProviderManifest } from '../../core/contract';
import {
  generateIntegrationCode,
  INTEGRATION_CAPABILITIES,
  INTEGRATION_PLATFORMS,
  supportedCapabilities,
  type IntegrationPlatform,
  type IntegrationSnippet,
} from '../../core/integration/code-generator';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';
import { reasonAction, Tollgate, type TollgateNativeModule } from '../../sdk/react-native/src';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SDK = path.join(ROOT, 'sdk');
const MANIFESTS = new Map(discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY).map((manifest) => [manifest.slug, manifest]));
const manifest = (slug: string): ProviderManifest => MANIFESTS.get(slug)!;
const DEV_TOKEN = `dt_${'A1b2'.repeat(8)}`;
const SECRET = 'sk-generated-code-0123456789abcdef';

/** Every file under `directory` with one of `extensions`, concatenated. */
function sources(directory: string, extensions: readonly string[]): string {
  let text = '';
  for (const name of readdirSync(directory)) {
    const file = path.join(directory, name);
    if (statSync(file).isDirectory()) text += sources(file, extensions);
    else if (extensions.some((extension) => name.endsWith(extension))) text += `${readFileSync(file, 'utf8')}\n`;
  }
  return text;
}

/** The text between the parenthesis at `open` and its match, skipping string literals. */
function balanced(text: string, open: number): string {
  let depth = 0;
  for (let index = open; index < text.length; index += 1) {
    const char = text[index]!;
    if (char === '"' || char === "'") {
      const triple = text.startsWith('"""', index);
      const end = triple ? text.indexOf('"""', index + 3) + 2 : (() => {
        let at = index + 1;
        while (at < text.length && text[at] !== char) at += text[at] === '\\' ? 2 : 1;
        return at;
      })();
      index = end;
      continue;
    }
    if (char === '(') depth += 1;
    if (char === ')') {
      depth -= 1;
      if (depth === 0) return text.slice(open + 1, index);
    }
  }
  throw new Error(`unbalanced call at ${open}`);
}

/** Top-level comma-separated arguments of a call's text. */
function splitArguments(text: string, generics = false): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  let quote: string | null = null;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index]!;
    if (quote) {
      current += char;
      if (char === '\\') current += text[++index] ?? '';
      else if (char === quote) quote = null;
      continue;
    }
    if (char === '"' || char === "'") quote = char;
    if ('([{'.includes(char) || (generics && char === '<')) depth += 1;
    if (')]}'.includes(char) || (generics && char === '>' && text[index - 1] !== '-')) depth -= 1;
    if (char === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += char;
  }
  if (current.trim()) parts.push(current.replace(/\/\/[^\n]*/g, '').trim());
  return parts.map((part) => part.replace(/^(\s*\/\/[^\n]*\n)+/g, '').trim()).filter((part) => part !== '');
}

/** Each `Receiver.name(…)` call in `code`, with its arguments. */
function calls(source: string, receiver: string): Array<{ name: string; args: string[] }> {
  const code = source.replace(/^\s*\/\/[^\n]*$/gm, ''); // whole-line comments
  const found: Array<{ name: string; args: string[] }> = [];
  const pattern = new RegExp(`\\b${receiver}\\.(\\w+)\\(`, 'g');
  for (const match of code.matchAll(pattern)) found.push({ name: match[1]!, args: splitArguments(balanced(code, match.index! + match[0].length - 1)) });
  return found;
}

/** Parameters of every declaration of `fun`/`func` `name` in `source`: [label or name, has default]. */
function declarations(source: string, declaration: RegExp): Array<Array<{ name: string; defaulted: boolean }>> {
  const result: Array<Array<{ name: string; defaulted: boolean }>> = [];
  for (const match of source.matchAll(declaration)) {
    const params = splitArguments(balanced(source, match.index! + match[0].length - 1).replace(/@\w+(\([^)]*\))?\s*/g, ''), true);
    result.push(params.map((param) => ({ name: /^(?:(?:public|private|internal)\s+)?(?:va[lr]\s+)?(\w+)/.exec(param)![1]!, defaulted: /=/.test(param) })));
  }
  return result;
}

/** True when one declaration accepts `positional` leading arguments plus `named` ones, every other parameter defaulted. */
function accepts(overloads: Array<Array<{ name: string; defaulted: boolean }>>, positional: number, named: readonly string[]): boolean {
  return overloads.some((params) => {
    if (params.length < positional) return false;
    const rest = params.slice(positional);
    if (!named.every((name) => rest.some((param) => param.name === name))) return false;
    return rest.every((param) => named.includes(param.name) || param.defaulted);
  });
}

/** Swift: labels in call order must be a prefix-compatible subsequence of one declaration, the rest defaulted. */
function acceptsSwift(overloads: Array<Array<{ name: string; defaulted: boolean }>>, labels: readonly string[]): boolean {
  return overloads.some((params) => {
    let at = 0;
    for (const param of params) {
      if (at < labels.length && param.name === labels[at]) at += 1;
      else if (!param.defaulted) return false;
    }
    return at === labels.length;
  });
}

function snippet(platform: IntegrationPlatform, slug: string, capability: (typeof INTEGRATION_CAPABILITIES)[number], development: boolean): IntegrationSnippet {
  return generateIntegrationCode({
    platform,
    appToken: 'at_YOUR_APP_TOKEN',
    provider: manifest(slug),
    capability,
    gatewayUrl: 'https://gateway.example.com',
    allowDevelopmentAttestation: development,
    ...(development ? { developmentToken: DEV_TOKEN } : {}),
  });
}

/** Every snippet of every platform for a few providers, with and without the development token. */
function everySnippet(platform: IntegrationPlatform): IntegrationSnippet[] {
  const all: IntegrationSnippet[] = [];
  for (const slug of ['openai', 'anthropic', 'gemini', 'elevenlabs']) {
    for (const capability of supportedCapabilities(manifest(slug))) for (const development of [false, true]) all.push(snippet(platform, slug, capability, development));
  }
  return all;
}

/** The body of the top-level `class`/`struct`/`actor` (or `extension`) named `name` in `source`, each declaration joined. */
function typeBody(source: string, name: string): string {
  let body = '';
  for (const match of source.matchAll(new RegExp(`^(?:public |final |sealed |open |abstract |@\\w+ )*(?:class|struct|actor|enum|extension|object) ${name}\\b`, 'gm'))) {
    const end = source.indexOf('\n}', match.index!);
    body += `${source.slice(match.index!, end < 0 ? undefined : end)}\n`;
  }
  return body;
}

/** Each `receiver.member` a snippet uses, string interpolations included (comments left out). */
function members(code: string, receiver: string): string[] {
  const stripped = code.replace(/^\s*\/\/[^\n]*$/gm, '').replace(/\/\/ [^\n]*/g, '');
  return [...new Set([...stripped.matchAll(new RegExp(`\\b${receiver}\\??\\.(\\w+)`, 'g'))].map((match) => match[1]!))];
}

/** The feature snippets (realtime, signed-in user, me, provider SDK) of a few providers for one platform. */
function everyFeature(platform: IntegrationPlatform): Array<{ id: string; content: string }> {
  return ['openai', 'deepgram', 'anthropic', 'elevenlabs'].flatMap((slug) => snippet(platform, slug, 'chat' in (manifest(slug).examples ?? {}) ? 'chat' : supportedCapabilities(manifest(slug))[0]!, false).features);
}

describe('generated integration code', function () {
  this.timeout(180_000);

  describe('offers only what the provider declares', () => {
    it('refuses a capability with neither an example nor a declaration (400 validation, naming the ones it has)', () => {
      expect(supportedCapabilities(manifest('anthropic'))).to.deep.equal(['chat', 'streaming']);
      expect(() => snippet('ios', 'anthropic', 'image', false))
        .to.throw(/Anthropic offers no image capability; it offers: chat, streaming\./)
        .that.deep.includes({ type: 'invalidRequest', status: 400, reason: 'validation' });
      for (const [slug, provider] of MANIFESTS) {
        const supported = supportedCapabilities(provider);
        for (const capability of INTEGRATION_CAPABILITIES) {
          if (supported.includes(capability)) {
            const generated = snippet('react-native', slug, capability, false);
            // A placeholder path only where the manifest declares the capability but gives no example.
            expect(generated.generic, `${slug} ${capability}`).to.equal(provider.examples?.[capability] === undefined);
          } else {
            expect(() => snippet('react-native', slug, capability, false), `${slug} ${capability}`).to.throw(/offers no/);
          }
        }
      }
    });

    it('refuses a development token that is malformed or that the app does not allow', () => {
      const base = { platform: 'ios' as const, appToken: 'at_YOUR_APP_TOKEN', provider: manifest('openai'), capability: 'chat' as const, gatewayUrl: 'https://g.example' };
      expect(() => generateIntegrationCode({ ...base, allowDevelopmentAttestation: true, developmentToken: 'dt_short' })).to.throw(/development token/).that.deep.includes({ reason: 'validation' });
      expect(() => generateIntegrationCode({ ...base, allowDevelopmentAttestation: false, developmentToken: DEV_TOKEN })).to.throw(/does not allow development attestation/);
      const plain = generateIntegrationCode({ ...base, allowDevelopmentAttestation: true });
      expect(plain.development).to.equal(false);
      expect(plain.code).not.to.include('dt_');
    });
  });

  describe('native snippets use the SDKs\' public API (patterns checked against the SDK sources)', () => {
    it('Swift: every Tollgate call, error case, field and the Info.plist key exist in sdk/ios', () => {
      const source = sources(path.join(SDK, 'ios', 'Sources', 'TollgateSDK'), ['.swift']);
      const errors = readFileSync(path.join(SDK, 'ios', 'Sources', 'TollgateSDK', 'TollgateError.swift'), 'utf8');
      expect(readFileSync(path.join(SDK, '..', 'Package.swift'), 'utf8')).to.match(/\.library\(\s*name: "TollgateSDK"/);
      for (const generated of everySnippet('ios')) {
        const code = `${generated.initialization}\n${generated.request}`;
        expect(code).to.match(/^import TollgateSDK$/m);
        for (const call of calls(code, 'Tollgate')) {
          const labels = call.args.map((arg) => /^(\w+):/.exec(arg)?.[1] ?? '_');
          const overloads = declarations(source, new RegExp(`public static func ${call.name}\\(`, 'g')).map((params) =>
            params.map((param) => ({ ...param, name: param.name === '_' ? '_' : param.name })),
          );
          expect(acceptsSwift(overloads, labels), `Tollgate.${call.name}(${labels.join(':')}:)`).to.equal(true);
        }
        for (const [, kind] of code.matchAll(/TollgateError\.(\w+)/g)) expect(errors, `TollgateError.${kind}`).to.match(new RegExp(`case ${kind}\\(`));
        for (const [, field] of code.matchAll(/details\.(\w+)/g)) expect(errors, `Details.${field}`).to.match(new RegExp(`public var ${field}: `));
        for (const kind of ['attestationFailed', 'unauthorized', 'rateLimited', 'secretNotFound', 'networkError', 'invalidRequest', 'providerError']) expect(code).to.include(`TollgateError.${kind}`);
        expect(generated.configuration.map((entry) => entry.content).join('\n')).to.include('<key>TollgateGatewayURL</key>\n<string>https://gateway.example.com</string>');
        expect(generated.install).to.match(/\.package\(url: "[^"]+\.git", from: "1\.2\.0"\)/).and.match(/pod 'TollgateSDK'/);
        if (generated.development) expect(generated.initialization).to.match(/#if DEBUG && targetEnvironment\(simulator\)\n[^#]*"dt_[^"]+"\n\s*#else\n\s*let developmentToken: String\? = nil\n\s*#endif/);
        else expect(code).to.match(/try Tollgate\.configure\(appToken: "at_YOUR_APP_TOKEN"\)/).and.not.include('dt_');
      }
      expect(source).to.include('"TollgateGatewayURL"');
    });

    it('Kotlin: every import, Tollgate call, configuration argument, error class and field exist in sdk/android', () => {
      const library = sources(path.join(SDK, 'android', 'tollgate', 'src', 'main'), ['.kt']);
      const core = sources(path.join(SDK, 'android', 'core', 'src', 'main'), ['.kt']);
      const errors = readFileSync(path.join(SDK, 'android', 'core', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'core', 'TollgateError.kt'), 'utf8');
      for (const generated of everySnippet('android')) {
        const code = `${generated.initialization}\n${generated.request}`;
        for (const [, pkg, name] of code.matchAll(/^import (dev\.tollgate(?:\.core)?)\.(\w+)$/gm)) {
          const text = pkg === 'dev.tollgate' ? library : core;
          expect(text, `import ${pkg}.${name}`).to.include(`package ${pkg}\n`);
          expect(text, `import ${pkg}.${name}`).to.match(new RegExp(`public (sealed |data |enum )?(class|object) ${name}\\b`));
        }
        for (const call of calls(code, 'Tollgate')) {
          const named = call.args.map((arg) => /^(\w+)\s*=(?!=)/.exec(arg)?.[1]).filter((name): name is string => name !== undefined);
          const positional = call.args.length - named.length;
          const overloads = declarations(library, new RegExp(`public (?:suspend )?fun ${call.name}\\(`, 'g'));
          expect(accepts(overloads, positional, named), `Tollgate.${call.name}(${call.args.length} args: ${named.join(', ')})`).to.equal(true);
        }
        for (const call of calls(code.replace(/TollgateConfiguration\(/g, 'Cfg.TollgateConfiguration('), 'Cfg')) {
          const named = call.args.map((arg) => /^(\w+)\s*=(?!=)/.exec(arg)![1]!);
          expect(accepts(declarations(library, /public class TollgateConfiguration\(/g), 0, named), `TollgateConfiguration(${named.join(', ')})`).to.equal(true);
        }
        if (code.includes('RequestBody.Text(')) expect(core).to.match(/public class Text\(public val text: String/);
        for (const [, kind] of code.matchAll(/TollgateError\.(\w+)/g)) expect(errors, `TollgateError.${kind}`).to.match(new RegExp(`public class ${kind}\\(`));
        for (const [, field] of code.matchAll(/error\.(\w+)/g)) {
          if (field !== 'message') expect(errors, `error.${field}`).to.match(new RegExp(`public val ${field}: `));
        }
        expect(code).to.match(/super\.onCreate\(\)\n\s*Tollgate\.initialize\(/);
        if (generated.development) expect(code).to.include(`TollgateConfiguration(developmentToken = if (BuildConfig.DEBUG) "${DEV_TOKEN}" else null)`);
        else expect(code).to.include('Tollgate.initialize(this, "at_YOUR_APP_TOKEN")').and.not.include('dt_');
        expect(generated.configuration[0]!.content).to.equal('<meta-data android:name="dev.tollgate.GATEWAY_URL" android:value="https://gateway.example.com" />');
        expect(generated.install).to.include('implementation(project(":tollgate"))');
      }
      expect(library).to.include('GATEWAY_URL_META_DATA: String = "dev.tollgate.GATEWAY_URL"');
    });

    it('Dart: Tollgate.initialize, request/stream parameters, every exception class and field exist in sdk/flutter', () => {
      const lib = sources(path.join(SDK, 'flutter', 'lib'), ['.dart']);
      const initialize = /static Future<void> initialize\(\s*String appToken, \{([^}]*)\}/.exec(lib)![1]!;
      for (const generated of everySnippet('flutter')) {
        const code = `${generated.initialization}\n${generated.request}`;
        if (generated.development) {
          expect(initialize).to.match(/String\? developmentToken,/);
          expect(code).to.include(`developmentToken: kDebugMode ? '${DEV_TOKEN}' : null,`).and.include("import 'package:flutter/foundation.dart';");
        } else expect(code).to.include("await Tollgate.initialize('at_YOUR_APP_TOKEN');").and.not.include('dt_');
        for (const call of calls(code, 'Tollgate').filter((entry) => entry.name !== 'initialize')) {
          const signature = new RegExp(`static (?:Future<TollgateResponse>|Stream<StreamEvent>) ${call.name}\\(\\{([^}]*)\\}`).exec(lib)![1]!;
          for (const arg of call.args) {
            const name = arg.split(':')[0]!.trim();
            expect(signature, `${call.name}(${name}:)`).to.match(new RegExp(`\\s${name}( = [^,]+)?,`));
          }
        }
        for (const [, name] of code.matchAll(/on (\w+Exception)/g)) expect(lib, name).to.match(new RegExp(`final class ${name} extends TollgateException`));
        for (const [, field] of code.matchAll(/error\.(\w+)/g)) expect(lib, `error.${field}`).to.match(new RegExp(`final [\\w?<>]+ ${field};`));
        expect(generated.configuration.map((entry) => entry.file)).to.deep.equal(['ios/Runner/Info.plist', 'android/app/src/main/AndroidManifest.xml']);
        expect(generated.install).to.match(/path: \.\.\/tollgate\/sdk\/flutter/).and.match(/flutter pub get/).and.match(/pod install/);
      }
    });
  });

  describe('the SDK features beside a request use the SDKs\' public API (checked against the SDK sources)', () => {
    it('every platform has a realtime session, a signed-in user, me() and the provider SDK hook, with the chosen provider\'s endpoints', () => {
      for (const platform of INTEGRATION_PLATFORMS) {
        const openai = snippet(platform, 'openai', 'chat', false);
        expect(openai.features.map((feature) => feature.id), platform).to.deep.equal(['realtime', 'signed-in-user', 'me', 'provider-sdk']);
        const [realtime, user, me, hook] = openai.features.map((feature) => feature.content) as [string, string, string, string];
        expect(realtime, platform).to.include('openai/v1/realtime');
        expect(user, platform).to.match(/setUserTokenProvider\(/).and.match(/setUserTokenProvider\(null\)|setUserTokenProvider\(nil\)/);
        expect(me, platform).to.match(/\bme\(\)/);
        expect(hook, platform).to.match({ ios: /TollgateURLProtocol\.configuration\(client: Tollgate\.shared, gatewayURL: "https:\/\/gateway\.example\.com"\)/, android: /\.okHttpClient\(Tollgate\.okHttpClient\(\)\)[\s\S]*addInterceptor\(Tollgate\.interceptor\(\)\)/, flutter: /client: TollgateHttpClient\(Tollgate\.client\)/, 'react-native': /fetch: Tollgate\.fetch as typeof fetch,/ }[platform]);
        expect(hook, platform).to.include(platform === 'ios' ? 'basePath: "/v1/proxy/openai/v1"' : "'openai/v1'".replace(/'/g, platform === 'android' ? '"' : "'"));
        expect(openai.code, `${platform}: the features are in the whole text too`).to.include(realtime).and.include(hook);
        expect(snippet(platform, 'deepgram', 'tts', false).features[0]!.content, platform).to.include('deepgram/v1/listen');
        // A provider without a realtime route says so instead of inventing a path.
        const none = snippet(platform, 'anthropic', 'chat', false).features[0]!;
        expect(none.description).to.match(/declares no realtime route/);
        expect(none.content).to.include('anthropic/v1/REALTIME_PATH_FROM_PROVIDER_DOCS');
      }
      // The gateway address split as the OpenAI Swift package's configuration takes it (a port and a path prefix kept).
      const local = generateIntegrationCode({ platform: 'ios', appToken: 'at_YOUR_APP_TOKEN', provider: manifest('openai'), capability: 'chat', gatewayUrl: 'http://10.0.2.2:8080/tg' });
      expect(local.features[3]!.content).to.include('host: "10.0.2.2", port: 8080, scheme: "http", basePath: "/tg/v1/proxy/openai/v1"');
    });

    it('Swift: every Tollgate.shared method (with its labels), session, close, me and limit member, and TollgateURLProtocol exist in sdk/ios', () => {
      const source = sources(path.join(SDK, 'ios', 'Sources', 'TollgateSDK'), ['.swift']);
      for (const feature of everyFeature('ios')) {
        const code = feature.content;
        expect(code).to.match(/^import TollgateSDK$/m);
        for (const call of calls(code.replace(/Tollgate\.shared\./g, 'Shared.'), 'Shared')) {
          const labels = call.args.map((arg) => /^(\w+):/.exec(arg)?.[1] ?? '_');
          const overloads = declarations(source, new RegExp(`public func ${call.name}\\(`, 'g'));
          // A trailing closure is an unlabelled last argument.
          expect(acceptsSwift(overloads, labels) || acceptsSwift(overloads, [...labels, '_']), `Tollgate.shared.${call.name}(${labels.join(':')}:)`).to.equal(true);
        }
        for (const [, name] of code.matchAll(/Tollgate\.shared\.(\w+)/g)) expect(source, `Tollgate.shared.${name}`).to.match(new RegExp(`public func ${name}\\(`));
        const types: Record<string, string> = { session: 'RealtimeSession', closed: 'RealtimeCloseError', me: 'Me', limit: 'MeLimit' };
        for (const [receiver, type] of Object.entries(types)) {
          const body = typeBody(source, type);
          for (const member of members(code, receiver)) expect(body, `${type}.${member}`).to.match(new RegExp(`public (?:let|var|func|static func) ${member}\\b`));
        }
        if (code.includes('RealtimeCloseError')) expect(source).to.match(/public struct RealtimeCloseError\b/);
        for (const [, kind] of code.matchAll(/case \.(\w+)\(let/g)) expect(typeBody(source, 'RealtimeMessage'), `RealtimeMessage.${kind}`).to.match(new RegExp(`case ${kind}\\(`));
        if (feature.id === 'provider-sdk') {
          const [, labels] = /TollgateURLProtocol\.configuration\((\w+):[^,]+, (\w+):/.exec(code)!;
          expect(labels).to.equal('client');
          expect(accepts(declarations(source, /public static func configuration\(/g), 0, ['client', 'gatewayURL'])).to.equal(true);
        }
      }
    });

    it('Kotlin: every import, Tollgate call, session, close, me and limit member exist in sdk/android', () => {
      const library = sources(path.join(SDK, 'android', 'tollgate', 'src', 'main'), ['.kt']);
      const core = sources(path.join(SDK, 'android', 'core', 'src', 'main'), ['.kt']);
      for (const feature of everyFeature('android')) {
        const code = feature.content;
        for (const [, pkg, name] of code.matchAll(/^import (dev\.tollgate(?:\.core)?)\.(\w+)$/gm)) {
          const text = pkg === 'dev.tollgate' ? library : core;
          expect(text, `import ${pkg}.${name}`).to.match(new RegExp(`public (sealed |data |enum )?(class|object) ${name}\\b`));
        }
        for (const call of calls(code, 'Tollgate')) {
          const named = call.args.map((arg) => /^(\w+)\s*=(?!=)/.exec(arg)?.[1]).filter((name): name is string => name !== undefined);
          // A trailing lambda is one more positional argument.
          const positional = call.args.length - named.length + (new RegExp(`Tollgate\\.${call.name}\\s*\\{`).test(code) ? 1 : 0);
          const overloads = declarations(library, new RegExp(`public (?:suspend )?fun ${call.name}\\(`, 'g'));
          expect(accepts(overloads, positional, named) || accepts(overloads, 1, named), `Tollgate.${call.name}(${call.args.length} args)`).to.equal(true);
        }
        for (const [, name] of code.matchAll(/Tollgate\.(\w+)\s*\{/g)) expect(library, `Tollgate.${name} { … }`).to.match(new RegExp(`public (?:suspend )?fun ${name}\\(`));
        const types: Record<string, string> = { session: 'RealtimeSession', closed: 'RealtimeClose', me: 'Me', limit: 'MeLimit' };
        for (const [receiver, type] of Object.entries(types)) {
          const body = typeBody(core, type);
          for (const member of members(code, receiver)) expect(body, `${type}.${member}`).to.match(new RegExp(`public (?:val|var|fun|suspend fun) ${member}\\b`));
        }
        for (const [, kind, field] of code.matchAll(/is RealtimeMessage\.(\w+) -> \w+\(message\.(\w+)\)/g)) expect(core, `RealtimeMessage.${kind}.${field}`).to.match(new RegExp(`public class ${kind}\\(public val ${field}: `));
        for (const [, kind] of code.matchAll(/TollgateError\.(\w+)/g)) expect(core, `TollgateError.${kind}`).to.match(new RegExp(`public class ${kind}\\(`));
        for (const [, field] of code.matchAll(/error\.(\w+)/g)) expect(core, `error.${field}`).to.match(new RegExp(`public val ${field}: `));
      }
    });

    it('Dart: every Tollgate member, session, close, me and limit member, message class and TollgateHttpClient exist in sdk/flutter', () => {
      const lib = sources(path.join(SDK, 'flutter', 'lib'), ['.dart']);
      const exported = readFileSync(path.join(SDK, 'flutter', 'lib', 'tollgate.dart'), 'utf8');
      for (const feature of everyFeature('flutter')) {
        const code = feature.content;
        for (const name of members(code, 'Tollgate')) expect(typeBody(lib, 'Tollgate'), `Tollgate.${name}`).to.match(new RegExp(`static [\\w.<>?]+ (?:get )?${name}\\b`));
        const types: Record<string, string> = { session: 'RealtimeSession', closed: 'RealtimeClose', me: 'Me', limit: 'MeLimit' };
        for (const [receiver, type] of Object.entries(types)) {
          const body = typeBody(lib, type);
          for (const member of members(code, receiver)) expect(body, `${type}.${member}`).to.match(new RegExp(`(?:final [\\w?<>]+|get|void|Future<void>|late final [\\w<>]+) ${member}\\b|[\\w?<>]+ get ${member}\\b`));
        }
        for (const [, kind, field] of code.matchAll(/case (\w+)\(:final (\w+)\)/g)) {
          expect(exported, kind).to.include(kind);
          expect(typeBody(lib, kind), `${kind}.${field}`).to.match(new RegExp(`final [\\w<>]+ ${field};`));
        }
        for (const [, name] of code.matchAll(/on (\w+Exception)/g)) expect(lib, name).to.match(new RegExp(`class ${name}\\b`));
        for (const [, field] of code.matchAll(/error\.(\w+)/g)) expect(lib, `error.${field}`).to.match(new RegExp(`final [\\w?<>]+ ${field};`));
        if (feature.id === 'provider-sdk') {
          expect(lib).to.match(/class TollgateHttpClient extends http\.BaseClient \{\n\s*TollgateHttpClient\(this\._client/);
          expect(exported).to.match(/show TollgateHttpClient/);
        }
      }
    });
  });

  it('React Native: every snippet type-checks under strict TypeScript against the SDK sources', () => {
    const directory = mkdtempSync(path.join(SDK, 'react-native', '.typecheck-'));
    try {
      const files: string[] = [];
      const generated = everySnippet('react-native');
      generated.forEach((entry, index) => {
        const file = path.join(directory, `request-${index}.ts`);
        writeFileSync(file, `${entry.request.replace("from '@tollgate/react-native'", "from '../src/index'")}\n\ndeclare function handle(value: unknown): void;\n`);
        files.push(file);
      });
      // The features beside the request: realtime, signed-in user, me() and the openai package with Tollgate.fetch.
      everyFeature('react-native').forEach((feature, index) => {
        const file = path.join(directory, `feature-${feature.id}-${index}.ts`);
        const source = feature.content
          .replace("from '@tollgate/react-native'", "from '../src/index'")
          // The app's own sign-in SDK (Firebase's auth module, as @react-native-firebase/auth declares it).
          .replace("import auth from '@react-native-firebase/auth';\n", 'declare function auth(): { currentUser: { getIdToken(forceRefresh?: boolean): Promise<string> } | null };\n');
        writeFileSync(file, `${source}\n\ndeclare function handleEvent(text: string): void;\ndeclare function play(bytes: Uint8Array): void;\nexport {};\n`);
        files.push(file);
      });
      for (const development of [false, true]) {
        const init = snippet('react-native', 'openai', 'chat', development);
        expect(init.install).to.match(/^npm install @tollgate\/react-native\ncd ios && pod install/);
        if (development) expect(init.initialization).to.include(`development: __DEV__ ? { token: '${DEV_TOKEN}', deviceId: 'simulator-1' } : undefined,`);
        else expect(init.initialization).to.include("Tollgate.initialize({ appToken: 'at_YOUR_APP_TOKEN' }).catch(");
        // index.js runs under Metro, which has no top-level await.
        expect(init.initialization).to.not.match(/^\s*await /m);
        const file = path.join(directory, `init-${development}.ts`);
        // The initialization runs in index.js; the React Native imports and the App component are the app's own.
        writeFileSync(
          file,
          `${init.initialization.replace(/import \{ AppRegistry \}[^\n]*\n/, '').replace(/import App[^\n]*\n/, '').replace(/AppRegistry[^\n]*\n?/, '').replace("from '@tollgate/react-native'", "from '../src/index'")}\ndeclare const __DEV__: boolean;\nexport {};\n`,
        );
        files.push(file);
      }
      const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      const result = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'es2022', '--moduleResolution', 'bundler', '--lib', 'ES2022', '--skipLibCheck', ...files], { encoding: 'utf8' });
      expect(result.status, `${result.stdout}${result.stderr}`).to.equal(0);
      expect(generated.length).to.be.greaterThan(8);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  describe('against a real gateway at TOLLGATE_PUBLIC_URL', () => {
    let upstream: FakeUpstream;
    let gateway: TestGateway;
    let front: http.Server;
    let frontUrl: string;
    let adminKey: string;
    const seenAtFront: Array<{ method: string; path: string; body: string }> = [];

    before(async () => {
      // A loopback front that forwards to the gateway: the address devices reach, distinct from the listen address.
      let target = '';
      front = http.createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          const body = Buffer.concat(chunks);
          seenAtFront.push({ method: request.method ?? '', path: request.url ?? '', body: body.toString('utf8') });
          const forwarded = http.request(`${target}${request.url}`, { method: request.method, headers: request.headers }, (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(response);
          });
          forwarded.on('error', () => response.destroy());
          forwarded.end(body);
        });
      });
      await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
      frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
      upstream = await FakeUpstream.start();
      gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_PUBLIC_URL: frontUrl } });
      target = gateway.url;
      adminKey = (await gateway.gateway.management.createAdminKey({ name: 'generated-code' })).adminKey;
    });

    after(async () => {
      Tollgate.reset();
      await gateway?.close();
      await upstream?.close();
      await new Promise((resolve) => front?.close(resolve));
    });

    const admin = async (pathAndQuery: string) => {
      const response = await fetch(`${gateway.url}/v1/admin${pathAndQuery}`, { headers: { authorization: `Bearer ${adminKey}` } });
      return { status: response.status, json: (await response.json()) as any };
    };

    it('the integrate route: address from TOLLGATE_PUBLIC_URL, development token wired in, unsupported capability and bad tokens refused', async () => {
      const { appId } = await gateway.createApp({ allowDevelopmentAttestation: true });
      const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
      for (const platform of INTEGRATION_PLATFORMS) {
        const reply = await admin(`/apps/${appId}/integration?platform=${platform}&provider=openai&capability=chat&developmentToken=${developmentToken}`);
        expect(reply.status, JSON.stringify(reply.json)).to.equal(200);
        expect(reply.json.development).to.equal(true);
        expect(reply.json.code).to.include(developmentToken).and.include(frontUrl).and.not.include(gateway.url).and.not.include(SECRET);
        expect(reply.json.code).to.match({ ios: /#if DEBUG && targetEnvironment\(simulator\)/, android: /BuildConfig\.DEBUG/, flutter: /kDebugMode/, 'react-native': /__DEV__/ }[platform]);
        for (const entry of reply.json.configuration) expect(entry.content).to.include(frontUrl);
      }
      expect(gateway.logText(), 'the development token is redacted from the access log').not.to.include(developmentToken);

      const image = await admin(`/apps/${appId}/integration?platform=ios&provider=anthropic&capability=image`);
      expect(image.status).to.equal(400);
      expect(image.json.error).to.deep.include({ type: 'invalidRequest', reason: 'validation' });
      expect(image.json.error.fields.capability[0]).to.include('it offers: chat, streaming');
      expect((await admin(`/apps/${appId}/integration?platform=ios&developmentToken=dt_nope`)).json.error.reason).to.equal('validation');
      const strict = await gateway.createApp({ allowDevelopmentAttestation: false });
      const refused = await admin(`/apps/${strict.appId}/integration?platform=ios&provider=openai&developmentToken=${developmentToken}`);
      expect(refused.status).to.equal(400);
      expect(refused.json.error.fields.developmentToken[0]).to.match(/does not allow development attestation/);
    });

    it('the React Native snippet for an app allowing development attestation runs as written: the upstream gets the injected key, the app the answer', async () => {
      const { appId, appToken } = await gateway.createApp({ allowDevelopmentAttestation: true });
      await gateway.setSecret(appId, 'openai', SECRET);
      const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
      // A chat completion as OpenAI answers it (https://platform.openai.com/docs/api-reference/chat/object).
      upstream.on(/^\/v1\/chat\/completions$/, respondJson(200, {
        id: 'chatcmpl-generated', object: 'chat.completion', created: 1_700_000_000, model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake upstream' }, logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
      }));

      // The snippet as the assistant server hands it out (the dashboard's route returns the same generator's code).
      const client = new Client({ name: 'generated-code-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
      let generated: IntegrationSnippet;
      try {
        const result = (await client.callTool({ name: 'generate_integration_code', arguments: { platform: 'react-native', appId, provider: 'openai', capability: 'chat', appToken, developmentToken } })) as { content: Array<{ text?: string }>; isError?: boolean };
        expect(result.isError ?? false, result.content[0]?.text).to.equal(false);
        generated = JSON.parse(result.content.map((part) => part.text ?? '').join('')) as IntegrationSnippet;
        const unsupported = (await client.callTool({ name: 'generate_integration_code', arguments: { platform: 'react-native', appId, provider: 'anthropic', capability: 'image' } })) as { content: Array<{ text?: string }>; isError?: boolean };
        expect(unsupported.isError).to.equal(true);
        expect(unsupported.content[0]?.text).to.match(/"reason":"validation".*Anthropic offers no image capability; it offers: chat, streaming/);
      } finally {
        await client.close();
      }
      expect(generated.development).to.equal(true);
      expect(generated.initialization).to.include(developmentToken).and.include(appToken);
      const plist = generated.configuration.find((entry) => entry.file.endsWith('Info.plist'))!.content;
      expect(plist).to.equal(`<key>TollgateGatewayURL</key>\n<string>${frontUrl}</string>`);

      // A simulator build's TollgateNative: the gateway address from the generated Info.plist entry, the development
      // token traded at POST /v1/attest/development as the native SDKs do in DEBUG simulator builds.
      const nativeCalls: string[] = [];
      let settings: { appToken: string; gatewayUrl: string; developmentToken: string | null } | null = null;
      let stored: { deviceToken: string; expiresAtMs: number; deviceId: string } | null = null;
      const simulatorNative: TollgateNativeModule = {
        async getConfiguration() {
          nativeCalls.push('getConfiguration');
          return { gatewayUrl: /<key>TollgateGatewayURL<\/key>\s*<string>([^<]+)<\/string>/.exec(plist)?.[1] ?? null };
        },
        async configure(options) {
          nativeCalls.push('configure');
          settings = options;
          return null;
        },
        async deviceToken(options) {
          nativeCalls.push('deviceToken');
          if (!stored || options.forceRefresh) {
            if (!settings?.developmentToken) throw Object.assign(new Error('no development token'), { code: 'attestationFailed', userInfo: { reason: 'no_attestation' } });
            const response = await fetch(`${settings.gatewayUrl}/v1/attest/development`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', 'Tollgate-App-Token': settings.appToken },
              body: JSON.stringify({ developmentToken: settings.developmentToken, deviceId: 'dev-simulator-1' }),
            });
            const body = (await response.json()) as { deviceToken: string; expiresAt: string; deviceId: string; error?: { reason?: string } };
            if (response.status !== 200) throw Object.assign(new Error('refused'), { code: 'attestationFailed', userInfo: { reason: body.error?.reason ?? 'attestation_failed' } });
            stored = { deviceToken: body.deviceToken, expiresAtMs: Date.parse(body.expiresAt), deviceId: body.deviceId };
          }
          return stored;
        },
        async reportError(options) {
          nativeCalls.push('reportError');
          return { action: reasonAction('attestationFailed', options.reason).action };
        },
        async assertion() {
          return { assertion: null };
        },
        async clear() {
          stored = null;
          return null;
        },
      };
      const registered: Array<[string, unknown]> = [];
      const reactNative = {
        AppRegistry: { registerComponent: (name: string, provider: () => unknown) => registered.push([name, provider()]) },
        NativeModules: { TollgateNative: simulatorNative },
        TurboModuleRegistry: { get: () => null },
      };
      function App() {
        return null;
      }

      // Module resolution for the snippet: `react-native` and `./App` are the shims above, `@tollgate/react-native` is
      // the SDK of sdk/react-native (as compiled with this suite); the SDK's own require('react-native') gets the shim too.
      const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-snippet-'));
      const sdkEntry = require.resolve('../../sdk/react-native/src');
      const shims: Record<string, { file: string; exports: unknown }> = {
        'react-native': { file: path.join(directory, 'react-native.js'), exports: reactNative },
        './App': { file: path.join(directory, 'App.js'), exports: App },
      };
      const moduleInternals = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string; _cache: Record<string, unknown> };
      const resolve = moduleInternals._resolveFilename;
      moduleInternals._resolveFilename = function (request: string, ...rest: unknown[]) {
        if (request === '@tollgate/react-native') return sdkEntry;
        if (shims[request]) return shims[request]!.file;
        return resolve.call(this, request, ...rest);
      };
      for (const shim of Object.values(shims)) {
        const entry = new Module(shim.file);
        entry.exports = shim.exports;
        entry.loaded = true;
        moduleInternals._cache[shim.file] = entry;
      }
      const globals = globalThis as { __DEV__?: boolean };
      globals.__DEV__ = true; // React Native defines it; true in a development build
      const handled: unknown[] = [];
      const warnings: unknown[][] = [];
      const warn = console.warn;
      console.warn = (...args: unknown[]) => void warnings.push(args);
      try {
        const requireFromApp = Module.createRequire(path.join(directory, 'index.js'));
        const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;
        // Each snippet is one module (index.js and the file with the call), compiled as a bundler would and run as is.
        const run = async (source: string, extra: Record<string, unknown> = {}) => {
          const output = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true }, reportDiagnostics: true });
          expect(output.diagnostics ?? [], 'syntax errors').to.deep.equal([]);
          const exports: Record<string, unknown> = {};
          await new AsyncFunction('require', 'module', 'exports', ...Object.keys(extra), output.outputText)(requireFromApp, { exports }, exports, ...Object.values(extra));
          return exports;
        };
        await run(generated.initialization);
        expect(registered.map(([name]) => name)).to.deep.equal(['MyApp']);
        expect(registered[0]![1]).to.equal(App);
        const module = await run(generated.request, { handle: (value: unknown) => handled.push(value) });
        await (module.callOpenAI as () => Promise<void>)();
      } finally {
        console.warn = warn;
        delete globals.__DEV__;
        moduleInternals._resolveFilename = resolve;
        for (const shim of Object.values(shims)) delete moduleInternals._cache[shim.file];
        rmSync(directory, { recursive: true, force: true });
      }

      expect(warnings, 'the snippet handled no error').to.deep.equal([]);
      expect(handled).to.have.length(1);
      expect(handled[0]).to.deep.include({ id: 'chatcmpl-generated', object: 'chat.completion' });
      // What crossed the wire: the provider got the gateway's key and the example body, no Tollgate header.
      const sent = upstream.last();
      expect(sent.url).to.equal('/v1/chat/completions');
      expect(sent.headers.authorization).to.equal(`Bearer ${SECRET}`);
      expect(Object.keys(sent.headers).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
      expect(JSON.parse(sent.body.toString('utf8'))).to.deep.equal(manifest('openai').examples!.chat!.body);
      // The device reached the gateway at TOLLGATE_PUBLIC_URL (the front), with the development token of the snippet.
      const attest = seenAtFront.find((entry) => entry.path === '/v1/attest/development');
      expect(attest, 'development attestation through the public address').to.not.equal(undefined);
      expect(JSON.parse(attest!.body)).to.deep.include({ developmentToken });
      expect(seenAtFront.filter((entry) => entry.path === '/v1/proxy/openai/v1/chat/completions').map((entry) => entry.method)).to.deep.equal(['POST']);
      expect(nativeCalls.slice(0, 2)).to.deep.equal(['getConfiguration', 'configure']);
      expect(settings).to.deep.include({ appToken, gatewayUrl: frontUrl, developmentToken });
    });
  });
});
