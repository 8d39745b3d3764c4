package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A message retried out of its DLQ whose new trip recorded no failure
// shows no error of its own on its page, and the previous trip's apart,
// labelled so.
func TestMessagePageLabelsThePreviousTripsError(t *testing.T) {
	t.Parallel()
	st := pgtest.OwnStore(t)
	ctx := pgtest.Context(t)
	q := pgtest.NewQueue(t, st, "dash_prev")
	_, dead := pgtest.DeadAfterLostClaim(t, st, q)
	rep, err := st.RetryDead(ctx, q+"_dlq", []int64{dead}, store.RetryOptions{})
	if err != nil || len(rep.Moved) != 1 {
		t.Fatalf("retry: %+v, %v", rep, err)
	}
	back := rep.Moved[0].MsgID
	for range 3 {
		pgtest.LostClaim(t, st, q, back)
	}
	dead = pgtest.FailUntilDead(t, st, q, back)
	b := newBrowser(t, serve(t, st, serverOpts{}))
	code, page, _ := b.get(fmt.Sprintf("/dlq/message?queue=%s&id=%d", q, dead))
	facts, _, _ := strings.Cut(pieceWith(page, "<dl", "<dt>Attempts</dt>"), "</dl>")
	if code != http.StatusOK || !strings.Contains(facts, "<dd>none recorded on this trip") || !strings.Contains(facts, "<dt>Previous trip's error</dt>") ||
		!strings.Contains(facts, "downstream refused the call") {
		t.Errorf("GET the message: %d; its facts:\n%s\nwant no error of this trip and the previous trip's labelled so", code, facts)
	}
}
