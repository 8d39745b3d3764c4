package ops_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// lockDeadRow keeps dead message id of q's DLQ locked, as another
// client's transaction would (SELECT ... FOR UPDATE), until the returned
// release. It returns the holder's backend pid too.
func lockDeadRow(t *testing.T, st *store.Store, q string, id int64) (pid int, release func()) {
	t.Helper()
	ctx := testContext(t)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(context.Background()) }) }
	t.Cleanup(release)
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM pgmq.`+pgx.Identifier{"q_" + q + "_dlq"}.Sanitize()+` WHERE msg_id = $1 FOR UPDATE`, id).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid, release
}

// A retry by filter whose move of one message waits for a lock longer
// than the lock_timeout the role or database sets says so in its first
// error, as a retry of that one id does: the setting, the ALTER ROLE that
// raises it, with the role's name quoted, and the same call again as a
// next step. Once the lock is gone the same call moves it: nothing is
// lost, and nothing moves twice.
func TestRetryByFilterExplainsLockTimeout(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	st, q := limitedStore(t, nil, deadIDs(5, &ids)(t), "lock_timeout = '50ms'")
	svc := newService(t, st, ops.Options{})
	_, release := lockDeadRow(t, st, q, ids[2])
	alter := "ALTER ROLE " + store.RoleSQL(st.User()) + " SET lock_timeout = '10s'"
	// By ids, the locked one among others: its outcome says it too.
	out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{ids[0], ids[2]}, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || out.Retried != 1 || out.Failed != 1 || !strings.Contains(out.FirstError, "lock_timeout") || !strings.Contains(out.FirstError, alter) {
		t.Fatalf("retry by ids, one of them locked: %+v, %v; want one moved and one failed, saying lock_timeout and %s", out, err, alter)
	}
	req := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100}
	out, err = svc.DLQRetry(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if out.Retried != 3 || out.Failed != 1 {
		t.Fatalf("retry with one dead row locked: retried %d, failed %d; want 3 and 1", out.Retried, out.Failed)
	}
	for _, want := range []string{"lock_timeout", alter, "55P03", "try the call again once that transaction ends"} {
		if !strings.Contains(out.FirstError, want) {
			t.Errorf("first error %q does not say %q", out.FirstError, want)
		}
	}
	if !slices.ContainsFunc(out.Next, func(h ops.Hint) bool { return h.Op == ops.OpDLQRetry }) {
		t.Errorf("next steps %+v do not give the same retry again", out.Next)
	}
	release()
	out, err = svc.DLQRetry(ctx, req)
	if err != nil || out.Retried != 1 || out.Failed != 0 || len(out.Moved) != 1 || out.Moved[0].DLQMsgID != ids[2] {
		t.Fatalf("the same retry once the lock is gone: %+v, %v; want message %d moved", out, err, ids[2])
	}
	if live, dead := pgtest.Live(t, st, q), pgtest.Live(t, st, q+"_dlq"); live != 5 || dead != 0 {
		t.Fatalf("after both retries the queue holds %d and the DLQ %d; want 5 and 0", live, dead)
	}
}

// A lock that outlasts lock_timeout once but is gone soon after (another
// retry's commit, a short transaction) does not fail the message: its move
// is tried again within the same call.
func TestRetryByFilterTriesALockTimeoutAgain(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	st, q := limitedStore(t, nil, deadIDs(3, &ids)(t), "lock_timeout = '200ms'")
	svc := newService(t, st, ops.Options{})
	holder, release := lockDeadRow(t, st, q, ids[1])
	watch, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	// Released once a second wait for the holder is seen: the move's
	// first try gave up on the lock, and another waits for it.
	watching, stopWatching := context.WithCancel(ctx)
	released := make(chan struct{})
	go func() {
		defer close(released)
		defer release()
		var first time.Time
		for watching.Err() == nil {
			var started time.Time
			err := watch.QueryRow(watching, `SELECT query_start FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))`, holder).Scan(&started)
			if err == nil && first.IsZero() {
				first = started
			} else if err == nil && !started.Equal(first) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100})
	stopWatching()
	<-released
	if err != nil || out.Retried != 3 || out.Failed != 0 {
		t.Fatalf("retry with a row locked for a while: %+v, %v; want all 3 moved", out, err)
	}
	if live, dead := pgtest.Live(t, st, q), pgtest.Live(t, st, q+"_dlq"); live != 3 || dead != 0 {
		t.Fatalf("the queue holds %d and the DLQ %d; want 3 and 0", live, dead)
	}
}
