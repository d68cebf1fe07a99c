import type { Command } from 'commander';
import type { EventsFileRefusal, InvalidLinesRecord } from '../journey/events-file-lines.js';
import type { JourneyStep } from '../journey/journey-read.js';
import { ITEM_KINDS, type ItemKind } from '../store/keys.js';
import type { Lang, Translate } from '../i18n/translate.js';
import { kindName } from '../i18n/kind-name.js';
import { localTime, shortened } from '../i18n/local-time.js';
import { usageError } from './usage-error.js';
import { withContext } from './shared.js';

interface HistoryOptions {
  kind?: string;
  json?: boolean;
  file?: string;
  sha256?: string;
  since?: string;
  until?: string;
}

type Lookup =
  { by: 'delivery'; deliveryId: string } | { by: 'file'; name: string } | { by: 'sha256'; prefix: string } | { by: 'range'; sinceMs: number; untilMs: number };

export function registerHistory(program: Command): void {
  program
    .command('history')
    .description("the journey of a delivery's items (seen, queued, every attempt, outcome, where the file ended), kept CARRIER_SYNC_HISTORY_DAYS days")
    .argument('[delivery_id]', 'the delivery whose journey to show')
    .option('--kind <kind>', 'only label, cte or collecting')
    .option('--file <name>', 'the journey of the item(s) that came from this file (its name as dropped)')
    .option('--sha256 <prefix>', 'the journey of the file(s) with these bytes (at least 4 hex digits of their sha256)')
    .option('--since <iso8601>', 'every recorded step from this time (audit export, oldest first)')
    .option('--until <iso8601>', 'with --since: up to this time (default: now)')
    .option('--json', 'NDJSON: one step a line')
    .action(async (deliveryId: string | undefined, options: HistoryOptions, command: Command) => {
      const lookup = lookupOf(deliveryId, options);
      const kind = kindOf(options.kind);
      let lang: Lang = 'en';
      let invalidLines: InvalidLinesRecord[] = [];
      let fileRefusals: EventsFileRefusal[] = [];
      let traceUrl: string | null = null;
      const steps = await withContext(command, async (ctx) => {
        lang = ctx.config.lang;
        traceUrl = ctx.config.history.traceUrl;
        if (lookup.by === 'file') {
          const { readEventsFileRecords } = await import('../journey/events-file-lines.js');
          ({ invalidLines, refusals: fileRefusals } = await readEventsFileRecords(
            ctx.redis,
            ctx.keys,
            lookup.name,
            ctx.config.history.retentionDays,
            Date.now(),
          ));
        }
        const read = await import('../journey/journey-read.js');
        const days = ctx.config.history.retentionDays;
        const window = { retentionDays: days, nowMs: Date.now() };
        switch (lookup.by) {
          case 'delivery':
            return read.readJourney(ctx.redis, ctx.keys, lookup.deliveryId, window);
          case 'file':
            return read.findByFile(ctx.redis, ctx.keys, [lookup.name], days, Date.now());
          case 'sha256':
            return read.findBySha256(ctx.redis, ctx.keys, lookup.prefix, days, Date.now());
          case 'range':
            return read.readRange(ctx.redis, ctx.keys, lookup.sinceMs, lookup.untilMs, window);
        }
      });
      const shown = kind === null ? steps : steps.filter((step) => step.kind === kind);
      if (options.json === true) {
        // An events file's own records (its invalid lines, its refusal after sending) are lines too,
        // in time order among its events' steps: before, --json left them out and said less than the text.
        const records = kind === null || kind === 'collecting' ? eventsFileSteps(invalidLines, fileRefusals) : [];
        for (const step of mergedByTime(shown, records)) await write(`${JSON.stringify(step)}\n`);
        return;
      }
      const [{ describeStep, traceLinkOf }, { translator }] = await Promise.all([import('../journey/step-text.js'), import('../i18n/translate.js')]);
      const t = translator(lang);
      if (invalidLines.length > 0 || fileRefusals.length > 0) await write(await eventsFileText(invalidLines, fileRefusals, lang));
      if (shown.length === 0) {
        if (invalidLines.length === 0 && fileRefusals.length === 0) await write(`${nothingText(lookup, kind, t)}\n`);
        return;
      }
      // An attempt's trace follows its answer: a link when CARRIER_SYNC_TRACE_URL is set, the id otherwise.
      const traced = (step: JourneyStep): string =>
        step.trace_id === undefined ? '' : ` · ${t('history.trace', { trace: traceLinkOf(step.trace_id, traceUrl) })}`;
      await write(
        timeline(
          shown,
          (step) => describeStep(step, lang, { time: (iso) => localTime(iso, { ms: true }), long: (value) => shortened(value) }) + traced(step),
          t,
        ),
      );
    });
}

/** An events file's records as NDJSON steps: `invalid-lines` and `file-refused`, of no one delivery. */
function eventsFileSteps(records: readonly InvalidLinesRecord[], refusals: readonly EventsFileRefusal[]): Array<Record<string, unknown> & { at: string }> {
  return [
    ...records.map(({ at, file, count, valid, lines }) => ({ at, delivery_id: null, kind: 'collecting', step: 'invalid-lines', file, count, valid, lines })),
    ...refusals.map(({ at, file, failedAs, code, message }) => ({
      at,
      delivery_id: null,
      kind: 'collecting',
      step: 'file-refused',
      file,
      path: `failed/events/${failedAs}`,
      code,
      message,
    })),
  ];
}

/** Both lists oldest first (each is already; ISO times of one zone compare as strings), `steps` first on a tie. */
function mergedByTime<A extends { at: string }, B extends { at: string }>(steps: readonly A[], records: readonly B[]): Array<A | B> {
  const sorted = [...records].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const out: Array<A | B> = [];
  let r = 0;
  for (const step of steps) {
    while (r < sorted.length && sorted[r]!.at < step.at) out.push(sorted[r++]!);
    out.push(step);
  }
  return out.concat(sorted.slice(r));
}

function lookupOf(deliveryId: string | undefined, options: HistoryOptions): Lookup {
  const given = [deliveryId !== undefined, options.file !== undefined, options.sha256 !== undefined, options.since !== undefined].filter(Boolean).length;
  if (given !== 1) throw usageError('cli.usage.history.oneOf');
  if (options.until !== undefined && options.since === undefined) throw usageError('cli.usage.history.untilNeedsSince');
  if (deliveryId !== undefined) return { by: 'delivery', deliveryId };
  if (options.file !== undefined) return { by: 'file', name: options.file };
  if (options.sha256 !== undefined) {
    if (!/^[0-9a-fA-F]{4,64}$/.test(options.sha256)) throw usageError('cli.usage.history.sha256', { value: options.sha256 });
    return { by: 'sha256', prefix: options.sha256.toLowerCase() };
  }
  const sinceMs = timeOf('--since', options.since ?? '');
  const untilMs = options.until === undefined ? Date.now() : timeOf('--until', options.until);
  if (untilMs < sinceMs) throw usageError('cli.usage.history.untilBeforeSince');
  return { by: 'range', sinceMs, untilMs };
}

function timeOf(flag: string, text: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) throw usageError('cli.usage.notTime', { flag, value: text });
  return ms;
}

function kindOf(kind: string | undefined): ItemKind | null {
  if (kind === undefined) return null;
  if (!(ITEM_KINDS as readonly string[]).includes(kind)) throw usageError('cli.usage.history.kind', { value: kind });
  return kind as ItemKind;
}

function nothingText(lookup: Lookup, kind: ItemKind | null, t: Translate): string {
  switch (lookup.by) {
    case 'delivery':
      return kind === null
        ? t('history.nothingDelivery', { delivery: lookup.deliveryId })
        : t('history.nothingDeliveryKind', { delivery: lookup.deliveryId, kind });
    case 'file':
      return t('history.nothingFile', { file: lookup.name });
    case 'sha256':
      return t('history.nothingSha', { sha256: lookup.prefix });
    case 'range':
      return t('history.nothingRange', { since: localTime(lookup.sinceMs), until: localTime(lookup.untilMs) });
  }
}

/**
 * What an events file left beside its events' journeys: its invalid lines (they have no delivery, so
 * no journey; a heading and a line each, as kept) and its refusal after sending (its events' journeys
 * say "accepted"; the file is in failed/ with later lines unsent).
 */
async function eventsFileText(records: readonly InvalidLinesRecord[], refusals: readonly EventsFileRefusal[], lang: Lang): Promise<string> {
  const [{ lineReason }, { renderReason, describeFailure }, { translator }] = await Promise.all([
    import('../journey/events-file-lines.js'),
    import('../i18n/reason.js'),
    import('../i18n/translate.js'),
  ]);
  const t = translator(lang);
  const lines: string[] = [];
  for (const record of records) {
    lines.push(
      t(record.valid === 0 ? 'history.invalidLinesNoneValid' : 'history.invalidLines', { file: record.file, at: localTime(record.at), count: record.count }),
    );
    for (const line of record.lines) lines.push(`  ${renderReason(lang, lineReason(line))}`);
    if (record.count > record.lines.length) lines.push('  …');
  }
  for (const refusal of refusals) {
    const reason = describeFailure(lang, { code: refusal.code, message: refusal.message, reason: refusal.reason });
    lines.push(t('history.fileRefused', { file: refusal.file, at: localTime(refusal.at), code: refusal.code, failedAs: refusal.failedAs }), `  ${reason}`);
  }
  return `${lines.join('\n')}\n\n`;
}

/** Steps grouped by delivery, then by item (kind and file or event_at), each a line. */
function timeline(steps: readonly JourneyStep[], describe: (step: JourneyStep) => string, t: Translate): string {
  const byDelivery = new Map<string, JourneyStep[]>();
  for (const step of steps) byDelivery.set(step.delivery_id, [...(byDelivery.get(step.delivery_id) ?? []), step]);
  const lines: string[] = [];
  for (const [deliveryId, own] of byDelivery) {
    lines.push(t('history.delivery', { delivery: deliveryId }));
    for (const step of own) {
      const item = step.kind === 'collecting' ? t('history.collecting', { eventAt: step.event_at ?? '' }) : `${kindName(step.kind, t)} ${step.file ?? ''}`;
      lines.push(`  ${localTime(step.at, { ms: true })}  ${item.padEnd(28)}  ${describe(step)}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

/** Writes to stdout, waiting while a slow reader's pipe is full (an export stays complete on a pipe). */
function write(text: string): Promise<void> {
  return new Promise((resolve) => {
    // A reader gone (EPIPE) will never drain: nothing more can reach it.
    if (process.stdout.destroyed || process.stdout.write(text)) resolve();
    else {
      process.stdout.once('drain', resolve);
      process.stdout.once('close', resolve);
    }
  });
}
