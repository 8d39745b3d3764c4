// Reloads a page asked to refresh itself (?refresh=N, the main element's
// data-refresh) every N seconds, as its <noscript> meta element does
// without JavaScript, but not while anything on it has the focus (a form
// field, a link, a button) or a form field holds what the person changed
// and has not sent: a reload would lose it, and send a person moving
// through the page by keyboard or screen reader back to its top.
// Each reload held back marks the main element (data-refresh-held, the
// count), and the page tries again N seconds later. While the reload would
// be held, the refresh line says so (its span marked data-refresh-paused,
// in a polite live region).
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
      say();
    }
  }
  document.addEventListener('input', edited, true);
  document.addEventListener('change', edited, true);

  // say writes in the refresh line whether the reload waits: at once on a
  // focus that comes, and once a focus that leaves has gone (during
  // focusout the element still has it).
  var paused = document.querySelector('[data-refresh-paused]');
  function say() {
    if (!paused) {
      return;
    }
    var text = changed || focused() ? ', paused while you type or a control has focus' : '';
    if (paused.textContent !== text) {
      paused.textContent = text;
    }
  }
  document.addEventListener('focusin', say, true);
  document.addEventListener('focusout', function () {
    window.setTimeout(say, 0);
  }, true);

  // focused reports whether an element of the page has the focus: the
  // body has it when nothing else does.
  function focused() {
    var el = document.activeElement;
    return !!el && el !== document.body && el !== document.documentElement;
  }

  function due() {
    if (changed || focused()) {
      main.setAttribute('data-refresh-held', String((parseInt(main.getAttribute('data-refresh-held'), 10) || 0) + 1));
      window.setTimeout(due, seconds * 1000);
      return;
    }
    window.location.reload();
  }
  say();
  window.setTimeout(due, seconds * 1000);
})();
