/**
 * Renders `docs/reference/providers.md` from the manifests: base URL, versions, auth, streaming, inference and account
 * routes (with what opening each exposes). Written by `scripts/providers-reference.js` during `npm run build`; a test
 * fails when the committed file differs, so the page and the manifests cannot drift.
 */
import type { AuthStyle, ProviderManifest, RealtimeModelFields } from '../contract';
import { DEFAULT_CREDENTIAL_QUERY_PARAMETERS } from '../pipeline/header-hygiene';

const code = (text: string) => `\`${text.replace(/`/g, "'")}\``;
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function describeAuth(auth: AuthStyle): string {
  if (auth.kind === 'header') return `header ${code(`${auth.header}: ${auth.scheme ? `${auth.scheme} ` : ''}<key>`)}`;
  if (auth.kind === 'query') return `query parameter ${code(`${auth.parameter}=<key>`)} (added by the gateway; redacted in logs)`;
  return 'computed by the manifest (signature or minted token)';
}

function versionTarget(manifest: ProviderManifest, target: string): string {
  return /^https?:/.test(target) ? target : `${manifest.baseUrl}${target}`;
}

function section(manifest: ProviderManifest): string[] {
  const routes = manifest.routes ?? {};
  const methods = routes.methods ?? ['GET', 'POST'];
  const channels = manifest.clientCredentials;
  const stripped = [
    ...(channels?.headers ?? []).map((name) => `header ${code(name)}`),
    ...(channels?.headerPrefixes ?? []).map((prefix) => `headers ${code(`${prefix}*`)}`),
    ...(channels?.queryParameters ?? []).map((name) => `query ${code(name)}`),
    ...(channels?.queryParameterPrefixes ?? []).map((prefix) => `query ${code(`${prefix}*`)}`),
  ];
  const lines = [
    `## ${manifest.name} (${code(manifest.slug)})`,
    '',
    '| fact | value |',
    '|---|---|',
    `| route | ${code(`/v1/proxy/${manifest.slug}/{version}/{path}`)} |`,
    `| base URL | ${code(manifest.baseUrl)}${manifest.alternateBaseUrls?.length ? `; also ${manifest.alternateBaseUrls.map(code).join(', ')}` : ''}${manifest.tenant ? ` (per tenant, ${manifest.tenant.baseUrl}: ${manifest.tenant.allowedHosts.map(code).join(', ')})` : ''} |`,
    `| versions | ${Object.entries(manifest.versions).map(([version, target]) => `${code(version)} → ${code(versionTarget(manifest, target))}`).join(', ')} |`,
    `| auth | ${describeAuth(manifest.auth)} |`,
    `| default headers | ${Object.entries(manifest.defaultHeaders ?? {}).map(([name, value]) => code(`${name}: ${value}`)).join(', ') || '—'} |`,
    `| capabilities | ${manifest.capabilities.join(', ')} |`,
    `| streaming | ${manifest.streaming.join(', ') || 'none'} |`,
    `| client credentials also stripped | ${stripped.join(', ') || 'the core set only'} |`,
    `| key check ("test this key") | ${manifest.keyCheck ? code(`${manifest.keyCheck.method} ${manifest.keyCheck.version}/${manifest.keyCheck.path}`) : 'none (`key_check_unsupported`)'} |`,
    '',
    `**Inference routes** (open by default): ${methods.join(', ')} on ${routes.allow ? routes.allow.map((prefix) => code(prefix || '(root)')).join(', ') : 'every path'}${routes.deny?.length ? `; never ${routes.deny.map(code).join(', ')}` : ''}; except the account routes below.`,
    '',
  ];
  if (routes.account?.length) {
    lines.push('**Account routes** (closed unless the app opens this provider\'s account routes):', '', '| methods | path | opening it exposes |', '|---|---|---|');
    for (const route of routes.account) lines.push(`| ${route.methods.join(', ')} | ${code(route.path)} | ${cell(route.why)} |`);
    lines.push('');
  } else {
    lines.push('**Account routes**: none.', '');
  }
  if (manifest.pathModels?.length) {
    lines.push('**Models named in the path** (the app\'s `modelPolicy` checks them; an alias is replaced in the path):', '', '| methods | path | versions | model named as | documentation |', '|---|---|---|---|---|');
    for (const route of manifest.pathModels) {
      const named = `${route.modelPrefix ?? ''}${route.path.split('/').filter((segment) => segment.includes('{model}')).map(() => '{model}').join('/')}`;
      lines.push(`| ${route.methods.join(', ')} | ${code(route.path)} | ${route.versions ? route.versions.map(code).join(', ') : 'all'} | ${code(named)} | ${route.doc} |`);
    }
    lines.push('');
  }
  if (manifest.realtime?.length) {
    lines.push('**Realtime routes** (WebSocket sessions: `GET` with `Upgrade: websocket` on the proxy route):', '', '| path | upstream socket | usage read from frames | model policy reads | documentation |', '|---|---|---|---|---|');
    for (const route of manifest.realtime) lines.push(`| ${code(route.path)} | ${route.url ? code(`${route.url}/{path}`) : 'the version\'s base, `wss`'} | ${route.usage ? route.usage.markers.map(code).join(', ') : 'none (seconds only)'} | ${realtimeModelCell(route.model)} | ${route.doc} |`);
    lines.push('');
  }
  if (manifest.credentialRoutes?.length) {
    lines.push('**Credential routes** (mint a provider credential for the device; closed unless the app opens them, `openCredentialRoutes`):', '', '| methods | path | lifetime clamped | documentation |', '|---|---|---|---|');
    for (const route of manifest.credentialRoutes) {
      const lifetime = route.lifetime ? (route.lifetime.kind === 'query' ? `query ${code(route.lifetime.parameter)}` : `body ${code(route.lifetime.member)}`) : 'fixed by the provider';
      lines.push(`| ${route.methods.join(', ')} | ${code(route.path)} | ${lifetime} | ${route.doc} |`);
    }
    lines.push('');
  }
  if (manifest.notes) lines.push(`Notes: ${cell(manifest.notes)}`, '');
  return lines;
}

/** Where a realtime route names the model and the output limit, as the model policy reads them. */
function realtimeModelCell(fields: RealtimeModelFields | undefined): string {
  if (!fields) return 'nothing (not checked)';
  const parts: string[] = [];
  if (fields.query) parts.push(`URL ${code(`?${fields.query}=`)}`);
  for (const declared of fields.frames ?? []) {
    const frame = declared.frame.map((condition) => (condition.equals === undefined ? code(condition.member) : `${code(condition.member)} = ${code(condition.equals)}`)).join(' and ');
    const members = [...(declared.model ? [`model ${code(declared.model)}`] : []), ...(declared.outputLimit?.length ? [`limit ${declared.outputLimit.map(code).join(' / ')}`] : [])];
    parts.push(`frames with ${frame}: ${members.join(', ')}`);
  }
  if (fields.modelPrefix) parts.push(`model ids as ${code(`${fields.modelPrefix}{model}`)}`);
  if (fields.jsonInBinaryFrames) parts.push('binary frames read as JSON too');
  return parts.join('; ');
}

/** The whole page, for the manifests given (sorted by slug). */
export function renderProvidersReference(manifests: readonly ProviderManifest[]): string {
  const sorted = [...manifests].sort((a, b) => a.slug.localeCompare(b.slug));
  const lines = [
    '# Providers',
    '',
    '<!-- Generated from providers/*/index.ts by scripts/providers-reference.js during `npm run build`; edit the manifests, not this file. -->',
    '',
    'Every built-in provider as its manifest declares it. Routes are relative to the version root. **Inference** routes',
    '(generate, stream, embed, transcribe, speak, translate, search, and the per-request upload or status poll a generation',
    'needs) are open by default. **Account** routes list, read or delete what the provider key stores for every user of the',
    'app (files, stored completions, vector stores, fine-tunes, batches, voice libraries…): they answer `invalidRequest`',
    '(`route_not_allowed`) until the operator opens them for one app (`openAccountRoutes`: dashboard, `tollgate apps update',
    '--open-account-routes SLUG`, the management API or MCP). Path patterns: `*` or `{name}` is one segment, a final `**`',
    'the rest. A client credential sent in any auth header of any provider, in the query parameters',
    `${DEFAULT_CREDENTIAL_QUERY_PARAMETERS.map((name) => code(name)).join(', ')} (any provider) or in a channel listed below never reaches`,
    'the provider.',
    '',
    `${sorted.length} providers: ${sorted.map((manifest) => `[${manifest.slug}](#${anchor(manifest)})`).join(', ')}.`,
    '',
  ];
  for (const manifest of sorted) lines.push(...section(manifest));
  return `${lines.join('\n').replace(/\n+$/, '')}\n`;
}

/** GitHub's heading anchor for `## Name (`slug`)`. */
function anchor(manifest: ProviderManifest): string {
  return `${manifest.name} (${manifest.slug})`
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}
