package ops_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// moveMarker is the start of the statement that moves one dead message
// back to its queue, as a connection in exec mode sends it every time.
const moveMarker = "WITH d AS (\n\t\tDELETE FROM"

// A bulk retry whose connection breaks right after a move's statement
// reached the server, which commits it, cannot know whether that message
// moved: its report counts what it knows moved as done, and that one as
// one that may or may not have been retried, with what to look at, so
// that the two together cover what moved.
func TestRetryCutAtCommitSaysWhatMayHaveMoved(t *testing.T) {
	t.Parallel()
	c := cutAtASecondBatch(t, moveMarker)
	direct, q, client := c.direct, c.queue, c.client
	req := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 600, ClearDeadline: true, Progress: c.progress}
	_, err := c.svc.DLQRetry(ops.WithClient(testContext(t), client), req)
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 {
		t.Fatalf("retry whose connection broke at a move's commit: %v; want a PartlyDone that moved some", err)
	}
	// The server ran the move it got to its end: wait until no session
	// runs it any more.
	pgtest.Eventually(t, time.Minute, "the cut move to end on the server", func() bool {
		return pgtest.Int(t, direct, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE 'WITH d AS (%'`) == 0
	})
	live, dead := pgtest.Live(t, direct, q), deadCount(t, direct, q)
	if live+dead != 600 {
		t.Fatalf("%d live and %d dead of 600: each message must be in one place", live, dead)
	}
	if len(pd.Unsure) != 1 || int64(live) < pd.Done || int64(live) > pd.Done+int64(len(pd.Unsure)) {
		t.Errorf("%d messages moved, the report counts %d done and %v unsure: want the one cut unsure, and the two to cover what moved: %v", live, pd.Done, pd.Unsure, err)
	}
	if left := 600 - pd.Done - int64(len(pd.Unsure)); pd.Left() != left {
		t.Errorf("the limit left is %d, want %d: the limit less what was done and what may have been", pd.Left(), left)
	}
	for _, want := range []string{"1 more may or may not have been retried", "as the connection broke while it was written", "counting the 1 that may have been retried as retried"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var ops_ []string
	for _, h := range ops.NextSteps(err) {
		ops_ = append(ops_, h.Op)
	}
	if want := []string{ops.OpHealth, ops.OpDLQList, ops.OpQueueStats, ops.OpDLQRetry}; !slices.Equal(ops_, want) {
		t.Errorf("next steps %v, want %v: what to look at before the same call again", ops_, want)
	}
	m := partialAudit(t, auditRows(t, direct, client), ops.OpDLQRetry)
	if unsure, _ := m["unsure"].([]any); m["retried"] != float64(pd.Done) || len(unsure) != 1 {
		t.Errorf("audit entry %v, want retried %d and the one unsure", m, pd.Done)
	}
}

// archiveMarker is the end of the lock that starts the statement that
// moves dead messages to their DLQ's archive, and the delete after it.
const archiveMarker = "ORDER BY q.msg_id FOR UPDATE), d AS (\n\t\t\tDELETE FROM"

// A bulk discard cut as a batch's statement reached the server, which
// commits it, reports that batch's messages as ones that may or may not
// have been discarded, as a bulk retry does: with them and what it knows
// it discarded, the report covers what left the DLQ.
func TestDiscardCutAtCommitSaysWhatMayHaveMoved(t *testing.T) {
	t.Parallel()
	c := cutAtASecondBatch(t, archiveMarker)
	direct, q, client := c.direct, c.queue, c.client
	req := ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 600, Confirm: true, Progress: c.progress}
	_, err := c.svc.DLQDiscard(ops.WithClient(testContext(t), client), req)
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || pd.Done == 0 {
		t.Fatalf("discard whose connection broke at a batch's commit: %v; want a PartlyDone that discarded some", err)
	}
	pgtest.Eventually(t, time.Minute, "the cut batch to end on the server", func() bool {
		return pgtest.Int(t, direct, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE 'WITH l AS (%'`) == 0
	})
	dead := deadCount(t, direct, q)
	gone := int64(600 - dead)
	if len(pd.Unsure) == 0 || gone < pd.Done || gone > pd.Done+int64(len(pd.Unsure)) {
		t.Errorf("%d messages left the DLQ, the report counts %d done and %d unsure: want the cut batch unsure, and the two to cover what moved: %v", gone, pd.Done, len(pd.Unsure), err)
	}
	if left := 600 - pd.Done - int64(len(pd.Unsure)); pd.Left() != left {
		t.Errorf("the limit left is %d, want %d: the limit less what was done and what may have been", pd.Left(), left)
	}
	if want := "may or may not have been discarded"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	m := partialAudit(t, auditRows(t, direct, client), ops.OpDLQDiscard)
	if unsure, _ := m["unsure"].([]any); m["discarded"] != float64(pd.Done) || len(unsure) != len(pd.Unsure) {
		t.Errorf("audit entry %v, want discarded %d and the %d unsure", m, pd.Done, len(pd.Unsure))
	}
}

// cutCall is a bulk call on 600 dead messages of queue, made through svc,
// whose connection is cut once as a statement holding a marker reaches
// the server, after the first batch (progress, to pass as the call's
// Progress), as a client; direct reads the database past the cut.
type cutCall struct {
	direct   *store.Store
	svc      *ops.Service
	queue    string
	client   string
	progress func(done, total int)
}

func cutAtASecondBatch(t *testing.T, marker string) cutCall {
	t.Helper()
	url := pgtest.NewDatabase(t)
	direct := pgtest.OpenStore(t, url)
	q := newQueue(t, direct, nil)
	pgtest.DeadLetterN(t, direct, q, 600, pgtest.DeadSpec{})
	proxy := pgtest.NewFreezingProxy(t, url)
	// In exec mode every statement carries its text, which the proxy
	// tells the move by.
	through := pgtest.OpenStore(t, pgtest.WithParam(t, proxy.URL(), "default_query_exec_mode", "exec"))
	var cut sync.Once
	return cutCall{direct: direct, svc: newService(t, through, ops.Options{}), queue: q, client: uniqueName("agent") + "/1.0",
		progress: func(done, _ int) {
			if done > 0 { // after the first batch: the cut comes at one of the second's
				cut.Do(func() { proxy.CutWhenSent(marker) })
			}
		}}
}
