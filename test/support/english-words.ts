/**
 * English left inside Portuguese text: English function words and the English terms carrier-sync
 * itself uses (label, queue, dead-lettered, …), found as words of their own. What a person types or
 * looks for is not prose and is left out first: `code in backticks`, identifiers (API_NOT_FOUND,
 * event_at, sha256), paths and file names (failed/labels/x.pdf, .error.json), commands
 * (carrier-sync dlq retry), names in “quotes”, and a role named after "papel" (papel scheduler).
 * KEPT are the terms Portuguese keeps as they are (docs/language.md, "Glossário pt-BR").
 */

/** English words that are never Portuguese. Not here: words both languages spell alike (a, as, do, no, note, total, status, link, online, host). */
export const ENGLISH_WORDS = new Set(
  (
    'the and or of to in is are was were be been not with from by for on at it its this that these those than then there here ' +
    'when where which who what while after before since until each every all any only but if into out up has have had will can cannot ' +
    'line lines file files label labels sent send sending queue queues queued retry retried retries failed failure failures ' +
    'scheduler watcher worker single window per minute minutes rate limiter limit delivery deliveries event events attempt attempts ' +
    'replay replayed dead letter letters lettered padding form feed held paused pause waiting delayed active completed duplicate duplicates dups ' +
    'unknown none primary replica replicas lease left holder key error version source test backlog pending inbox folder kind record records ' +
    'valid invalid accepted refused superseded step steps journey history claimed received answer answered lag next schedulers deployment'
  ).split(' '),
);

/** Terms Portuguese keeps; they are not flagged even where an English list would hold them. */
export const KEPT = new Set([
  'redis',
  'spool',
  'ct-e',
  'http',
  'https',
  'api',
  'pdf',
  'xml',
  'csv',
  'ndjson',
  'jsonl',
  'json',
  'utf-8',
  'cnpj',
  'cpf',
  'ibge',
  'zpl',
  'epl',
  'carrier-sync',
  'sentinel',
  'cluster',
  'webhook',
  'slack',
  'e-mail',
  'failover',
  'namespace',
  'logs',
  'log',
  'bull-board',
  'base64',
  'uri',
  'fifo',
  'online',
  'host',
  'pid',
  'node',
  'maxmemory',
  'smtp',
]);

/** The words of `text` that read as English, once names, codes and paths are taken out. */
export function englishWordsIn(text: string): string[] {
  const prose = text
    .replace(/`[^`]*`/g, ' ')
    .replace(/“[^”]*”/g, ' ')
    .replace(/carrier-sync( (notify|test|dlq|list|retry|purge|status|resume|history|validate|enqueue|backfill|start|sandbox|webhook|set|--[a-z-]+))+/g, ' ')
    .replace(/\bpapel (watcher|worker|scheduler|http)\b/g, ' ')
    .replace(/\S*[/<>=@%\\]\S*/g, ' ')
    .replace(/\S*\w\.\w\S*/g, ' ')
    .replace(/\S*[_\d]\S*/g, ' ')
    .replace(/\b[A-Z][A-Z-]+\b/g, ' ');
  const found = prose
    .split(/[^\p{L}-]+/u)
    .map((word) => word.replace(/^-+|-+$/g, '').toLowerCase())
    .filter((word) => word !== '' && !KEPT.has(word) && ENGLISH_WORDS.has(word));
  return [...new Set(found)];
}
