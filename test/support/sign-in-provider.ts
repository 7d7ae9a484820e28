/**
 * A fake sign-in provider on loopback: it publishes a JSON Web Key Set (RFC 7517) at `/.well-known/jwks.json`, as
 * Firebase, Auth0, Clerk, Cognito and Supabase do for verifying their ID tokens, counts how often it is fetched, can
 * rotate or withdraw keys and go down, and signs ID tokens (RFC 7519) with its keys.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type KeyLike } from 'jose';

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: KeyLike;
  readonly jwk: JWK;
}

export async function signingKey(kid: string): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

export class FakeSignInProvider {
  /** Fetches of the key set, per path. */
  readonly fetches = new Map<string, number>();
  /** Keys published, per path (default path `/.well-known/jwks.json`). */
  readonly published = new Map<string, SigningKey[]>();
  /** While true, every fetch answers 503. */
  down = false;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeSignInProvider> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const provider = new FakeSignInProvider(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request, response) => {
      const path = request.url ?? '/';
      provider.fetches.set(path, (provider.fetches.get(path) ?? 0) + 1);
      const keys = provider.published.get(path);
      if (provider.down || !keys) {
        response.writeHead(provider.down ? 503 : 404, { 'content-type': 'text/plain' }).end('unavailable');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: keys.map((key) => key.jwk) }));
    });
    return provider;
  }

  /** The issuer this provider's tokens name. */
  get issuer(): string {
    return `${this.url}/`;
  }

  jwksUrl(path = '/.well-known/jwks.json'): string {
    return `${this.url}${path}`;
  }

  publish(keys: SigningKey[], path = '/.well-known/jwks.json'): void {
    this.published.set(path, keys);
  }

  fetchCount(path = '/.well-known/jwks.json'): number {
    return this.fetches.get(path) ?? 0;
  }

  /** An ID token for `sub`, signed with `key`, with the given claims (defaults: this issuer, aud `tollgate-test`, 1 h). */
  async token(key: SigningKey, sub: string, claims: Record<string, unknown> = {}, options: { issuer?: string; audience?: string; expiresAt?: number } = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .setSubject(sub)
      .setIssuer(options.issuer ?? this.issuer)
      .setAudience(options.audience ?? 'tollgate-test')
      .setIssuedAt(now)
      .setExpirationTime(options.expiresAt ?? now + 3600)
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
