package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// frozenPool is how many connections the tests' pool holds when the path
// freezes: each would cost a call its whole bound, were they not dropped.
const frozenPool = 4

// frozenSetup makes a queue with dead dead messages, read directly, and a
// service with a one-second database call timeout whose pool of
// frozenPool connections goes through a proxy the test can freeze.
func frozenSetup(t *testing.T, dead int) (direct *store.Store, q string, proxy *pgtest.FreezingProxy, through *store.Store, svc *ops.Service) {
	t.Helper()
	// A database of its own: a lock another package's test holds on the
	// shared one (its LOCK TABLE) would be named as the cause.
	url := pgtest.NewDatabase(t)
	direct = pgtest.OpenStore(t, url)
	q = newQueue(t, direct, nil)
	pgtest.DeadLetterN(t, direct, q, dead, pgtest.DeadSpec{})
	proxy = pgtest.NewFreezingProxy(t, url)
	through = pgtest.OpenStore(t, pgtest.WithParam(t, proxy.URL(), "pool_max_conns", fmt.Sprint(frozenPool)))
	svc = newService(t, through, ops.Options{DatabaseCallTimeout: time.Second})
	return direct, q, proxy, through, svc
}

// A bulk retry whose connections stop answering partway (a failover
// behind a proxy, a cut path) gives up after the database call timeout
// instead of waiting for TCP: what it moved stays moved, no message is
// left in two places or lost, the error says what happened, how much was
// done and what to do, the audit log records it, and the same call again,
// through new connections, retries the rest.
func TestFrozenRetryGivesUpPartwayAndRecovers(t *testing.T) {
	t.Parallel()
	direct, q, proxy, through, svc := frozenSetup(t, 600)
	client := uniqueName("agent") + "/1.0"
	ctx := ops.WithClient(testContext(t), client)
	pgtest.FillPool(t, through.Pool(), frozenPool)

	var freeze sync.Once
	req := ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 100000, Progress: func(done, _ int) {
		if done > 0 {
			freeze.Do(proxy.Freeze) // after the first batch, before the next
		}
	}}
	err := within(t, "the retry whose connections froze", func() error {
		_, err := svc.DLQRetry(ctx, req)
		return err
	})
	var pd *ops.PartlyDone
	if !errors.As(err, &pd) || ops.ErrorKind(err) != ops.KindUnavailable {
		t.Fatalf("retry through frozen connections: %v (kind %s); want a PartlyDone of kind unavailable", err, ops.ErrorKind(err))
	}
	for _, want := range []string{"the database did not answer within 1s (database call timeout)", "stopped after retrying", "retries the rest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	live, dead := pgtest.Live(t, direct, q), deadCount(t, direct, q)
	if live != int(pd.Done) || live+dead != 600 {
		t.Errorf("after the retry given up: %d live and %d dead of 600, the error counts %d retried; want what it counts moved, each message in one place", live, dead, pd.Done)
	}
	m := partialAudit(t, auditRows(t, direct, client), ops.OpDLQRetry)
	if m["retried"] != float64(pd.Done) || !strings.Contains(m["error"].(string), "did not answer within 1s") {
		t.Errorf("audit entry %v, want retried %d and the error", m, pd.Done)
	}

	req.Progress = nil
	r, err := svc.DLQRetry(ctx, req)
	if err != nil || pgtest.Live(t, direct, q) != 600 || deadCount(t, direct, q) != 0 {
		t.Fatalf("the same retry after the freeze: %+v, %v; %d live, want the rest retried through new connections", r, err, pgtest.Live(t, direct, q))
	}
}

// A read whose connection stops answering gives up after the database
// call timeout, as a database that does not answer, with the health check
// as its next step; the next read connects afresh and succeeds.
func TestFrozenReadGivesUpAndRecovers(t *testing.T) {
	t.Parallel()
	_, q, proxy, through, svc := frozenSetup(t, 3)
	ctx := testContext(t)
	pgtest.FillPool(t, through.Pool(), frozenPool)

	proxy.Freeze()
	err := within(t, "the list whose connections froze", func() error {
		_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
		return err
	})
	var oe *ops.Error
	if !errors.As(err, &oe) || ops.ErrorKind(err) != ops.KindUnavailable || !strings.Contains(err.Error(), "did not answer within 1s (database call timeout)") ||
		len(oe.Hints) == 0 || oe.Hints[0].Op != ops.OpHealth {
		t.Fatalf("list through frozen connections: %v (kind %s); want the database call timeout said, of kind unavailable, with the health check next", err, ops.ErrorKind(err))
	}
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("the list after the freeze: %d messages, %v; want 3 through new connections", len(list.Items), err)
	}
}

// within runs call, failing the test when it has not returned after
// minutes, the way a call on a frozen connection never does.
func within(t *testing.T, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s has not returned after 3m: it waits on a connection that stopped answering", what)
		return nil
	}
}

// deadCount is how many messages queue's DLQ holds.
func deadCount(t *testing.T, s *store.Store, queue string) int {
	t.Helper()
	return pgtest.Live(t, s, queue+"_dlq")
}

// A restore whose connection stops answering gives up as any call does; a
// dry run, which writes nothing, does not ask to check what it did, and a
// restore, one transaction, says it was done whole or not at all.
func TestFrozenRestoreSaysWhatItMayHaveDone(t *testing.T) {
	t.Parallel()
	direct, q, proxy, through, svc := frozenSetup(t, 2)
	ctx := testContext(t)
	plain := newService(t, direct, ops.Options{})
	list, err := plain.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	ids := []int64{list.Items[0].MsgID, list.Items[1].MsgID}
	if _, err := plain.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		pgtest.FillPool(t, through.Pool(), frozenPool)
		proxy.Freeze()
		err := within(t, "the restore whose connections froze", func() error {
			_, err := svc.DLQRestore(ctx, ops.DLQRestoreRequest{Queue: q, IDs: ids, DryRun: dry})
			return err
		})
		var oe *ops.Error
		if !errors.As(err, &oe) || ops.ErrorKind(err) != ops.KindUnavailable || len(oe.Hints) == 0 || oe.Hints[0].Op != ops.OpHealth {
			t.Fatalf("restore (dry run %v) through frozen connections: %v (kind %s); want of kind unavailable with the health check next", dry, err, ops.ErrorKind(err))
		}
		if says := strings.Contains(err.Error(), "done whole or not at all"); says == dry {
			t.Errorf("restore (dry run %v) through frozen connections: %v; want it to say whether it may have written only when it writes", dry, err)
		}
	}
	if n := deadCount(t, direct, q); n != 0 {
		t.Errorf("%d messages back in the DLQ after restores that gave up, want none", n)
	}
}

// A call given up at its bound while a new connection is answered at once
// (its own connection cut, or a request too big for the bound, such as a
// text filter over millions of dead messages) says so, and what mends
// it, rather than only that the database did not answer.
func TestSlowCallGivenUpSaysANewConnectionAnswers(t *testing.T) {
	t.Parallel()
	_, q, proxy, _, svc := frozenSetup(t, 3)
	ctx := testContext(t)
	marker := strings.ReplaceAll(uniqueName("slow"), "_", "") // as sent: a filter escapes _
	proxy.DelayWhenSent(marker, 3*time.Second)                // past the one-second bound
	_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, Text: marker}})
	for _, want := range []string{"did not answer within 1s (database call timeout)", "a new connection is answered at once", "a narrower request or a longer timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a summary held past its bound: %v; want it to say %q", err, want)
		}
	}
	if k := ops.ErrorKind(err); k != ops.KindUnavailable {
		t.Errorf("a summary held past its bound: kind %s, want unavailable", k)
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || sum.Total != 3 {
		t.Fatalf("the summary after: %d dead, %v; want 3", sum.Total, err)
	}
}
