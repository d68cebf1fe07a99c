/**
 * The `/ui` overview as server-rendered HTML. The page is cut into parts (`data-part`): the first
 * load renders them all, and the page's script fetches fresh parts every few seconds and swaps
 * them in, so what a person sees is always what the server rendered. Every string that comes
 * from outside (file names, reasons, API messages) goes through `escape`.
 *
 * Words are in the page's language (the browser's Accept-Language first, then CARRIER_SYNC_LANG);
 * times are written in UTC inside `<time datetime>` and the page's script shows them in the
 * browser's time zone, with the UTC time on hover. Reasons are rendered from their kept key.
 */
import { describeAuthFailure } from '../i18n/auth-failure.js';
import { describeFailure } from '../i18n/reason.js';
import { isRefusedAfterSending } from '../errors.js';
import { kindName } from '../i18n/kind-name.js';
import { marksToHtml, markTime } from './text-marks.js';
import { translator, type Lang, type Translate } from '../i18n/translate.js';
import type { BacklogRow, CodeCount, DeadLetterRow, Overview, OverviewDetails } from './overview-data.js';
import type { Refusal } from '../store/activity.js';
import { describeTopology, type Topology } from '../store/topology.js';

export const REFRESH_MS = 5000;

export type PartName = 'state' | 'figures' | 'backlog' | 'refusals' | 'dead-letters' | 'notifications' | 'updated';

export function renderParts(overview: Overview, base: string, lang: Lang = 'en'): Record<PartName, string> {
  const d = overview.details;
  const t = translator(lang);
  return {
    state: renderState(overview, t),
    figures: d === null ? unavailable(t) : renderFigures(overview, d, t),
    backlog: d === null ? unavailable(t) : renderBacklog(d.backlog, overview.maxQueued, base, t),
    refusals: d === null ? unavailable(t) : renderRefusals(d.refusals, base, lang),
    'dead-letters': d === null ? unavailable(t) : renderDeadLetters(d.deadLetters, base, lang),
    notifications: d === null ? unavailable(t) : renderNotifications(d.notifications, t),
    // The page's times are the browser's local time: its offset is said once, here.
    updated: `${t('ui.updated', { time: timeTag(overview.at, clockTime(overview.at)) })}${UTC_OFFSET}`,
  };
}

/** The words the page's script needs (toasts, the chart's legend, the replay question), in the page's language; `{name}` is filled in by the script. */
function scriptWords(t: Translate): Record<string, string> {
  const error = '{error}';
  return {
    requests: t('ui.chart.requests'),
    limit: t('ui.chart.limit'),
    rateLimited: t('ui.chart.rateLimited'),
    deadLetters: t('ui.chart.deadLetters'),
    refreshFailed: t('ui.script.refreshFailed', { error }),
    notAnswering: t('ui.script.notAnswering'),
    numbersFrom: t('ui.script.numbersFrom', { error, time: '{time}' }),
    earlier: t('ui.script.earlier'),
    replayCode: t('ui.script.replayCode', { code: '{code}' }),
    replayedOne: t('ui.script.replayedOne', { count: '{count}' }),
    replayedMany: t('ui.script.replayedMany', { count: '{count}' }),
    replayRefused: t('ui.script.replayRefused', { error }),
    replayFailed: t('ui.script.replayFailed', { error }),
  };
}

export function renderPage(overview: Overview, base: string, lang: Lang = 'en'): string {
  const t = translator(lang);
  const parts = renderParts(overview, base, lang);
  const part = (name: PartName, tag = 'div', cls = ''): string => `<${tag} data-part="${name}"${cls === '' ? '' : ` class="${cls}"`}>${parts[name]}</${tag}>`;
  // The first data travels in the page (JSON in a non-executed script tag, `<` escaped) so the chart draws without a second request.
  const data = JSON.stringify(overview).replace(/</g, '\\u003c');
  const words = JSON.stringify(scriptWords(t)).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>carrier-sync · ${escape(t('ui.title.overview'))}</title>
<link rel="stylesheet" href="${base}/assets/uPlot.min.css">
<link rel="stylesheet" href="${base}/assets/overview.css">
</head>
<body data-base="${base}" data-refresh-ms="${REFRESH_MS}">
<header class="top">
  <span class="brand">carrier-sync</span>
  <nav><a class="current" href="${base}">${t('ui.nav.overview')}</a><a href="${base}/queues" data-link="queues">${t('ui.nav.queues')}</a><a href="${base}/overview.json">JSON</a></nav>
  ${searchForm(base, '', t)}
  <span class="updated">${part('updated', 'span')}<span class="stale" id="stale" hidden></span></span>
</header>
<main>
  ${part('state', 'section', 'state-bar')}
  ${part('figures', 'section', 'figures')}
  <div class="row middle-row">
    <section class="card chart-card">
      <h2>${t('ui.chart.title')} <small>${t('ui.chart.note', { limit: overview.ratePerMinute })}</small></h2>
      <div id="chart" role="img" aria-label="${escape(t('ui.chart.aria'))}"></div>
    </section>
    ${part('backlog', 'section', 'card')}
  </div>
  <div class="row bottom-row">
    ${part('refusals', 'section', 'card list-card')}
    ${part('dead-letters', 'section', 'card list-card')}
  </div>
  ${part('notifications', 'section', 'card')}
</main>
<footer class="foot">${t('ui.footer', { version: `<b data-figure="version">${escape(overview.version)}</b>`, node: escape(overview.node) })}</footer>
<div id="toast" role="status" hidden></div>
<script type="application/json" id="overview-data">${data}</script>
<script type="application/json" id="ui-words">${words}</script>
<script src="${base}/assets/local-time.js"></script>
<script src="${base}/assets/uPlot.iife.min.js"></script>
<script src="${base}/assets/overview.js"></script>
</body>
</html>
`;
}

function renderState(o: Overview, t: Translate): string {
  const since =
    o.state.since === null
      ? ''
      : ` <span class="since">${t('ui.state.since', { time: timeTag(o.state.since, clockTime(o.state.since)), ago: escape(ago(o.state.since, o.at, t)) })}</span>`;
  const detail = o.state.detail === null ? '' : `<div class="detail">${escape(detailOf(o, t))}</div>`;
  // The 401 pause says what to do, on a line of its own under what the API answered.
  const action = o.state.code === 'paused' ? `<div class="detail action">${escape(t('ui.state.pausedAction'))}</div>` : '';
  const holder = o.details?.spoolHolder ?? null;
  const spool =
    o.spoolId === null
      ? t('ui.spool.none')
      : holder === null
        ? t('ui.spool.heldBy', { spool: `<b>${escape(o.spoolId)}</b>`, holder: '<b data-figure="spool-holder">n/a</b>' })
        : spoolHolder(o.spoolId, holder, t);
  const topology = o.details?.topology ?? null;
  // Under the spool line, in the same column: beside it, it took the headline's width.
  const redis = topology === null ? '' : `<br>Redis <b data-figure="redis-topology">${topologyLine(topology, t)}</b>`;
  // Dead letters wait for a person whatever else happens: the dot is not green beside them.
  const attention = (o.state.code === 'working' || o.state.code === 'idle') && (o.state.counts?.deadLetters ?? 0) > 0 ? ' state-attention' : '';
  return `<div class="state state-${o.state.code}${attention}" data-state="${o.state.code}"><span class="dot"></span><div><div class="headline" data-figure="state">${escape(headlineOf(o, t))}${since}</div>${detail}${action}</div></div><div class="spool">${spool}${redis}</div>`;
}

function spoolHolder(spoolId: string, holder: NonNullable<OverviewDetails['spoolHolder']>, t: Translate): string {
  const who = `<b data-figure="spool-holder">${escape(holder.host)}${holder.pid === null ? '' : ` pid ${holder.pid}`}</b>`;
  const held = t('ui.spool.heldBy', { spool: `<b>${escape(spoolId)}</b>`, holder: who });
  const since = holder.since === null ? '' : ` ${t('ui.spool.since', { time: timeTag(holder.since, clockTime(holder.since)) })}`;
  const version =
    holder.version === null ? '' : `, ${t('ui.spool.version', { version: `<span data-figure="spool-holder-version">${escape(holder.version)}</span>` })}`;
  return `${held}${since}${version}`;
}

/** Redis' topology in the page's language (`status` prints store/topology.ts's English line). */
/** The Redis line: escaped text, with its failover time as a `<time>` the page shows in local time. */
export function topologyLine(topology: Topology, t: Translate): string {
  return marksToHtml(describeTopology(topology, t, markTime), escape, timeTag);
}

/** The state's headline in the page's language, from its code (the JSON keeps the English one). */
function headlineOf(o: Overview, t: Translate): string {
  const counts = o.state.counts ?? { waiting: 0, pending: 0, inbox: 0, requests: 0, deadLetters: 0 };
  switch (o.state.code) {
    case 'working':
      return t('ui.state.workingCounts', { ...counts });
    case 'idle':
      return t('ui.state.idle');
    case 'attention':
      return t('ui.state.attention', { ...counts });
    case 'paused':
      return t('ui.state.paused');
    case 'disk-full':
      return t('ui.state.diskFull');
    case 'moves-refused':
      return t('ui.state.movesRefused');
    case 'claims-refused':
      return t('ui.state.claimsRefused');
    case 'redis-full':
      return t('ui.state.redisFull');
    case 'redis-down':
      return t('ui.state.redisDown');
    case 'draining':
      return t('ui.state.draining');
    default:
      return o.state.headline;
  }
}

function detailOf(o: Overview, t: Translate): string {
  const refusal = o.state.refusal;
  if (o.state.code === 'paused' && o.state.authFailure !== undefined) return describeAuthFailure(t, o.state.authFailure);
  if (o.state.code === 'redis-full' && refusal !== undefined) return t('ui.state.redisFullDetail', { ...refusal, since: o.state.since ?? '' });
  const moves = o.state.moves;
  if (o.state.code === 'moves-refused' && moves !== undefined)
    return t(moves.code === 'EROFS' ? 'ui.state.movesReadOnlyDetail' : 'ui.state.movesRefusedDetail', {
      code: moves.code,
      folder: moves.folder ?? '?',
      failed: moves.failedMoves,
    });
  const claims = o.state.claims;
  if (o.state.code === 'claims-refused' && claims !== undefined)
    return t(claims.code === 'EROFS' ? 'ui.state.claimsReadOnlyDetail' : 'ui.state.claimsRefusedDetail', { code: claims.code, folder: claims.folder ?? '?' });
  if (o.state.code !== 'disk-full') return o.state.detail ?? '';
  return t(o.state.since === null ? 'ui.state.diskFullDetail' : 'ui.state.diskFullDetailSince', { since: o.state.since ?? '' });
}

function renderFigures(o: Overview, d: OverviewDetails, t: Translate): string {
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
      t('ui.tile.requestsMinute'),
      String(lastMinute),
      t('ui.tile.requestsMinuteNote', { limit: o.ratePerMinute, percent: Math.round(load * 100) }),
      '#chart',
      load >= 0.95 ? 'warn' : '',
    ),
    tile('sent-hour', t('ui.tile.sentHour'), String(total(d.activity.sent)), t('ui.tile.sentHourNote', { count: total(d.activity.requests) }), '#chart'),
    tile(
      'rate-limited-hour',
      t('ui.tile.rateLimitedHour'),
      String(total(d.activity.rateLimited)),
      t('ui.tile.rateLimitedHourNote'),
      '#chart',
      total(d.activity.rateLimited) > 0 ? 'warn' : '',
    ),
    tile('backlog', t('ui.tile.backlog'), String(backlog), t('ui.tile.backlogNote'), '#backlog'),
    tile(
      'refused-total',
      t('ui.tile.refused'),
      String(d.refusals.total),
      // The list under it also shows events files archived with lines refused: the note counts them, so the tile agrees with the rows.
      d.refusals.lineFiles === 0 ? t('ui.tile.refusedNote') : t('ui.tile.refusedNoteLines', { files: d.refusals.lineFiles }),
      '#refusals',
      d.refusals.total > 0 ? 'bad' : '',
    ),
    tile(
      'dead-letters-total',
      t('ui.tile.deadLetters'),
      String(d.deadLetters.total),
      t('ui.tile.deadLettersNote'),
      '#dead-letters',
      d.deadLetters.total > 0 ? 'bad' : '',
    ),
  ].join('');
}

function renderBacklog(rows: BacklogRow[], maxQueued: number, base: string, t: Translate): string {
  const link = (row: BacklogRow, status: string, value: number, figure: string): string =>
    `<a href="${base}/queues/queue/${encodeURIComponent(row.queue)}?status=${status}" data-figure="${figure}-${row.kind}">${value}</a>`;
  const body = rows
    .map((row) => {
      const near = row.queued + row.delayed + row.active >= maxQueued * 0.9;
      return `<tr${near ? ' class="warn"' : ''}><th scope="row">${escape(kindName(row.kind, t))}</th><td class="num" data-figure="inbox-${row.kind}" title="${escape(t('ui.backlog.inboxOf', { folder: `${row.spoolKind}/` }))}">${row.inbox ?? 'n/a'}</td><td class="num">${link(row, 'waiting', row.queued, 'queued')}</td><td class="num">${link(row, 'active', row.active, 'active')}</td><td class="num">${link(row, 'delayed', row.delayed, 'delayed')}</td><td class="num">${link(row, 'failed', row.deadLetters, 'failed')}</td></tr>`;
    })
    .join('');
  const th = (key: Parameters<Translate>[0], titleKey: Parameters<Translate>[0]): string => `<th class="num" title="${escape(t(titleKey))}">${t(key)}</th>`;
  return `<h2 id="backlog">${t('ui.backlog.title')} <small>${t('ui.backlog.cap', { max: maxQueued })}</small></h2>
<table class="backlog"><thead><tr><th>${t('ui.col.kind')}</th>${th('ui.backlog.inbox', 'ui.backlog.inboxHint')}${th('ui.backlog.queued', 'ui.backlog.queuedHint')}${th('ui.backlog.sending', 'ui.backlog.sendingHint')}${th('ui.backlog.delayed', 'ui.backlog.delayedHint')}${th('ui.backlog.dead', 'ui.backlog.deadHint')}</tr></thead><tbody>${body}</tbody></table>
<p class="hint">${t('ui.backlog.hint')}</p>`;
}

function renderRefusals(r: { total: number; lineFiles: number; byCode: CodeCount[]; latest: Refusal[] }, base: string, lang: Lang): string {
  const t = translator(lang);
  const chips =
    r.byCode.length === 0
      ? `<span class="empty">${t('ui.none')}</span>`
      : r.byCode.map((c) => `<span class="chip" data-refused-code="${escape(c.code)}">${escape(c.code)} <b data-count>${c.count}</b></span>`).join('');
  const rows = r.latest
    .map((x) => {
      const reason = describeFailure(lang, { code: x.code, message: x.reason, reason: x.reasonSource });
      // A file archived with some lines refused is not a refused file, and a file refused after its records were sent was not "never sent": their rows say so.
      const isLines = typeof x.lines === 'number';
      const what = isLines
        ? `<span class="tag" data-refusal="lines">${escape(t('ui.refusals.linesTag', { lines: x.lines ?? 0 }))}</span>`
        : isRefusedAfterSending(x.code)
          ? `<span class="tag" data-refusal="sent">${escape(t('ui.refusals.sentTag'))}</span>`
          : '';
      const where = isLines ? `failed/${escape(x.kind)}/${escape(x.file)}.error.json` : `failed/${escape(x.kind)}/${escape(x.file)}`;
      return `<tr${isLines ? ' class="lines"' : ''}><td class="when">${timeTag(x.at, shortTime(x.at))}</td><td class="file" title="${where}"><a href="${base}/history?q=${encodeURIComponent(x.droppedAs ?? x.file)}" data-link="journey">${escape(x.file)}</a></td><td><code>${escape(x.code)}</code></td><td class="reason">${what}${escape(reason)}</td></tr>`;
    })
    .join('');
  const counts =
    r.lineFiles === 0 ? '' : ` <small data-figure="refusal-kinds">${escape(t('ui.refusals.kinds', { files: r.total, lineFiles: r.lineFiles }))}</small>`;
  return `<h2 id="refusals">${t('ui.refusals.title')}${counts} <small>${escape(t('ui.refusals.note'))}</small></h2>
<div class="chips">${chips}</div>
<div class="scroll"><table class="list"><colgroup><col class="c-when"><col class="c-file"><col class="c-code"><col></colgroup><thead><tr><th>${t('ui.col.time')}</th><th>${t('ui.col.file')}</th><th>${t('ui.col.code')}</th><th>${t('ui.col.reason')}</th></tr></thead><tbody>${rows === '' ? `<tr><td colspan="4" class="empty">${t('ui.refusals.empty')}</td></tr>` : rows}</tbody></table></div>`;
}

function renderDeadLetters(dl: { total: number; byCode: CodeCount[]; codesOf: number; latest: DeadLetterRow[] }, base: string, lang: Lang): string {
  const t = translator(lang);
  const chips =
    dl.byCode.length === 0
      ? `<span class="empty">${t('ui.none')}</span>`
      : dl.byCode
          .map(
            (c) =>
              `<span class="chip" data-dead-code="${escape(c.code)}">${escape(c.code)} <b data-count>${c.count}</b><button type="button" class="replay" data-replay-code="${escape(c.code)}" title="${escape(t('ui.dead.replayAllHint'))}">${t('ui.dead.replayAll')}</button></span>`,
          )
          .join('');
  // The reason on a row of its own, across the table: whole and wrapped, never cut to the width of a column (issue 45).
  const rows = dl.latest
    .map(
      (x) =>
        `<tr data-dead-letter="${escape(x.id)}"><td class="when">${x.lastFailureAt === null ? '-' : timeTag(x.lastFailureAt, shortTime(x.lastFailureAt))}</td><td class="file"><a href="${base}/queues/queue/${encodeURIComponent(x.queue)}/${encodeURIComponent(x.id)}" title="${escape(x.id)}">${escape(x.fileName ?? x.deliveryId)}</a></td><td class="code"><code>${escape(x.code)}</code>${x.status === null ? '' : ` <small>HTTP ${x.status}</small>`}</td><td class="act"><button type="button" class="replay" data-replay-id="${escape(x.id)}">${t('ui.dead.replay')}</button> <a class="journey" href="${base}/history/${encodeURIComponent(x.deliveryId)}" data-link="journey" title="${escape(t('ui.dead.journeyHint'))}">${t('ui.dead.journey')}</a></td></tr><tr class="reason-row" data-dead-reason="${escape(x.id)}"><td></td><td colspan="3" class="reason">${escape(deadReason(x, lang))}</td></tr>`,
    )
    .join('');
  return `<h2 id="dead-letters">${t('ui.dead.title')} <small>${t('ui.dead.note')}</small></h2>
<div class="chips">${chips}${dl.codesOf < dl.total ? `<small class="empty">${t('ui.dead.codesOf', { shown: dl.codesOf, total: dl.total })}</small>` : ''}</div>
<div class="scroll"><table class="list dead-list"><colgroup><col class="c-when"><col><col class="c-dead-code"><col class="c-act"></colgroup><thead><tr><th>${t('ui.col.time')}</th><th>${t('ui.col.fileOrDelivery')}</th><th>${t('ui.col.code')}</th><th></th></tr></thead><tbody>${rows === '' ? `<tr><td colspan="4" class="empty">${t('ui.dead.empty')}</td></tr>` : rows}</tbody></table></div>`;
}

/** A dead letter's reason, as `dlq list` renders it: in English the message; otherwise our code's meaning with the API's message. */
export function deadReason(x: DeadLetterRow, lang: Lang): string {
  return describeFailure(lang, { code: x.errorCode, message: x.message });
}

function renderNotifications(channels: OverviewDetails['notifications'], t: Translate): string {
  const rows = channels
    .map((c) => {
      const sent =
        c.lastSent === null
          ? `<span class="empty">${t('ui.notify.noneYet')}</span>`
          : `${timeTag(c.lastSent.at, shortTime(c.lastSent.at))} <code>${escape(c.lastSent.condition)}</code> ${escape(stateWord(c.lastSent.state, t))}: ${escape(c.lastSent.summary)}`;
      const failure = c.lastFailure === null ? '' : `${timeTag(c.lastFailure.at, shortTime(c.lastFailure.at))} ${escape(c.lastFailure.reason)}`;
      return `<tr data-channel="${escape(c.channel)}"><td><b>${escape(c.channel)}</b></td><td><code>${escape(c.target)}</code></td><td class="reason"><div class="clamp">${sent}</div></td><td class="reason"><div class="clamp">${failure}</div></td></tr>`;
    })
    .join('');
  return `<h2 id="notifications">${t('ui.notify.title')} <small>${t('ui.notify.note')}</small></h2>
<div class="scroll"><table class="list"><thead><tr><th>${t('ui.notify.channel')}</th><th>${t('ui.notify.to')}</th><th>${t('ui.notify.lastSent')}</th><th>${t('ui.notify.lastFailed')}</th></tr></thead><tbody>${rows === '' ? `<tr><td colspan="4" class="empty">${escape(t('ui.notify.empty'))}</td></tr>` : rows}</tbody></table></div>`;
}

/** A notification's state as its e-mail title says it (FIRING, ALERTA …); an unknown one as it is. */
function stateWord(state: string, t: Translate): string {
  return state === 'firing'
    ? t('notify.state.firing')
    : state === 'resolved'
      ? t('notify.state.resolved')
      : state === 'digest'
        ? t('notify.state.digest')
        : state;
}

function unavailable(t: Translate): string {
  return `<p class="empty">${t('ui.unavailable')}</p>`;
}

/** A time as the page shows it: UTC text inside `<time datetime>`, which the page's script turns into the browser's local time (UTC on hover). */
/** Where the page's script writes the browser's UTC offset (` (UTC−03:00)`) beside a column of local times. */
export const UTC_OFFSET = '<span class="tz" data-utc-offset></span>';

export function timeTag(iso: string, utcText: string): string {
  return `<time datetime="${escape(iso)}" title="${escape(iso)}">${escape(utcText)}</time>`;
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

function ago(iso: string, nowIso: string, t: Translate): string {
  const seconds = Math.max(0, Math.round((Date.parse(nowIso) - Date.parse(iso)) / 1000));
  if (seconds < 90) return t('ui.ago.seconds', { n: seconds });
  if (seconds < 90 * 60) return t('ui.ago.minutes', { n: Math.round(seconds / 60) });
  return t('ui.ago.hours', { n: Math.round(seconds / 360) / 10 });
}

/** The search box the overview and the timeline pages share. */
export function searchForm(base: string, value: string, t: Translate): string {
  const hint = escape(t('ui.search.hint'));
  return `<form class="search" action="${base}/history" method="get" role="search"><input type="search" name="q" value="${escape(value)}" placeholder="${hint}" aria-label="${hint}" required><button type="submit">${t('ui.search.find')}</button></form>`;
}

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export { kindName };
