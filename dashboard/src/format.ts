/**
 * Numbers as an operator reads them, at any scale: money in dollars or cents with the digits that matter, durations in
 * ms or s, counts with thousands separators or k/M.
 */

/** `$1,234`, `$12.50`, `$0.42`, `$0.075`, `$0.0031` (two significant digits below a dollar), `$0`. */
export function money(usd: number): string {
  if (!Number.isFinite(usd) || usd === 0) return '$0';
  const sign = usd < 0 ? '-' : '';
  const value = Math.abs(usd);
  if (value >= 1000) return `${sign}$${Math.round(value).toLocaleString('en-US')}`;
  if (value >= 1) return `${sign}$${value.toFixed(2)}`;
  return `${sign}$${Number(value.toPrecision(2)).toString()}`;
}

/** `850 ms`, `1.2 s`, `14 s`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/** `950`, `12.3k`, `4.5M`: short enough for an axis or a tile. */
export function compact(count: number): string {
  if (!Number.isFinite(count)) return '';
  const value = Math.abs(count);
  if (value < 1000) return String(Math.round(count * 100) / 100);
  if (value < 1_000_000) return `${Number((count / 1000).toFixed(value < 10_000 ? 1 : 0))}k`;
  return `${Number((count / 1_000_000).toFixed(1))}M`;
}

/** A value in a unit: `money`, `ms` or a plain count. */
export type Unit = 'usd' | 'ms' | 'count';
export function inUnit(value: number, unit: Unit): string {
  return unit === 'usd' ? money(value) : unit === 'ms' ? duration(value) : compact(value);
}

/**
 * Which prices a spend estimate used, to show beside it: `prices as of 2026-12-05` (the default table's date),
 * `operator price`, or both joined; '' when none.
 */
export function pricesUsed(priceAsOf: readonly string[] | string | null | undefined): string {
  const dates = (typeof priceAsOf === 'string' ? [priceAsOf] : [...(priceAsOf ?? [])]).filter(Boolean);
  const operator = dates.includes('operator price');
  const defaults = dates.filter((date) => date !== 'operator price').sort();
  const parts = [...(defaults.length ? [`prices as of ${defaults.join(', ')}`] : []), ...(operator ? ['operator price'] : [])];
  return parts.join('; ');
}
