package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The retry preview of dead messages whose queue was dropped outside
// pgbus says they cannot move and why, with the step that mends it, where
// it said that no dead message matched any more, all of them still there.
func TestRetryPreviewOfADroppedQueue(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewQueue(t, st, "dash_gone")
	pgtest.DeadLetterN(t, st, q, 3, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	pgtest.DropOutside(t, st, q)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || strings.Contains(page, "no dead message matches") || !strings.Contains(page, "3 dead messages match") ||
		!strings.Contains(page, "queue &#34;"+q+"&#34; no longer exists") || !strings.Contains(page, "pgbus queue create "+q) {
		t.Fatalf("the retry preview of a dropped queue's dead messages: %d\n%s", code, page)
	}
}

// A retry into a paused queue says so, in its preview and once done: its
// messages wait there, unread, where the page said they would run again.
func TestRetryIntoAPausedQueueSaysSo(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_paused")
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	if _, err := svc.QueuePause(pgtest.Context(t), ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/dlq/retry?queue=" + q)
	if code != http.StatusOK || !strings.Contains(page, "queue &#34;"+q+"&#34; is paused") || !strings.Contains(page, "Retry these 2 messages") {
		t.Fatalf("the retry preview into a paused queue: %d\n%s", code, page)
	}
	expect := regexp.MustCompile(`name="expect" value="([^"]+)"`).FindStringSubmatch(page)
	if expect == nil {
		t.Fatalf("the preview has no expect:\n%s", page)
	}
	code, page, _ = b.post("/dlq/retry", url.Values{"csrf": {csrf(t, page)}, "queue": {q}, "expect": {expect[1]}}, nil)
	if code != http.StatusOK || !strings.Contains(page, "will run again once its queue is resumed") && !strings.Contains(page, "will run again once their queues are resumed") ||
		!strings.Contains(page, "is paused") {
		t.Fatalf("the retry into a paused queue, done: %d\n%s", code, page)
	}
	// One message is "this message", not "these 1 message".
	pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	if _, page, _ := b.get("/dlq/retry?queue=" + q); !strings.Contains(page, "Retry this message</button>") {
		t.Fatalf("the retry preview of one message:\n%s", page)
	}
}
