/**
 * Usage charts as inline SVG, each with the same numbers in a table for screen readers and keyboard users. Drawn here
 * rather than with a chart library: four bar charts need no dependency, and canvas-based libraries hide the numbers
 * from assistive technology.
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
  readonly className?: string;
}

/** A bar chart (grouped when there are several series) with its data table. */
export function barChart(id: string, title: string, labels: readonly string[], series: readonly Series[], unit = ''): HTMLElement {
  const width = 480;
  const height = 200;
  const left = 40;
  const bottom = 40;
  const max = Math.max(1, ...series.flatMap((entry) => entry.values));
  const chart = svg('svg', { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': `${id}-title` });
  chart.appendChild(svg('title', { id: `${id}-title` }, title));
  chart.appendChild(svg('line', { x1: left, y1: height - bottom, x2: width, y2: height - bottom, stroke: '#d0d7de' }));
  chart.appendChild(svg('text', { x: 2, y: 12 }, `${max}${unit}`));
  chart.appendChild(svg('text', { x: 2, y: height - bottom }, `0`));
  const slot = labels.length ? (width - left) / labels.length : 0;
  const barWidth = Math.min(28, Math.max(1, (slot * 0.8) / Math.max(1, series.length)));
  labels.forEach((label, index) => {
    series.forEach((entry, seriesIndex) => {
      const value = entry.values[index] ?? 0;
      const barHeight = ((height - bottom - 16) * value) / max;
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
    if (labels.length <= 12 || index % Math.ceil(labels.length / 12) === 0) {
      chart.appendChild(svg('text', { x: left + index * slot + 2, y: height - bottom + 14 }, label.length > 14 ? `${label.slice(0, 13)}…` : label));
    }
  });
  const data = table(
    ['', ...series.map((entry) => entry.label)],
    labels.map((label, index) => [label, ...series.map((entry) => `${entry.values[index] ?? 0}${unit}`)]),
  );
  data.dataset.chart = id;
  return h('figure', { id, 'data-testid': id }, h('figcaption', {}, title), labels.length ? (chart as unknown as Node) : h('p', { class: 'muted' }, 'No data in this window.'), h('details', {}, h('summary', {}, 'Numbers'), data));
}
