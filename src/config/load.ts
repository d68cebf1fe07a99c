import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { ptBR as zodPtBr } from 'zod/v4/locales';
import { SyncError } from '../errors.js';
import { configSchema, configSchemaPtBr, type Config } from './schema.js';
import { localeLang } from '../i18n/langs.js';

/** The package's own folder, found from this file whether it runs from src/ or dist/src/. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
export const DEFAULT_CONFIG_PATH = join(PACKAGE_ROOT, 'config', 'default.yaml');

function findPackageRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return start;
    dir = parent;
  }
  return dir;
}

type Env = Readonly<Record<string, string | undefined>>;
type Parse = (raw: string) => unknown;

const asInt: Parse = (raw) => (/^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw);
const asBool: Parse = (raw) => {
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  return raw;
};
const asString: Parse = (raw) => raw;
const asNullableString: Parse = (raw) => (raw.trim() === '' ? null : raw);
const asNullableInt: Parse = (raw) => (raw.trim() === '' ? null : asInt(raw));
const asNumber: Parse = (raw) => (/^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : raw);
const asList: Parse = (raw) =>
  raw
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');

/** Environment variable → config path. Secrets are listed in SECRET_VARIABLES instead. */
export const ENV_VARIABLES: ReadonlyArray<readonly [string, readonly string[], Parse]> = [
  ['CARRIER_SYNC_API_URL', ['api', 'url'], asNullableString],
  ['REDIS_URL', ['redis', 'url'], asNullableString],
  ['CARRIER_SYNC_REDIS_DIR', ['redis', 'managedDir'], asString],
  ['CARRIER_SYNC_REDIS_PORT', ['redis', 'managedPort'], asInt],
  ['CARRIER_SYNC_REDIS_CLUSTER', ['redis', 'cluster'], asBool],
  ['CARRIER_SYNC_REDIS_SENTINELS', ['redis', 'sentinels'], asList],
  ['CARRIER_SYNC_REDIS_SENTINEL_NAME', ['redis', 'sentinelName'], asString],
  ['CARRIER_SYNC_ALLOW_EVICTING_REDIS', ['redis', 'allowEviction'], asBool],
  ['CARRIER_SYNC_PREFIX', ['prefix'], asString],
  ['CARRIER_SYNC_SPOOL_DIR', ['spool', 'dir'], asString],
  ['CARRIER_SYNC_SPOOL_ID', ['spool', 'id'], asNullableString],
  ['CARRIER_SYNC_SPOOL_LEASE_MS', ['spool', 'leaseMs'], asInt],
  ['CARRIER_SYNC_SPOOL_HOLDER_FILE_MS', ['spool', 'holderFileMs'], asInt],
  ['CARRIER_SYNC_EVENTS_TIME_ZONE', ['spool', 'eventsTimeZone'], asNullableString],
  ['CARRIER_SYNC_WRITE_STABLE_MS', ['spool', 'writeStableMs'], asInt],
  ['CARRIER_SYNC_USE_POLLING', ['spool', 'usePolling'], asBool],
  ['CARRIER_SYNC_HTTP_PORT', ['http', 'port'], asInt],
  ['CARRIER_SYNC_HTTP_HOST', ['http', 'host'], asString],
  ['CARRIER_SYNC_RATE_LIMIT_PER_MINUTE', ['delivery', 'ratePerMinute'], asInt],
  ['CARRIER_SYNC_MAX_ATTEMPTS', ['delivery', 'maxAttempts'], asInt],
  ['CARRIER_SYNC_BACKOFF_MS', ['delivery', 'backoffMs'], asInt],
  ['CARRIER_SYNC_MAX_QUEUED', ['delivery', 'maxQueued'], asInt],
  ['CARRIER_SYNC_CHECK_THREADS', ['checks', 'threads'], asNullableInt],
  ['CARRIER_SYNC_CHECK_ON_THREAD_FROM_BYTES', ['checks', 'onThreadFromBytes'], asInt],
  ['CARRIER_SYNC_CHECK_CPU_MS', ['checks', 'documents', 'cpuMs'], asInt],
  ['CARRIER_SYNC_CHECK_MEMORY_MB', ['checks', 'documents', 'memoryMb'], asInt],
  ['CARRIER_SYNC_EVENTS_CHECK_CPU_MS', ['checks', 'events', 'cpuMs'], asInt],
  ['CARRIER_SYNC_EVENTS_CHECK_MEMORY_MB', ['checks', 'events', 'memoryMb'], asInt],
  ['CARRIER_SYNC_CONCURRENCY', ['delivery', 'concurrency'], asInt],
  ['CARRIER_SYNC_DELIVERY_THREAD', ['delivery', 'thread'], asString],
  ['CARRIER_SYNC_DELIVERY_THREAD_NICE', ['delivery', 'threadNice'], asInt],
  ['CARRIER_SYNC_DEDUP_RETENTION_DAYS', ['dedup', 'retentionDays'], asInt],
  ['CARRIER_SYNC_HISTORY_DAYS', ['history', 'retentionDays'], asInt],
  ['CARRIER_SYNC_HISTORY_DETAIL_DAYS', ['history', 'detailDays'], asInt],
  ['CARRIER_SYNC_TRACE_URL', ['history', 'traceUrl'], asNullableString],
  ['CARRIER_SYNC_GRACE_MS', ['shutdown', 'graceMs'], asInt],
  ['CARRIER_SYNC_STALL_MS', ['watchdog', 'stallMs'], asInt],
  ['CARRIER_SYNC_FAILPOINTS', ['watchdog', 'failpoints'], asList],
  ['LOG_LEVEL', ['log', 'level'], asString],
  ['CARRIER_SYNC_LANG', ['lang'], asString],
  ['CARRIER_SYNC_NOTIFY_EMAIL_FROM', ['notify', 'email', 'from'], asNullableString],
  ['CARRIER_SYNC_NOTIFY_EMAIL_TO', ['notify', 'email', 'to'], asList],
  ['CARRIER_SYNC_NOTIFY_DIGEST_MINUTES', ['notify', 'digestMinutes'], asNumber],
  ['CARRIER_SYNC_NOTIFY_OVERVIEW_URL', ['notify', 'overviewUrl'], asNullableString],
];

/** Secrets: from the environment, or from the file named by `<VAR>_FILE`. Never from a config file. */
export const SECRET_VARIABLES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['CARRIER_SYNC_CARRIER_KEY', ['api', 'carrierKey']],
  ['CARRIER_SYNC_SELLER_GROUP_KEY', ['api', 'sellerGroupKey']],
  ['CARRIER_SYNC_UI_PASSWORD', ['http', 'uiPassword']],
  ['CARRIER_SYNC_INGEST_TOKEN', ['http', 'ingestToken']],
  ['CARRIER_SYNC_REDIS_SENTINEL_PASSWORD', ['redis', 'sentinelPassword']],
  ['CARRIER_SYNC_EVENTS_PULL_TOKEN', ['schedules', 'eventsPull', 'token']],
  // Notification channels: their URLs carry tokens or passwords, so they are secrets too.
  ['CARRIER_SYNC_NOTIFY_WEBHOOK_URL', ['notify', 'webhook', 'url']],
  ['CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET', ['notify', 'webhook', 'secret']],
  ['CARRIER_SYNC_NOTIFY_SLACK_URL', ['notify', 'slack', 'url']],
  ['CARRIER_SYNC_NOTIFY_SMTP_URL', ['notify', 'email', 'smtpUrl']],
];

export interface LoadOptions {
  env: Env;
  /** Path given with --config, if any. */
  configPath?: string | undefined;
  /** Reads a file; injected so the loader stays a pure function of its inputs in tests. */
  readFile?: (path: string) => string;
  defaultPath?: string;
}

/** Where a setting's value came from: the defaults file, the --config file, or a variable (`<VAR>_FILE` for a secret read from a file). */
export type SettingSource = { kind: 'default'; file: string } | { kind: 'file'; file: string } | { kind: 'variable'; variable: string };

export interface LoadedConfig {
  config: Readonly<Config>;
  /** Dotted setting path (a leaf of the schema: `spool.dir`, `redis.sentinels`) → where its value came from. */
  sources: ReadonlyMap<string, SettingSource>;
}

/**
 * default.yaml → --config file → environment → secrets; validated as a whole.
 * Throws one SyncError(CONFIG_INVALID) whose message lists every problem on one line, each naming
 * where the wrong value came from: the variable, or the file.
 */
export function loadConfig(options: LoadOptions): Readonly<Config> {
  return loadConfigWithSources(options).config;
}

export function loadConfigWithSources(options: LoadOptions): LoadedConfig {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const defaultPath = options.defaultPath ?? DEFAULT_CONFIG_PATH;
  const merged = readYaml(readFile, defaultPath);
  const sources = new Map<string, SettingSource>();
  noteLeaves(merged, [], { kind: 'default', file: defaultPath }, sources);
  if (options.configPath !== undefined) {
    const override = readYaml(readFile, options.configPath);
    rejectSecretsInFile(override, options.configPath);
    deepMerge(merged, override);
    noteLeaves(override, [], { kind: 'file', file: options.configPath }, sources);
  }
  for (const [name, path, parse] of ENV_VARIABLES) {
    const raw = options.env[name];
    if (raw === undefined) continue;
    setPath(merged, path, parse(raw));
    sources.set(path.join('.'), { kind: 'variable', variable: name });
  }
  const locale = localeLang(options.env);
  if (locale !== null && sources.get('lang')?.kind === 'default') {
    merged['lang'] = 'pt-BR';
    sources.set('lang', { kind: 'variable', variable: locale });
  }
  for (const [name, path] of SECRET_VARIABLES) {
    const secret = readSecret(options.env, name, readFile);
    setPath(merged, path, secret?.value ?? null);
    sources.set(path.join('.'), secret === null ? { kind: 'default', file: defaultPath } : { kind: 'variable', variable: secret.variable });
  }

  const result = configSchema.safeParse(merged);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${describePath(issuePath(issue), sources)}: ${issue.message}`);
    // The same problems in Portuguese for the terminal: zod's pt-BR messages, and our own checks' from the catalog.
    const inPortuguese = configSchemaPtBr.safeParse(merged, { error: zodPtBr().localeError });
    const problemsPt = (inPortuguese.error?.issues ?? result.error.issues).map(
      (issue) =>
        `${describePath(issuePath(issue), sources)
          .replace(/ \[file /, ' [arquivo ')
          .replace(/^\(root\)$/, '(raiz)')}: ${issue.message}`,
    );
    throw new SyncError('CONFIG_INVALID', `invalid configuration: ${problems.join('; ')}`, {
      reason: { key: 'config.error.invalid', values: { problems: problems.join('; '), problemsPtBr: problemsPt.join('; ') } },
    });
  }
  return { config: deepFreeze(result.data), sources };
}

/** An unrecognized key is blamed on itself (where it was written), not on the object holding it. */
function issuePath(issue: { path: ReadonlyArray<PropertyKey>; code: string; keys?: readonly string[] }): ReadonlyArray<PropertyKey> {
  return issue.code === 'unrecognized_keys' && issue.keys?.[0] !== undefined ? [...issue.path, issue.keys[0]] : issue.path;
}

function noteLeaves(value: unknown, path: string[], source: SettingSource, sources: Map<string, SettingSource>): void {
  if (isPlainObject(value) && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) noteLeaves(child, [...path, key], source, sources);
    return;
  }
  if (path.length > 0) {
    const dotted = path.join('.');
    // A key that now holds a scalar replaces whatever was under it.
    for (const key of [...sources.keys()]) if (key.startsWith(`${dotted}.`)) sources.delete(key);
    sources.set(dotted, source);
  }
}

function readYaml(readFile: (path: string) => string, path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFile(path);
  } catch (cause) {
    throw new SyncError('CONFIG_INVALID', `cannot read config file ${path}: ${(cause as Error).message}`, {
      cause,
      reason: { key: 'config.error.unreadable', values: { path, cause: (cause as Error).message } },
    });
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (cause) {
    const first = (cause as Error).message.split('\n')[0] ?? '';
    throw new SyncError('CONFIG_INVALID', `config file ${path} is not valid YAML: ${first}`, {
      cause,
      reason: { key: 'config.error.yaml', values: { path, cause: first } },
    });
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new SyncError('CONFIG_INVALID', `config file ${path} must hold a mapping at the top level`, {
      reason: { key: 'config.error.notMapping', values: { path } },
    });
  }
  return value as Record<string, unknown>;
}

function rejectSecretsInFile(override: Record<string, unknown>, path: string): void {
  for (const [name, secretPath] of SECRET_VARIABLES) {
    if (getPath(override, secretPath) !== undefined) {
      throw new SyncError('CONFIG_INVALID', `${path}: ${secretPath.join('.')} is a secret; set ${name} in the environment instead`, {
        reason: { key: 'config.error.secretInFile', values: { path, setting: secretPath.join('.'), variable: name } },
      });
    }
  }
}

function readSecret(env: Env, name: string, readFile: (path: string) => string): { value: string; variable: string } | null {
  const direct = env[name];
  if (direct !== undefined && direct !== '') return { value: direct, variable: name };
  const file = env[`${name}_FILE`];
  if (file === undefined || file === '') return null;
  try {
    const value = readFile(file).trim();
    return value === '' ? null : { value, variable: `${name}_FILE` };
  } catch {
    throw new SyncError('CONFIG_INVALID', `${name}_FILE: cannot read ${file}`, {
      reason: { key: 'config.error.secretFile', values: { variable: `${name}_FILE`, file } },
    });
  }
}

/**
 * A setting named with where its value came from: `[CARRIER_SYNC_LANG]` when a variable set it,
 * `[file /etc/cs.yaml]` when the --config file did; a default names the variable that would set it.
 */
function describePath(path: ReadonlyArray<PropertyKey>, sources: ReadonlyMap<string, SettingSource>): string {
  const dotted = path.map(String).join('.');
  let source: SettingSource | undefined;
  for (let length = path.length; length > 0 && source === undefined; length -= 1) source = sources.get(path.slice(0, length).map(String).join('.'));
  if (source?.kind === 'variable') return `${dotted} [${source.variable}]`;
  if (source?.kind === 'file') return `${dotted} [file ${source.file}]`;
  const env = ENV_VARIABLES.find(([, p]) => p.join('.') === dotted)?.[0];
  return env === undefined ? dotted || '(root)' : `${dotted} [${env}]`;
}

function getPath(target: Record<string, unknown>, path: readonly string[]): unknown {
  let node: unknown = target;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object') node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(value) && isPlainObject(existing)) deepMerge(existing, value);
    else target[key] = value;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
