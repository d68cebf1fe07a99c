/**
 * The `/ui` overview as server-rendered HTML. The page is cut into parts (`data-part`): the first
 * load renders them all, and the page's script fetches fresh parts every few seconds and swaps
 * them in, so what a person sees is always what the server rendered. Every string that comes
 * from outside (file names, reasons, API messages) goes through `escape`.
 */
import type { BacklogRow, CodeCount, DeadLetterRow, Overview, OverviewDetails } from './overview-data.js';
import type { Refusal } from '../store/activity.js';

export const REFRESH_MS = 5000;

export type PartName = 'state' | 'figures' | 'backlog' | 'refusals' | 'dead-letters' | 'notifications' | 'updated';

export function renderParts(overview: Overview, base: string): Record<PartName, string> {
  const d = overview.details;
  return {
    state: renderState(overview),
    figures: d === null ? unavailable() : renderFigures(overview, d),
    backlog: d === null ? unavailable() : renderBacklog(d.backlog, overview.maxQueued, base),
    refusals: d === null ? unavailable() : renderRefusals(d.refusals, base),
    'dead-letters': d === null ? unavailable() : renderDeadLetters(d.deadLetters, base),
    notifications: d === null ? unavailable() : renderNotifications(d.notifications),
    updated: `updated <time datetime="${escape(overview.at)}">${escape(clockTime(overview.at))}</time>`,
  };
}

export function renderPage(overview: Overview, base: string): string {
  const parts = renderParts(overview, base);
  const part = (name: PartName, tag = 'div', cls = ''): string => `<${tag} data-part="${name}"${cls === '' ? '' : ` class="${cls}"`}>${parts[name]}</${tag}>`;
  // The first data travels in the page (JSON in a non-executed script tag, `<` escaped) so the chart draws without a second request.
  const data = JSON.stringify(overview).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>carrier-sync · overview</title>
<link rel="stylesheet" href="${base}/assets/uPlot.min.css">
<link rel="stylesheet" href="${base}/assets/overview.css">
</head>
<body data-base="${base}" data-refresh-ms="${REFRESH_MS}">
<header class="top">
  <span class="brand">carrier-sync</span>
  <nav><a class="current" href="${base}">Overview</a><a href="${base}/queues" data-link="queues">Queues (bull-board)</a><a href="${base}/overview.json">JSON</a></nav>
  ${searchForm(base)}
  <span class="updated">${part('updated', 'span')}<span class="stale" id="stale" hidden></span></span>
</header>
<main>
  ${part('state', 'section', 'state-bar')}
  ${part('figures', 'section', 'figures')}
  <div class="row middle-row">
    <section class="card chart-card">
      <h2>API requests per minute, last hour <small>limit ${overview.ratePerMinute}/min (dashed); 429s and dead letters on the right axis</small></h2>
      <div id="chart" role="img" aria-label="requests per minute against the limit"></div>
    </section>
    ${part('backlog', 'section', 'card')}
  </div>
  <div class="row bottom-row">
    ${part('refusals', 'section', 'card list-card')}
    ${part('dead-letters', 'section', 'card list-card')}
  </div>
  ${part('notifications', 'section', 'card')}
</main>
<footer class="foot">carrier-sync <b data-figure="version">${escape(overview.version)}</b> on Node.js ${escape(overview.node)} (this process)</footer>
<div id="toast" role="status" hidden></div>
<script type="application/json" id="overview-data">${data}</script>
<script src="${base}/assets/uPlot.iife.min.js"></script>
<script src="${base}/assets/overview.js"></script>
</body>
</html>
`;
}

function renderState(o: Overview): string {
  const since = o.state.since === null ? '' : ` <span class="since">since ${escape(clockTime(o.state.since))} (${escape(ago(o.state.since, o.at))})</span>`;
  const detail = o.state.detail === null ? '' : `<div class="detail">${escape(o.state.detail)}</div>`;
  const holder = o.details?.spoolHolder ?? null;
  const spool =
    o.spoolId === null
      ? 'no spool configured'
      : holder === null
        ? `spool <b>${escape(o.spoolId)}</b> held by <b data-figure="spool-holder">n/a</b>`
        : `spool <b>${escape(o.spoolId)}</b> held by <b data-figure="spool-holder">${escape(holder.host)}${holder.pid === null ? '' : ` pid ${holder.pid}`}</b>${holder.since === null ? '' : ` since ${escape(clockTime(holder.since))}`}${holder.version === null ? '' : `, version <span data-figure="spool-holder-version">${escape(holder.version)}</span>`}`;
  return `<div class="state state-${o.state.code}" data-state="${o.state.code}"><span class="dot"></span><div><div class="headline" data-figure="state">${escape(o.state.headline)}${since}</div>${detail}</div></div><div class="spool">${spool}</div>`;
}

function renderFigures(o: Overview, d: OverviewDetails): string {
  const total = (values: number[]): number => values.reduce((sum, n) => sum + n, 0);
  const lastMinute = d.activity.requests.at(-1) ?? 0;
  const load = o.ratePerMinute === 0 ? 0 : lastMinute / o.ratePerMinute;
  const backlog = d.backlog.reduce((sum, row) => sum + row.queued + row.active + row.delayed, 0);
  const tile = (name: string, label: string, value: string, note: string, href: string | null, tone = ''): string => {
    const body = `<span class="label">${label}</span><span class="value" data-figure="${name}">${value}</span><span class="note">${note}</span>`;
    return href === null ? `<div class="tile ${tone}">${body}</div>` : `<a class="tile ${tone}" href="${href}">${body}</a>`;
  };
  return [
    tile(
      'requests-minute',
      'Requests this minute',
      String(lastMinute),
      `of ${o.ratePerMinute} allowed (${Math.round(load * 100)}%)`,
      '#chart',
      load >= 0.95 ? 'warn' : '',
    ),
    tile('sent-hour', 'Sent, last hour', String(total(d.activity.sent)), `${total(d.activity.requests)} requests`, '#chart'),
    tile(
      'rate-limited-hour',
      '429s, last hour',
      String(total(d.activity.rateLimited)),
      'answers “too many requests”',
      '#chart',
      total(d.activity.rateLimited) > 0 ? 'warn' : '',
    ),
    tile('backlog', 'Backlog', String(backlog), 'queued, sending, delayed', '#backlog'),
    tile('refused-total', 'Refused locally', String(d.refusals.total), 'never sent: files in failed/', '#refusals', d.refusals.total > 0 ? 'bad' : ''),
    tile(
      'dead-letters-total',
      'Dead letters',
      String(d.deadLetters.total),
      'refused by the API: replayable',
      '#dead-letters',
      d.deadLetters.total > 0 ? 'bad' : '',
    ),
  ].join('');
}

function renderBacklog(rows: BacklogRow[], maxQueued: number, base: string): string {
  const link = (row: BacklogRow, status: string, value: number, figure: string): string =>
    `<a href="${base}/queues/queue/${encodeURIComponent(row.queue)}?status=${status}" data-figure="${figure}-${row.kind}">${value}</a>`;
  const body = rows
    .map((row) => {
      const near = row.queued + row.delayed + row.active >= maxQueued * 0.9;
      return `<tr${near ? ' class="warn"' : ''}><th scope="row">${row.kind}</th><td class="num" data-figure="inbox-${row.kind}" title="files in ${row.spoolKind}/ not yet taken">${row.inbox ?? 'n/a'}</td><td class="num">${link(row, 'waiting', row.queued, 'queued')}</td><td class="num">${link(row, 'active', row.active, 'active')}</td><td class="num">${link(row, 'delayed', row.delayed, 'delayed')}</td><td class="num">${link(row, 'failed', row.deadLetters, 'failed')}</td></tr>`;
    })
    .join('');
  return `<h2 id="backlog">Backlog per kind <small>cap ${maxQueued} per kind</small></h2>
<table class="backlog"><thead><tr><th>kind</th><th class="num" title="files waiting in the spool inbox, not yet taken">inbox</th><th class="num" title="jobs waiting for a slot of the API's limit">queued</th><th class="num" title="being sent now">sending</th><th class="num" title="future collecting events and retries waiting their time">delayed</th><th class="num" title="the queue's Failed tab">dead</th></tr></thead><tbody>${body}</tbody></table>
<p class="hint">Numbers link to the queue's tab in bull-board. Delayed: future events and retries.</p>`;
}

function renderRefusals(r: { total: number; byCode: CodeCount[]; latest: Refusal[] }, base: string): string {
  const chips =
    r.byCode.length === 0
      ? '<span class="empty">none</span>'
      : r.byCode.map((c) => `<span class="chip" data-refused-code="${escape(c.code)}">${escape(c.code)} <b data-count>${c.count}</b></span>`).join('');
  const rows = r.latest
    .map(
      (x) =>
        `<tr><td class="when" title="${escape(x.at)}">${escape(shortTime(x.at))}</td><td class="file" title="failed/${escape(x.kind)}/${escape(x.file)}"><a href="${base}/history?q=${encodeURIComponent(x.file)}" data-link="journey">${escape(x.file)}</a></td><td><code>${escape(x.code)}</code></td><td class="reason"><div class="clamp" title="${escape(x.reason)}">${escape(x.reason)}</div></td></tr>`,
    )
    .join('');
  return `<h2 id="refusals">Refused locally <small>never became a job; each file sits in failed/&lt;kind&gt;/ with its .error.json</small></h2>
<div class="chips">${chips}</div>
<div class="scroll"><table class="list"><colgroup><col class="c-when"><col class="c-file"><col class="c-code"><col></colgroup><thead><tr><th>UTC</th><th>file</th><th>code</th><th>reason</th></tr></thead><tbody>${rows === '' ? '<tr><td colspan="4" class="empty">no file refused</td></tr>' : rows}</tbody></table></div>`;
}

function renderDeadLetters(dl: { total: number; byCode: CodeCount[]; codesOf: number; latest: DeadLetterRow[] }, base: string): string {
  const chips =
    dl.byCode.length === 0
      ? '<span class="empty">none</span>'
      : dl.byCode
          .map(
            (c) =>
              `<span class="chip" data-dead-code="${escape(c.code)}">${escape(c.code)} <b data-count>${c.count}</b><button type="button" class="replay" data-replay-code="${escape(c.code)}" title="replay every dead letter with this code">replay all</button></span>`,
          )
          .join('');
  const rows = dl.latest
    .map(
      (x) =>
        `<tr data-dead-letter="${escape(x.id)}"><td class="when" title="${escape(x.lastFailureAt ?? '')}">${escape(shortTime(x.lastFailureAt))}</td><td class="file"><a href="${base}/queues/queue/${encodeURIComponent(x.queue)}/${encodeURIComponent(x.id)}" title="${escape(x.id)}">${escape(x.fileName ?? x.deliveryId)}</a></td><td><code>${escape(x.code)}</code>${x.status === null ? '' : ` <small>HTTP ${x.status}</small>`}</td><td class="reason"><div class="clamp" title="${escape(x.message)}">${escape(x.message)}</div></td><td><button type="button" class="replay" data-replay-id="${escape(x.id)}">replay</button> <a class="journey" href="${base}/history/${encodeURIComponent(x.deliveryId)}" data-link="journey" title="this delivery's journey">journey</a></td></tr>`,
    )
    .join('');
  return `<h2 id="dead-letters">Dead letters <small>refused by the API or out of retries; the Failed tab of each queue</small></h2>
<div class="chips">${chips}${dl.codesOf < dl.total ? `<small class="empty">codes of the latest ${dl.codesOf} of ${dl.total}</small>` : ''}</div>
<div class="scroll"><table class="list"><colgroup><col class="c-when"><col class="c-file"><col class="c-code"><col><col class="c-act"></colgroup><thead><tr><th>UTC</th><th>file / delivery</th><th>code</th><th>message</th><th></th></tr></thead><tbody>${rows === '' ? '<tr><td colspan="5" class="empty">no dead letter</td></tr>' : rows}</tbody></table></div>`;
}

function renderNotifications(channels: OverviewDetails['notifications']): string {
  const rows = channels
    .map((c) => {
      const sent =
        c.lastSent === null
          ? '<span class="empty">none yet</span>'
          : `<span title="${escape(c.lastSent.at)}">${escape(shortTime(c.lastSent.at))}</span> <code>${escape(c.lastSent.condition)}</code> ${escape(c.lastSent.state)}: ${escape(c.lastSent.summary)}`;
      const failure =
        c.lastFailure === null ? '' : `<span title="${escape(c.lastFailure.at)}">${escape(shortTime(c.lastFailure.at))}</span> ${escape(c.lastFailure.reason)}`;
      return `<tr data-channel="${escape(c.channel)}"><td><b>${escape(c.channel)}</b></td><td><code>${escape(c.target)}</code></td><td class="reason"><div class="clamp">${sent}</div></td><td class="reason"><div class="clamp">${failure}</div></td></tr>`;
    })
    .join('');
  return `<h2 id="notifications">Notifications <small>channels the scheduler sends through (carrier-sync notify test tries them)</small></h2>
<div class="scroll"><table class="list"><thead><tr><th>channel</th><th>to</th><th>last message sent (UTC)</th><th>last failed attempt</th></tr></thead><tbody>${rows === '' ? '<tr><td colspan="4" class="empty">no channel configured (see README, "Notifications")</td></tr>' : rows}</tbody></table></div>`;
}

function unavailable(): string {
  return '<p class="empty">not available while Redis is not answering</p>';
}

/** `HH:MM:SS UTC`; the date too when it is not today. */
function clockTime(iso: string | null): string {
  if (iso === null) return '-';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const text = at.toISOString();
  const isToday = text.slice(0, 10) === new Date().toISOString().slice(0, 10);
  return `${isToday ? '' : `${text.slice(0, 10)} `}${text.slice(11, 19)} UTC`;
}

/** `HH:MM:SS` (UTC) for a table cell; the full time is in the cell's title. */
function shortTime(iso: string | null): string {
  if (iso === null) return '-';
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : at.toISOString().slice(11, 19);
}

function ago(iso: string, nowIso: string): string {
  const seconds = Math.max(0, Math.round((Date.parse(nowIso) - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min ago`;
  return `${(seconds / 3600).toFixed(1)} h ago`;
}

/** The search box the overview and the timeline pages share. */
export function searchForm(base: string, value = ''): string {
  return `<form class="search" action="${base}/history" method="get" role="search"><input type="search" name="q" value="${escape(value)}" placeholder="delivery id or file name" aria-label="delivery id or file name" required><button type="submit">Find</button></form>`;
}

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
