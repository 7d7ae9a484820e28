/**
 * Data for the dashboard's Users, Alerts and realtime views, made through the gateway as clients make it: signed-in
 * requests (ID tokens from a fake sign-in provider on loopback), webhooks through the management API with a receiver
 * on loopback, and a realtime session through the proxy route to a fake provider socket.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import type { FakeRealtimeUpstream } from './fake-realtime';
import { eventually } from './fake-realtime';
import type { TestGateway } from './gateway';
import { FakeSignInProvider, signingKey, type SigningKey } from './sign-in-provider';

/** A webhook receiver on loopback that answers 204 and keeps each delivery's event type. */
export class WebhookReceiver {
  readonly types: string[] = [];
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/tollgate-alerts`);
    server.on('request', (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        try {
          receiver.types.push((JSON.parse(body) as { type: string }).type);
        } catch {
          receiver.types.push('unreadable');
        }
        response.writeHead(204).end();
      });
    });
    return receiver;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A sign-in provider whose ID tokens an app's `userAuth` accepts. */
export class SignedInUsers {
  private constructor(
    readonly provider: FakeSignInProvider,
    private readonly key: SigningKey,
  ) {}

  static async start(): Promise<SignedInUsers> {
    const provider = await FakeSignInProvider.start();
    const key = await signingKey('dashboard-key');
    provider.publish([key]);
    return new SignedInUsers(provider, key);
  }

  /** App settings that check this provider's tokens. */
  settings(mode: 'optional' | 'required' = 'optional'): Record<string, unknown> {
    return { userAuth: { issuer: this.provider.issuer, jwksUrl: this.provider.jwksUrl(), audience: 'tollgate-test', tierClaim: 'tier' }, userTokenMode: mode };
  }

  token(sub: string, claims: Record<string, unknown> = {}): Promise<string> {
    return this.provider.token(this.key, sub, claims);
  }

  close(): Promise<void> {
    return this.provider.close();
  }
}

/** An admin-key client of the management API. */
export async function adminClient(gateway: TestGateway): Promise<(method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>> {
  const { adminKey } = await gateway.gateway.management.createAdminKey({ name: `dashboard-data-${Math.random().toString(36).slice(2, 8)}` });
  return async (method, path, body) => {
    const response = await fetch(`${gateway.url}/v1/admin${path}`, { method, headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : null };
  };
}

/**
 * One realtime session through the gateway: opened on `endpoint` with `headers`, `framesIn` text frames sent by the
 * client, the provider's frames (`framesOut` of them, or these texts), then closed by the client (1000).
 */
export async function realtimeSession(gateway: TestGateway, fake: FakeRealtimeUpstream, endpoint: string, headers: Record<string, string>, framesIn = 2, providerFrames: number | readonly string[] = 3): Promise<void> {
  const sent = typeof providerFrames === 'number' ? Array.from({ length: providerFrames }, (_, index) => JSON.stringify({ type: 'Results', index })) : providerFrames;
  const framesOut = sent.length;
  const opened = fake.nextSession();
  const client = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/v1/proxy/${endpoint}`, { headers, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    client.once('open', () => resolve());
    client.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    client.once('error', reject);
  });
  const upstream = await opened;
  let received = 0;
  client.on('message', () => (received += 1));
  for (let index = 0; index < framesIn; index += 1) client.send(JSON.stringify({ type: 'KeepAlive', index }));
  for (const frame of sent) upstream.socket.send(frame);
  await eventually(() => upstream.messages.length === framesIn && received === framesOut, 5000, 'frames both ways');
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  client.close(1000, 'done');
  await closed;
}
