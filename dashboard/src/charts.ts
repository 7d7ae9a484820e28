/**
 * Usage charts as inline SVG, each with a legend and the same numbers in a table for screen readers and keyboard
 * users. Drawn here rather than with a chart library: four bar charts need no dependency (the strict CSP allows no
 * inline styles, which most chart libraries inject), and canvas-based libraries hide the numbers from assistive
 * technology. Labels are sized for the narrowest screen the dashboard supports (390 px): at most four axis labels, text
 * at 13 units of a 360-unit-wide drawing, bars at least 3 units wide.
 */
import { h, table } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attributes: Record<string, string | number>, text?: string): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

export interface Series {
  readonly label: string;
  readonly values: readonly number[];
  /** `alt` (amber), `bad` (red) or `budget` (purple); default blue. Every series is also named in the legend, never by colour alone. */
  readonly className?: string;
}

const MAX_AXIS_LABELS = 4;

/** A readable round maximum for the value axis: 1, 2 or 5 times a power of ten. */
function niceMax(value: number): number {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/** A bar chart (grouped when there are several series) with its legend and data table. */
export function barChart(id: string, title: string, labels: readonly string[], series: readonly Series[], unit = ''): HTMLElement {
  const width = 360;
  const height = 220;
  const left = 54;
  const bottom = 30;
  const top = 10;
  const max = niceMax(Math.max(0, ...series.flatMap((entry) => entry.values)));
  const chart = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': `${id}-title` });
  chart.appendChild(svg('title', { id: `${id}-title` }, title));
  const plotHeight = height - bottom - top;
  for (const fraction of [0, 0.5, 1]) {
    const y = height - bottom - plotHeight * fraction;
    chart.appendChild(svg('line', { x1: left, y1: y, x2: width, y2: y, class: fraction === 0 ? 'axis' : 'grid' }));
    chart.appendChild(svg('text', { x: left - 4, y: y + 4, 'text-anchor': 'end' }, `${+(max * fraction).toFixed(2)}${unit}`));
  }
  const slot = labels.length ? (width - left) / labels.length : 0;
  const barWidth = Math.max(3, Math.min(28, (slot * 0.8) / Math.max(1, series.length)));
  const every = Math.max(1, Math.ceil(labels.length / MAX_AXIS_LABELS));
  labels.forEach((label, index) => {
    series.forEach((entry, seriesIndex) => {
      const value = entry.values[index] ?? 0;
      const barHeight = (plotHeight * value) / max;
      const bar = svg('rect', {
        class: `bar ${entry.className ?? ''}`.trim(),
        x: left + index * slot + slot * 0.1 + seriesIndex * barWidth,
        y: height - bottom - barHeight,
        width: barWidth,
        height: barHeight,
        'data-label': label,
        'data-series': entry.label,
        'data-value': value,
      });
      bar.appendChild(svg('title', {}, `${label} · ${entry.label}: ${value}${unit}`));
      chart.appendChild(bar);
    });
    if (index % every === 0) {
      chart.appendChild(svg('text', { x: left + index * slot + slot / 2, y: height - bottom + 18, 'text-anchor': 'middle' }, label.length > 12 ? `${label.slice(0, 11)}…` : label));
    }
  });
  const legend = h(
    'ul',
    { class: 'legend', 'data-testid': `${id}-legend` },
    ...series.map((entry) => h('li', {}, h('span', { class: `swatch ${entry.className ?? ''}`.trim(), 'aria-hidden': 'true' }), entry.label)),
  );
  const data = table(
    ['', ...series.map((entry) => entry.label)],
    labels.map((label, index) => [label, ...series.map((entry) => `${entry.values[index] ?? 0}${unit}`)]),
  );
  data.dataset.chart = id;
  const hasData = labels.length > 0 && series.some((entry) => entry.values.some((value) => value > 0));
  return h(
    'figure',
    { id, 'data-testid': id },
    h('figcaption', {}, title),
    legend,
    hasData ? (chart as unknown as Node) : h('p', { class: 'muted empty' }, 'No data in this window.'),
    h('details', {}, h('summary', {}, 'Numbers'), h('div', { class: 'table-wrap' }, data)),
  );
}

/**
 * A continuous time axis: `points` (only the minutes that had traffic) summed into equal buckets covering the whole
 * window, quiet buckets included, so that a gap in traffic shows as a gap. One minute a bucket for an hour, five for six
 * hours, thirty for a day, three hours for a week.
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
