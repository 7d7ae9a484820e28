/** Reading a gateway's `/metrics` (Prometheus text) in tests. */
import type { TestGateway } from './gateway';

/** The gateway's `/metrics` text. */
export async function scrapeMetrics(gateway: TestGateway): Promise<string> {
  const response = await fetch(`${gateway.url}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

/** The value of one series (`name` or `name{labels}`, exactly as exported) in a scrape; throws when it is absent. */
export function metricSample(text: string, series: string): number {
  const escaped = series.replace(/[{}"=.+]/g, (character) => `\\${character}`);
  const match = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  if (!match) throw new Error(`no sample ${series} in:\n${text}`);
  return Number(match[1]);
}
