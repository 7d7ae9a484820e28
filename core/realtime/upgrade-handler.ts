/**
 * `GET /v1/proxy/{slug}/{version}/{path}` with `Upgrade: websocket` (protocol.md, "Realtime sessions"), heard on the
 * HTTP server's `upgrade` event (Express never sees an upgrade). Before anything is upgraded the request runs the
 * pipeline's own stages, in the pipeline's order, up to the one that would forward it (style.md, lesson 13: realtime
 * is the same pipeline with another last stage), so that a stage added to the pipeline applies to upgrades too. A
 * refusal is the usual HTTP error response and nothing reaches the provider.
 *
 * Then the provider's socket is opened first and the client's handshake completed only once it is open, so that the
 * client gets the subprotocol the provider chose, and a provider that refuses the handshake is answered with its own
 * status and body (as an HTTP answer passes through) rather than with an upgrade that closes at once
 * (docs/decisions/2026-11-28-realtime-sessions.md).
 *
 * WebSocket framing is `ws`'s (RFC 6455, maintained, the Node standard), not code of our own. Per hop:
 * - permessage-deflate is off both ways: audio does not compress, a relay would inflate and deflate every frame twice,
 *   and each deflate context costs hundreds of kilobytes per socket (5,000 sessions must fit in 500 MB);
 * - a message cap of `TOLLGATE_REALTIME_MAX_FRAME_BYTES` (default 4 MiB, `ws`'s default is 100 MiB) both ways: a
 *   larger message is refused as its header arrives, before it is buffered: the client's with 4400 `frame_too_large`
 *   (protocol.md; see ClientSocket), the provider's with 1009 (RFC 6455 §7.4.1).
 *
 * The app's model policy holds for the session: the URL's model is checked with the pipeline's (core/pipeline/
 * model-policy.ts), the client frames by a ClientFramePolicy (core/realtime/frame-policy.ts) when a policy applies.
 */
import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import { GatewayError, ProxyContext, type PipelineObserver, type PipelineStage, type RateLimitStore, type RealtimeRoute } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { parseProxyRoute } from '../pipeline/proxy-path';
import { markRealtimeUpgrade } from '../pipeline/realtime-upgrades';
import { findRealtimeRoute } from '../pipeline/route-class';
import { redactCredentials } from '../pipeline/header-hygiene';
import type { ProviderRegistry } from '../registry/provider-registry';
import { sendGatewayError, toGatewayError } from '../routes/errors';
import { PROXY_PREFIX } from '../routes/proxy';
import { hashToken } from '../security/tokens';
import { checkSessionSeconds } from './budget-adapter';
import { effectiveSettings } from '../users/profiles';
import { ClientFramePolicy } from './frame-policy';
import { ClientSocket, RealtimeSession } from './session';
import type { SessionRegistry } from './session-registry';
import { sortSubprotocols, upstreamSocketHeaders, upstreamSocketUrl } from './socket-url';

export interface UpgradeDependencies {
  readonly registry: ProviderRegistry;
  /** The pipeline's stages, in order (Pipeline.stages): every one before `forward` runs on an upgrade. */
  readonly stages: readonly PipelineStage[];
  readonly observers: readonly PipelineObserver[];
  readonly sessions: SessionRegistry;
  readonly store: RateLimitStore;
  readonly configuration: Configuration;
  readonly clock: () => number;
  readonly logger: Logger;
}

/** A provider's refusal of the handshake is passed on up to this many bytes of its body. */
const MAX_REFUSAL_BODY = 64 * 1024;

export class UpgradeHandler {
  private readonly server: WebSocketServer;
  private draining = false;
  private readonly checks: readonly PipelineStage[];

  constructor(private readonly dependencies: UpgradeDependencies) {
    const forward = dependencies.stages.findIndex((stage) => stage.name === 'forward');
    this.checks = forward === -1 ? dependencies.stages : dependencies.stages.slice(0, forward);
    this.server = new WebSocketServer({
      noServer: true,
      perMessageDeflate: false,
      maxPayload: dependencies.configuration.realtimeMaxFrameBytes,
      // A client message over the cap closes with 4400 frame_too_large rather than 1009 (protocol.md).
      WebSocket: ClientSocket,
      // The subprotocol is the provider's choice (or `tollgate.v1`), decided before the client's handshake completes.
      handleProtocols: (_offered, request) => chosenProtocols.get(request) ?? false,
    });
  }

  /** New upgrades are refused with 503 `draining` from now on. */
  stopAccepting(): void {
    this.draining = true;
  }

  /** The server's `upgrade` listener. */
  readonly handle = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    const requestId = randomUUID();
    const response = new ServerResponse(request);
    response.assignSocket(socket as never);
    response.shouldKeepAlive = false;
    response.on('finish', () => socket.end());
    const refuse = (error: GatewayError, context?: ProxyContext) => {
      if (context) {
        context.outcome.status = error.status;
        context.outcome.errorType = error.type;
        context.outcome.reason = error.reason;
        this.notify(context, error);
      }
      sendGatewayError(response, requestId, error, request);
    };
    if (this.draining) return refuse(new GatewayError('serviceUnavailable', 'The gateway is shutting down; retry on another node.', { retryAfterSeconds: 1, reason: 'draining' }));
    const url = request.url ?? '';
    if (!url.startsWith(`${PROXY_PREFIX}/`) || (request.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      return refuse(new GatewayError('invalidRequest', 'Only WebSocket upgrades on realtime proxy routes are accepted.', { status: 400, reason: 'route_not_allowed' }));
    }
    if (request.method !== 'GET') return refuse(new GatewayError('invalidRequest', 'A WebSocket upgrade is a GET request.', { status: 405, reason: 'method_not_allowed' }));
    let context: ProxyContext;
    let realtime;
    try {
      const route = parseProxyRoute(url.slice(PROXY_PREFIX.length));
      const provider = this.dependencies.registry.find(route.slug);
      if (!provider) throw new GatewayError('providerNotFound', `No provider is registered as "${route.slug}".`, { reason: 'unknown_provider' });
      if (!Object.hasOwn(provider.manifest.versions, route.version)) throw new GatewayError('providerNotFound', `Provider "${route.slug}" has no version "${route.version}".`, { reason: 'unknown_version' });
      realtime = findRealtimeRoute(provider.realtimeRoutes, route.providerPath);
      if (!realtime) throw new GatewayError('invalidRequest', `${route.providerPath || '/'} is not a realtime route of provider "${route.slug}".`, { status: 400, reason: 'route_not_allowed' });
      context = new ProxyContext(requestId, request, response, route, provider.manifest, this.dependencies.clock());
    } catch (error) {
      return refuse(toGatewayError(error));
    }
    // Tokens may come as subprotocols (browsers cannot set headers on an upgrade); a header, when sent, wins. Never the query.
    const offered = sortSubprotocols(request.headers, realtime.route.credentialSubprotocols);
    if (offered.appToken !== undefined && request.headers['tollgate-app-token'] === undefined) request.headers['tollgate-app-token'] = offered.appToken;
    if (offered.deviceToken !== undefined && request.headers['tollgate-device-token'] === undefined) request.headers['tollgate-device-token'] = offered.deviceToken;
    markRealtimeUpgrade(request);
    // An upgrade has no body: a per-request assertion signs the upgrade's digest with an empty body, and no stage waits
    // for a body stream that the upgrade's socket will never carry.
    context.requestBody = Buffer.alloc(0);
    this.check(context)
      .then(() => this.open(context, realtime.route, offered, socket, head))
      .catch((error: unknown) => refuse(toGatewayError(error), context));
  };

  /** The pipeline's checking stages, in order, then the session-seconds budgets (checked on the upgrade too). */
  private async check(context: ProxyContext): Promise<void> {
    for (const stage of this.checks) await stage.run(context);
    await checkSessionSeconds(this.dependencies.store, context, this.dependencies.clock());
  }

  /** Opens the provider's socket, then completes the client's handshake and starts relaying. */
  private open(context: ProxyContext, route: NonNullable<ReturnType<typeof findRealtimeRoute>>['route'], offered: ReturnType<typeof sortSubprotocols>, socket: Duplex, head: Buffer): Promise<void> {
    const { configuration, registry } = this.dependencies;
    const provider = registry.find(context.provider.slug)!;
    const upstreamRequest = context.get('upstream');
    const secret = context.get('secret');
    const target = upstreamSocketUrl(provider, route, secret, context.route.version, context.route.providerPath, upstreamRequest);
    return new Promise<void>((resolve, reject) => {
      const upstream = new WebSocket(target, offered.provider, {
        headers: upstreamSocketHeaders(upstreamRequest) as Record<string, string>,
        perMessageDeflate: false,
        maxPayload: configuration.realtimeMaxFrameBytes,
        handshakeTimeout: configuration.upstreamConnectTimeoutMs,
        followRedirects: false,
      });
      let settled = false;
      const clientGone = () => {
        if (settled) return;
        settled = true;
        upstream.terminate();
        reject(new GatewayError('invalidRequest', 'The client went away before the session opened.', { status: 499, reason: 'client_aborted' }));
      };
      socket.once('close', clientGone);
      upstream.once('unexpected-response', (_request, answer) => {
        if (settled) return;
        settled = true;
        socket.off('close', clientGone);
        // The socket is ended once the refusal's body was read (ending it now would cut the body).
        this.passRefusal(context, answer, secret.value.reveal(), () => upstream.terminate());
        resolve();
      });
      upstream.once('error', (error) => {
        if (settled) return;
        settled = true;
        socket.off('close', clientGone);
        reject(new GatewayError('upstreamUnavailable', 'The provider\'s realtime socket could not be opened.', { reason: 'upstream_unreachable', cause: error }));
      });
      upstream.once('open', () => {
        if (settled) return;
        settled = true;
        socket.off('close', clientGone);
        const response = context.response;
        response.detachSocket(socket as never);
        // The client's handshake: the provider's subprotocol, else `tollgate.v1` when the client offered it.
        const chosen = upstream.protocol || (offered.tollgate ? 'tollgate.v1' : '');
        if (chosen) chosenProtocols.set(context.request, chosen);
        this.server.handleUpgrade(context.request, socket as never, head, (client) => {
          const session = new RealtimeSession(
            context.requestId,
            context,
            client,
            upstream,
            route.usage,
            hashToken(String(context.request.headers['tollgate-app-token'])),
            this.dependencies.clock(),
            this.dependencies.sessions,
            clientFramePolicy(context, route),
          );
          this.dependencies.sessions.add(session);
          session.start();
        });
        resolve();
      });
    });
  }

  /** The provider refused the handshake: its status and body pass on (credential redacted), as an HTTP answer would. */
  private passRefusal(context: ProxyContext, answer: IncomingMessage, credential: string, finished: () => void): void {
    const chunks: Buffer[] = [];
    let size = 0;
    answer.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_REFUSAL_BODY) chunks.push(chunk);
    });
    const send = () => {
      finished();
      const response = context.response;
      if (response.headersSent) return;
      const body = redactCredentials(Buffer.concat(chunks).toString('utf8'), [credential]);
      context.outcome.status = answer.statusCode ?? 502;
      response.statusCode = answer.statusCode ?? 502;
      response.setHeader('Tollgate-Request-Id', context.requestId);
      const type = answer.headers['content-type'];
      if (typeof type === 'string') response.setHeader('Content-Type', type);
      response.setHeader('Content-Length', Buffer.byteLength(body));
      response.end(body);
      this.notify(context);
    };
    answer.once('end', send);
    answer.once('error', send);
  }

  /** Observers hear about a refused upgrade as about any refused request (the request log, metrics). */
  private notify(context: ProxyContext, error?: GatewayError): void {
    for (const observer of this.dependencies.observers) {
      try {
        if (error) observer.onError?.(context, error);
        observer.onResponse?.(context);
      } catch (failure) {
        this.dependencies.logger.error({ err: failure }, 'a pipeline observer failed on a refused realtime upgrade');
      }
    }
  }
}

/**
 * The model policy over the session's client frames, when one applies to the provider for this app (with the user's
 * profile) and the route declares frames that name a model; undefined otherwise, and frames are then never read.
 */
function clientFramePolicy(context: ProxyContext, route: RealtimeRoute): ClientFramePolicy | undefined {
  const fields = route.model;
  if (!fields?.frames?.length) return undefined;
  const policy = effectiveSettings(context).modelPolicy?.[context.provider.slug];
  return policy ? new ClientFramePolicy(policy, fields, context.provider.slug) : undefined;
}

/** The subprotocol to answer the client with, per upgrade request (set just before its handshake completes). */
const chosenProtocols = new WeakMap<IncomingMessage, string>();
