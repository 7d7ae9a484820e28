/**
 * The CLI's output: one JSON object per command (the default, for scripts), or `--output table` for a person reading a
 * terminal: a list becomes a table with one row per item, a single record two columns of field and value. Nested
 * values are shown as compact JSON, long cells are cut with an ellipsis; the JSON form stays the complete answer.
 */
export type OutputMode = 'json' | 'table';

const MAX_CELL = 60;

let mode: OutputMode = 'json';

export function setOutputMode(value: string | undefined): void {
  if (value === undefined || value === 'json') mode = 'json';
  else if (value === 'table') mode = 'table';
  else throw new RangeError(`--output takes json or table, got "${value}"`);
}

export function outputMode(): OutputMode {
  return mode;
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  // One line per row: control characters (a device-chosen label) are shown escaped, never interpreted by the terminal.
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
}

function grid(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) => cells.map((text, column) => text.padEnd(widths[column]!)).join('  ').trimEnd();
  return [line(header.map((title) => title.toUpperCase())), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/** The table form of one command's answer. */
export function formatTable(value: unknown): string {
  if (Array.isArray(value)) return tableOf(value);
  if (value === null || typeof value !== 'object') return cell(value);
  const record = value as Record<string, unknown>;
  const lists = Object.entries(record).filter(([, member]) => Array.isArray(member));
  // `{"apps":[…]}` or `{"devices":[…],"total":3,…}`: the list as a table, the other members as a footer.
  if (lists.length === 1 && Object.keys(record).length <= 6) {
    const [name, list] = lists[0]!;
    const rest = Object.entries(record).filter(([key]) => key !== name);
    const footer = rest.map(([key, member]) => `${key}: ${cell(member)}`).join('   ');
    return `${tableOf(list as unknown[])}${footer ? `\n\n${footer}` : ''}`;
  }
  return grid(['field', 'value'], Object.entries(record).map(([key, member]) => [key, cell(member)]));
}

function tableOf(items: readonly unknown[]): string {
  if (!items.length) return '(none)';
  if (items.some((item) => item === null || typeof item !== 'object' || Array.isArray(item))) return items.map(cell).join('\n');
  const columns = [...new Set(items.flatMap((item) => Object.keys(item as object)))];
  return grid(columns, items.map((item) => columns.map((column) => cell((item as Record<string, unknown>)[column]))));
}

/** One command's answer on stdout, in the chosen form. */
export function render(value: unknown): string {
  return mode === 'table' ? `${formatTable(value)}\n` : `${JSON.stringify(value)}\n`;
}
