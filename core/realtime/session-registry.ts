/**
 * The realtime sessions open on this node, and the caps that hold inside them (protocol.md, "Realtime sessions"):
 * one sweep a second closes a session that was idle for the app's `sessionIdleSeconds` (4504 `session_idle`), that
 * reached `maxSessionSeconds` (4429 `session_too_long`), whose app was disabled or whose token was rotated past its
 * grace (4401), whose device was revoked (4403 `device_revoked`), and charges session seconds (4429
 * `session_seconds_budget` once a budget is used up). Revocations reach this node through the directory, which follows
 * the change feed every `TOLLGATE_CHANGE_POLL_MS` (default 1 s): with the sweep, a revocation made on any node closes
 * the session within about two seconds. Token usage is charged as each usage frame arrives (budget-adapter.ts).
 */
import type { Logger } from 'pino';
import { GatewayError, type GatewayDirectory, type RateLimitStore, type TokenUsage } from '../contract';
import type { UsageEvent } from '../storage/repositories';
import { chargeSessionSeconds, chargeSessionTokens, checkSessionTokens } from './budget-adapter';
import type { RealtimeSession, SessionHost } from './session';

/** Session seconds are charged in steps of this many (and at the end): one store call per session every few seconds. */
const CHARGE_STEP_SECONDS = 5;
const SWEEP_MS = 1000;

export interface SessionRegistryDependencies {
  readonly store: RateLimitStore;
  readonly directory: GatewayDirectory;
  readonly clock: () => number;
  readonly logger: Logger;
  /** Writes the session's request-log row (the usage recorder). */
  readonly record: (event: UsageEvent) => void;
  /** Whether the operator blocked this end user (the end-user directory's blocked set); absent: none are. */
  readonly isUserBlocked?: (appId: string, issuer: string, subject: string) => boolean;
}

export class SessionRegistry implements SessionHost {
  readonly sessions = new Set<RealtimeSession>();
  readonly clock: () => number;
  private sweeper: NodeJS.Timeout | undefined;
  /** Counters for /metrics. */
  private readonly frames = { in: 0, out: 0 };
  private readonly bytes = { in: 0, out: 0 };
  private readonly closes = new Map<string, number>();
  private readonly tokens = { input: 0, output: 0 };
  private opened = 0;
  private drained: (() => void) | undefined;

  constructor(private readonly dependencies: SessionRegistryDependencies) {
    this.clock = dependencies.clock;
  }

  add(session: RealtimeSession): void {
    this.sessions.add(session);
    this.opened += 1;
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
      this.sweeper.unref();
    }
  }

  countFrame(direction: 'in' | 'out', bytes: number): void {
    this.frames[direction] += 1;
    this.bytes[direction] += bytes;
  }

  debug(message: string, error: unknown): void {
    this.dependencies.logger.debug({ cause: error instanceof Error ? error.message : String(error) }, message);
  }

  charge(session: RealtimeSession, usage: TokenUsage): Promise<void> | undefined {
    this.tokens.input += usage.inputTokens ?? 0;
    this.tokens.output += usage.outputTokens ?? 0;
    const { store, clock } = this.dependencies;
    const charged = chargeSessionTokens(store, session.context, usage, clock());
    // Checked after every charge: the frame that crosses a budget is delivered, the session then closes (4429).
    const check = () => checkSessionTokens(store, session.context, clock());
    return (charged ?? Promise.resolve()).then(check, (error: unknown) => {
      this.dependencies.logger.warn({ requestId: session.id, cause: error instanceof Error ? error.message : String(error) }, 'realtime tokens could not be added to the token budgets');
      return check();
    });
  }

  ended(session: RealtimeSession): void {
    this.sessions.delete(session);
    const now = this.clock();
    const code = String(session.closeCode);
    this.closes.set(code, (this.closes.get(code) ?? 0) + 1);
    const context = session.context;
    // The stream slot (limitRate) is held until the response it was taken for closes: the session's stand-in closes now.
    context.response.destroy();
    context.response.emit('close');
    this.chargeSeconds(session, now, true);
    const app = context.get('app');
    const device = context.get('device');
    const usage = session.usage;
    this.dependencies.record({
      appId: app.id,
      deviceId: device.verified !== false ? device.deviceId : null,
      verified: device.verified !== false,
      provider: context.provider.slug,
      status: 101,
      errorType: session.closedWith?.type ?? null,
      latencyMs: now - session.startedAt,
      bytesIn: session.bytesIn,
      bytesOut: session.bytesOut,
      truncated: false,
      createdAt: context.startedAt,
      method: 'GET',
      route: `${context.route.version}/${context.route.providerPath}`,
      reason: session.closedWith?.reason ?? null,
      requestId: session.id,
      inputTokens: usage?.inputTokens ?? null,
      outputTokens: usage?.outputTokens ?? null,
      cachedTokens: usage?.cachedTokens ?? null,
      reasoningTokens: usage?.reasoningTokens ?? null,
      model: usage?.model ?? null,
      userId: context.peek('user')?.subject ?? null,
      session: {
        framesIn: session.framesIn,
        framesOut: session.framesOut,
        closeCode: session.closeCode,
        closeReason: session.closeReason,
        closedBy: session.closedBy ?? 'gateway',
        ...(session.audioSeconds ? { audioSeconds: session.audioSeconds } : {}),
      },
    });
    // The session's access line (its request-log row holds the rest).
    this.dependencies.logger.info(
      { requestId: session.id, app: app.id, device: device.deviceId, provider: context.provider.slug, durationMs: now - session.startedAt, closeCode: session.closeCode, closedBy: session.closedBy ?? 'gateway', framesIn: session.framesIn, framesOut: session.framesOut },
      'realtime session ended',
    );
    if (this.sessions.size === 0) {
      if (this.sweeper) clearInterval(this.sweeper);
      this.sweeper = undefined;
      this.drained?.();
    }
  }

  /** Charges the whole seconds not charged yet (in steps, or all of them at the end). */
  private chargeSeconds(session: RealtimeSession, now: number, final: boolean): void {
    const elapsed = final ? Math.ceil((now - session.startedAt) / 1000) : Math.floor((now - session.startedAt) / 1000);
    const due = elapsed - session.chargedSeconds;
    if (due <= 0 || (!final && due < CHARGE_STEP_SECONDS)) return;
    session.chargedSeconds = elapsed;
    chargeSessionSeconds(this.dependencies.store, session.context, due, now).catch((error: unknown) => {
      if (error instanceof GatewayError) session.closeWith(error);
      else this.debug('realtime session seconds could not be charged', error);
    });
  }

  /**
   * The caps that need a clock or a look at the directory, once a second over every open session, with the app as the
   * directory knows it now (a settings change applies to open sessions too).
   */
  sweep(): void {
    const byApp = new Map<string, RealtimeSession[]>();
    for (const session of this.sessions) {
      if (session.closedBy !== undefined) continue;
      const group = byApp.get(session.appId);
      if (group) group.push(session);
      else byApp.set(session.appId, [session]);
    }
    for (const [appId, sessions] of byApp) {
      let found;
      try {
        found = this.dependencies.directory.findAppById(appId);
      } catch (error) {
        this.debug('realtime revocation check failed', error);
        continue;
      }
      if (found instanceof Promise) found.then((app) => this.checkGroup(app, sessions), (error: unknown) => this.debug('realtime revocation check failed', error));
      else this.checkGroup(found, sessions);
    }
  }

  /** Closes the sessions of one app that ran out of time, or whose app, app token or device is no longer in good standing. */
  private checkGroup(app: Awaited<ReturnType<GatewayDirectory['findAppById']>>, sessions: readonly RealtimeSession[]): void {
    const now = this.clock();
    for (const session of sessions) {
      if (session.closedBy !== undefined) continue;
      if (!app || app.status !== 'active') {
        session.closeWith(new GatewayError('unauthorized', 'This app is disabled.', { reason: 'app_disabled' }));
        continue;
      }
      const hash = session.appTokenHash;
      if (app.tokenHash !== hash && !(app.previousTokenHash === hash && (app.previousTokenExpiresAt ?? 0) > now)) {
        session.closeWith(new GatewayError('unauthorized', 'This app token was rotated and its grace period has ended.', { reason: 'app_token_rotated' }));
        continue;
      }
      const device = session.context.get('device');
      if (device.verified !== false && (device.issuedAt < app.devicesRevokedBefore || this.dependencies.directory.isDeviceRevoked(app.id, device.deviceId))) {
        session.closeWith(new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' }));
        continue;
      }
      const user = session.context.peek('user');
      if (user && this.dependencies.isUserBlocked?.(app.id, user.issuer, user.subject)) {
        session.closeWith(new GatewayError('attestationFailed', 'This user has been blocked by the operator.', { reason: 'user_blocked' }));
        continue;
      }
      const settings = app.settings;
      if (now - session.lastFrameAt >= settings.sessionIdleSeconds * 1000) {
        session.closeWith(new GatewayError('upstreamTimeout', `No frame either way for ${settings.sessionIdleSeconds} s.`, { reason: 'session_idle' }));
        continue;
      }
      if (now - session.startedAt >= settings.maxSessionSeconds * 1000) {
        session.closeWith(new GatewayError('rateLimited', `The session reached its maximum length of ${settings.maxSessionSeconds} s.`, { reason: 'session_too_long' }));
        continue;
      }
      this.chargeSeconds(session, now, false);
    }
  }

  /**
   * Shutdown: sessions run on for `graceMs`, then each is closed with 4503 `draining` (the client may reconnect at once,
   * to another node); sockets that do not finish their close handshake within a second more are cut.
   */
  async drain(graceMs: number): Promise<void> {
    if (this.sessions.size === 0) return;
    const empty = new Promise<void>((resolve) => (this.drained = resolve));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([empty, deadline]);
    clearTimeout(timer);
    if (this.sessions.size === 0) return;
    for (const session of this.sessions) session.closeWith(new GatewayError('serviceUnavailable', 'The gateway is shutting down; reconnect.', { reason: 'draining' }));
    let cut: NodeJS.Timeout | undefined;
    await Promise.race([empty, new Promise<void>((resolve) => (cut = setTimeout(resolve, 1000)))]);
    clearTimeout(cut);
    for (const session of [...this.sessions]) session.terminate();
  }

  /** Prometheus text for the realtime series. */
  renderMetrics(): string {
    const lines = [
      '# HELP tollgate_realtime_sessions_open Realtime sessions open on this node.',
      '# TYPE tollgate_realtime_sessions_open gauge',
      `tollgate_realtime_sessions_open ${this.sessions.size}`,
      '# HELP tollgate_realtime_sessions_total Realtime sessions opened on this node.',
      '# TYPE tollgate_realtime_sessions_total counter',
      `tollgate_realtime_sessions_total ${this.opened}`,
      '# HELP tollgate_realtime_frames_total Messages relayed, by direction (in: client to provider).',
      '# TYPE tollgate_realtime_frames_total counter',
      `tollgate_realtime_frames_total{direction="in"} ${this.frames.in}`,
      `tollgate_realtime_frames_total{direction="out"} ${this.frames.out}`,
      '# HELP tollgate_realtime_bytes_total Message bytes relayed, by direction.',
      '# TYPE tollgate_realtime_bytes_total counter',
      `tollgate_realtime_bytes_total{direction="in"} ${this.bytes.in}`,
      `tollgate_realtime_bytes_total{direction="out"} ${this.bytes.out}`,
      '# HELP tollgate_realtime_tokens_total Tokens the providers reported in realtime usage frames.',
      '# TYPE tollgate_realtime_tokens_total counter',
      `tollgate_realtime_tokens_total{kind="input"} ${this.tokens.input}`,
      `tollgate_realtime_tokens_total{kind="output"} ${this.tokens.output}`,
      '# HELP tollgate_realtime_closes_total Realtime sessions ended, by the close code the client saw.',
      '# TYPE tollgate_realtime_closes_total counter',
    ];
    for (const [code, count] of [...this.closes].sort()) lines.push(`tollgate_realtime_closes_total{code="${code}"} ${count}`);
    return `${lines.join('\n')}\n`;
  }
}
