/**
 * The integration code the dashboard and the assistant server generate for React Native compiles, under strict
 * TypeScript, against the real `@tollgate/react-native` sources, for every capability of a few providers: generated
 * snippets and the SDK cannot drift apart. (Swift, Kotlin and Dart snippets are checked by pattern in the MCP and
 * dashboard suites; their toolchains are not part of this CI.)
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateIntegrationCode, INTEGRATION_CAPABILITIES } from '../../core/integration/code-generator';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('generated React Native code compiles against the SDK', function () {
  this.timeout(120_000);

  it('type-checks every capability snippet of openai, anthropic, gemini and elevenlabs', () => {
    const manifests = new Map(discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY).map((manifest) => [manifest.slug, manifest]));
    const registry = { find: (slug: string) => ({ manifest: manifests.get(slug)! }) };
    const directory = mkdtempSync(path.join(ROOT, 'sdk', 'react-native', '.typecheck-'));
    try {
      const files: string[] = [];
      for (const slug of ['openai', 'anthropic', 'gemini', 'elevenlabs']) {
        const provider = registry.find(slug)!.manifest;
        for (const capability of INTEGRATION_CAPABILITIES) {
          const snippet = generateIntegrationCode({ platform: 'react-native', appToken: 'at_YOUR_APP_TOKEN', provider, capability, gatewayUrl: 'https://gateway.example.com' });
          const source = `${snippet.request.replace("from '@tollgate/react-native'", "from '../src/index'")}\n\ndeclare function handle(value: unknown): void;\n`;
          const file = path.join(directory, `${slug}-${capability}.ts`);
          writeFileSync(file, source);
          files.push(file);
        }
      }
      const init = generateIntegrationCode({ platform: 'react-native', appToken: 'at_YOUR_APP_TOKEN', provider: registry.find('openai')!.manifest, capability: 'chat', gatewayUrl: 'https://gateway.example.com' });
      const initFile = path.join(directory, 'init.ts');
      // The initialization runs in index.js; the React Native imports are the app's own.
      writeFileSync(initFile, `${init.initialization.replace(/import \{ AppRegistry \}[^\n]*\n/, '').replace(/import App[^\n]*\n/, '').replace(/AppRegistry[^\n]*\n?/, '').replace("from '@tollgate/react-native'", "from '../src/index'")}\nexport {};\n`);
      files.push(initFile);
      const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      const result = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'ES2022', '--module', 'es2022', '--moduleResolution', 'bundler', '--lib', 'ES2022', '--skipLibCheck', ...files], { encoding: 'utf8' });
      expect(result.status, `${result.stdout}${result.stderr}`).to.equal(0);
      expect(files.length).to.equal(4 * INTEGRATION_CAPABILITIES.length + 1);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
