// pgbus dashboard: forms sent once, and live counts.
//
// A form is sent once per page: a second click on a button that retries,
// discards or restores, before the page it asked for came, asked again,
// and the second answer ("nothing was discarded: changed since the
// preview") showed in place of the first, which had done it. The server
// guards every write anyway; this keeps the answer the one that did it.
// A page shown again from the back/forward cache takes its forms anew.
(function () {
  "use strict";
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (ev.defaultPrevented || !form || String(form.method).toLowerCase() !== "post") {
      return; // refused by the page's own check (editor.js), or a GET
    }
    if (form.hasAttribute("data-sent")) {
      ev.preventDefault();
      return;
    }
    form.setAttribute("data-sent", "");
    // Not disabled: a disabled submitter would not send its own value.
    var buttons = form.querySelectorAll("button, input[type=submit]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("aria-disabled", "true");
    }
  });
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) {
      return;
    }
    var sent = document.querySelectorAll("form[data-sent]");
    for (var i = 0; i < sent.length; i++) {
      sent[i].removeAttribute("data-sent");
      var buttons = sent[i].querySelectorAll("[aria-disabled]");
      for (var j = 0; j < buttons.length; j++) {
        buttons[j].removeAttribute("aria-disabled");
      }
    }
  });
})();

// Live counts.
//
// The pages are complete without this script. Where a page marks an
// element with data-live-src (the overview), it fetches that URL's counts
// every few seconds and writes them into the elements marked
// data-live (a count of the health verdict), data-live-plural (the word
// after one) and data-count (a queue's count, in the row marked
// data-queue), marking a count that is an estimate (a queue too large to
// count at each read) as the page does; the URL has the page's parameters, so that it answers for
// the queues the page lists. It pauses while the tab is hidden, and stops
// when the session ends. Its toggle button (data-live-pause, aria-pressed)
// pauses it until pressed again, for the rest of the tab's session
// (sessionStorage), and the element marked data-live-state says in words
// whether the counts update. When an update fails (the database does not
// answer, or the dashboard cannot be reached) it says so in the element
// marked data-live-problem, above the numbers, and marks the numbers as
// stale, from the time of their last check, until an update succeeds. What it cannot show in place (a new verdict's
// reasons, a queue created or dropped, a listed one paused or resumed,
// one not listed that now needs a look more) it announces, with a reload
// link.
(function () {
  "use strict";
  var root = document.querySelector("[data-live-src]");
  if (!root) {
    return;
  }
  var src = root.getAttribute("data-live-src");
  // The dead letters page, under the base path the dashboard is served at.
  var dlqPage = root.getAttribute("data-live-dlq") || "/dlq";
  var every = Math.max(2, parseInt(root.getAttribute("data-live-every"), 10) || 5) * 1000;
  var timer = null;
  var stopped = false;
  var inflight = false;
  // paused is the person's pause, kept for the tab's session.
  var pauseKey = "pgbus.liveCountsPaused";
  var paused = false;
  try {
    paused = window.sessionStorage.getItem(pauseKey) === "1";
  } catch (e) {
    // No storage (a private mode that refuses it): the pause lasts the page.
  }
  var verdict = text(document.querySelector('[data-live="status"]'));
  var rows = rowList();
  // The page lists the queues that most need a look, maybe not all of
  // them, as /live does: it tells a queue created or dropped by their
  // count, and by the digest of every queue's name (a queue created and
  // another dropped leave the count as it was).
  var total = parseInt(root.getAttribute("data-live-queues"), 10);
  var queueSet = root.getAttribute("data-live-set");
  // What an estimated count's mark says when pointed at.
  var estimateTitle = root.getAttribute("data-live-estimate") || "";

  function text(el) {
    return el ? el.textContent.trim() : "";
  }

  // rowList is the queues the page's table shows, in order, each with its
  // state (paused, dropped): its row's form depends on it.
  function rowList() {
    var out = [];
    document.querySelectorAll("tr[data-queue]").forEach(function (tr) {
      out.push({ queue: tr.getAttribute("data-queue"), state: tr.getAttribute("data-state") || "" });
    });
    return out;
  }

  function state(q) {
    return q.dropped ? "dropped" : q.paused ? "paused" : "";
  }

  // num writes a count as the server does: groups of thousands with commas.
  function num(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  function set(el, value) {
    if (el.textContent !== value) {
      el.textContent = value;
    }
  }

  // note tells the reader what changed that only a reload shows: one
  // message of each kind (queues, verdict, session), the latest, shown in
  // that order; an empty message withdraws its kind's.
  var notes = { queues: "", verdict: "", session: "" };
  function note(kind, message) {
    var el = root.querySelector("[data-live-note]");
    if (!el || notes[kind] === message) {
      return;
    }
    notes[kind] = message;
    var shown = [notes.queues, notes.verdict, notes.session].filter(Boolean);
    if (shown.length === 0) {
      el.textContent = "";
      el.hidden = true;
      return;
    }
    el.textContent = shown.join(" ") + " ";
    var a = document.createElement("a");
    a.href = window.location.href;
    a.textContent = "Reload";
    el.appendChild(a);
    el.hidden = false;
  }

  // problem says why the numbers could not be updated, and marks them as
  // stale: from the time of their last check, not "just now"; "" clears
  // both, as a successful update does.
  var failing = false;
  function problem(message) {
    var el = root.querySelector("[data-live-problem]");
    var on = message !== "";
    if (el) {
      set(el, message);
      el.hidden = !on;
    }
    root.classList.toggle("stale", on);
    var health = document.querySelector("[data-live-health]");
    if (health) {
      health.classList.toggle("stale", on);
    }
    if (on) {
      document.querySelectorAll("[data-live-time] time").forEach(function (t) {
        var at = new Date(t.getAttribute("datetime"));
        if (!isNaN(at.getTime())) {
          set(t, "at " + two(at.getUTCHours()) + ":" + two(at.getUTCMinutes()) + " UTC (stale)");
        }
      });
    }
    failing = on;
  }

  function two(n) {
    return (n < 10 ? "0" : "") + n;
  }

  // failed is what problem says of a refused update: the server's own
  // words when it gave them, else its status.
  function failed(res) {
    var fallback = "The dashboard answered " + res.status + (res.statusText ? " " + res.statusText : "") +
      " to the request for new counts. The page keeps its last numbers and asks again in a moment.";
    return res.json().then(
      function (body) {
        return body && typeof body.error === "string" && body.error !== "" ? body.error : fallback;
      },
      function () {
        return fallback;
      }
    );
  }

  function dlqCell(td, queue, n) {
    if (n > 0) {
      var a = td.querySelector("a");
      if (!a) {
        td.textContent = "";
        a = document.createElement("a");
        a.href = dlqPage + "?queue=" + encodeURIComponent(queue);
        td.appendChild(a);
      }
      set(a, num(n));
    } else if (td.textContent !== "0") {
      keepFocus(td);
      td.textContent = "0";
    }
  }

  // keepFocus moves the focus out of el, about to be replaced, when it is
  // in it: to the link of its row's queue, or else to el itself, so that a
  // keyboard's or screen reader's place is not sent back to the page's
  // start.
  function keepFocus(el) {
    var active = document.activeElement;
    if (!active || active === el || !el.contains(active)) {
      return;
    }
    var tr = el.closest("tr");
    var to = tr ? tr.querySelector("th a") : null;
    if (!to) {
      el.setAttribute("tabindex", "-1");
      to = el;
    }
    to.focus();
  }

  // estimated marks el's count as an estimate (the "~" of the est class,
  // and its explanation), or as exact.
  function estimated(el, on) {
    el.classList.toggle("est", on);
    if (on) {
      el.title = estimateTitle;
    } else {
      el.removeAttribute("title");
    }
  }

  function apply(c) {
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var key = el.getAttribute("data-live");
      if (key in c) {
        set(el, typeof c[key] === "number" ? num(c[key]) : String(c[key]));
      }
      if (key === "backlog") {
        estimated(el, c.backlog_estimated === true);
      }
    });
    document.querySelectorAll("[data-live-plural]").forEach(function (el) {
      var n = c[el.getAttribute("data-live-plural")];
      if (typeof n === "number") {
        set(el, n === 1 ? el.getAttribute("data-one") : el.getAttribute("data-many"));
      }
    });
    var health = document.querySelector("[data-live-health]");
    if (health && c.status) {
      health.className = health.className.replace(/\bhealth-\S+/g, "").trim() + " health-" + c.status.toLowerCase();
    }
    document.querySelectorAll("[data-live-time] time").forEach(function (t) {
      var at = c[t.parentNode.getAttribute("data-live-time")];
      if (at) {
        t.setAttribute("datetime", at);
        t.title = at.slice(0, 19).replace("T", " ") + " UTC";
        set(t, "just now");
      }
    });
    var seen = Object.create(null);
    (c.queue_stats || []).forEach(function (q) {
      seen[q.queue] = state(q);
      var tr = document.querySelector('tr[data-queue="' + CSS.escape(q.queue) + '"]');
      if (!tr) {
        return;
      }
      tr.querySelectorAll("[data-count]").forEach(function (td) {
        var key = td.getAttribute("data-count");
        if (key === "dlq_depth") {
          dlqCell(td, q.queue, q.dlq_depth);
        } else if (typeof q[key] === "number") {
          set(td, num(q[key]));
        }
        if (key === "visible") {
          estimated(td, q.counts_estimated === true);
        }
      });
    });
    if (!isNaN(total)) {
      note("queues", queuesNote(c, seen));
    }
    if (verdict !== "" && c.status) {
      note("verdict", c.status === verdict ? "" : "The health verdict is now " + c.status + ": reload the page for its reasons.");
    }
  }

  // queuesNote says how the queues /live lists (those the page lists, by
  // the same parameters) differ from the page's rows: queues created or
  // dropped (their count changed, or a row's queue is gone from a
  // complete list), listed ones paused or resumed, or other queues that
  // now need a look more than some listed (the same count, a bounded
  // list that changed). "" when they do not.
  function queuesNote(c, seen) {
    var listed = c.queue_stats || [];
    var every = listed.length + (c.queues_omitted || 0) + (c.queues_filtered || 0);
    var missing = 0;
    var toggled = false;
    var dropped = false;
    rows.forEach(function (r) {
      if (!(r.queue in seen)) {
        missing++;
      } else if (seen[r.queue] !== r.state) {
        if (seen[r.queue] === "dropped") {
          dropped = true;
        } else {
          toggled = true;
        }
      }
    });
    // Every queue listed now but not on the page takes a row's place.
    var moved = missing > 0 || listed.length !== rows.length - missing;
    var out = [];
    if (every !== total || c.queue_set !== queueSet || dropped || (moved && !c.queues_omitted)) {
      out.push("Queues were created or dropped since this page was loaded.");
    } else if (moved) {
      out.push("Queues not listed here now need a look more than some that are.");
    }
    if (toggled) {
      out.push("Queues listed here were paused or resumed since this page was loaded.");
    }
    return out.join(" ");
  }

  // showPause shows the toggle and says whether the counts update.
  function showPause() {
    var controls = root.querySelector("[data-live-controls]");
    var button = root.querySelector("[data-live-pause]");
    var said = root.querySelector("[data-live-state]");
    if (!controls || !button || !said) {
      return;
    }
    button.setAttribute("aria-pressed", paused ? "true" : "false");
    set(said, paused ? "Live counts are paused: the numbers stay as they are until you resume them." :
      "Live counts update every " + every / 1000 + " s.");
    controls.hidden = false;
  }

  var toggle = root.querySelector("[data-live-pause]");
  if (toggle) {
    toggle.addEventListener("click", function () {
      paused = !paused;
      try {
        if (paused) {
          window.sessionStorage.setItem(pauseKey, "1");
        } else {
          window.sessionStorage.removeItem(pauseKey);
        }
      } catch (e) {
        // Kept for this page only.
      }
      showPause();
      clearTimeout(timer);
      timer = null;
      if (!paused && !stopped) {
        // Resumed: fresh numbers at once.
        poll();
      }
    });
  }
  showPause();

  function schedule() {
    clearTimeout(timer);
    timer = null;
    if (!stopped && !paused && document.visibilityState === "visible") {
      timer = setTimeout(poll, every);
    }
  }

  function poll() {
    if (inflight) {
      // One request at a time: its end schedules the next.
      return;
    }
    inflight = true;
    fetch(src, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (res) {
        if (res.status === 401) {
          // The session ended: the next reload goes to the login page.
          stopped = true;
          note("session", "Your session ended, so the counts no longer update.");
          return null;
        }
        if (!res.ok) {
          return failed(res).then(function (message) {
            problem(message);
            return null;
          });
        }
        return res.json().then(null, function () {
          problem("The dashboard's answer to the request for new counts could not be read. The page keeps its last numbers and asks again in a moment.");
          return null;
        });
      }, function () {
        // The server is restarting or unreachable: keep the last numbers,
        // say so, and ask again on the next tick.
        problem("The dashboard could not be reached: pgbus may be restarting, or the network to it is down. The page keeps its last numbers and asks again in a moment.");
        return null;
      })
      .then(function (c) {
        // An answer that comes after a pause is not shown: the numbers stay.
        if (c && !paused) {
          if (failing) {
            problem("");
          }
          apply(c);
        }
      })
      .catch(function () {
        // Counts this script could not show: ask again on the next tick.
      })
      .then(function () {
        inflight = false;
        schedule();
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      // Back in view: show fresh numbers at once.
      clearTimeout(timer);
      timer = null;
      if (!stopped && !paused) {
        poll();
      }
    } else {
      clearTimeout(timer);
      timer = null;
    }
  });
  schedule();
})();
