import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { seedSchema, type SandboxSeed, type SeedData } from './seed-schema.js';

export type { SandboxSeed, SeedData };

/** config/sandbox-seed.json of this package, found from src/sandbox/ or dist/src/sandbox/. */
export function defaultSeedPath(): string {
  const start = dirname(fileURLToPath(import.meta.url));
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`sandbox: no package.json above ${start} to find config/sandbox-seed.json`);
    dir = parent;
  }
  return join(dir, 'config', 'sandbox-seed.json');
}

/** Reads (when given a path), validates and cross-checks a seed; throws one Error listing every problem. */
export function loadSeed(input: SandboxSeed | string | undefined): SeedData {
  const source = typeof input === 'object' ? 'the seed object' : (input ?? defaultSeedPath());
  const raw = typeof input === 'object' ? input : readJson(source);
  const parsed = seedSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`sandbox seed (${source}) is invalid:\n${z.prettifyError(parsed.error)}`);
  const problems = referenceProblems(parsed.data);
  if (problems.length > 0) throw new Error(`sandbox seed (${source}) is inconsistent:\n  ✖ ${problems.join('\n  ✖ ')}`);
  return parsed.data;
}

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`sandbox seed ${path} cannot be read: ${(error as Error).message}`, { cause: error });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`sandbox seed ${path} is not JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** Ids that must be unique and references that must resolve. */
function referenceProblems(seed: SeedData): string[] {
  const problems: string[] = [];
  const unique = (what: string, ids: string[]): Set<string> => {
    const seen = new Set<string>();
    for (const id of ids) {
      if (seen.has(id)) problems.push(`${what} ${id} appears twice`);
      seen.add(id);
    }
    return seen;
  };
  const carriers = new Map(seed.carriers.map((carrier) => [carrier.id, carrier]));
  unique(
    'carrier id',
    seed.carriers.map((carrier) => carrier.id),
  );
  unique(
    'seller group id',
    seed.seller_groups.map((group) => group.id),
  );
  const sellers = unique(
    'seller id',
    seed.seller_groups.flatMap((group) => group.sellers.map((seller) => seller.id)),
  );
  unique(
    'method id',
    seed.carriers.flatMap((carrier) => carrier.methods.map((method) => method.id)),
  );
  const keys = [...seed.carriers.map((carrier) => carrier.key), ...seed.seller_groups.map((group) => group.key)];
  if (new Set(keys).size !== keys.length) problems.push('every carrier and seller group needs its own key');
  for (const group of seed.seller_groups) {
    unique(
      `seller identifier in group ${group.id}:`,
      group.sellers.map((seller) => seller.identifier ?? seller.document_number),
    );
  }
  unique(
    'webhook_id',
    seed.webhooks.map((webhook) => webhook.webhook_id),
  );
  for (const webhook of seed.webhooks) {
    if (!carriers.has(webhook.carrier_id)) problems.push(`webhook ${webhook.webhook_id}: unknown carrier_id ${webhook.carrier_id}`);
  }
  const orders = unique(
    'order id',
    seed.orders.map((order) => order.id),
  );
  for (const order of seed.orders) {
    if (!sellers.has(order.seller_id)) problems.push(`order ${order.id}: unknown seller_id ${order.seller_id}`);
  }
  unique(
    'delivery id',
    seed.deliveries.flatMap((delivery) => (delivery.id === undefined ? [] : [delivery.id])),
  );
  for (const [index, delivery] of seed.deliveries.entries()) {
    const name = `delivery ${delivery.id ?? `#${index}`}`;
    if (delivery.id === undefined) problems.push(`${name}: id is required in a seed`);
    if (delivery.order_id !== null && !orders.has(delivery.order_id)) problems.push(`${name}: unknown order_id ${delivery.order_id}`);
    const carrier = carriers.get(delivery.carrier_id ?? '');
    if (carrier === undefined) problems.push(`${name}: unknown or missing carrier_id ${delivery.carrier_id ?? ''}`);
    else if (delivery.method_id !== undefined && !carrier.methods.some((method) => method.id === delivery.method_id)) {
      problems.push(`${name}: method_id ${delivery.method_id} is not a method of carrier ${carrier.id}`);
    }
  }
  return problems;
}
