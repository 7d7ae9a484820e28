/**
 * Discovery of providers and plugins. Built-in providers are the folders of `providers/` (every folder whose name does
 * not start with `_` and that has an `index.js` exporting `manifest`); external ones come from the npm packages named in
 * `TOLLGATE_PLUGINS`. Nothing here names a provider.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import {
  PLUGIN_CONTRACT_VERSION,
  TollgateError,
  type ProviderManifest,
  type TollgatePlugin,
} from '../contract';

/** The compiled `providers/` folder that ships with the server. */
export const BUILT_IN_PROVIDERS_DIRECTORY = path.resolve(__dirname, '..', '..', 'providers');

/** The compiled `plugins/` folder: cross-cutting stage implementations that ship with the server. */
export const BUILT_IN_PLUGINS_DIRECTORY = path.resolve(__dirname, '..', '..', 'plugins');

function checkPlugin(plugin: TollgatePlugin | undefined, name: string): TollgatePlugin {
  if (!plugin || typeof plugin !== 'object') {
    throw new TollgateError('TG_ERR_PLUGIN_INVALID', `plugin "${name}" does not export tollgatePlugin`);
  }
  if (plugin.contractVersion !== PLUGIN_CONTRACT_VERSION) {
    throw new TollgateError(
      'TG_ERR_PLUGIN_CONTRACT_VERSION',
      `plugin "${name}" targets plugin contract ${String(plugin.contractVersion)}, this server speaks ${PLUGIN_CONTRACT_VERSION}`,
    );
  }
  return plugin;
}

/** Loads every built-in plugin folder (`plugins/<name>/index.js` exporting `tollgatePlugin`). */
export function discoverPluginFolders(folder: string): TollgatePlugin[] {
  const directory = path.resolve(folder);
  if (!existsSync(directory)) return [];
  return readdirSync(directory, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith('_') && existsSync(path.join(directory, entry.name, 'index.js')))
    .sort((a, b) => a.name.localeCompare(b.name))
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    .map((entry) => checkPlugin((require(path.join(directory, entry.name, 'index.js')) as { tollgatePlugin?: TollgatePlugin }).tollgatePlugin, entry.name));
}

/** Loads every provider folder under `directory`. */
export function discoverProviderFolders(folder: string): ProviderManifest[] {
  const directory = path.resolve(folder);
  if (!existsSync(directory)) return [];
  const manifests: ProviderManifest[] = [];
  for (const entry of readdirSync(directory, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isDirectory() || entry.name.startsWith('_') || entry.name.startsWith('.')) continue;
    const entryFile = path.join(directory, entry.name, 'index.js');
    if (!existsSync(entryFile)) continue;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const loaded = require(entryFile) as { manifest?: ProviderManifest; manifests?: ProviderManifest[] };
    const found = loaded.manifests ?? (loaded.manifest ? [loaded.manifest] : []);
    if (found.length === 0) {
      throw new TollgateError('TG_ERR_PLUGIN_INVALID', `provider folder "${entry.name}" exports no manifest (export const manifest = {...})`);
    }
    for (const manifest of found) {
      if (manifest.slug !== entry.name && found.length === 1) {
        throw new TollgateError('TG_ERR_PLUGIN_INVALID', `provider folder "${entry.name}" declares slug "${manifest.slug}"; the folder must be named after the slug`);
      }
      manifests.push(manifest);
    }
  }
  return manifests;
}

/** Loads an external plugin package by npm name, resolved from the working directory, and checks its contract version. */
export function loadPluginPackage(name: string, workingDirectory = process.cwd()): TollgatePlugin {
  let resolved: string;
  try {
    resolved = require.resolve(name, { paths: [workingDirectory, __dirname] });
  } catch {
    throw new TollgateError('TG_ERR_PLUGIN_LOAD', `plugin "${name}" (TOLLGATE_PLUGINS) is not installed: npm install ${name}`);
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return checkPlugin((require(resolved) as { tollgatePlugin?: TollgatePlugin }).tollgatePlugin, name);
}
