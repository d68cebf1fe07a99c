/**
 * The journey timeline page (`/ui/history/<delivery id>`, and the results of a file-name search):
 * server-rendered HTML in the overview's style, one row a step, grouped by delivery. Every string
 * from outside goes through `escape`. Words in the page's language; times in the browser's time
 * zone (the script of the overview turns each `<time>` into local time; UTC on hover).
 */
import { isMessageKey, translator, type Lang, type Translate } from '../i18n/translate.js';
import type { JourneyStep } from '../journey/journey-read.js';
import { describeStep, traceLinkOf } from '../journey/step-text.js';
import { lineReason, type EventsFileRefusal, type InvalidLinesRecord } from '../journey/events-file-lines.js';
import { describeFailure, renderReason } from '../i18n/reason.js';
import { escape, kindName, searchForm, timeTag, UTC_OFFSET } from './overview-page.js';
import { REPLAY_HEADER } from './overview-assets.js';
import { markLong, marksToHtml, markTime } from './text-marks.js';
import type { ItemState } from './item-states.js';

const TONE: Readonly<Record<string, string>> = {
  accepted: 'ok',
  archived: 'ok',
  refused: 'bad',
  'dead-lettered': 'bad',
  failed: 'bad',
  superseded: 'muted',
  'already-accepted': 'muted',
  duplicate: 'muted',
  held: 'warn',
  replayed: 'warn',
};

function toneOf(step: JourneyStep): string {
  if (step.step === 'attempt') return step.answer === 'none' ? 'warn' : step.status !== undefined && step.status < 300 ? 'ok' : 'bad';
  return TONE[step.step] ?? '';
}

export interface HistoryView {
  /** What was looked up: a delivery id, or a file name searched. */
  lookup: { by: 'delivery' | 'file'; name: string };
  query: string;
  steps: readonly JourneyStep[];
  retentionDays: number;
  /** The JSON beside the page (a delivery's), or null for a search. */
  jsonHref: string | null;
  /** A file search: the invalid lines of events files of that name (they have no delivery, so no journey). */
  invalidLines?: readonly InvalidLinesRecord[];
  /** A file search: events files of that name refused after their records were sent (their events' journeys say "accepted"). */
  fileRefusals?: readonly EventsFileRefusal[];
  /** A delivery's page: where each of its items stands now. */
  current?: readonly ItemState[];
  /** CARRIER_SYNC_TRACE_URL: an attempt's trace id is a link through it; without one, the id as text. */
  traceUrl?: string | null;
}

/** An attempt's trace: a link to the tracing tool when a template is set, the id otherwise. */
function traceCell(step: JourneyStep, template: string | null, t: Translate): string {
  if (step.trace_id === undefined) return '';
  const label = escape(t('history.trace', { trace: step.trace_id }));
  return template === null
    ? ` <code class="trace" data-trace="${escape(step.trace_id)}">${label}</code>`
    : ` <a class="trace" data-trace="${escape(step.trace_id)}" href="${escape(traceLinkOf(step.trace_id, template))}" target="_blank" rel="noopener noreferrer">${label}</a>`;
}

/** A step's name as a person reads it (`data-step` keeps the one scripts and tests match on). */
function stepName(step: string, t: Translate): string {
  const key = `ui.step.${step}`;
  return isMessageKey(key) ? t(key) : step;
}

/** A step's text as HTML: its times as `<time>` (local in the browser, UTC on hover), its long numbers cut (whole on hover). */
function stepHtml(step: JourneyStep, lang: Lang): string {
  return marksToHtml(describeStep(step, lang, { time: markTime, long: markLong }), escape, timeTag);
}

/** The card the delivery's page opens with: each item's state now; a dead letter's replay button (the overview's route). */
function currentCard(states: readonly ItemState[], lang: Lang): string {
  if (states.length === 0) return '';
  const t = translator(lang);
  const rows = states
    .map((s) => {
      const replay =
        s.deadLetterId === null ? '' : `<button type="button" class="replay" data-replay-id="${escape(s.deadLetterId)}">${t('ui.dead.replay')}</button>`;
      return `<tr class="now ${STATE_TONE[s.state]}" data-item-state="${s.state}"><td>${escape(kindName(s.kind, t))}</td><td class="file" title="${escape(s.item)}">${escape(s.item)}</td><td><b>${escape(t(`ui.itemState.${s.state}`))}</b></td><td class="when">${timeTag(s.at, s.at.replace('T', ' ').slice(0, 19))}</td><td>${replay}</td></tr>`;
    })
    .join('');
  const head = [t('ui.col.kind'), t('ui.history.item'), t('ui.history.state'), `${t('ui.history.since')}${UTC_OFFSET}`, '']
    .map((h) => `<th>${h}</th>`)
    .join('');
  return `<section class="card current" data-part="current"><h2>${t('ui.history.now')}</h2><table class="timeline current"><colgroup><col class="c-kind"><col class="c-item"><col class="c-step"><col class="c-at"><col></colgroup><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></section>`;
}

const STATE_TONE: Readonly<Record<ItemState['state'], string>> = {
  accepted: 'ok',
  waiting: 'warn',
  'dead-lettered': 'bad',
  refused: 'bad',
  superseded: 'muted',
  duplicate: 'muted',
};

/** One card per events file refused after its records were sent: when, why, and where it is. */
function fileRefusalCards(records: readonly EventsFileRefusal[], lang: Lang): string {
  const t = translator(lang);
  return records
    .map((record) => {
      const reason = describeFailure(lang, { code: record.code, message: record.message, reason: record.reason });
      const heading = marksToHtml(
        t('history.fileRefused', { file: record.file, at: markTime(record.at), code: record.code, failedAs: record.failedAs }),
        escape,
        timeTag,
      );
      return `<section class="card invalid-lines" data-events-file-refused="${escape(record.file)}" data-code="${escape(record.code)}"><h2>${heading}</h2><p>${escape(reason)}</p></section>`;
    })
    .join('\n');
}

/** One card per events file read with invalid lines: when, how many, the first lines and why. */
function invalidLinesCards(records: readonly InvalidLinesRecord[], lang: Lang): string {
  const t = translator(lang);
  return records
    .map((record) => {
      const heading = marksToHtml(
        t(record.valid === 0 ? 'history.invalidLinesNoneValid' : 'history.invalidLines', { file: record.file, at: markTime(record.at), count: record.count }),
        escape,
        timeTag,
      );
      const rows = record.lines
        .map((line) => `<li data-invalid-line="${line.line}"><code>${escape(line.code)}</code> ${escape(renderReason(lang, lineReason(line)))}</li>`)
        .join('');
      const more = record.count > record.lines.length ? '<li>…</li>' : '';
      return `<section class="card invalid-lines" data-events-file="${escape(record.file)}"><h2>${heading}</h2><ul>${rows}${more}</ul></section>`;
    })
    .join('\n');
}

export function renderHistoryPage(view: HistoryView, base: string, lang: Lang = 'en'): string {
  const t = translator(lang);
  const title = t(view.lookup.by === 'delivery' ? 'ui.history.delivery' : 'ui.history.file', { [view.lookup.by]: view.lookup.name });
  const byDelivery = new Map<string, JourneyStep[]>();
  for (const step of view.steps) byDelivery.set(step.delivery_id, [...(byDelivery.get(step.delivery_id) ?? []), step]);
  const groups = [...byDelivery]
    .map(([deliveryId, steps]) => {
      const rows = steps
        .map((s) => {
          const item = s.kind === 'collecting' ? `event_at ${s.event_at ?? '?'}` : (s.file ?? '');
          const when = timeTag(s.at, s.at.replace('T', ' ').slice(0, 23));
          return `<tr class="step ${toneOf(s)}" data-step="${escape(s.step)}"><td class="when">${when}</td><td>${escape(kindName(s.kind, t))}</td><td class="file" title="${escape(item)}">${escape(item)}</td><td><b>${escape(stepName(s.step, t))}</b></td><td class="reason">${stepHtml(s, lang)}${traceCell(s, view.traceUrl ?? null, t)}</td></tr>`;
        })
        .join('');
      const heading = escape(t('ui.history.delivery', { delivery: deliveryId }));
      const head = [`${t('ui.col.time')}${UTC_OFFSET}`, t('ui.col.kind'), t('ui.history.item'), t('ui.history.step'), t('ui.history.what')]
        .map((h) => `<th>${h}</th>`)
        .join('');
      return `<section class="card journey" data-delivery="${escape(deliveryId)}"><h2><a href="${base}/history/${encodeURIComponent(deliveryId)}">${heading}</a> <small>${t('ui.history.steps', { count: steps.length })}</small></h2>
<table class="timeline"><colgroup><col class="c-at"><col class="c-kind"><col class="c-item"><col class="c-step"><col></colgroup><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></section>`;
    })
    .join('\n');
  const empty = `<section class="card"><p class="empty">${escape(t('ui.history.empty', { query: view.query, days: view.retentionDays }))}</p></section>`;
  const json = view.jsonHref === null ? '' : ` · <a href="${view.jsonHref}" data-link="journey-json">JSON</a>`;
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>carrier-sync · ${escape(title)}</title>
<link rel="stylesheet" href="${base}/assets/overview.css">
</head>
<body data-base="${base}" data-replay-failed="${escape(t('ui.history.replayFailed', { error: '{error}' }))}">
<header class="top">
  <span class="brand">carrier-sync</span>
  <nav><a href="${base}">${t('ui.nav.overview')}</a><a class="current" href="${base}/history?q=${encodeURIComponent(view.query)}">${t('ui.nav.history')}</a><a href="${base}/queues">${t('ui.nav.queues')}</a></nav>
  ${searchForm(base, view.query, t)}
</header>
<main>
  <h1 class="page-title">${escape(title)} <small>${t('ui.history.title', { days: view.retentionDays })}${json}</small></h1>
  ${currentCard(view.current ?? [], lang)}
  ${invalidLinesCards(view.invalidLines ?? [], lang)}
  ${fileRefusalCards(view.fileRefusals ?? [], lang)}
  ${view.steps.length === 0 && (view.invalidLines ?? []).length === 0 && (view.fileRefusals ?? []).length === 0 ? empty : groups}
</main>
<script src="${base}/assets/local-time.js"></script>
<script src="${base}/assets/history.js"></script>
</body>
</html>
`;
}

/**
 * The history page's script: a dead letter's replay button posts to the overview's replay route
 * (same protection, same header that only the page sends), then reloads the page to show the item
 * waiting again; a refusal is shown in an alert with the server's message.
 */
export const HISTORY_JS = `(function () {
  'use strict';
  var base = document.body.dataset.base;
  document.addEventListener('click', async function (event) {
    var button = event.target.closest('button[data-replay-id]');
    if (!button) return;
    button.disabled = true;
    try {
      var response = await fetch(base + '/dead-letters/replay', {
        method: 'POST',
        headers: { 'content-type': 'application/json', '${REPLAY_HEADER}': 'replay' },
        body: JSON.stringify({ id: button.dataset.replayId })
      });
      var out = await response.json().catch(function () { return {}; });
      if (response.ok) { window.location.reload(); return; }
      window.alert((document.body.dataset.replayFailed || '{error}').replace('{error}', out.message || response.status));
    } finally {
      button.disabled = false;
    }
  });
})();
`;
