/**
 * The journey timeline page (`/ui/history/<delivery id>`, and the results of a file-name search):
 * server-rendered HTML in the overview's style, one row a step, grouped by delivery. Every string
 * from outside goes through `escape`. Words in the page's language; times in the browser's time
 * zone (the script of the overview turns each `<time>` into local time; UTC on hover).
 */
import { isMessageKey, translator, type Lang, type Translate } from '../i18n/translate.js';
import type { JourneyStep } from '../journey/journey-read.js';
import { describeStep, traceLinkOf } from '../journey/step-text.js';
import { escape, kindName, searchForm, timeTag } from './overview-page.js';

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
          return `<tr class="step ${toneOf(s)}" data-step="${escape(s.step)}"><td class="when">${when}</td><td>${escape(kindName(s.kind, t))}</td><td class="file" title="${escape(item)}">${escape(item)}</td><td><b>${escape(stepName(s.step, t))}</b></td><td class="reason">${escape(describeStep(s, lang))}${traceCell(s, view.traceUrl ?? null, t)}</td></tr>`;
        })
        .join('');
      const heading = escape(t('ui.history.delivery', { delivery: deliveryId }));
      const head = [t('ui.col.time'), t('ui.col.kind'), t('ui.history.item'), t('ui.history.step'), t('ui.history.what')].map((h) => `<th>${h}</th>`).join('');
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
<body data-base="${base}">
<header class="top">
  <span class="brand">carrier-sync</span>
  <nav><a href="${base}">${t('ui.nav.overview')}</a><a class="current" href="${base}/history?q=${encodeURIComponent(view.query)}">${t('ui.nav.history')}</a><a href="${base}/queues">${t('ui.nav.queues')}</a></nav>
  ${searchForm(base, view.query, t)}
</header>
<main>
  <h1 class="page-title">${escape(title)} <small>${t('ui.history.title', { days: view.retentionDays })}${json}</small></h1>
  ${view.steps.length === 0 ? empty : groups}
</main>
<script src="${base}/assets/local-time.js"></script>
</body>
</html>
`;
}
