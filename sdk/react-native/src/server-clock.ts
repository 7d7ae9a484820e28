/**
 * The gateway's clock as seen from the device. Phones' clocks drift and are set by hand: a device token's absolute
 * `expiresAt`/`exp` read on a clock an hour fast looks expired at once (the SDK would attest on every call and hit the
 * attestation limit), and `Tollgate-Request-Time` read from it is refused as skewed. So the SDK keeps the offset between
 * the gateway's `Date` header (RFC 9110 section 6.6.1, one-second resolution) and the device clock, stamps requests
 * with device time + offset, and computes token expiry from the relative `expiresIn`.
 */
import { parseHttpDate } from './errors';

/** Offsets smaller than this are the `Date` header's rounding and the network's delay, not a wrong clock. */
export const CLOCK_OFFSET_THRESHOLD_MS = 2_000;

export class ServerClock {
  private offset = 0;

  constructor(private readonly local: () => number) {}

  /** Gateway time minus device time, ms (0 until a `Date` header shows a difference beyond the threshold). */
  get offsetMs(): number {
    return this.offset;
  }

  /** The device clock, ms. */
  localNow(): number {
    return this.local();
  }

  /** The gateway's time now, ms: what `Tollgate-Request-Time` carries. */
  now(): number {
    return this.local() + this.offset;
  }

  /** Reads a response's `Date` header, received at device time `receivedAtMs`. */
  observe(dateHeader: string | null | undefined, receivedAtMs: number): void {
    if (!dateHeader) return;
    const date = parseHttpDate(dateHeader.trim());
    if (date === null) return;
    // The header truncates to the second: the gateway's time was somewhere in [date, date + 1 s).
    const offset = date + 500 - receivedAtMs;
    this.offset = Math.abs(offset) >= CLOCK_OFFSET_THRESHOLD_MS ? Math.round(offset) : 0;
  }
}
