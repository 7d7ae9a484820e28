/**
 * Managing end users (the admin API, the CLI, MCP): list and search the users the gateway has seen for an app, read
 * one, block and unblock. A block is a database change that moves the change feed, so every node refuses the user
 * (`user_blocked`, on every device) within its change-poll interval; this process refreshes its blocked set at once.
 */
import type { Knex } from 'knex';
import { TollgateError, type AppSettings, type RateLimitStore } from '../contract';
import { limitsOf, type MeLimit } from '../routes/me';
import { AppRepository, bumpChangeSequence } from '../storage/repositories';
import { EndUserRepository, type EndUserDirectory, type EndUserRow } from './end-user-store';
import { settingsWithProfile } from './profiles';
import { resolveUserAuth, userCounterKey } from './user-auth';

/** A user as the management API shows it. */
export interface EndUserView {
  readonly id: string;
  readonly appId: string;
  readonly issuer: string;
  readonly profile: string | null;
  readonly firstSeenAt: string;
  readonly lastSeenAt: string;
  readonly blocked: boolean;
  readonly blockedAt: string | null;
}

export function endUserView(row: EndUserRow): EndUserView {
  return {
    id: row.subject,
    appId: row.appId,
    issuer: row.issuer,
    profile: row.profile,
    firstSeenAt: new Date(row.firstSeenAt).toISOString(),
    lastSeenAt: new Date(row.lastSeenAt).toISOString(),
    blocked: row.blockedAt !== null,
    blockedAt: row.blockedAt === null ? null : new Date(row.blockedAt).toISOString(),
  };
}

/** The limits and budgets that hold for a user, with what remains of each (`GET …/users/{userId}/limits`). */
export interface EndUserLimits {
  readonly id: string;
  readonly issuer: string;
  /** The profile of the user's last seen token (its tier claim), null: the app's own limits. */
  readonly profile: string | null;
  /** False when the stored profile names no profile of the app now (its limits are then the app's own). */
  readonly profileApplies: boolean;
  /** The user's own limits (across all the user's devices) and the app's, which the user shares with every other user;
   * per-device limits are left out (each device has its own: see `GET /v1/me` from the device). */
  readonly limits: MeLimit[];
}

/** Called after a user was blocked (webhook `user.blocked`). */
export type UserBlockedListener = (appId: string, user: EndUserView) => void;

const USER_ID = /^[^\u0000-\u001f\u007f]{1,255}$/;

export class EndUserService {
  private readonly blockedListeners: UserBlockedListener[] = [];

  constructor(
    private readonly database: Knex,
    private readonly clock: () => number,
    /** The serving process's directory (absent in the CLI: other processes notice through the change feed). */
    private readonly directory?: EndUserDirectory,
  ) {}

  onBlocked(listener: UserBlockedListener): void {
    this.blockedListeners.push(listener);
  }

  /** The issuer of the app's users (its sign-in provider); a 404 for an unknown app, a 409 without a sign-in provider. */
  private async issuerOf(appId: string): Promise<string> {
    return (await this.appOf(appId)).issuer;
  }

  private async appOf(appId: string): Promise<{ issuer: string; settings: AppSettings }> {
    const app = typeof appId === 'string' ? await new AppRepository(this.database).findById(appId) : null;
    if (!app) throw new TollgateError('TG_ERR_NOT_FOUND', `app "${String(appId)}" not found`);
    if (!app.settings.userAuth) throw new TollgateError('TG_ERR_CONFLICT', 'this app has no sign-in provider (userAuth): it has no end users');
    return { issuer: resolveUserAuth(app.settings.userAuth).issuer, settings: app.settings };
  }

  private checkUserId(userId: unknown): string {
    if (typeof userId !== 'string' || !USER_ID.test(userId)) throw new TollgateError('TG_ERR_VALIDATION', 'user must be the user id (the sign-in provider\'s sub)', { user: ['must be 1-255 characters without control characters'] });
    return userId;
  }

  async list(appId: string, options: { search?: string; limit?: number; offset?: number } = {}): Promise<EndUserView[]> {
    const issuer = await this.issuerOf(appId);
    const limit = Math.min(Math.max(Math.trunc(options.limit ?? 100), 1), 1000);
    const rows = await new EndUserRepository(this.database).list(appId, { search: options.search, limit, offset: Math.max(0, Math.trunc(options.offset ?? 0)) });
    return rows.filter((row) => row.issuer === issuer).map(endUserView);
  }

  async get(appId: string, userId: string): Promise<EndUserView> {
    const issuer = await this.issuerOf(appId);
    const row = await new EndUserRepository(this.database).find(appId, issuer, this.checkUserId(userId));
    if (!row) throw new TollgateError('TG_ERR_NOT_FOUND', `user "${userId}" not found`);
    return endUserView(row);
  }

  /**
   * The limits and budgets that hold for a seen user (its last seen profile applied), read from the counters of `store`
   * the way `GET /v1/me` reads them (core/routes/me.ts, `limitsOf`): the same keys, nothing charged.
   */
  async limits(appId: string, userId: string, store: RateLimitStore): Promise<EndUserLimits> {
    const app = await this.appOf(appId);
    const row = await new EndUserRepository(this.database).find(appId, app.issuer, this.checkUserId(userId));
    if (!row) throw new TollgateError('TG_ERR_NOT_FOUND', `user "${userId}" not found`);
    const settings = settingsWithProfile(app.settings, row.profile ?? undefined);
    const limits = await limitsOf(store, { appId, settings, userKey: userCounterKey(app.issuer, row.subject) }, this.clock());
    return { id: row.subject, issuer: row.issuer, profile: row.profile, profileApplies: settings !== app.settings, limits };
  }

  /** Blocks or unblocks a user (also one the gateway has not seen yet). */
  async setBlocked(appId: string, userId: string, blocked: boolean): Promise<EndUserView> {
    const issuer = await this.issuerOf(appId);
    const subject = this.checkUserId(userId);
    const now = this.clock();
    const row = await this.database.transaction(async (transaction) => {
      const changed = await new EndUserRepository(transaction).setBlocked(appId, issuer, subject, blocked ? now : null, now);
      await bumpChangeSequence(transaction);
      return changed;
    });
    await this.directory?.reload();
    const view = endUserView(row);
    if (blocked) for (const listener of this.blockedListeners) listener(appId, view);
    return view;
  }
}
