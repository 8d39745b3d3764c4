package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The page of a DLQ whose table another session holds locked (a LOCK
// TABLE, a VACUUM FULL, an ALTER) answers 503 once its read waited its
// short bound for the lock, long before the page's call bound, naming the
// table, the session that holds it and what to do; it does not hold the
// browser, and a connection the workers share, for the whole bound. Once
// the lock goes, the page shows the messages.
func TestPageOfALockedDLQSaysWhoHoldsTheLock(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	q := pgtest.NewQueue(t, st, "dash_locked")
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "normal", Class: "E", Message: "boom"})
	// A call bound the browser does not wait out: a page that waited for
	// the lock that long would fail by the browser's own timeout.
	b := newBrowser(t, serve(t, st, serverOpts{callTimeout: 10 * time.Minute}))
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q+"_dlq")

	code, page, _ := b.get("/dlq?queue=" + q)
	for _, want := range []string{
		"waited " + ops.DefaultReadLockWait.String() + " for a lock another session holds",
		fmt.Sprintf("pgmq.q_%s_dlq in AccessExclusiveLock by pid %d", q, lock.PID),
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", lock.PID),
		"pg_stat_activity",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of a DLQ held locked does not say %q:\n%s", want, page)
		}
	}
	if code != http.StatusServiceUnavailable || strings.Contains(page, "database call timeout") {
		t.Fatalf("the page of a DLQ held locked: %d; want 503 for the lock, not the call's bound\n%s", code, page)
	}

	lock.Release()
	if code, page, _ := b.get("/dlq?queue=" + q); code != http.StatusOK || !strings.Contains(page, "2 dead messages") {
		t.Fatalf("the page once the lock went: %d; want 200 with the 2 dead messages\n%s", code, page)
	}
}
