import type { QuoteRule } from './seed-schema.js';

/**
 * Deterministic freight for the legacy quotation (§4.8), from each method's seed `quote` rule.
 * Weights are read as grams and prices as cents (the contract does not show units).
 *   served  the destination zip starts with one of serves_zip_prefixes (null: all) and the total
 *           weight is at most max_weight (null: no limit); an unserved method has no date
 *   zone    |first digit of destination zip − first digit of origin zip|
 *   price   base_price + price_per_kg × started kg + price_per_zone × zone; null when !has_price
 *   date    request day (UTC) + transit_days + days_per_zone × zone, at 18:00-03:00; null when !has_date
 */

export interface MethodQuote {
  date: string | null;
  price: number | null;
}

export interface QuoteInput {
  originZip: string;
  destinationZip: string;
  totalWeight: number;
}

const NOT_OFFERED: MethodQuote = { date: null, price: null };

export function quoteMethod(rule: QuoteRule, input: QuoteInput, now: number): MethodQuote {
  const isServedZip = rule.serves_zip_prefixes === null || rule.serves_zip_prefixes.some((prefix) => input.destinationZip.startsWith(prefix));
  const isServedWeight = rule.max_weight === null || input.totalWeight <= rule.max_weight;
  if (!isServedZip || !isServedWeight) return NOT_OFFERED;
  const zone = Math.abs(Number(input.destinationZip[0] ?? 0) - Number(input.originZip[0] ?? 0));
  const startedKg = Math.ceil(input.totalWeight / 1000);
  return {
    price: rule.has_price ? rule.base_price + rule.price_per_kg * startedKg + rule.price_per_zone * zone : null,
    date: rule.has_date ? deliveryDate(now, rule.transit_days + rule.days_per_zone * zone) : null,
  };
}

function deliveryDate(now: number, days: number): string {
  const day = new Date(now);
  day.setUTCDate(day.getUTCDate() + days);
  const yyyy = String(day.getUTCFullYear()).padStart(4, '0');
  const mm = String(day.getUTCMonth() + 1).padStart(2, '0');
  const dd = String(day.getUTCDate()).padStart(2, '0');
  return `${yyyy}-${mm}-${dd}T18:00:00-03:00`;
}
