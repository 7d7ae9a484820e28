/**
 * The default price table: USD per million input and output tokens of the common models, as each provider's manifest
 * declares them (`prices`: read from the provider's public price page on the date given, `asOf`).
 *
 * Spend is estimated from these where the operator set no price of their own (`PUT /v1/admin/prices`, the dashboard's
 * Prices page, `tollgate prices set`); an operator's price always wins, and every estimate says which price it used
 * (`priceAsOf`: the table's date, or "operator price"). `TOLLGATE_DEFAULT_PRICES=false` turns the table off.
 */
import type { ProviderManifest } from '../contract';

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
export function defaultPriceSources(manifests: readonly Pick<ProviderManifest, 'slug' | 'prices'>[]): Record<string, DefaultPriceSource> {
  const sources: Record<string, DefaultPriceSource> = {};
  for (const manifest of manifests) if (manifest.prices) sources[manifest.slug] = { url: manifest.prices.source, asOf: manifest.prices.asOf };
  return sources;
}

/** The default table, by provider (in the order given) and model as each manifest lists them. */
export function defaultPrices(manifests: readonly Pick<ProviderManifest, 'slug' | 'prices'>[]): DefaultPrice[] {
  return manifests.flatMap((manifest) =>
    (manifest.prices?.models ?? []).map(([model, input, output]) => ({
      provider: manifest.slug,
      model,
      inputUsdPerMillion: input,
      outputUsdPerMillion: output,
      priceAsOf: manifest.prices!.asOf,
      source: manifest.prices!.source,
    })),
  );
}
