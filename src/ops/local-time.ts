/**
 * The pages' script that shows times in the browser's time zone. The server writes every time in
 * UTC inside `<time datetime="<ISO>">` (so the page reads right without script, and tests and
 * `curl` see UTC); this script rewrites each one's text in local time, in the page's language
 * (`<html lang>`), and keeps the UTC time on hover (title). The overview calls it again after it
 * swaps in fresh parts. A time keeps what the server wrote: a date when it wrote one, milliseconds
 * in the history, the time alone in a table cell (the cell is narrow; the hover has the rest).
 */
export const LOCAL_TIME_JS = `(function () {
  'use strict';
  var lang = document.documentElement.lang || 'en';
  var dateFormat = new Intl.DateTimeFormat(lang, { year: 'numeric', month: '2-digit', day: '2-digit' });
  var timeFormat = new Intl.DateTimeFormat(lang, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  var msFormat = new Intl.DateTimeFormat(lang, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', fractionalSecondDigits: 3 });
  /** The local date (when asked) and time, joined by a space: one line, in the page's language. */
  function text(at, withDate, withMs) {
    var time = (withMs ? msFormat : timeFormat).format(at);
    return withDate ? dateFormat.format(at) + ' ' + time : time;
  }
  function sameLocalDay(a, b) {
    return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
  }
  function localTimes(root) {
    var now = new Date();
    (root || document).querySelectorAll('time[datetime]:not([data-local])').forEach(function (el) {
      var at = new Date(el.getAttribute('datetime'));
      if (isNaN(at.getTime())) return;
      // As much as the server wrote: a table cell's time alone, a date when it gave one (or when the
      // local day differs), milliseconds in the history.
      var written = el.textContent;
      var withMs = /\\.\\d{3}/.test(written);
      var withDate = /\\d{4}-\\d{2}-\\d{2}/.test(written) || (written.length > 8 && !sameLocalDay(at, now));
      el.textContent = text(at, withDate, withMs);
      el.title = at.toISOString() + ' (UTC)';
      el.setAttribute('data-local', '');
    });
  }
  /** The browser's offset from UTC now, as ' (UTC−03:00)', beside each column of local times. */
  function utcOffsets(root) {
    var minutes = -new Date().getTimezoneOffset();
    var abs = Math.abs(minutes);
    var text = ' (UTC' + (minutes < 0 ? '\u2212' : '+') + String(Math.floor(abs / 60)).padStart(2, '0') + ':' + String(abs % 60).padStart(2, '0') + ')';
    (root || document).querySelectorAll('[data-utc-offset]').forEach(function (el) {
      el.textContent = text;
    });
  }
  window.carrierSyncLocalTimes = function (root) {
    localTimes(root);
    utcOffsets(root);
  };
  utcOffsets(document);
  localTimes(document);
})();
`;
