/**
 * In-process challenge store: single-use challenges bound to an app, the single-node default. Expired challenges are
 * swept every minute, and the store holds at most `maximum` live challenges (oldest dropped first) so that a flood of
 * challenge requests cannot exhaust memory.
 */
import type { ChallengeStore } from '../contract';

export class MemoryChallengeStore implements ChallengeStore {
  private readonly challenges = new Map<string, { appId: string; expiresAtMs: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly maximum = 100_000) {
    this.sweeper = setInterval(() => {
      const now = Date.now();
      for (const [challenge, entry] of this.challenges) if (entry.expiresAtMs <= now) this.challenges.delete(challenge);
    }, 60_000);
    this.sweeper.unref();
  }

  async issue(appId: string, challenge: string, expiresAtMs: number): Promise<void> {
    if (this.challenges.size >= this.maximum) {
      const oldest = this.challenges.keys().next();
      if (!oldest.done) this.challenges.delete(oldest.value);
    }
    this.challenges.set(challenge, { appId, expiresAtMs });
  }

  async consume(appId: string, challenge: string, nowMs: number): Promise<boolean> {
    const entry = this.challenges.get(challenge);
    if (!entry) return false;
    this.challenges.delete(challenge);
    return entry.appId === appId && entry.expiresAtMs > nowMs;
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
