/**
 * Usage charts. Time series are drawn by uPlot (docs/decisions: a 50 KB canvas library, the fastest of those compared,
 * with a cursor that shows every series' value at the pointed time); categories (errors by type, latency per provider,
 * top devices…) are horizontal bars in HTML, so that every label stays whole and readable at 390 px. Every chart has a
 * legend naming each series (never colour alone) and the same numbers in a table, for screen readers and keyboard
 * users.
 */
import { h, table } from './dom.js';
import { inUnit, type Unit } from './format.js';
import uPlot from './vendor/uplot.js';

export interface Series {
  readonly label: string;
  readonly values: readonly number[];
  /** `alt` (amber), `bad` (red) or `budget` (purple); default blue. */
  readonly className?: string;
}

const COLOURS: Record<string, string> = { '': '#0b5cad', alt: '#b45309', bad: '#b42318', budget: '#7c3aed' };
const colour = (className: string | undefined) => COLOURS[className ?? ''] ?? COLOURS['']!;

function legend(id: string, series: readonly Series[]): HTMLElement {
  return h('ul', { class: 'legend', 'data-testid': `${id}-legend` }, ...series.map((entry) => h('li', {}, h('span', { class: `swatch ${entry.className ?? ''}`.trim(), 'aria-hidden': 'true' }), entry.label)));
}

function numbers(id: string, labels: readonly string[], series: readonly Series[], unit: Unit): HTMLElement {
  const data = table(['', ...series.map((entry) => entry.label)], labels.map((label, index) => [label, ...series.map((entry) => inUnit(entry.values[index] ?? 0, unit))]));
  data.dataset.chart = id;
  labels.forEach((label, index) => {
    const row = data.tBodies[0]?.rows[index];
    if (row) row.dataset.values = JSON.stringify({ label, values: series.map((entry) => entry.values[index] ?? 0) });
  });
  return h('details', {}, h('summary', {}, 'Numbers'), h('div', { class: 'table-wrap' }, data));
}

const hasData = (labels: readonly string[], series: readonly Series[]) => labels.length > 0 && series.some((entry) => entry.values.some((value) => value > 0));

/**
 * Horizontal bars, one row per category with its whole label and its value as text; the bar's length is its share of
 * the largest value. Each bar carries `data-label`, `data-series` and `data-value`.
 */
export function barChart(id: string, title: string, labels: readonly string[], series: readonly Series[], unit: Unit = 'count'): HTMLElement {
  const max = Math.max(0, ...series.flatMap((entry) => entry.values));
  const rows = labels.map((label, index) =>
    h(
      'div',
      { class: 'bar-row' },
      h('span', { class: 'bar-label' }, label),
      h(
        'span',
        { class: 'bar-values' },
        ...series.map((entry) => {
          const value = entry.values[index] ?? 0;
          const bar = h('span', { class: `bar ${entry.className ?? ''}`.trim(), 'data-label': label, 'data-series': entry.label, 'data-value': value, title: `${label} · ${entry.label}: ${inUnit(value, unit)}` });
          // The CSSOM (not a style attribute), which the dashboard's Content-Security-Policy allows.
          bar.style.width = `${max > 0 ? Math.max(value > 0 ? 1 : 0, (100 * value) / max) : 0}%`;
          return h('span', { class: 'bar-line' }, bar, h('span', { class: 'bar-value' }, inUnit(value, unit)));
        }),
      ),
    ),
  );
  return h(
    'figure',
    { id, 'data-testid': id, class: 'chart-figure' },
    h('figcaption', {}, title),
    legend(id, series),
    hasData(labels, series) ? h('div', { class: 'bars' }, ...rows) : h('p', { class: 'muted empty' }, 'No data in this window.'),
    numbers(id, labels, series, unit),
  );
}

/** The width of the longest tick label: uPlot sizes an axis from it, so that no label is cut. */
function axisSize(self: uPlot, values: string[] | null, axisIndex: number, cycle: number): number {
  const axis = self.axes[axisIndex]!;
  if (cycle > 1) return (axis as unknown as { _size: number })._size;
  let size = (axis.ticks?.size ?? 10) + (axis.gap ?? 5);
  const longest = (values ?? []).reduce((current, value) => (value.length > current.length ? value : current), '');
  if (longest) {
    self.ctx.font = (axis.font as unknown as string[] | undefined)?.[0] ?? '12px system-ui';
    size += self.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size);
}

/** A tooltip at the cursor: the time and every series' value there. */
function tooltipPlugin(unit: Unit, timeLabel: (ms: number) => string): uPlot.Plugin {
  let tip: HTMLElement;
  return {
    hooks: {
      init: (self) => {
        tip = h('div', { class: 'chart-tip', role: 'presentation' });
        tip.hidden = true;
        self.over.appendChild(tip);
        self.over.addEventListener('mouseleave', () => (tip.hidden = true));
      },
      setCursor: (self) => {
        const index = self.cursor.idx;
        if (index === null || index === undefined || self.cursor.left === undefined || self.cursor.left < 0) {
          tip.hidden = true;
          return;
        }
        const time = (self.data[0][index] ?? 0) * 1000;
        tip.replaceChildren(h('strong', {}, timeLabel(time)), ...self.series.slice(1).map((series, offset) => h('div', {}, `${String(series.label)}: ${inUnit((self.data[offset + 1]?.[index] as number | null) ?? 0, unit)}`)));
        tip.hidden = false;
        const left = Math.min(self.cursor.left + 12, self.over.clientWidth - tip.offsetWidth);
        tip.style.left = `${Math.max(0, left)}px`;
        tip.style.top = '4px';
      },
    },
  };
}

/** Draws a uPlot chart into `host` at the host's width, following its size. */
function mount(host: HTMLElement, options: Omit<uPlot.Options, 'width'>, data: uPlot.AlignedData): void {
  const draw = () => {
    if (!host.isConnected) return;
    const width = Math.max(120, host.clientWidth);
    const existing = (host as unknown as { plot?: uPlot }).plot;
    if (existing) return existing.setSize({ width, height: options.height });
    (host as unknown as { plot?: uPlot }).plot = new uPlot({ ...options, width }, data, host);
  };
  // Drawn once the host is in the page (its width is known), then again when that width changes.
  requestAnimationFrame(draw);
  new ResizeObserver(() => draw()).observe(host);
}

/**
 * A time series over equal time buckets (`times`, unix ms): lines per series, a tooltip at the cursor, axes that fit
 * their labels, values in `unit`.
 */
export function timeChart(id: string, title: string, times: readonly number[], series: readonly Series[], unit: Unit = 'count', timeLabel: (ms: number) => string = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })): HTMLElement {
  const host = h('div', { class: 'uplot-host', 'data-testid': `${id}-plot` });
  const labels = times.map((time) => timeLabel(time));
  if (hasData(labels, series)) {
    mount(
      host,
      {
        title: undefined,
        height: 200,
        legend: { show: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, y: { range: (_self, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        axes: [
          { stroke: '#59636e', grid: { stroke: '#eaeef2' }, size: axisSize },
          { stroke: '#59636e', grid: { stroke: '#eaeef2' }, size: axisSize, values: (_self, ticks) => ticks.map((tick) => inUnit(tick, unit)) },
        ],
        series: [{}, ...series.map((entry) => ({ label: entry.label, stroke: colour(entry.className), width: 2, fill: `${colour(entry.className)}14`, points: { show: false } }))],
        plugins: [tooltipPlugin(unit, timeLabel)],
      },
      [times.map((time) => time / 1000), ...series.map((entry) => [...entry.values])],
    );
  }
  return h(
    'figure',
    { id, 'data-testid': id, class: 'chart-figure' },
    h('figcaption', {}, title),
    legend(id, series),
    hasData(labels, series) ? host : h('p', { class: 'muted empty' }, 'No data in this window.'),
    numbers(id, labels, series, unit),
  );
}

/** A small line without axes for an overview tile; the tile states the total in words. */
export function sparkline(values: readonly number[], className?: string): HTMLElement {
  const host = h('div', { class: 'sparkline', 'aria-hidden': 'true' });
  if (values.some((value) => value > 0)) {
    mount(
      host,
      {
        height: 36,
        legend: { show: false },
        cursor: { show: false },
        select: { show: false, left: 0, top: 0, width: 0, height: 0 },
        scales: { x: { time: false }, y: { range: (_self, _min, max) => [0, max > 0 ? max : 1] } },
        axes: [{ show: false }, { show: false }],
        series: [{}, { stroke: colour(className), width: 1.5, fill: `${colour(className)}22`, points: { show: false } }],
      },
      [values.map((_value, index) => index), [...values]],
    );
  }
  return host;
}

/**
 * A continuous time axis: `points` (only the minutes that had traffic) summed into equal buckets covering the whole
 * window, quiet buckets included, so that a gap in traffic shows as a gap. One minute a bucket up to an hour, five for
 * six hours, thirty for a day, three hours for a week.
 */
export function timeBuckets(
  points: ReadonlyArray<{ minute: number; requests: number; errors: number; budgetRefusals?: number }>,
  windowMinutes: number,
  nowMs: number,
): Array<{ start: number; requests: number; errors: number; budgetRefusals: number }> {
  const bucketMinutes = windowMinutes <= 60 ? 1 : windowMinutes <= 360 ? 5 : windowMinutes <= 1440 ? 30 : 180;
  const size = bucketMinutes * 60_000;
  const last = Math.floor(nowMs / size) * size;
  const count = Math.ceil(windowMinutes / bucketMinutes);
  const first = last - (count - 1) * size;
  const buckets = Array.from({ length: count }, (_, index) => ({ start: first + index * size, requests: 0, errors: 0, budgetRefusals: 0 }));
  for (const point of points) {
    const index = Math.floor((point.minute - first) / size);
    const bucket = buckets[index];
    if (!bucket) continue;
    bucket.requests += point.requests;
    bucket.errors += point.errors;
    bucket.budgetRefusals += point.budgetRefusals ?? 0;
  }
  return buckets;
}

/** The label of a bucket start: a time for windows up to a day, a weekday and time beyond. */
export function bucketLabel(startMs: number, windowMinutes: number): string {
  const date = new Date(startMs);
  return windowMinutes <= 1440
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : `${date.toLocaleDateString([], { weekday: 'short' })} ${date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`;
}
