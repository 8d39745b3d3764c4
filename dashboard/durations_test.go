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
