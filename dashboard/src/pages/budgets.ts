/** The token budgets of an app: the limits form's fieldset and the part of the patch it makes. */
import { field, h } from '../dom.js';
import { text } from '../ui.js';

/** The whole-number budgets: setting, label, hint. */
const TOKEN_BUDGET_NUMBERS: ReadonlyArray<readonly [string, string, string]> = [
  ['deviceDailyTokens', 'Tokens per day per device', 'Input + output tokens as providers report them, per UTC day; empty for none.'],
  ['appDailyTokens', 'Tokens per day for the app', 'All devices together, per UTC day; empty for none.'],
  ['deviceMinuteTokens', 'Tokens per minute per device', 'Per UTC minute: stops a burst long before a day’s budget is gone; empty for none.'],
  ['appMinuteTokens', 'Tokens per minute for the app', 'All devices together, per UTC minute; empty for none.'],
];

/** The per-provider budgets (one `slug=tokens` a line): setting, label, hint. */
const TOKEN_BUDGET_MAPS: ReadonlyArray<readonly [string, string, string]> = [
  ['providerDailyTokens', 'Per-provider token budgets (one slug=tokens per day a line)', 'All devices together, per UTC day.'],
  ['providerMinuteTokens', 'Per-provider budgets per minute (one slug=tokens per minute a line)', 'All devices together, per UTC minute.'],
  ['providerDeviceDailyTokens', 'Per-provider budgets per device (one slug=tokens per day a line)', 'Each device on its own, per UTC day.'],
];

export function tokenBudgetFieldset(settings: Record<string, unknown>): HTMLElement {
  return h(
    'fieldset',
    { class: 'budgets', 'data-testid': 'token-budgets' },
    h('legend', {}, 'Token budgets'),
    h('p', { class: 'muted' }, 'Checked before each request against what is already spent: the request that crosses a budget completes, the next is refused (429, token_budget) until its UTC day or minute ends.'),
    ...TOKEN_BUDGET_NUMBERS.map(([name, label, hint]) => field(label, h('input', { name, type: 'number', min: 1, step: 1, value: text(settings[name]) }), hint)),
    ...TOKEN_BUDGET_MAPS.map(([name, label, hint]) => {
      const lines = Object.entries((settings[name] as Record<string, number> | undefined) ?? {}).map(([slug, budget]) => `${slug}=${budget}`).join('\n');
      return field(label, h('textarea', { name, rows: 2 }, lines), hint);
    }),
  );
}

/** An emptied field clears its budget (null); a line that is not `slug=N` is sent as is, for the API to name the field. */
export function tokenBudgetPatch(values: Record<string, string | boolean>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [name] of TOKEN_BUDGET_NUMBERS) patch[name] = values[name] === '' ? null : Number(values[name]);
  for (const [name] of TOKEN_BUDGET_MAPS) {
    const budgets: Record<string, number | string> = {};
    for (const line of String(values[name] ?? '').split('\n').map((entry) => entry.trim()).filter(Boolean)) {
      const [slug = '', budget = ''] = line.split('=').map((part) => part.trim());
      budgets[slug] = /^\d+$/.test(budget) ? Number(budget) : budget;
    }
    patch[name] = Object.keys(budgets).length ? budgets : null;
  }
  return patch;
}
