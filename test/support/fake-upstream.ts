/**
 * A fake AI provider on loopback that records exactly what reached it: method, URL, headers (also raw, duplicates
 * kept), body bytes, and whether the gateway aborted the request. Only the providers are faked in Tollgate's tests.
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  body: Buffer;
  /** Set when the connection closed before the response finished (the gateway aborted). */
  aborted: boolean;
  /** Resolves when the exchange ended, either way. */
  readonly closed: Promise<void>;
}

export type Responder = (request: RecordedRequest, response: ServerResponse, raw: IncomingMessage) => void | Promise<void>;

export class FakeUpstream {
  readonly requests: RecordedRequest[] = [];
  private readonly routes: Array<{ match: (request: RecordedRequest) => boolean; responder: Responder }> = [];
  private fallback: Responder = respondJson(200, (request: RecordedRequest) => ({ ok: true, method: request.method, url: request.url }));
  private readonly sockets = new Set<Socket>();
  /** TCP connections accepted since start. */
  connectionsAccepted = 0;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeUpstream> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const upstream = new FakeUpstream(server, `http://127.0.0.1:${port}`);
    server.on('connection', (socket: Socket) => {
      upstream.connectionsAccepted += 1;
      upstream.sockets.add(socket);
      socket.on('close', () => upstream.sockets.delete(socket));
    });
    server.on('request', (request: IncomingMessage, response: ServerResponse) => upstream.handle(request, response));
    return upstream;
  }

  /** Answers every request that no route matches. */
  respond(responder: Responder): this {
    this.fallback = responder;
    return this;
  }

  /** Answers requests whose path (with query) matches. Later routes win. */
  on(match: RegExp | ((request: RecordedRequest) => boolean), responder: Responder): this {
    const predicate = match instanceof RegExp ? (request: RecordedRequest) => match.test(request.url) : match;
    this.routes.unshift({ match: predicate, responder });
    return this;
  }

  reset(): void {
    this.requests.length = 0;
    this.routes.length = 0;
    this.fallback = respondJson(200, (request: RecordedRequest) => ({ ok: true, method: request.method, url: request.url }));
  }

  last(): RecordedRequest {
    const request = this.requests.at(-1);
    if (!request) throw new Error('the fake upstream received no request');
    return request;
  }

  async waitForRequests(count: number, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} upstream requests, got ${this.requests.length}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(raw: IncomingMessage, response: ServerResponse): void {
    let markClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (markClosed = resolve));
    const request: RecordedRequest = {
      method: raw.method ?? '',
      url: raw.url ?? '',
      headers: raw.headers,
      rawHeaders: raw.rawHeaders,
      body: Buffer.alloc(0),
      aborted: false,
      closed,
    };
    this.requests.push(request);
    response.once('close', () => {
      if (!response.writableFinished) request.aborted = true;
      markClosed();
    });
    const chunks: Buffer[] = [];
    raw.on('data', (chunk: Buffer) => chunks.push(chunk));
    raw.on('error', () => undefined);
    raw.once('end', () => {
      request.body = Buffer.concat(chunks);
      const route = this.routes.find((candidate) => candidate.match(request));
      Promise.resolve((route?.responder ?? this.fallback)(request, response, raw)).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500).end(String(error));
      });
    });
  }
}

/**
 * An OpenAI chat completion as the provider documents it (https://platform.openai.com/docs/api-reference/chat/object):
 * one choice answering `content`, with the tokens it reports.
 */
export function chatCompletion(
  content: string,
  tokens: { readonly prompt: number; readonly completion: number },
  fields: { readonly id?: string; readonly model?: string; readonly created?: number } = {},
): Record<string, unknown> {
  return {
    id: fields.id ?? 'chatcmpl-test',
    object: 'chat.completion',
    created: fields.created ?? 1741570283,
    model: fields.model ?? 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: tokens.prompt, completion_tokens: tokens.completion, total_tokens: tokens.prompt + tokens.completion },
  };
}

/** JSON answer. */
export function respondJson(status: number, body: unknown | ((request: RecordedRequest) => unknown), headers: Record<string, string> = {}): Responder {
  return (request, response) => {
    const payload = JSON.stringify(typeof body === 'function' ? (body as (r: RecordedRequest) => unknown)(request) : body);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers });
    response.end(payload);
  };
}

/**
 * Streams `chunks` with `intervalMs` between them; `holdOpen` keeps the response open after the last chunk until the
 * client goes away (for abort tests).
 */
export function respondChunks(
  chunks: readonly (string | Buffer)[],
  options: { status?: number; contentType?: string; intervalMs?: number; holdOpen?: boolean; headers?: Record<string, string> } = {},
): Responder {
  return async (_request, response) => {
    response.writeHead(options.status ?? 200, { 'content-type': options.contentType ?? 'text/event-stream', ...options.headers });
    response.flushHeaders();
    for (const chunk of chunks) {
      if (response.destroyed) return;
      response.write(chunk);
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 10));
    }
    if (!options.holdOpen) response.end();
  };
}

/** An SSE stream of `data:` events (optionally named) ending in `data: [DONE]`. */
export function sseEvents(events: readonly unknown[], options: { done?: boolean; eventNames?: readonly string[] } = {}): string[] {
  const frames = events.map((event, index) => {
    const name = options.eventNames?.[index];
    return `${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(event)}\n\n`;
  });
  if (options.done !== false) frames.push('data: [DONE]\n\n');
  return frames;
}

/** Never answers (for timeout tests); the socket stays open until the client gives up. */
export function respondNever(): Responder {
  return () => undefined;
}

/** Destroys the connection without a response (reset before headers). */
export function respondReset(): Responder {
  return (_request, response) => {
    response.socket?.destroy();
  };
}
