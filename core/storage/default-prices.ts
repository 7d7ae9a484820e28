/**
 * The default price table: USD per million input and output tokens of the common models of the providers whose
 * answers report token usage, as their public price pages listed them on the date given per provider (`asOf`).
 *
 * Spend is estimated from these where the operator set no price of their own (`PUT /v1/admin/prices`, the dashboard's
 * Prices page, `tollgate prices set`); an operator's price always wins, and every estimate says which price it used
 * (`priceAsOf`: this table's date, or "operator price"). `TOLLGATE_DEFAULT_PRICES=false` turns the table off.
 *
 * Providers change prices and add models: the date is the promise, not the number. To refresh the table, read each
 * page below again, update its rows and its `asOf`, and keep to the standard (not batch, not cached, not long-context)
 * rate of each model. Names are the API's model ids; a dated snapshot (`gpt-4o-2024-08-06`,
 * `claude-sonnet-4-5-20250929`) is priced as its undated name unless it has a row of its own.
 */

/** One provider's price page, and the date its prices were read. */
export interface DefaultPriceSource {
  readonly url: string;
  /** `YYYY-MM-DD`: the day the page was read. */
  readonly asOf: string;
}

/** One row of the default table. */
export interface DefaultPrice {
  readonly provider: string;
  readonly model: string;
  readonly inputUsdPerMillion: number;
  readonly outputUsdPerMillion: number;
  /** The day the provider's page was read (`YYYY-MM-DD`). */
  readonly priceAsOf: string;
  /** The provider's price page. */
  readonly source: string;
}

/** What an estimate from an operator's own price carries in place of a date. */
export const OPERATOR_PRICE = 'operator price';

/** The price pages the table was read from, per provider slug. */
export const DEFAULT_PRICE_SOURCES: Readonly<Record<string, DefaultPriceSource>> = {
  openai: { url: 'https://platform.openai.com/docs/pricing', asOf: '2026-12-05' },
  anthropic: { url: 'https://platform.claude.com/docs/en/about-claude/pricing', asOf: '2026-12-05' },
  gemini: { url: 'https://ai.google.dev/gemini-api/docs/pricing', asOf: '2026-12-05' },
  mistral: { url: 'https://mistral.ai/pricing#api-pricing', asOf: '2026-12-05' },
  groq: { url: 'https://groq.com/pricing', asOf: '2026-12-05' },
  deepseek: { url: 'https://api-docs.deepseek.com/quick_start/pricing', asOf: '2026-12-05' },
  xai: { url: 'https://docs.x.ai/docs/models', asOf: '2026-12-05' },
};

/** [model, input USD per million tokens, output USD per million tokens], per provider. */
const ROWS: Readonly<Record<string, ReadonlyArray<readonly [string, number, number]>>> = {
  openai: [
    ['gpt-5', 1.25, 10],
    ['gpt-5-mini', 0.25, 2],
    ['gpt-5-nano', 0.05, 0.4],
    ['gpt-4.1', 2, 8],
    ['gpt-4.1-mini', 0.4, 1.6],
    ['gpt-4.1-nano', 0.1, 0.4],
    ['gpt-4o', 2.5, 10],
    ['gpt-4o-mini', 0.15, 0.6],
    ['o3', 2, 8],
    ['o3-mini', 1.1, 4.4],
    ['o4-mini', 1.1, 4.4],
    ['text-embedding-3-small', 0.02, 0],
    ['text-embedding-3-large', 0.13, 0],
  ],
  anthropic: [
    ['claude-opus-4-5', 5, 25],
    ['claude-opus-4-1', 15, 75],
    ['claude-opus-4', 15, 75],
    ['claude-opus-4-0', 15, 75],
    ['claude-sonnet-4-5', 3, 15],
    ['claude-sonnet-4', 3, 15],
    ['claude-sonnet-4-0', 3, 15],
    ['claude-3-7-sonnet', 3, 15],
    ['claude-haiku-4-5', 1, 5],
    ['claude-3-5-haiku', 0.8, 4],
    ['claude-3-haiku', 0.25, 1.25],
  ],
  // Gemini 2.5 Pro: the rate of prompts up to 200k tokens (longer prompts cost more).
  gemini: [
    ['gemini-2.5-pro', 1.25, 10],
    ['gemini-2.5-flash', 0.3, 2.5],
    ['gemini-2.5-flash-lite', 0.1, 0.4],
    ['gemini-2.0-flash', 0.1, 0.4],
    ['gemini-2.0-flash-lite', 0.075, 0.3],
  ],
  mistral: [
    ['mistral-large-2411', 2, 6],
    ['mistral-medium-2505', 0.4, 2],
    ['mistral-small-2503', 0.1, 0.3],
    ['open-mistral-nemo', 0.15, 0.15],
  ],
  groq: [
    ['llama-3.3-70b-versatile', 0.59, 0.79],
    ['llama-3.1-8b-instant', 0.05, 0.08],
    ['meta-llama/llama-4-scout-17b-16e-instruct', 0.11, 0.34],
    ['openai/gpt-oss-120b', 0.15, 0.6],
  ],
  // Cache-miss input rate (a cache hit costs less).
  deepseek: [
    ['deepseek-chat', 0.28, 0.42],
    ['deepseek-reasoner', 0.28, 0.42],
  ],
  xai: [
    ['grok-4', 3, 15],
    ['grok-4-0709', 3, 15],
    ['grok-4-1-fast-reasoning', 0.2, 0.5],
    ['grok-4-1-fast-non-reasoning', 0.2, 0.5],
    ['grok-3', 3, 15],
    ['grok-3-mini', 0.3, 0.5],
  ],
};

/** The default table, ordered by provider and model as listed above. */
export const DEFAULT_PRICES: readonly DefaultPrice[] = Object.entries(ROWS).flatMap(([provider, rows]) =>
  rows.map(([model, input, output]) => ({ provider, model, inputUsdPerMillion: input, outputUsdPerMillion: output, priceAsOf: DEFAULT_PRICE_SOURCES[provider]!.asOf, source: DEFAULT_PRICE_SOURCES[provider]!.url })),
);
