/**
 * The Kotlin SDK end to end: a real gateway (started from dist/, as every suite here does) in front of a fake OpenAI on
 * loopback, driven by the JUnit tests of sdk/android/core run under Maven (profile gateway-e2e):
 * - ProviderSdkGatewayE2ETest: com.openai:openai-java through the SDK's OkHttp client streams a chat completion token by
 *   token (https://platform.openai.com/docs/api-reference/chat-streaming), and the SDK's own text-delta helper reads it;
 * - RealtimeGatewayE2ETest: a realtime session (protocol.md, "Realtime sessions") against a fake OpenAI Realtime socket
 *   (https://platform.openai.com/docs/guides/realtime-websocket), with the gateway's own closes (4429 session_too_long,
 *   4403 device_revoked on a revocation the test asks for);
 * - UserGatewayE2ETest: the user-token callback against a fake sign-in provider publishing its key set (RFC 7517;
 *   https://firebase.google.com/docs/auth/admin/verify-id-tokens), and me() with the figures of the app's settings.
 * Maven runs as a child process (asynchronously: the gateway answers from this process's event loop).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { TestGateway } from '../support/gateway';
import { FakeSignInProvider, signingKey } from '../support/sign-in-provider';
import { mavenCommand, requireTool } from '../support/services';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CORE = path.join(ROOT, 'sdk', 'android', 'core');
const SECRET = 'sk-kotlin-e2e-secret';

interface Seen { method: string; url: string; authorization?: string; body: string }

/** A fake OpenAI: a chat stream held after its first token until released, and an echoing realtime socket. */
async function fakeOpenAi(): Promise<{
  url: string;
  seen: Seen[];
  upgrades: Array<Record<string, string | string[] | undefined>>;
  onRevoke: { handler: (deviceId: string) => Promise<void> };
  close: () => Promise<void>;
}> {
  const onRevoke = { handler: async (_deviceId: string): Promise<void> => undefined };
  const seen: Seen[] = [];
  const upgrades: Array<Record<string, string | string[] | undefined>> = [];
  const waiting: Array<() => void> = [];
  const chunk = (content: string | null, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1741570283, model: 'gpt-4o-mini',
      choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] })}\n\n`;
  const server = http.createServer((request: IncomingMessage, response: ServerResponse) => {
    const body: Buffer[] = [];
    request.on('data', (part: Buffer) => body.push(part));
    request.on('end', () => {
      if (request.url === '/release') {
        waiting.splice(0).forEach((resume) => resume());
        response.writeHead(204).end();
        return;
      }
      // The Kotlin tests ask the harness to revoke a device of the main app (through the gateway's management API).
      const revoke = /^\/revoke\/([\w-]+)$/.exec(request.url ?? '');
      if (revoke) {
        onRevoke.handler(revoke[1]!).then(
          () => response.writeHead(204).end(),
          (error: unknown) => response.writeHead(500).end(String(error)),
        );
        return;
      }
      seen.push({ method: request.method ?? '', url: request.url ?? '', authorization: request.headers.authorization, body: Buffer.concat(body).toString('utf8') });
      if (request.url === '/v1/models') {
        // https://platform.openai.com/docs/api-reference/models/list
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[]}');
        return;
      }
      if (request.url?.endsWith('/chat/completions')) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(chunk('Hel'));
        const rest = () => {
          response.write(chunk('lo'));
          response.write(chunk(' world'));
          response.write(chunk(null, 'stop'));
          response.end('data: [DONE]\n\n');
        };
        waiting.push(rest);
        return;
      }
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
    });
  });
  const sockets = new WebSocketServer({ server });
  sockets.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    upgrades.push({ url: request.url, authorization: request.headers.authorization, ...Object.fromEntries(Object.entries(request.headers).filter(([name]) => name.startsWith('tollgate'))) });
    socket.on('message', (data, binary) => {
      const text = binary ? null : data.toString();
      const close = text ? /^close (\d{4}) (\w+)$/.exec(text) : null;
      if (close) socket.close(Number(close[1]), close[2]);
      else socket.send(data, { binary });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url, seen, upgrades, onRevoke,
    close: async () => {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function run(command: string, args: string[], env: Record<string, string>): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: CORE, env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (part: Buffer) => { output += part.toString(); });
    child.stderr.on('data', (part: Buffer) => { output += part.toString(); });
    child.on('close', (status) => resolve({ status, output }));
  });
}

function report(testClass: string): string {
  const directory = path.join(CORE, 'target', 'surefire-reports');
  const file = readdirSync(directory).find((name) => name === `dev.tollgate.core.${testClass}.txt`);
  return file ? readFileSync(path.join(directory, file), 'utf8') : '';
}

describe('Kotlin SDK against a real gateway (sdk/android/core, mvn -Pgateway-e2e)', function () {
  this.timeout(20 * 60 * 1000);
  let gateway: TestGateway;
  let upstream: Awaited<ReturnType<typeof fakeOpenAi>>;
  let env: Record<string, string>;

  let signIn: FakeSignInProvider;

  before(async function () {
    upstream = await fakeOpenAi();
    signIn = await FakeSignInProvider.start();
    const key = await signingKey('k1');
    signIn.publish([key]);
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    const app = async (settings: Record<string, unknown>) => {
      const { appId, appToken } = await gateway.createApp(settings);
      await gateway.setSecret(appId, 'openai', SECRET);
      const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
      return { appId, appToken, developmentToken };
    };
    // The main app: 50 requests per device and day, which me() reports.
    const main = await app({ deviceDailyQuota: 50 });
    upstream.onRevoke.handler = async (deviceId) => {
      await gateway.gateway.management.revokeDevice(main.appId, deviceId);
    };
    const short = await app({ maxSessionSeconds: 1 });
    const users = await app({ userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' }, userTokenMode: 'required' });
    env = {
      TOLLGATE_E2E_GATEWAY: gateway.url,
      TOLLGATE_E2E_APP_TOKEN: main.appToken,
      TOLLGATE_E2E_DEVELOPMENT_TOKEN: main.developmentToken,
      TOLLGATE_E2E_RELEASE_URL: `${upstream.url}/release`,
      TOLLGATE_E2E_REVOKE_URL: `${upstream.url}/revoke`,
      TOLLGATE_E2E_SHORT_APP_TOKEN: short.appToken,
      TOLLGATE_E2E_SHORT_DEVELOPMENT_TOKEN: short.developmentToken,
      TOLLGATE_E2E_USER_APP_TOKEN: users.appToken,
      TOLLGATE_E2E_USER_DEVELOPMENT_TOKEN: users.developmentToken,
      TOLLGATE_E2E_USER_TOKEN_EXPIRED: await signIn.token(key, 'user-1', {}, { expiresAt: Math.floor(Date.now() / 1000) - 600 }),
      TOLLGATE_E2E_USER_TOKEN_FRESH: await signIn.token(key, 'user-1'),
    };
  });

  after(async () => {
    await gateway?.close();
    await upstream?.close();
    await signIn?.close();
  });

  // One Maven run for the three test classes (a run compiles the module first, which takes most of its time); each
  // test below reads its class's Surefire report, and the whole output when that class did not pass.
  let maven: Promise<{ status: number | null; output: string; jwksFetchesBefore: number }> | undefined;
  function runAll(mvn: string): Promise<{ status: number | null; output: string; jwksFetchesBefore: number }> {
    if (!maven) {
      for (const testClass of ['ProviderSdkGatewayE2ETest', 'RealtimeGatewayE2ETest', 'UserGatewayE2ETest']) {
        rmSync(path.join(CORE, 'target', 'surefire-reports', `dev.tollgate.core.${testClass}.txt`), { force: true });
      }
      const jwksFetches = signIn.fetchCount();
      maven = run(mvn, ['-q', '-B', '-Pgateway-e2e', 'test', '-Dtest=ProviderSdkGatewayE2ETest,RealtimeGatewayE2ETest,UserGatewayE2ETest', '-Dsurefire.failIfNoSpecifiedTests=false'], env)
        .then((result) => ({ ...result, jwksFetchesBefore: jwksFetches }));
    }
    return maven;
  }

  it('openai-java streams a chat completion token by token through the SDK\'s OkHttp client; the key is the gateway\'s', async function () {
    const mvn = mavenCommand();
    requireTool(this, mvn !== null, 'Maven is missing and .ci/maven-tool could not fetch it');
    const result = await runAll(mvn!);
    expect(report('ProviderSdkGatewayE2ETest'), result.output.slice(-6000)).to.match(/Tests run: 2, Failures: 0, Errors: 0, Skipped: 0/);
    const chats = upstream.seen.filter((request) => request.url === '/v1/chat/completions');
    expect(chats).to.have.length(2);
    for (const chat of chats) {
      expect(chat.method).to.equal('POST');
      expect(chat.authorization).to.equal(`Bearer ${SECRET}`);
      const body = JSON.parse(chat.body) as { model: string; stream: boolean; messages: Array<{ content: string }> };
      expect(body.model).to.equal('gpt-4o-mini');
      expect(body.stream).to.equal(true);
      expect(JSON.stringify(body.messages)).to.include('Say hello');
    }
    expect(gateway.logText()).not.to.include(SECRET);
  });

  it('a realtime session: frames both ways, a refused upgrade, 4429 closes (the provider\'s and the gateway\'s session_too_long), 4403 closes that do not re-key (user_blocked, and device_revoked from the gateway)', async function () {
    const mvn = mavenCommand();
    requireTool(this, mvn !== null, 'Maven is missing and .ci/maven-tool could not fetch it');
    const result = await runAll(mvn!);
    expect(report('RealtimeGatewayE2ETest'), result.output.slice(-6000)).to.match(/Tests run: 6, Failures: 0, Errors: 0, Skipped: 0/);
    // Three sessions reached the provider (the refused one did not), with the operator's key and no Tollgate header.
    expect(upstream.upgrades.length).to.be.greaterThanOrEqual(3);
    for (const upgrade of upstream.upgrades) {
      expect(upgrade.authorization).to.equal(`Bearer ${SECRET}`);
      expect(Object.keys(upgrade).filter((name) => name.startsWith('tollgate'))).to.deep.equal([]);
    }
  });

  it('signed-in users: the user-token callback is called again exactly once on user_token_expired; me() returns the gateway\'s figures', async function () {
    const mvn = mavenCommand();
    requireTool(this, mvn !== null, 'Maven is missing and .ci/maven-tool could not fetch it');
    const result = await runAll(mvn!);
    expect(report('UserGatewayE2ETest'), result.output.slice(-6000)).to.match(/Tests run: 2, Failures: 0, Errors: 0, Skipped: 0/);
    expect(signIn.fetchCount(), 'the gateway verified the user tokens against the sign-in provider\'s keys').to.be.greaterThan(result.jwksFetchesBefore);
    expect(gateway.logText()).not.to.include(env.TOLLGATE_E2E_USER_TOKEN_FRESH!);
  });
});
