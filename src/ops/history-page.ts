/**
 * The journey timeline page (`/ui/history/<delivery id>`, and the results of a file-name search):
 * server-rendered HTML in the overview's style, one row a step, grouped by delivery. Every string
 * from outside goes through `escape`.
 */
import { describeStep, type JourneyStep } from '../journey/journey-read.js';
import { escape, searchForm } from './overview-page.js';

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
  title: string;
  query: string;
  steps: readonly JourneyStep[];
  retentionDays: number;
  /** The JSON beside the page (a delivery's), or null for a search. */
  jsonHref: string | null;
}

export function renderHistoryPage(view: HistoryView, base: string): string {
  const byDelivery = new Map<string, JourneyStep[]>();
  for (const step of view.steps) byDelivery.set(step.delivery_id, [...(byDelivery.get(step.delivery_id) ?? []), step]);
  const groups = [...byDelivery]
    .map(([deliveryId, steps]) => {
      const rows = steps
        .map((s) => {
          const item = s.kind === 'collecting' ? `event_at ${s.event_at ?? '?'}` : (s.file ?? '');
          return `<tr class="step ${toneOf(s)}" data-step="${escape(s.step)}"><td class="when" title="${escape(s.at)}">${escape(s.at.replace('T', ' ').slice(0, 23))}</td><td>${escape(s.kind)}</td><td class="file" title="${escape(item)}">${escape(item)}</td><td><b>${escape(s.step)}</b></td><td class="reason">${escape(describeStep(s))}</td></tr>`;
        })
        .join('');
      return `<section class="card journey" data-delivery="${escape(deliveryId)}"><h2><a href="${base}/history/${encodeURIComponent(deliveryId)}">delivery ${escape(deliveryId)}</a> <small>${steps.length} steps</small></h2>
<table class="timeline"><colgroup><col class="c-at"><col class="c-kind"><col class="c-item"><col class="c-step"><col></colgroup><thead><tr><th>UTC</th><th>kind</th><th>file / event</th><th>step</th><th>what happened</th></tr></thead><tbody>${rows}</tbody></table></section>`;
    })
    .join('\n');
  const empty = `<section class="card"><p class="empty">nothing recorded for ${escape(view.query)} in the last ${view.retentionDays} days</p></section>`;
  const json = view.jsonHref === null ? '' : ` · <a href="${view.jsonHref}" data-link="journey-json">JSON</a>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>carrier-sync · ${escape(view.title)}</title>
<link rel="stylesheet" href="${base}/assets/overview.css">
</head>
<body data-base="${base}">
<header class="top">
  <span class="brand">carrier-sync</span>
  <nav><a href="${base}">Overview</a><a class="current" href="${base}/history?q=${encodeURIComponent(view.query)}">History</a><a href="${base}/queues">Queues (bull-board)</a></nav>
  ${searchForm(base, view.query)}
</header>
<main>
  <h1 class="page-title">${escape(view.title)} <small>journey, oldest first; each step kept ${view.retentionDays} days after its UTC day${json}</small></h1>
  ${view.steps.length === 0 ? empty : groups}
</main>
</body>
</html>
`;
}
