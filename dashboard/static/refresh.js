// Reloads a page asked to refresh itself (?refresh=N, the main element's
// data-refresh) every N seconds, as its <noscript> meta element does
// without JavaScript, but not while a form field on it is focused or
// holds what the person changed and has not sent: a reload would lose it.
// Each reload held back marks the main element (data-refresh-held, the
// count), and the page tries again N seconds later.
(function () {
  'use strict';

  var main = document.querySelector('main[data-refresh]');
  var seconds = main ? parseInt(main.getAttribute('data-refresh'), 10) : 0;
  if (!(seconds > 0)) {
    return;
  }
  var changed = false;
  function edited(e) {
    if (e.target && e.target.form) {
      changed = true;
    }
  }
  document.addEventListener('input', edited, true);
  document.addEventListener('change', edited, true);

  function typing() {
    var el = document.activeElement;
    return !!el && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName) && el.type !== 'hidden';
  }

  function due() {
    if (changed || typing()) {
      main.setAttribute('data-refresh-held', String((parseInt(main.getAttribute('data-refresh-held'), 10) || 0) + 1));
      window.setTimeout(due, seconds * 1000);
      return;
    }
    window.location.reload();
  }
  window.setTimeout(due, seconds * 1000);
})();
