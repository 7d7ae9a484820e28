/** A tiny element builder. Text always goes in as text nodes: no user data is ever parsed as HTML. */
export type Child = Node | string | number | null | undefined | false;
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, '').toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/**
 * Text whose words never break inside: a browser may break a line after a hyphen or a slash (`device-2091d0ea`,
 * `v1/chat/completions`), so each such word is kept on one line (`.nw`). Spaces still break lines.
 */
export function words(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const part of text.split(/(\s+)/)) {
    if (!part) continue;
    if (/[-/]/.test(part) && !/\s/.test(part)) {
      const word = document.createElement('span');
      word.className = 'nw';
      word.textContent = part;
      fragment.appendChild(word);
    } else fragment.appendChild(document.createTextNode(part));
  }
  return fragment;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

let nextId = 0;

/** A labelled control: every control has a visible <label>; a hint is linked with aria-describedby, outside the name. */
export function field(label: string, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  nextId += 1;
  input.id ||= `control-${nextId}`;
  // One span inside the label: a label is a grid (styles.css), whose every child would otherwise sit on a line of its own.
  const wrapper = h('div', { class: 'field' }, h('label', { for: input.id }, h('span', {}, words(label))), input);
  if (hint) {
    input.setAttribute('aria-describedby', `${input.id}-hint`);
    wrapper.appendChild(h('span', { class: 'muted', id: `${input.id}-hint` }, hint));
  }
  return wrapper;
}

export function checkbox(label: string, name: string, checked: boolean): HTMLLabelElement {
  return h('label', { class: 'check' }, h('input', { type: 'checkbox', name, checked }), h('span', {}, words(label)));
}

/** A table; every table stacks into labelled rows on a narrow screen (see {@link stackTable}). */
export function table(headers: string[], rows: Child[][], caption?: string, testId?: string): HTMLTableElement {
  return stackTable(headers, rows, caption, testId);
}

/**
 * A table that stacks on a phone: each cell carries its column's name (`data-label`), which styles.css shows before
 * the value under 600 px, where the rows become blocks. Nothing scrolls sideways at 390 px.
 */
export function stackTable(headers: string[], rows: Child[][], caption?: string, testId?: string): HTMLTableElement {
  return h(
    'table',
    { class: 'stack', 'data-testid': testId },
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', { scope: 'col' }, header)))),
    h('tbody', {}, ...rows.map((row) => h('tr', {}, ...row.map((cell, index) => h('td', { 'data-label': headers[index] || null }, typeof cell === 'string' ? words(cell) : cell))))),
  );
}

export function formValues(form: HTMLFormElement): Record<string, string | boolean> {
  const values: Record<string, string | boolean> = {};
  for (const element of Array.from(form.elements)) {
    if (!(element instanceof HTMLInputElement || element instanceof HTMLSelectElement || element instanceof HTMLTextAreaElement) || !element.name) continue;
    values[element.name] = element instanceof HTMLInputElement && element.type === 'checkbox' ? element.checked : element.value;
  }
  return values;
}
