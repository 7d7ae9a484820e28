/**
 * The assistant-facing server, driven by the official MCP client from the same SDK, over streamable HTTP (`/mcp`) and
 * over stdio (`tollgate mcp`): tools are listed; an app created and a secret set through MCP serve a proxied request at
 * once; generated code carries the app token and the right initialization for each platform and never a secret; a bad
 * admin key is refused; nothing any tool returns holds a secret value; every change is audited under the key's name.
 */
import { expect } from 'chai';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AuditRepository } from '../../core/storage/repositories';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const SECRET = 'sk-mcp-secret-value-0123456789abcdef';
const TOOLS = [
  'list_providers', 'list_apps', 'create_app', 'update_app', 'rotate_app_token', 'set_secret', 'delete_secret',
  'create_development_token', 'revoke_device', 'get_usage', 'generate_integration_code', 'test_secret', 'list_devices',
  'list_users', 'show_user', 'block_user', 'unblock_user', 'create_admin_key',
];
const INITIALIZATION: Record<string, RegExp> = {
  ios: /try Tollgate\.configure\(appToken: "at_[^"]*"\)/,
  android: /Tollgate\.initialize\(this, "at_[^"]*"\)/,
  flutter: /await Tollgate\.initialize\('at_/,
  // No top-level await under Metro: calls made while initialize runs wait for it.
  'react-native': /Tollgate\.initialize\(\{ appToken: 'at_/,
};
const ERROR_KINDS: Record<string, RegExp[]> = {
  ios: [/attestationFailed/, /unauthorized/, /rateLimited/, /secretNotFound/, /networkError/, /invalidRequest/, /providerError/],
  android: [/AttestationFailed/, /Unauthorized/, /RateLimited/, /SecretNotFound/, /NetworkError/, /InvalidRequest/, /ProviderError/],
  flutter: [/AttestationFailedException/, /UnauthorizedException/, /RateLimitedException/, /SecretNotFoundException/, /NetworkException/, /InvalidRequestException/, /ProviderErrorException/],
  'react-native': [/'attestationFailed'/, /'unauthorized'/, /'rateLimited'/, /'secretNotFound'/, /'networkError'/, /'invalidRequest'/, /'providerError'/],
};

type ToolText = { content: Array<{ type: string; text?: string }>; isError?: boolean };
const textOf = (result: unknown) => (result as ToolText).content.map((part) => part.text ?? '').join('');

async function callTool(client: Client, seen: string[], name: string, args: Record<string, unknown> = {}): Promise<{ isError: boolean; json: any; text: string }> {
  const result = await client.callTool({ name, arguments: args });
  const text = textOf(result);
  seen.push(text);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { isError: Boolean((result as ToolText).isError), json, text };
}

/** The shared scenario, over whichever transport `client` uses. */
async function scenario(client: Client, gateway: TestGateway, upstream: FakeUpstream, seen: string[]): Promise<void> {
  const tools = await client.listTools();
  expect(tools.tools.map((tool) => tool.name).sort()).to.deep.equal([...TOOLS].sort());

  const created = await callTool(client, seen, 'create_app', { name: 'MCP app', allowDevelopmentAttestation: true });
  expect(created.isError, created.text).to.equal(false);
  const { id: appId, appToken } = created.json as { id: string; appToken: string };
  expect(appToken).to.match(/^at_/);

  const secret = await callTool(client, seen, 'set_secret', { appId, provider: 'openai', value: SECRET });
  expect(secret.isError, secret.text).to.equal(false);
  expect(secret.json).to.deep.include({ provider: 'openai', masked: 'sk-…cdef' });

  const development = await callTool(client, seen, 'create_development_token', { appId });
  const { developmentToken } = development.json as { developmentToken: string };
  const attested = await fetch(`${gateway.url}/v1/attest/development`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken },
    body: JSON.stringify({ developmentToken, deviceId: 'mcp-device' }),
  });
  expect(attested.status).to.equal(200);
  const { deviceToken } = (await attested.json()) as { deviceToken: string };

  // The proxied call uses the new app and secret at once (in process) or within the change-poll interval (stdio).
  let status = 0;
  for (let attempt = 0; attempt < 40 && status !== 200; attempt += 1) {
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { 'tollgate-app-token': appToken, 'tollgate-device-token': deviceToken }, body: '{}' });
    status = response.status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(status).to.equal(200);
  expect(upstream.last().headers.authorization).to.equal(`Bearer ${SECRET}`);

  // Devices, searched by id prefix and platform, with the total (issue 19).
  const listed = await callTool(client, seen, 'list_devices', { appId, search: 'MCP-', platform: 'development', limit: 10 });
  expect(listed.isError, listed.text).to.equal(false);
  expect(listed.json).to.deep.include({ total: 1, offset: 0, nextOffset: null });
  expect(listed.json.untrusted.devices.map((device: { deviceId: string; platform: string }) => `${device.deviceId}|${device.platform}`)).to.deep.equal(['mcp-device|development']);
  expect((await callTool(client, seen, 'list_devices', { appId, platform: 'ios' })).json.total).to.equal(0);
  // Test this key: the manifest's key check (GET v1/models) reaches the provider with the stored key; only the outcome returns.
  const tested = await callTool(client, seen, 'test_secret', { appId, provider: 'openai' });
  expect(tested.isError, tested.text).to.equal(false);
  expect(tested.json).to.deep.include({ appId, provider: 'openai', outcome: 'ok', status: 200, request: 'GET v1/models' });
  expect(upstream.last()).to.deep.include({ method: 'GET', url: '/v1/models' });
  expect(upstream.last().headers.authorization).to.equal(`Bearer ${SECRET}`);

  for (const platform of Object.keys(INITIALIZATION)) {
    for (const capability of ['chat', 'streaming']) {
      const generated = await callTool(client, seen, 'generate_integration_code', { platform, appId, provider: 'openai', capability, appToken });
      expect(generated.isError, generated.text).to.equal(false);
      const code = (generated.json as { code: string }).code;
      expect(code, platform).to.include(appToken);
      expect(code, platform).to.match(INITIALIZATION[platform]!);
      for (const kind of ERROR_KINDS[platform]!) expect(code, `${platform} handles ${kind}`).to.match(kind);
      expect(code).to.include('openai/v1/chat/completions');
      // The SDK's other features come with it: a realtime session, a signed-in user, me(), the provider SDK hook.
      expect((generated.json as { features: Array<{ id: string }> }).features.map((feature) => feature.id), platform).to.deep.equal(['realtime', 'signed-in-user', 'me', 'provider-sdk']);
      expect(code, platform).to.include('openai/v1/realtime').and.include('setUserTokenProvider');
      expect(code).not.to.include(SECRET);
    }
  }

  // The development token of an app that allows it: wired in for emulators, in debug builds only.
  const debugWiring = await callTool(client, seen, 'generate_integration_code', { platform: 'android', appId, provider: 'openai', capability: 'chat', appToken, developmentToken });
  expect(debugWiring.isError, debugWiring.text).to.equal(false);
  expect((debugWiring.json as { code: string }).code).to.include(`TollgateConfiguration(developmentToken = if (BuildConfig.DEBUG) "${developmentToken}" else null)`);
  const malformed = await callTool(client, seen, 'generate_integration_code', { platform: 'android', appId, provider: 'openai', capability: 'chat', developmentToken: 'dt_short' });
  expect(malformed.isError).to.equal(true);
  // Only capabilities the provider offers.
  const unsupported = await callTool(client, seen, 'generate_integration_code', { platform: 'ios', appId, provider: 'anthropic', capability: 'image' });
  expect(unsupported.isError).to.equal(true);
  expect(unsupported.text).to.match(/"reason":"validation".*Anthropic offers no image capability; it offers: chat, streaming/);
  const forged = await callTool(client, seen, 'generate_integration_code', { platform: 'ios', appId, provider: 'openai', capability: 'chat', appToken: `at_${'Z'.repeat(32)}` });
  expect(forged.isError).to.equal(true);
  const unknown = await callTool(client, seen, 'set_secret', { appId, provider: 'no-such-provider', value: 'x' });
  expect(unknown.isError).to.equal(true);
  expect(unknown.text).to.match(/unknown provider/);
  const missing = await callTool(client, seen, 'update_app', { appId: 'app_missing', deviceLimitPerMinute: 5 });
  expect(missing.isError).to.equal(true);
  // Account routes and extra routes (issue 15): opened, validated against the registry, cleared with null.
  const opened = await callTool(client, seen, 'update_app', { appId, openAccountRoutes: ['openai'], extraRoutes: [{ provider: 'openai', methods: ['GET'], path: 'evals/**' }] });
  expect(opened.isError, opened.text).to.equal(false);
  expect(opened.json.settings).to.deep.include({ openAccountRoutes: ['openai'], extraRoutes: [{ provider: 'openai', methods: ['GET'], path: 'evals/**' }] });
  const unknownSlug = await callTool(client, seen, 'update_app', { appId, openAccountRoutes: ['no-such-provider'] });
  expect(unknownSlug.isError).to.equal(true);
  expect(unknownSlug.text).to.match(/openAccountRoutes: unknown provider no-such-provider/);
  const unsafe = await callTool(client, seen, 'update_app', { appId, extraRoutes: [{ provider: 'openai', methods: ['GET'], path: '../admin' }] });
  expect(unsafe.isError).to.equal(true);
  const cleared = await callTool(client, seen, 'update_app', { appId, openAccountRoutes: null, extraRoutes: null });
  expect(cleared.isError, cleared.text).to.equal(false);
  expect(cleared.json.settings.openAccountRoutes).to.equal(undefined);
  expect(cleared.json.settings.extraRoutes).to.equal(undefined);

  const usage = await callTool(client, seen, 'get_usage', { appId, sinceMinutes: 5 });
  expect(usage.isError).to.equal(false);
  const apps = await callTool(client, seen, 'list_apps');
  expect((apps.json as { apps: unknown[] }).apps.length).to.be.at.least(1);
  const providers = await callTool(client, seen, 'list_providers');
  expect((providers.json as { providers: unknown[] }).providers.length).to.be.at.least(30);
  const openai = (providers.json as { providers: Array<{ slug: string; accountRoutes: Array<{ path: string; why: string }> }> }).providers.find((provider) => provider.slug === 'openai')!;
  expect(openai.accountRoutes.find((route) => route.path === 'files')?.why).to.match(/lists every file/);

  const protocol = await client.readResource({ uri: 'tollgate://protocol' });
  expect(JSON.stringify(protocol)).to.include('Tollgate-App-Token');
  const catalog = await client.readResource({ uri: 'tollgate://providers' });
  expect(JSON.stringify(catalog)).to.include('openai');
  const prompt = await client.getPrompt({ name: 'integrate-tollgate', arguments: { platform: 'ios', provider: 'openai' } });
  expect(JSON.stringify(prompt)).to.include('generate_integration_code');

  expect(seen.join('\n')).not.to.include(SECRET);
}

describe('assistant server (MCP)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'assistant-key' }));
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('over streamable HTTP with an admin key', async () => {
    const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    const seen: string[] = [];
    try {
      await scenario(client, gateway, upstream, seen);
    } finally {
      await client.close();
    }
    const audit = await new AuditRepository(gateway.gateway.database).list();
    const actions = audit.map((entry) => entry.action);
    for (const action of ['mcp.create_app', 'mcp.set_secret', 'mcp.create_development_token', 'mcp.test_secret']) expect(actions).to.include(action);
    expect(audit.every((entry) => entry.actor === 'assistant-key')).to.equal(true);
    expect(JSON.stringify(audit)).not.to.include(SECRET);
  });

  it('refuses a missing or wrong admin key over HTTP', async () => {
    for (const authorization of [undefined, 'Bearer ak_wrongwrongwrongwrongwrongwrongwron', `Bearer ${adminKey}x`]) {
      const response = await fetch(`${gateway.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(response.status).to.equal(401);
      expect(response.headers.get('tollgate-error')).to.equal('unauthorized');
    }
    const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
    let refused = false;
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: 'Bearer ak_nopenopenopenopenopenopenopenope' } } }));
    } catch {
      refused = true;
    }
    expect(refused).to.equal(true);
  });

  it('over stdio (`tollgate mcp`) on the same database, picked up by the running gateway', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: { PATH: process.env.PATH ?? '', ...gateway.env, TOLLGATE_ADMIN_KEY: adminKey },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
    await client.connect(transport);
    const seen: string[] = [];
    try {
      await scenario(client, gateway, upstream, seen);
    } finally {
      await client.close();
    }
  });

  it('refuses a wrong admin key over stdio', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: { PATH: process.env.PATH ?? '', ...gateway.env, TOLLGATE_ADMIN_KEY: 'ak_wrongwrongwrongwrongwrongwrongwron' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'tollgate-test', version: '1.0.0' });
    let refused = false;
    try {
      await client.connect(transport);
      await client.listTools();
    } catch {
      refused = true;
    }
    expect(refused).to.equal(true);
    await client.close().catch(() => undefined);
  });
});
