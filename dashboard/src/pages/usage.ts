/**
 * Usage of one app or of every app: requests over time (with errors and token-budget refusals), errors by type,
 * latency per provider, top devices, tokens and estimated spend; refreshed every 30 s while shown.
 */
import { api, type App, type Usage } from '../api.js';
import { barChart, bucketLabel, timeBuckets, timeChart } from '../charts.js';
import { field, formValues, h } from '../dom.js';
import { money, pricesUsed } from '../format.js';
import { onSubmit } from '../ui.js';

const WINDOWS: ReadonlyArray<readonly [string, string]> = [['15', 'Last 15 minutes'], ['60', 'Last hour'], ['360', 'Last 6 hours'], ['1440', 'Last day'], ['10080', 'Last 7 days']];

/** Spend per model; on the all-apps page, tokens and spend per app (by name). */
function spendCharts(usage: Usage, appNames: ReadonlyMap<string, string> | null): HTMLElement[] {
  const charts: HTMLElement[] = [];
  if (usage.spend?.byModel.length) {
    charts.push(barChart('chart-spend-models', `Estimated spend by model (${pricesUsed(usage.spend.priceAsOf)})`, usage.spend.byModel.map((entry) => entry.model), [{ label: 'USD', values: usage.spend.byModel.map((entry) => +entry.usd.toFixed(6)) }], 'usd'));
  }
  if (appNames) {
    const name = (appId: string) => appNames.get(appId) ?? appId;
    const byApp = usage.tokens?.byApp ?? [];
    charts.push(
      barChart('chart-tokens-apps', 'Tokens by app', byApp.map((entry) => name(entry.appId)), [
        { label: 'input', values: byApp.map((entry) => entry.inputTokens) },
        { label: 'output', values: byApp.map((entry) => entry.outputTokens), className: 'alt' },
      ]),
    );
    if (usage.spend?.byApp?.length) charts.push(barChart('chart-spend-apps', `Estimated spend by app (${pricesUsed(usage.spend.priceAsOf)})`, usage.spend.byApp.map((entry) => name(entry.appId)), [{ label: 'USD', values: usage.spend.byApp.map((entry) => +entry.usd.toFixed(6)) }], 'usd'));
  }
  return charts;
}

function charts(usage: Usage, minutes: number, appNames: ReadonlyMap<string, string> | null): HTMLElement {
  // A continuous time axis: the whole window in equal buckets, quiet ones included.
  const buckets = timeBuckets(usage.requestsPerMinute, minutes, Date.now());
  const bucketMinutes = ((buckets[1]?.start ?? 60_000) - (buckets[0]?.start ?? 0)) / 60_000;
  const tokens = usage.tokens ?? { inputTokens: 0, outputTokens: 0, cachedTokens: 0, reasoningTokens: 0, byDevice: [], byProvider: [], byModel: [] };
  return h(
    'div',
    { class: 'charts' },
    timeChart('chart-requests', bucketMinutes <= 1 ? 'Requests per minute' : `Requests per ${bucketMinutes} minutes`, buckets.map((bucket) => bucket.start), [
      { label: 'requests', values: buckets.map((bucket) => bucket.requests) },
      { label: 'errors', values: buckets.map((bucket) => bucket.errors), className: 'bad' },
      { label: 'token budget refusals', values: buckets.map((bucket) => bucket.budgetRefusals), className: 'budget' },
    ], 'count', (start) => bucketLabel(start, minutes)),
    barChart('chart-errors', 'Errors by type', usage.errorsByType.map((entry) => entry.type), [{ label: 'errors', values: usage.errorsByType.map((entry) => entry.count), className: 'bad' }]),
    barChart('chart-latency', 'Latency per provider (p50, p95)', usage.latencyByProvider.map((entry) => entry.provider), [
      { label: 'p50', values: usage.latencyByProvider.map((entry) => entry.p50Ms) },
      { label: 'p95', values: usage.latencyByProvider.map((entry) => entry.p95Ms), className: 'alt' },
    ], 'ms'),
    barChart('chart-devices', 'Top devices', usage.topDevices.map((entry) => entry.deviceId), [{ label: 'requests', values: usage.topDevices.map((entry) => entry.requests) }]),
    barChart('chart-verification', 'Verified and unverified requests', ['verified', 'unverified'], [{ label: 'requests', values: [usage.verification.verified, usage.verification.unverified] }]),
    barChart('chart-tokens-devices', 'Top devices by tokens', tokens.byDevice.map((entry) => entry.deviceId), [
      { label: 'input', values: tokens.byDevice.map((entry) => entry.inputTokens) },
      { label: 'output', values: tokens.byDevice.map((entry) => entry.outputTokens), className: 'alt' },
    ]),
    ...(usage.spend && usage.spend.byDevice.length
      ? [barChart('chart-spend-devices', `Estimated spend by device (${pricesUsed(usage.spend.priceAsOf)})`, usage.spend.byDevice.map((entry) => entry.deviceId), [{ label: 'USD', values: usage.spend.byDevice.map((entry) => +entry.usd.toFixed(6)) }], 'usd')]
      : []),
    barChart('chart-tokens-models', 'Tokens by model', tokens.byModel.map((entry) => entry.model), [
      { label: 'input', values: tokens.byModel.map((entry) => entry.inputTokens) },
      { label: 'output', values: tokens.byModel.map((entry) => entry.outputTokens), className: 'alt' },
    ]),
    ...spendCharts(usage, appNames),
  );
}

export async function usageContent(path: string): Promise<Node[]> {
  const container = h('div', {});
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Usage window' },
    field('Window', h('select', { name: 'minutes' }, ...WINDOWS.map(([value, label]) => h('option', { value, selected: value === '60' }, label)))),
    h('button', { type: 'submit' }, 'Refresh now'),
  );
  const updated = h('p', { class: 'muted', 'data-testid': 'updated' });
  // The all-apps page names apps in its per-app charts.
  const appNames = path === '/usage' ? new Map((await api<App[]>('GET', '/apps')).map((app) => [app.id, app.name])) : null;
  let current: Record<string, string | boolean> = {};
  const render = async (values: Record<string, string | boolean>) => {
    current = values;
    const minutes = Number(values.minutes);
    const usage = await api<Usage>('GET', `${path}?minutes=${minutes}`);
    const tokens = usage.tokens ?? { inputTokens: 0, outputTokens: 0 };
    container.replaceChildren(
      h('p', { 'data-testid': 'total-requests' }, `${usage.totalRequests} requests in this window.`),
      h('p', { 'data-testid': 'total-tokens' }, `${tokens.inputTokens} input and ${tokens.outputTokens} output tokens reported by the providers.`),
      h(
        'p',
        {},
        h(
          'span',
          { 'data-testid': 'total-spend' },
          usage.spend
            ? `Estimated spend: ${money(usage.spend.totalUsd)}${usage.spend.unpricedTokens ? ` (${usage.spend.unpricedTokens} tokens of models without a price not counted)` : ''}.`
            : 'No prices: spend is not estimated (default prices are off; set prices under Prices).',
        ),
        // The date of the prices used, beside the estimate: the default table's, or the operator's own.
        usage.spend?.priceAsOf.length ? h('span', { class: 'muted', 'data-testid': 'spend-price-as-of' }, ` Estimated from ${pricesUsed(usage.spend.priceAsOf)}.`) : null,
      ),
      usage.realtime?.sessions
        ? h('p', { 'data-testid': 'total-realtime' }, `${usage.realtime.sessions} realtime ${usage.realtime.sessions === 1 ? 'session' : 'sessions'}, ${(usage.realtime.seconds / 60).toFixed(1)} minutes open (one request each in the counts above).`)
        : '',
      charts(usage, minutes, appNames),
    );
  };
  onSubmit(form, render);
  await render(formValues(form));
  updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshes every 30 s.`;
  // Auto-refresh while this page is shown (the timer ends itself once the page is replaced).
  const timer = setInterval(() => {
    if (!container.isConnected) return clearInterval(timer);
    if (document.hidden) return;
    render(current).then(
      () => (updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshes every 30 s.`),
      () => (updated.textContent = 'Refresh failed; retrying in 30 s.'),
    );
  }, 30_000);
  return [form, updated, container];
}
