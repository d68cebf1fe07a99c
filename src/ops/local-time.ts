/**
 * The pages' script that shows times in the browser's time zone. The server writes every time in
 * UTC inside `<time datetime="<ISO>">` (so the page reads right without script, and tests and
 * `curl` see UTC); this script rewrites each one's text in local time, in the page's language
 * (`<html lang>`), and keeps the UTC time on hover (title). The overview calls it again after it
 * swaps in fresh parts. A time written with milliseconds (the history) keeps them.
 */
export const LOCAL_TIME_JS = `(function () {
  'use strict';
  var lang = document.documentElement.lang || 'en';
  function formatter(withDate, withMs) {
    var options = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
    if (withDate) { options.year = 'numeric'; options.month = '2-digit'; options.day = '2-digit'; }
    if (withMs) options.fractionalSecondDigits = 3;
    return new Intl.DateTimeFormat(lang, options);
  }
  function sameLocalDay(a, b) {
    return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
  }
  function localTimes(root) {
    var now = new Date();
    (root || document).querySelectorAll('time[datetime]:not([data-local])').forEach(function (el) {
      var at = new Date(el.getAttribute('datetime'));
      if (isNaN(at.getTime())) return;
      var withMs = /\\.\\d{3}/.test(el.textContent);
      el.textContent = formatter(withMs || !sameLocalDay(at, now), withMs).format(at);
      el.title = at.toISOString() + ' (UTC)';
      el.setAttribute('data-local', '');
    });
  }
  window.carrierSyncLocalTimes = localTimes;
  localTimes(document);
})();
`;
