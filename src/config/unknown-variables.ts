/**
 * A mistyped setting variable (`CARRIER_SYNC_SPOOL`, `CARRIER_SYNC_RATE_LIMIT`) would be ignored
 * without a word, while the same typo in a config file is refused. Refusing it too would break a
 * deployment over a variable another tool sets, so it is one warn line at start (and a line of
 * `config check`) naming the closest real variable.
 *
 * Closest: a name that holds the typed one, or is held by it, underscores aside (SPOOL →
 * SPOOL_DIR, RATE_LIMIT → RATE_LIMIT_PER_MINUTE, TIMEZONE → EVENTS_TIME_ZONE) counts as one edit;
 * otherwise the edit distance (Levenshtein). Ties go to the variables of INTERFACE.md's table, then to the table order.
 */
import { ENV_VARIABLES, SECRET_VARIABLES } from './load.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface UnknownVariable {
  variable: string;
  /** The real variable nearest to it. */
  closest: string;
}

const PREFIX = 'CARRIER_SYNC_';

/** Read elsewhere than the settings: failpoints and the watchdog's bound (INTERFACE.md), test tools. */
export const OTHER_VARIABLES: readonly string[] = [
  'CARRIER_SYNC_FAILPOINTS',
  'CARRIER_SYNC_STALL_MS',
  'CARRIER_SYNC_HELM_CACHE',
  'CARRIER_SYNC_IMAGE_RUN_ARGS',
];
/** Set by others: Kubernetes' service links for a Service named carrier-sync, test-only knobs. */
const OTHERS_PATTERN = /^CARRIER_SYNC_(?:SERVICE_HOST|SERVICE_PORT(?:_\w+)?|PORT(?:_\d+_(?:TCP|UDP|SCTP)(?:_\w+)?)?|TEST_\w+)$/;

/** The variables of INTERFACE.md's configuration table: a tie goes to them. */
const HEADLINE = new Set([
  'CARRIER_SYNC_API_URL',
  'CARRIER_SYNC_CARRIER_KEY',
  'CARRIER_SYNC_SELLER_GROUP_KEY',
  'CARRIER_SYNC_PREFIX',
  'CARRIER_SYNC_SPOOL_DIR',
  'CARRIER_SYNC_HTTP_PORT',
  'CARRIER_SYNC_RATE_LIMIT_PER_MINUTE',
  'CARRIER_SYNC_MAX_ATTEMPTS',
  'CARRIER_SYNC_BACKOFF_MS',
  'CARRIER_SYNC_MAX_QUEUED',
  'CARRIER_SYNC_WRITE_STABLE_MS',
  'CARRIER_SYNC_REDIS_SENTINELS',
  'CARRIER_SYNC_REDIS_SENTINEL_NAME',
  'CARRIER_SYNC_REDIS_SENTINEL_PASSWORD',
  'CARRIER_SYNC_REDIS_CLUSTER',
  'CARRIER_SYNC_ALLOW_EVICTING_REDIS',
  'CARRIER_SYNC_EVENTS_TIME_ZONE',
  'CARRIER_SYNC_STALL_MS',
  'CARRIER_SYNC_LANG',
]);

/** Every variable a person may set: settings, secrets and their `_FILE` forms, the others above. */
export function knownVariables(): string[] {
  const settings = ENV_VARIABLES.map(([name]) => name).filter((name) => name.startsWith(PREFIX));
  const secrets = SECRET_VARIABLES.flatMap(([name]) => [name, `${name}_FILE`]);
  return [...new Set([...settings, ...secrets, ...OTHER_VARIABLES])];
}

/** The `CARRIER_SYNC_*` variables of `env` that nothing reads (any case), each with the closest real one. */
export function unknownVariables(env: Env): UnknownVariable[] {
  const known = knownVariables();
  const knownSet = new Set(known);
  return Object.keys(env)
    .filter((name) => name.toUpperCase().startsWith(PREFIX) && !knownSet.has(name) && !OTHERS_PATTERN.test(name))
    .sort()
    .map((variable) => ({ variable, closest: closestOf(variable.toUpperCase(), known) }));
}

function closestOf(typed: string, known: readonly string[]): string {
  const ranked = known.map((name, order) => ({ name, order, distance: distanceOf(typed, name) }));
  ranked.sort((a, b) => a.distance - b.distance || Number(HEADLINE.has(b.name)) - Number(HEADLINE.has(a.name)) || a.order - b.order);
  return ranked[0]?.name ?? '';
}

function distanceOf(typed: string, name: string): number {
  if (typed === name) return 0;
  // One name holding the other, words run together or not (SPOOL → SPOOL_DIR, TIMEZONE → EVENTS_TIME_ZONE).
  const [a, b] = [typed, name].map((text) => text.slice(PREFIX.length).replace(/_/g, '')) as [string, string];
  if (a !== '' && (b.includes(a) || a.includes(b))) return 1;
  return levenshtein(typed.slice(PREFIX.length), name.slice(PREFIX.length));
}

function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
