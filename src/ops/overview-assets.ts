/**
 * The overview's stylesheet and its one script, served as they are (no front-end build). The
 * script draws the chart with uPlot (served from node_modules by `overview.ts`), swaps in fresh
 * server-rendered parts every few seconds, and sends the replay requests with the header the
 * server requires (a cross-site form cannot set it).
 */

export const REPLAY_HEADER = 'x-carrier-sync-ui';

export const OVERVIEW_CSS = `
:root { --bg:#f4f6f9; --card:#fff; --ink:#1d2433; --muted:#5d6880; --line:#e3e7ee; --blue:#2f6fdb; --green:#1f9d55; --amber:#b97f00; --red:#d64545; --violet:#7b4bd6; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; background:var(--bg); color:var(--ink); }
a { color:var(--blue); text-decoration:none; } a:hover { text-decoration:underline; }
.top { display:flex; align-items:center; gap:24px; padding:6px 20px; background:#1d2433; color:#fff; }
.brand { font-weight:700; font-size:16px; letter-spacing:.3px; }
.top nav { display:flex; gap:4px; }
.top nav a { color:#c9d3e6; padding:4px 10px; border-radius:6px; }
.top nav a.current, .top nav a:hover { background:#34405a; color:#fff; text-decoration:none; }
.updated { margin-left:auto; color:#c9d3e6; font-size:12px; }
.stale { margin-left:8px; color:#ffb4b4; }
.foot { padding:0 20px 14px; color:var(--muted); font-size:12px; }
main { padding:10px 20px 20px; display:flex; flex-direction:column; gap:10px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:10px 14px; min-width:0; }
h2 { font-size:14px; margin:0 0 6px; } h2 small { font-weight:400; color:var(--muted); margin-left:6px; }
.hint { margin:6px 0 0; font-size:12px; color:var(--muted); }
.state-bar { display:flex; align-items:center; justify-content:space-between; gap:16px; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:8px 14px; }
.state { display:flex; align-items:center; gap:12px; min-width:0; }
.state .headline { font-size:16px; font-weight:600; }
.state .since { font-weight:400; color:var(--muted); font-size:13px; }
.state .detail { color:var(--muted); font-size:13px; margin-top:1px; }
.state .detail.action { color:var(--ink); }
.dot { width:14px; height:14px; border-radius:50%; background:var(--green); box-shadow:0 0 0 4px #1f9d5522; flex:none; }
.state-paused .dot, .state-redis-down .dot, .state-disk-full .dot, .state-moves-refused .dot, .state-claims-refused .dot, .state-redis-full .dot { background:var(--red); box-shadow:0 0 0 4px #d6454522; }
.state-paused .headline, .state-redis-down .headline, .state-disk-full .headline, .state-moves-refused .headline, .state-claims-refused .headline, .state-redis-full .headline { color:var(--red); }
.state-unreachable .dot { background:#8a93a6; box-shadow:0 0 0 4px #8a93a622; }
.state-unreachable .headline { color:#5d6880; }
.state-draining .dot, .state-attention .dot { background:var(--amber); box-shadow:0 0 0 4px #b97f0022; }
.state-attention .headline { color:#8a5d00; }
.spool { color:var(--muted); font-size:13px; white-space:nowrap; }
.row { display:grid; gap:10px; }
.middle-row { grid-template-columns: minmax(0,1.45fr) minmax(0,1fr); }
.bottom-row { grid-template-columns: minmax(0,1fr) minmax(0,1fr); }
#chart { min-height:230px; }
.figures { display:grid; grid-template-columns:repeat(6,minmax(0,1fr)); gap:10px; }
.tile { display:flex; flex-direction:column; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:6px 12px; color:var(--ink); }
a.tile:hover { border-color:var(--blue); text-decoration:none; }
.tile .label { font-size:12px; color:var(--muted); }
.tile .value { font-size:24px; line-height:1.2; font-weight:700; font-variant-numeric:tabular-nums; }
.tile .note { font-size:11px; color:var(--muted); overflow-wrap:anywhere; }
.tile.warn .value { color:var(--amber); } .tile.bad .value { color:var(--red); }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
thead th { font-size:12px; color:var(--muted); font-weight:600; }
.num { text-align:right; font-variant-numeric:tabular-nums; }
table.backlog th[scope=row] { font-weight:600; }
table.backlog td.num, table.backlog td.num a { font-size:16px; font-weight:600; }
table.backlog td, table.backlog th { padding:7px 8px; }
tr.warn th, tr.warn td { background:#fff6e0; }
.chips { display:flex; flex-wrap:wrap; gap:6px; margin-bottom:6px; }
.chip { display:inline-flex; align-items:center; gap:6px; background:#eef2f8; border-radius:999px; padding:2px 4px 2px 10px; font-size:12px; min-height:24px; }
.chip b { font-variant-numeric:tabular-nums; padding-right:6px; }
.list-card .scroll { max-height:340px; overflow:auto; }
table.list { font-size:12px; table-layout:fixed; }
col.c-when { width:62px; } col.c-file { width:30%; } col.c-code { width:30%; } col.c-act { width:64px; } col.c-dead-code { width:42%; }
table.dead-list tr[data-dead-letter] td { border-bottom:none; padding-bottom:0; }
table.dead-list tr.reason-row td { padding-top:2px; }
table.list td { overflow:hidden; }
table.list td.when { color:var(--muted); font-variant-numeric:tabular-nums; }
table.list td.file { white-space:nowrap; text-overflow:ellipsis; }
table.list td.reason { color:#39445a; overflow-wrap:anywhere; }
table.list .tag { display:inline-block; margin-right:6px; padding:0 6px; border-radius:8px; background:#eef1f6; color:var(--muted); font-size:11px; }
.clamp { display:-webkit-box; -webkit-line-clamp:2; -webkit-box-orient:vertical; overflow:hidden; }
code { font:11.5px ui-monospace,SFMono-Regular,Menlo,monospace; background:#f1f3f7; padding:0 4px; border-radius:4px; overflow-wrap:anywhere; }
.empty { color:var(--muted); font-style:italic; }
form.search { display:flex; gap:4px; } form.search input { width:280px; font:inherit; font-size:13px; padding:3px 8px; border-radius:6px; border:1px solid #34405a; }
form.search button { font:inherit; font-size:13px; border:0; border-radius:6px; padding:3px 10px; background:var(--blue); color:#fff; cursor:pointer; }
.page-title { font-size:16px; margin:4px 0; } .page-title small { font-weight:400; font-size:12px; color:var(--muted); margin-left:6px; }
table.timeline { font-size:12.5px; table-layout:fixed; } col.c-at { width:178px; } col.c-kind { width:76px; } col.c-item { width:28%; } col.c-step { width:120px; }
table.timeline td.file { overflow:hidden; text-overflow:ellipsis; white-space:nowrap; } table.timeline td.when { font-variant-numeric:tabular-nums; color:var(--muted); }
tr.now.ok td:nth-child(3) { color:var(--green); } tr.now.bad td:nth-child(3) { color:var(--red); } tr.now.warn td:nth-child(3) { color:var(--amber); } tr.now.muted td:nth-child(3) { color:var(--muted); }
tr.step.ok td:nth-child(4) { color:var(--green); } tr.step.bad td:nth-child(4) { color:var(--red); } tr.step.warn td:nth-child(4) { color:var(--amber); } tr.step.muted td:nth-child(4) { color:var(--muted); }
a.journey { font-size:12px; } table.list col.c-act { width:118px; }
table.timeline td.reason { overflow-wrap:anywhere; }
td.when time { white-space:nowrap; }
button.replay { font:inherit; font-size:12px; border:1px solid var(--blue); color:var(--blue); background:#fff; border-radius:6px; padding:1px 8px; cursor:pointer; }
button.replay:hover { background:var(--blue); color:#fff; } button.replay:disabled { opacity:.5; cursor:wait; }
.chip button.replay { border-radius:999px; }
#toast { position:fixed; right:20px; bottom:20px; background:#1d2433; color:#fff; padding:8px 14px; border-radius:8px; box-shadow:0 4px 16px #0003; }
.u-legend { font-size:12px; margin-top:-4px; }
`;

export const OVERVIEW_JS = `'use strict';
(function () {
  var base = document.body.dataset.base;
  var refreshMs = Number(document.body.dataset.refreshMs) || 5000;
  // The page's words, in its language (overview-page.ts: scriptWords); {name} placeholders filled here.
  var words = JSON.parse(document.getElementById('ui-words').textContent);
  var hourMinute = new Intl.DateTimeFormat(document.documentElement.lang || 'en', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  function say(text, values) {
    return text.replace(/\\{(\\w+)\\}/g, function (all, name) { return name in values ? String(values[name]) : all; });
  }
  var chart = null;
  var limit = 0;

  function seriesOf(o) {
    var a = o.details ? o.details.activity : { at: [], requests: [], rateLimited: [], deadLettered: [], refused: [] };
    limit = o.ratePerMinute;
    return [a.at, a.requests, a.at.map(function () { return o.ratePerMinute; }), a.rateLimited, a.deadLettered];
  }

  function draw(o) {
    var data = seriesOf(o);
    var box = document.getElementById('chart');
    if (chart) { chart.setData(data); return; }
    chart = new uPlot({
      width: box.clientWidth, height: 205,
      legend: { live: false },
      cursor: { points: { show: false } },
      scales: { x: { time: true, range: function (u, min, max) { return [min - 30, max + 60]; } }, y: { range: function (u, min, max) { return [0, Math.max(limit * 1.1, max * 1.1, 1)]; } }, n: { range: function (u, min, max) { return [0, Math.max(5, Math.ceil(max * 1.2))]; } } },
      // The time axis in the page's language and the browser's time zone (uPlot's own labels are US English).
      axes: [{ values: function (u, splits) { return splits.map(function (s) { return hourMinute.format(new Date(s * 1000)); }); } }, { size: 44 }, { side: 1, scale: 'n', grid: { show: false }, size: 36 }],
      series: [
        {},
        { label: words.requests, stroke: '#2f6fdb', width: 2, fill: '#2f6fdb22', points: { show: false } },
        { label: words.limit, stroke: '#d64545', width: 1.5, dash: [6, 4], points: { show: false } },
        { label: words.rateLimited, scale: 'n', stroke: '#b97f00', fill: '#e0a800', paths: uPlot.paths.bars({ size: [0.4, 6], align: -1 }), points: { show: false } },
        { label: words.deadLetters, scale: 'n', stroke: '#7b4bd6', fill: '#7b4bd6', paths: uPlot.paths.bars({ size: [0.4, 6], align: 1 }), points: { show: false } }
      ]
    }, data, box);
    window.addEventListener('resize', function () { chart.setSize({ width: box.clientWidth, height: 205 }); });
  }

  function toast(text) {
    var t = document.getElementById('toast');
    t.textContent = text; t.hidden = false;
    clearTimeout(toast.timer); toast.timer = setTimeout(function () { t.hidden = true; }, 4000);
  }

  async function refresh() {
    var stale = document.getElementById('stale');
    try {
      var response = await fetch(base + '/overview/parts', { cache: 'no-store', headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error('HTTP ' + response.status);
      var body = await response.json();
      Object.keys(body.parts).forEach(function (name) {
        var el = document.querySelector('[data-part="' + name + '"]');
        if (el) el.innerHTML = body.parts[name];
      });
      if (window.carrierSyncLocalTimes) window.carrierSyncLocalTimes(document);
      draw(body.overview);
      stale.hidden = true;
    } catch (error) {
      // Stopping (fastify answers 503 while closing) or gone: say so where the state is, keep the last numbers.
      stale.textContent = say(words.refreshFailed, { error: error.message }); stale.hidden = false;
      var state = document.querySelector('[data-part="state"]');
      var updated = document.querySelector('[data-part="updated"] time');
      state.innerHTML = '<div class="state state-unreachable" data-state="unreachable"><span class="dot"></span><div><div class="headline" data-figure="state"></div><div class="detail"></div></div></div>';
      state.querySelector('.headline').textContent = words.notAnswering;
      state.querySelector('.detail').textContent = say(words.numbersFrom, { error: error.message, time: updated ? updated.textContent : words.earlier });
    }
  }

  document.addEventListener('click', async function (event) {
    var button = event.target.closest('button[data-replay-id], button[data-replay-code]');
    if (!button) return;
    var id = button.dataset.replayId, code = button.dataset.replayCode;
    if (code && !window.confirm(say(words.replayCode, { code: code }))) return;
    button.disabled = true;
    try {
      var response = await fetch(base + '/dead-letters/replay', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'content-type': 'application/json', '${REPLAY_HEADER}': 'replay' },
        body: JSON.stringify(id ? { id: id } : { code: code })
      });
      var out = await response.json().catch(function () { return {}; });
      toast(response.ok ? say(out.retried.length === 1 ? words.replayedOne : words.replayedMany, { count: out.retried.length }) : say(words.replayRefused, { error: out.message || response.status }));
    } catch (error) {
      toast(say(words.replayFailed, { error: error.message }));
    }
    await refresh();
  });

  draw(JSON.parse(document.getElementById('overview-data').textContent));
  setInterval(refresh, refreshMs);
})();
`;
