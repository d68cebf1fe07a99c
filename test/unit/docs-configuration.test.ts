/**
 * docs/configuration.md names every setting of the schema (src/config/schema.ts), each with the
 * environment variable that sets it, and no setting the schema no longer has. A failure names the
 * setting, so whoever adds one knows which row to write.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import type { z } from 'zod';
import { ENV_VARIABLES, SECRET_VARIABLES } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';

const PAGE = 'docs/configuration.md';
const doc = readFileSync(new URL(`../../${PAGE}`, import.meta.url), 'utf8');
const everySetting = doc.slice(doc.indexOf('## Every setting'));

/** The dotted path of every leaf of the schema: objects are walked into (also when nullable). */
function settingsOf(schema: z.core.$ZodType, path: string[] = []): string[] {
  let def = schema._zod.def;
  while (def.type === 'nullable' || def.type === 'optional' || def.type === 'default') def = (def as z.core.$ZodNullableDef).innerType._zod.def;
  if (def.type !== 'object') return [path.join('.')];
  return Object.entries((def as z.core.$ZodObjectDef).shape).flatMap(([key, value]) => settingsOf(value, [...path, key]));
}

/** Rows of the "Every setting" tables: setting → the row's text. */
const rows = new Map([...everySetting.matchAll(/^\| `([\w.]+)` \|(.*)$/gm)].map((match) => [match[1]!, match[2]!] as const));

it(`${PAGE} has a row for every setting of src/config/schema.ts`, () => {
  const settings = settingsOf(configSchema);
  expect(settings.length).toBeGreaterThan(50);
  const missing = settings.filter((setting) => !rows.has(setting));
  expect(missing, `add a row "| \`<setting>\` | <variable> | <default> | <meaning> |" to ${PAGE}, "Every setting", for: ${missing.join(', ')}`).toEqual([]);
});

it(`${PAGE} names no setting the schema does not have`, () => {
  const settings = new Set(settingsOf(configSchema));
  const gone = [...rows.keys()].filter((setting) => !settings.has(setting));
  expect(gone, `remove from ${PAGE} the rows of settings that are gone: ${gone.join(', ')}`).toEqual([]);
});

it(`${PAGE} gives each setting its environment variable, secrets marked`, () => {
  const wrong: string[] = [];
  for (const [variable, path] of ENV_VARIABLES) if (!rows.get(path.join('.'))?.includes(`\`${variable}\``)) wrong.push(`${path.join('.')} ← ${variable}`);
  for (const [variable, path] of SECRET_VARIABLES)
    if (!rows.get(path.join('.'))?.includes(`\`${variable}\` (secret)`)) wrong.push(`${path.join('.')} ← ${variable} (secret)`);
  expect(wrong, `write the variable in the row of its setting in ${PAGE}`).toEqual([]);
});
