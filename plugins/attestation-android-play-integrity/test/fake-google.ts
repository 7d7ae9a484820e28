/**
 * A fake of Google's OAuth token endpoint and Play Integrity API on loopback, strict where Google is strict: the token
 * endpoint accepts only an RFC 7523 assertion signed (RS256) by the service account's key, for the Play Integrity scope
 * and addressed to itself; the decode endpoint accepts only an access token it issued.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader, jwtVerify, type ProtectedHeaderParameters } from 'jose';

export const CLIENT_EMAIL = 'play-integrity@demo-project.iam.gserviceaccount.com';
export const PLAY_INTEGRITY_SCOPE = 'https://www.googleapis.com/auth/playintegrity';

export interface ServiceAccount {
  readonly json: string;
  readonly privateKeyPem: string;
  readonly publicKey: KeyObject;
}

/** A fresh service-account key as Google issues them: JSON with a PKCS#8 RSA private key. */
export function serviceAccount(tokenUri = 'https://attacker.invalid/token'): ServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const json = JSON.stringify({
    type: 'service_account',
    project_id: 'demo-project',
    private_key_id: 'test-key-1',
    private_key: privateKeyPem,
    client_email: CLIENT_EMAIL,
    token_uri: tokenUri,
  });
  return { json, privateKeyPem, publicKey };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function send(response: ServerResponse, status: number, body: unknown, raw = false): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(raw ? String(body) : JSON.stringify(body));
}

export class FakeGoogle {
  readonly #server: Server;
  readonly #publicKey: KeyObject;
  readonly #issued = new Set<string>();
  /** Integrity token → tokenPayloadExternal. */
  readonly payloads = new Map<string, unknown>();
  tokenRequests = 0;
  decodeRequests = 0;
  /** When set, the decode endpoint answers 503. */
  unavailable = false;
  /** Every access token the fake has issued, to check none leaks into an error. */
  readonly issuedTokens: string[] = [];
  baseUrl = '';
  /** The protected header and claims of every assertion posted to the token endpoint, and the content type it came with. */
  readonly assertions: Array<{ header: ProtectedHeaderParameters; claims: Record<string, unknown>; contentType: string | undefined }> = [];
  /** `expires_in` of the next access tokens (Google sends 3599); `undefined` leaves it out. */
  expiresIn: unknown = 3599;
  /** When set, the token endpoint answers this instead of a token (after checking the assertion as usual). */
  tokenAnswer: { status: number; body: unknown; raw?: boolean } | undefined;
  /** When set, the decode endpoint answers this to a request with a valid access token. */
  decodeAnswer: { status: number; body: unknown; raw?: boolean } | undefined;
  /** The content type of every decode request. */
  readonly decodeContentTypes: Array<string | undefined> = [];

  constructor(account: ServiceAccount) {
    this.#publicKey = account.publicKey;
    this.#server = createServer((request, response) => {
      this.#handle(request, response).catch(() => send(response, 500, { error: 'internal' }));
    });
  }

  get tokenUrl(): string {
    return `${this.baseUrl}/token`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readBody(request);
    if (request.method === 'POST' && request.url === '/token') return this.#token(body, response, request.headers['content-type']);
    const decode = /^\/v1\/([^/:]+):decodeIntegrityToken$/.exec(request.url ?? '');
    if (request.method === 'POST' && decode) return this.#decode(request, body, response);
    send(response, 404, { error: { code: 404, status: 'NOT_FOUND' } });
  }

  /** Forgets every access token issued so far (as when Google revokes them): the next decode with one answers 401. */
  revokeAccessTokens(): void {
    this.#issued.clear();
  }

  async #token(body: string, response: ServerResponse, contentType: string | undefined): Promise<void> {
    this.tokenRequests += 1;
    const form = new URLSearchParams(body);
    try {
      const assertion = form.get('assertion') ?? '';
      this.assertions.push({ header: decodeProtectedHeader(assertion), claims: JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>, contentType });
    } catch {
      // An unreadable assertion is refused below.
    }
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return send(response, 400, { error: 'unsupported_grant_type' });
    try {
      const { payload } = await jwtVerify(form.get('assertion') ?? '', this.#publicKey, {
        algorithms: ['RS256'],
        issuer: CLIENT_EMAIL,
        audience: this.tokenUrl,
        requiredClaims: ['iat', 'exp'],
      });
      if (payload.scope !== PLAY_INTEGRITY_SCOPE) return send(response, 400, { error: 'invalid_scope' });
    } catch {
      return send(response, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
    }
    if (this.tokenAnswer) return send(response, this.tokenAnswer.status, this.tokenAnswer.body, this.tokenAnswer.raw);
    const token = `ya29.${randomBytes(24).toString('base64url')}`;
    this.#issued.add(token);
    this.issuedTokens.push(token);
    send(response, 200, { access_token: token, expires_in: this.expiresIn, token_type: 'Bearer' });
  }

  #decode(request: IncomingMessage, body: string, response: ServerResponse): void {
    this.decodeRequests += 1;
    this.decodeContentTypes.push(request.headers['content-type']);
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!bearer || !this.#issued.has(bearer)) return send(response, 401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } });
    if (this.decodeAnswer) return send(response, this.decodeAnswer.status, this.decodeAnswer.body, this.decodeAnswer.raw);
    if (this.unavailable) return send(response, 503, { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } });
    let integrityToken: unknown;
    try {
      const parsed = JSON.parse(body) as { integrity_token?: unknown; integrityToken?: unknown };
      integrityToken = parsed.integrity_token ?? parsed.integrityToken;
    } catch {
      return send(response, 400, { error: { code: 400, message: 'Invalid JSON payload received.', status: 'INVALID_ARGUMENT' } });
    }
    const payload = typeof integrityToken === 'string' ? this.payloads.get(integrityToken) : undefined;
    if (payload === undefined) {
      return send(response, 400, { error: { code: 400, message: 'Integrity token cannot be decoded due to invalid arguments.', status: 'INVALID_ARGUMENT' } });
    }
    send(response, 200, { tokenPayloadExternal: payload });
  }
}
