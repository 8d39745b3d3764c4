package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A queue's page offers to run its retrying messages now, only while it
// has some and only on a server that may write; the button makes them
// visible, and a queue that does not exist is not found.
func TestQueueRunNowButton(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q, b := browseQueue(t, st, "dash_now")
	if _, page, _ := b.get("/queues/" + q); strings.Contains(page, "/queues/run-now") {
		t.Fatalf("a queue with nothing retrying offers to run its retries now:\n%s", page)
	}
	pgtest.Retrying(t, st, q)
	_, page, _ := b.get("/queues/" + q)
	if !strings.Contains(page, `formaction="/queues/run-now"`) || !strings.Contains(page, "Run the 1 retrying now") {
		t.Fatalf("a queue with a retrying message offers no run now:\n%s", page)
	}
	form := url.Values{"csrf": {csrf(t, page)}, "queue": {q}}
	if code, page, _ := b.post("/queues/run-now", form, nil); code != http.StatusOK || !strings.Contains(page, "1 retrying message of queue "+q+" run now") ||
		!strings.Contains(page, "no worker process has served queue "+q) {
		t.Fatalf("run now: %d\n%s", code, page)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE vt <= now()`); n != 1 {
		t.Fatalf("%d messages visible after run now, want 1", n)
	}
	paused := pgtest.NewQueue(t, st, "dash_now_p")
	pgtest.Retrying(t, st, paused)
	if _, err := st.SetPaused(pgtest.Context(t), paused, true); err != nil {
		t.Fatal(err)
	}
	form.Set("queue", paused)
	if code, page, _ := b.post("/queues/run-now", form, nil); code != http.StatusOK || !strings.Contains(page, "is paused: the messages made visible wait in it") {
		t.Fatalf("run now of a paused queue: %d\n%s", code, page)
	}
	form.Set("queue", q+"_gone")
	if code, page, _ := b.post("/queues/run-now", form, nil); code != http.StatusNotFound {
		t.Fatalf("run now of a queue that does not exist: %d\n%s", code, page)
	}

	ro := newBrowser(t, serve(t, st, serverOpts{readOnly: true}))
	other := pgtest.NewQueue(t, st, "dash_now_ro")
	pgtest.Retrying(t, st, other)
	_, page, _ = ro.get("/queues/" + other)
	if strings.Contains(page, "/queues/run-now") || !strings.Contains(page, "Retrying") {
		t.Fatalf("a read-only server's queue page offers run now:\n%s", page)
	}
}
