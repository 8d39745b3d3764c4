// Checks a corrected payload as it is typed on a dead message's page: the
// parse error shows next to the text box (read out by screen readers, the
// element being aria-live) and the form is not sent while the text is not
// JSON. The server checks it again, and alone without JavaScript: this
// only saves a round trip. No libraries, no build step.
(function () {
  'use strict';

  function problem(text, maxBytes) {
    if (text.trim() === '') {
      return 'Type the corrected payload as JSON.';
    }
    var bytes = new TextEncoder().encode(text).length;
    if (maxBytes > 0 && bytes > maxBytes) {
      return 'The corrected payload is ' + bytes + ' bytes; the dashboard takes at most ' + maxBytes + ': correct a larger payload with pgbus dlq retry ID --queue DLQ --payload @FILE.';
    }
    try {
      JSON.parse(text);
    } catch (e) {
      return 'Not valid JSON: ' + e.message;
    }
    return '';
  }

  function setUp(form) {
    var box = form.querySelector('textarea');
    var out = form.querySelector('.field-error');
    if (!box || !out) {
      return;
    }
    var maxBytes = parseInt(form.getAttribute('data-max-bytes'), 10) || 0;
    // A refusal the server rendered stays until the text changes.
    function check() {
      var msg = problem(box.value, maxBytes);
      out.textContent = msg;
      if (msg) {
        box.setAttribute('aria-invalid', 'true');
      } else {
        box.removeAttribute('aria-invalid');
      }
      return msg === '';
    }
    // While typing, a fixed text clears the message at once, and a
    // broken one is said once typing pauses: the message is read out, and
    // at each key it would be read out again, at another position.
    var pending = null;
    box.addEventListener('input', function () {
      clearTimeout(pending);
      if (problem(box.value, maxBytes) === '') {
        check();
      } else {
        pending = setTimeout(check, 800);
      }
    });
    box.addEventListener('blur', function () {
      clearTimeout(pending);
      check();
    });
    form.addEventListener('submit', function (ev) {
      clearTimeout(pending);
      if (!check()) {
        ev.preventDefault();
        box.focus();
      }
    });
  }

  var forms = document.querySelectorAll('form[data-json-editor]');
  for (var i = 0; i < forms.length; i++) {
    setUp(forms[i]);
  }
})();
