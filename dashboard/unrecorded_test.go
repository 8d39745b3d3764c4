package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
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
	ctx := pgtest.Context(t)
	dead := pgtest.NewQueue(t, st, "dash_lost")
	pgtest.DeadAfterLostClaim(t, st, dead)

	live := pgtest.NewQueue(t, st, "dash_lost_live")
	id, err := st.Send(ctx, live, store.NewMessage{Payload: []byte(`{}`), Headers: []byte(`{"pgbus_kind": "` + pgtest.LostClaimKind + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.LostClaim(t, st, live, id)
	got, err := st.Read(ctx, live, time.Minute, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("second read: %+v, %v", got, err)
	}
	fail := store.Failure{Attempt: got[0].ReadCount, Kind: pgtest.LostClaimKind, ErrorClass: "net.OpError", ErrorMessage: "connection refused"}
	if _, err := st.RetryMany(ctx, live, []store.RetryItem{{MsgID: id, Delay: time.Hour, Failure: fail, ReadCount: got[0].ReadCount, EnqueuedAt: got[0].EnqueuedAt}}); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, serve(t, st, serverOpts{}))
	for _, path := range []string{"/dlq/messages?queue=" + dead, "/queues/" + live} {
		code, page, _ := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		if !strings.Contains(page, `<span class="muted" data-unrecorded="1">1 unrecorded</span>`) {
			t.Errorf("GET %s: the message's attempts do not say 1 left no outcome\n%s", path, page)
		}
	}
}
