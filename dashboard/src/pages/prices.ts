/**
 * The prices behind the spend estimates (USD per million input and output tokens): the operator's own, which win, and
 * the dated default table with each provider's price page, any row of which the operator may override.
 */
import { api, type DefaultPrices, type Price } from '../api.js';
import { field, h, table } from '../dom.js';
import { loadProviders } from '../state.js';
import { button, onSubmit, say, show } from '../ui.js';

export async function pricesPage(): Promise<void> {
  const [prices, defaults, catalog] = await Promise.all([api<Price[]>('GET', '/prices'), api<DefaultPrices>('GET', '/prices/defaults'), loadProviders()]);
  const providerSelect = h('select', { name: 'provider', required: true }, ...catalog.map((provider) => h('option', { value: provider.slug }, provider.name)));
  const model = h('input', { name: 'model', required: true, maxlength: 200, placeholder: 'gpt-4o-mini' });
  const input = h('input', { name: 'inputUsdPerMillion', type: 'number', min: 0, step: 'any', required: true });
  const output = h('input', { name: 'outputUsdPerMillion', type: 'number', min: 0, step: 'any', required: true });
  const form = h(
    'form',
    { 'aria-label': 'Set a price' },
    field('Provider', providerSelect),
    field('Model', model, 'As the provider reports it; a dated version suffix (-2024-07-18) falls back to the name without it.'),
    field('Input USD per million tokens', input),
    field('Output USD per million tokens', output),
    h('button', { type: 'submit', class: 'primary' }, 'Save price'),
  );
  const edit = (price: Pick<Price, 'provider' | 'model' | 'inputUsdPerMillion' | 'outputUsdPerMillion'>) => async () => {
    providerSelect.value = price.provider;
    model.value = price.model;
    input.value = String(price.inputUsdPerMillion);
    output.value = String(price.outputUsdPerMillion);
    input.focus();
  };
  const remove = (price: Price) => async () => {
    await api('DELETE', `/prices?provider=${encodeURIComponent(price.provider)}&model=${encodeURIComponent(price.model)}`);
    await pricesPage();
    say(`The price of ${price.model} is removed.`);
  };
  show(
    'Prices',
    h('p', { class: 'muted' }, 'Your prices: USD per million input and output tokens, per provider and model. They override the default prices below, and the spend estimates (Usage, Requests) use them at once, for past requests too, marked "operator price".'),
    // Four narrow columns, so that the table fits a 390 px screen whole.
    table(
      ['Model', 'USD per million tokens', 'Updated', ''],
      prices.map((price) => {
        const editButton = button('Edit', edit(price));
        editButton.setAttribute('aria-label', `Edit ${price.model}`);
        const deleteButton = button('Delete', remove(price), 'danger', `Remove the price of ${price.provider} ${price.model}?`);
        deleteButton.setAttribute('aria-label', `Delete ${price.model}`);
        return [
          h('span', {}, h('span', { class: 'muted' }, price.provider), h('br'), h('code', {}, price.model)),
          `${price.inputUsdPerMillion} input, ${price.outputUsdPerMillion} output`,
          h('span', { title: new Date(price.updatedAt).toLocaleString() }, new Date(price.updatedAt).toLocaleDateString()),
          h('span', { class: 'actions' }, editButton, ' ', deleteButton),
        ];
      }),
      prices.length ? undefined : defaults.enabled ? 'No prices of your own: spend is estimated from the default prices below.' : 'No prices yet: spend is not estimated until one is set below.',
    ),
    h('h2', {}, 'Set a price'),
    onSubmit(form, async (values) => {
      const price = await api<Price>('PUT', '/prices', { provider: values.provider, model: values.model, inputUsdPerMillion: Number(values.inputUsdPerMillion), outputUsdPerMillion: Number(values.outputUsdPerMillion) });
      await pricesPage();
      say(`The price of ${price.model} is saved.`);
    }),
    h('h2', {}, 'Defaults'),
    h(
      'p',
      { class: 'muted', 'data-testid': 'default-prices-note' },
      defaults.enabled
        ? "Read from each provider's price page on the date shown (standard rate; no batch, cache or long-prompt rates). Estimates from them carry that date. Override a row to use your own price."
        : 'Turned off (TOLLGATE_DEFAULT_PRICES=false): spend is estimated from your prices only.',
    ),
    table(
      ['Model', 'USD per million tokens', 'As of', ''],
      defaults.prices.map((price) => {
        const override = button('Override', edit(price));
        override.setAttribute('aria-label', `Override ${price.provider} ${price.model}`);
        return [
          h('span', {}, h('span', { class: 'muted' }, price.provider), h('br'), h('code', {}, price.model)),
          `${price.inputUsdPerMillion} input, ${price.outputUsdPerMillion} output`,
          h('a', { href: price.source, target: '_blank', rel: 'noopener noreferrer', title: `${price.provider} price page` }, price.priceAsOf),
          price.overridden ? h('span', { class: 'muted' }, 'overridden by your price') : override,
        ];
      }),
      undefined,
      'default-prices',
    ),
  );
}
