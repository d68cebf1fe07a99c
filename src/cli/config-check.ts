/**
 * `carrier-sync config check`: the settings as `start` would read them (default.yaml → --config
 * file → variables → secrets), each with where its value came from, in the manner of `vector
 * validate`. Secrets are masked (and a password inside a URL); nothing opens a connection, so a CI
 * pipeline or a Helm values test can run it anywhere. Exit 0 when the settings are valid (unknown
 * variables are only named), 2 when they are not.
 */
import { isSyncError } from '../errors.js';
import { loadConfigWithSources, SECRET_VARIABLES, type SettingSource } from '../config/load.js';
import { unknownVariables, type UnknownVariable } from '../config/unknown-variables.js';
import { cliLang, type Lang } from '../i18n/langs.js';
import { translator, type Translate } from '../i18n/translate.js';
import { print } from './shared.js';

interface SettingRow {
  setting: string;
  value: unknown;
  source: SettingSource['kind'];
  /** The file or the variable the value came from. */
  from: string;
}

const SECRETS = new Set(SECRET_VARIABLES.map(([, path]) => path.join('.')));
const MASK = '********';

export function checkConfig(configPath: string | undefined, isJson: boolean): void {
  const unknown = unknownVariables(process.env);
  let rows: SettingRow[];
  let lang: Lang;
  try {
    const { config, sources } = loadConfigWithSources({ env: process.env, configPath });
    lang = config.lang;
    rows = leavesOf(config).map(([setting, value]) => rowOf(setting, value, sources));
  } catch (error) {
    if (!isSyncError(error) || error.code !== 'CONFIG_INVALID') throw error;
    const t = translator(cliLang(process.env));
    if (!isJson) {
      for (const line of unknownLines(unknown, t)) process.stderr.write(`carrier-sync: ${line}\n`);
      throw error;
    }
    print(JSON.stringify({ valid: false, errors: [error.message], settings: [], unknownVariables: unknown }, null, 2));
    process.exitCode = 2;
    return;
  }
  const t = translator(lang);
  if (isJson) {
    print(JSON.stringify({ valid: true, errors: [], settings: rows, unknownVariables: unknown }, null, 2));
    return;
  }
  for (const row of rows)
    print(t('cli.config.line', { setting: row.setting, value: shown(row), source: t(`cli.config.source.${row.source}`, { from: row.from }) }));
  for (const line of unknownLines(unknown, t)) print(line);
  print(t('cli.config.valid', { count: rows.length, variables: rows.filter((row) => row.source === 'variable').length }));
}

function unknownLines(unknown: readonly UnknownVariable[], t: Translate): string[] {
  return unknown.map(({ variable, closest }) => t('cli.config.unknown', { variable, closest }));
}

function shown(row: SettingRow): string {
  return typeof row.value === 'string' && row.value === MASK ? MASK : JSON.stringify(row.value);
}

function rowOf(setting: string, value: unknown, sources: ReadonlyMap<string, SettingSource>): SettingRow {
  let source: SettingSource | undefined;
  const parts = setting.split('.');
  for (let length = parts.length; length > 0 && source === undefined; length -= 1) source = sources.get(parts.slice(0, length).join('.'));
  const known = source ?? { kind: 'default' as const, file: '' };
  const from = known.kind === 'variable' ? known.variable : known.file;
  return { setting, value: masked(setting, value), source: known.kind, from };
}

/** A secret set shows as ********; a URL's password and a webhook header's value too (they carry tokens). */
function masked(setting: string, value: unknown): unknown {
  if (SECRETS.has(setting)) return value === null ? null : MASK;
  if (setting === 'webhook.headers' && value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).map((key) => [key, MASK]));
  }
  if (typeof value === 'string') return value.replace(/(\/\/[^/@\s:]*:)[^/@\s]+@/g, `$1${MASK}@`);
  if (Array.isArray(value)) return value.map((item: unknown) => (typeof item === 'string' ? item.replace(/(\/\/[^/@\s:]*:)[^/@\s]+@/g, `$1${MASK}@`) : item));
  return value;
}

/** Every leaf of the settings (a value that is not a plain object), by dotted path, in the file's order. */
function leavesOf(value: unknown, path: string[] = []): Array<[string, unknown]> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([key, child]) => leavesOf(child, [...path, key]));
  }
  return [[path.join('.'), value]];
}
