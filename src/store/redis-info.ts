/**
 * The one reader of Redis' INFO text: `name:value` lines under `# Section` headers (CRLF line ends).
 * Every caller (the eviction check at start, the replica wait, the topology, the OOM headroom,
 * the managed redis-server's stop) asks for named fields here instead of writing its own pattern.
 */

/** INFO's fields by name; sections, comments and blank lines are left out. */
export function parseInfo(text: string): ReadonlyMap<string, string> {
  const fields = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    const at = line.indexOf(':');
    if (line === '' || line.startsWith('#') || at <= 0) continue;
    fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

/** A numeric field, or null when it is absent or not a number. */
export function infoNumber(fields: ReadonlyMap<string, string>, name: string): number | null {
  const value = fields.get(name);
  if (value === undefined || value.trim() === '') return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
}

/** The `slaveN` lines of INFO replication: `ip=10.0.0.6,port=6379,state=online,offset=…,lag=0`. */
export function infoReplicas(fields: ReadonlyMap<string, string>): Array<Readonly<Record<string, string>>> {
  return [...fields]
    .filter(([name]) => /^slave\d+$/.test(name))
    .map(([, value]) => Object.fromEntries(value.split(',').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])));
}
