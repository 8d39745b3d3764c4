package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A message's page says which attempt left no outcome (a claim whose
// worker never ran the job) beside its attempts, so that 3 attempts with
// failures 2 and 3 alone explain themselves.
func TestMessagePageStatesAnAttemptThatLeftNoOutcome(t *testing.T) {
	t.Parallel()
	st := pgtest.OwnStore(t)
	q, b := browseQueue(t, st, "dash_lost")
	_, id := pgtest.DeadAfterLostClaim(t, st, q)
	code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, id))
	facts, _, _ := strings.Cut(pieceWith(page, "<dl", "<dt>Attempts</dt>"), "</dl>")
	want := "attempt 1 left no outcome: its worker stopped or lost its connection after taking the message, or another PGMQ client read it (pgmq.read); it still counts toward max_retries"
	if code != http.StatusOK || !strings.Contains(facts, "<dd>3, with max_retries 3</dd>") || !strings.Contains(facts, want) {
		t.Fatalf("GET the message: %d; its facts:\n%s\nwant 3 attempts and %q", code, facts, want)
	}
}

// The list of dead messages, and the queue page's list of live ones, say
// under a message's attempts how many left no outcome: here its first
// claim, lost.
func TestListsShowUnrecordedAttempts(t *testing.T) {
	t.Parallel()
	st := pgtest.OwnStore(t)
	dead, b := browseQueue(t, st, "dash_lost")
	pgtest.DeadAfterLostClaim(t, st, dead)
	live := pgtest.NewQueue(t, st, "dash_lost_live")
	pgtest.RetryingAfterLostClaim(t, st, live)
	for _, path := range []string{"/dlq/messages?queue=" + dead, "/queues/" + live} {
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		if !strings.Contains(page, `<span class="muted" data-unrecorded="1">1 read ended without an outcome (a crash or lost claim)</span>`) {
			t.Errorf("GET %s: the message's attempts do not say 1 left no outcome\n%s", path, page)
		}
	}
}
