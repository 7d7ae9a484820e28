/**
 * Gateway nodes as separate processes (`tollgate serve`), for fleet tests that kill one with SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage } from 'node:http';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';

export const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

/** Starts `tollgate serve` with `env` on a free port; resolves with its URL once it listens. */
/**
 * The environment of a test fleet's nodes: one PostgreSQL, one Redis, the fake OpenAI upstream, a fresh master key, a
 * fast change poll and logs at `warn`. Each node adds its own `TOLLGATE_DATA_DIR`.
 */
export function fleetEnvironment(databaseUrl: string, redisUrl: string, openaiUrl: string): Record<string, string> {
  return {
    TOLLGATE_DATABASE_URL: databaseUrl,
    TOLLGATE_REDIS_URL: redisUrl,
    TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
    TOLLGATE_CHANGE_POLL_MS: '100',
    TOLLGATE_PROVIDER_OPENAI_BASE_URL: openaiUrl,
    TOLLGATE_LOG_LEVEL: 'warn',
  };
}

export function serveNode(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) resolve({ child, url: match[1]!, output: () => text });
    });
    child.once('exit', (code) => reject(new Error(`node exited ${code}: ${text}`)));
  });
}

/** Opens a request and resolves when its response head arrived; the body stays open until `close()`. */
export function openStream(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body = '{"stream":true}',
): Promise<{ status: number; headers: IncomingMessage['headers']; text: () => Promise<string>; close: () => void }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: url.hostname, port: url.port, method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', () => undefined);
      const ended = new Promise<string>((done) => {
        response.once('end', () => done(Buffer.concat(chunks).toString('utf8')));
        response.once('close', () => done(Buffer.concat(chunks).toString('utf8')));
      });
      resolve({ status: response.statusCode ?? 0, headers: response.headers, text: () => ended, close: () => request.destroy() });
    });
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * Attests a development device on a separate node: a development token made through the shared store (a short-lived
 * core on `dataDirectory` with `env`), exchanged at `nodeUrl`. Returns the two Tollgate headers a client sends.
 */
export async function attestOnNode(
  nodeUrl: string,
  store: { readonly env: Record<string, string>; readonly dataDirectory: string },
  app: { readonly id: string; readonly appToken: string },
  deviceId: string,
): Promise<Record<string, string>> {
  const core = await createGatewayCore({ env: { ...store.env, TOLLGATE_DATA_DIR: store.dataDirectory }, workingDirectory: store.dataDirectory });
  let developmentToken: string;
  try {
    ({ developmentToken } = await core.management.createDevelopmentToken(app.id));
  } finally {
    await core.close();
  }
  const response = await fetch(`${nodeUrl}/v1/attest/development`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken },
    body: JSON.stringify({ developmentToken, deviceId }),
  });
  if (response.status !== 200) throw new Error(`development attestation at ${nodeUrl} failed: ${response.status} ${await response.text()}`);
  return { 'tollgate-app-token': app.appToken, 'tollgate-device-token': ((await response.json()) as { deviceToken: string }).deviceToken };
}
