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
	q := pgtest.NewQueue(t, st, "dash_lost")
	_, id := pgtest.DeadAfterLostClaim(t, st, q)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, id))
	facts, _, _ := strings.Cut(pieceWith(page, "<dl", "<dt>Attempts</dt>"), "</dl>")
	want := "attempt 1 left no outcome: its worker stopped or lost its connection after taking the message, before recording a result; it still counts toward max_retries"
	if code != http.StatusOK || !strings.Contains(facts, "<dd>3, with max_retries 3</dd>") || !strings.Contains(facts, want) {
		t.Fatalf("GET the message: %d; its facts:\n%s\nwant 3 attempts and %q", code, facts, want)
	}
}
