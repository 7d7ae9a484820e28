/**
 * The published prices of the common models of the providers whose answers report token usage, USD per million input
 * and output tokens, as each provider's price page listed them on the date given (`asOf`). Each provider's manifest
 * declares its own (`prices`); spend is estimated from them where the operator set no price of their own.
 *
 * Providers change prices and add models: the date is the promise, not the number. To refresh, read each page again,
 * update its rows and its `asOf`, and keep to the standard (not batch, not cached, not long-context) rate of each
 * model. Names are the API's model ids; a dated snapshot (`gpt-4o-2024-08-06`) is priced as its undated name unless it
 * has a row of its own.
 */
import type { ProviderPrices } from '../../core/contract';
import { defaultPriceSources, defaultPrices } from '../../core/storage/default-prices';

export const OPENAI_PRICES: ProviderPrices = {
  source: 'https://platform.openai.com/docs/pricing',
  asOf: '2026-12-05',
  models: [
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
};

export const ANTHROPIC_PRICES: ProviderPrices = {
  source: 'https://platform.claude.com/docs/en/about-claude/pricing',
  asOf: '2026-12-05',
  models: [
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
};

export const GEMINI_PRICES: ProviderPrices = {
  source: 'https://ai.google.dev/gemini-api/docs/pricing',
  asOf: '2026-12-05',
  models: [
    ['gemini-2.5-pro', 1.25, 10],
    ['gemini-2.5-flash', 0.3, 2.5],
    ['gemini-2.5-flash-lite', 0.1, 0.4],
    ['gemini-2.0-flash', 0.1, 0.4],
    ['gemini-2.0-flash-lite', 0.075, 0.3],
  ],
};

export const MISTRAL_PRICES: ProviderPrices = {
  source: 'https://mistral.ai/pricing#api-pricing',
  asOf: '2026-12-05',
  models: [
    ['mistral-large-2411', 2, 6],
    ['mistral-medium-2505', 0.4, 2],
    ['mistral-small-2503', 0.1, 0.3],
    ['open-mistral-nemo', 0.15, 0.15],
  ],
};

export const GROQ_PRICES: ProviderPrices = {
  source: 'https://groq.com/pricing',
  asOf: '2026-12-05',
  models: [
    ['llama-3.3-70b-versatile', 0.59, 0.79],
    ['llama-3.1-8b-instant', 0.05, 0.08],
    ['meta-llama/llama-4-scout-17b-16e-instruct', 0.11, 0.34],
    ['openai/gpt-oss-120b', 0.15, 0.6],
  ],
};

export const DEEPSEEK_PRICES: ProviderPrices = {
  source: 'https://api-docs.deepseek.com/quick_start/pricing',
  asOf: '2026-12-05',
  models: [
    ['deepseek-chat', 0.28, 0.42],
    ['deepseek-reasoner', 0.28, 0.42],
  ],
};

export const XAI_PRICES: ProviderPrices = {
  source: 'https://docs.x.ai/docs/models',
  asOf: '2026-12-05',
  models: [
    ['grok-4', 3, 15],
    ['grok-4-0709', 3, 15],
    ['grok-4-1-fast-reasoning', 0.2, 0.5],
    ['grok-4-1-fast-non-reasoning', 0.2, 0.5],
    ['grok-3', 3, 15],
    ['grok-3-mini', 0.3, 0.5],
  ],
};

/** Every provider's prices above, in one list: the table the gateway builds from the built-in manifests. */
const ALL = [
  { slug: 'openai', prices: OPENAI_PRICES },
  { slug: 'anthropic', prices: ANTHROPIC_PRICES },
  { slug: 'gemini', prices: GEMINI_PRICES },
  { slug: 'mistral', prices: MISTRAL_PRICES },
  { slug: 'groq', prices: GROQ_PRICES },
  { slug: 'deepseek', prices: DEEPSEEK_PRICES },
  { slug: 'xai', prices: XAI_PRICES },
];
export const DEFAULT_PRICES = defaultPrices(ALL);
export const DEFAULT_PRICE_SOURCES = defaultPriceSources(ALL);
