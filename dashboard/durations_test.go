package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue's page shows its settings' durations under a second as they
// are (a backoff of 200ms), not rounded to 0s, and whole seconds as Go
// writes them.
func TestQueuePageShowsSubSecondDurations(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewFastQueue(t, st, "dash_durations", func(s *store.QueueSettings) {
		s.RetryBackoff, s.VisibilityTimeout, s.Deadline = 200*time.Millisecond, 1500*time.Millisecond, 90*time.Second
	})
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/queues/" + q)
	const want = "backoff from 200ms, visibility timeout 1.5s, deadline 1m30s</dd>"
	if code != http.StatusOK || !strings.Contains(page, want) {
		t.Fatalf("the queue's page: %d, want its settings to say %q\n%s", code, want, page)
	}
}

// A queue's page says max_retries as what it is, the runs a message gets
// before it is dead-lettered, not as retries after the first run.
func TestQueuePageSaysMaxRetriesAsRuns(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := pgtest.NewFastQueue(t, st, "dash_runs", func(s *store.QueueSettings) { s.MaxRetries = 3 })
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get("/queues/" + q)
	const want = "<dd>at most 3 runs per message, "
	if code != http.StatusOK || !strings.Contains(page, want) || strings.Contains(page, "3 retries") {
		t.Fatalf("the queue's page: %d, want its settings to say %q\n%s", code, want, page)
	}
}
