package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// On a standby whose replay is paused (it lags), a worker that beats on
// the primary is not taken for a crashed one: heartbeats are judged as
// of the last commit the standby replayed, and the health says it is a
// standby, how far behind. The primary's health has no such reason.
func TestHealthOnALaggingStandby(t *testing.T) {
	t.Parallel()
	primaryURL, standbyURL := pgtest.Standby(t)
	primary := pgtest.OpenStore(t, primaryURL)
	ctx := testContext(t)
	w := store.WorkerProcess{ID: "w1", Hostname: "vm", PID: 7, Queues: []string{"orders"}, Concurrency: 4, HeartbeatInterval: 100 * time.Millisecond}
	if err := primary.RegisterWorker(ctx, w); err != nil {
		t.Fatal(err)
	}
	pgtest.CaughtUp(t, primaryURL, standbyURL)
	pgtest.Exec(t, standbyURL, "SELECT pg_catalog.pg_wal_replay_pause()")
	t.Cleanup(func() { pgtest.Exec(t, standbyURL, "SELECT pg_catalog.pg_wal_replay_resume()") })
	// The worker goes on beating on the primary, past the standby's
	// StaleAfter on the wall clock, none of which the standby replays.
	for range 3 {
		time.Sleep(time.Second)
		if err := primary.HeartbeatWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	standby, err := store.Open(ctx, standbyURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Close)
	h, err := newService(t, standby, ops.Options{StaleAfter: time.Second}).Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var notice string
	for _, r := range h.Reasons {
		if r.Code == "stale_workers" {
			t.Errorf("the standby's health takes the beating worker for a stale one: %+v", h.Reasons)
		}
		if r.Code == "standby" {
			notice = r.Message
		}
	}
	if !strings.Contains(notice, "this server is a standby (a read replica): what it shows is as of the last commit it replayed, at ") || !strings.Contains(notice, " behind the primary's work it has received") {
		t.Errorf("the standby's health notice: %q; want it to say it is a standby and behind", notice)
	}
	ph, err := newService(t, primary, ops.Options{StaleAfter: time.Minute}).Health(ctx)
	if err != nil || ph.Status == ops.HealthUnreachable {
		t.Fatal(err)
	}
	for _, r := range ph.Reasons {
		if r.Code == "standby" {
			t.Errorf("the primary's health says it is a standby: %+v", r)
		}
	}
}

// A write on a standby is refused as a read-only server's is (kind
// read_only), saying the server is a standby and where writes go, not
// that a DBA's setting refused it; the dead message stays.
func TestWriteOnAStandbyIsReadOnly(t *testing.T) {
	t.Parallel()
	primaryURL, standbyURL := pgtest.Standby(t)
	primary := pgtest.OpenStore(t, primaryURL)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, primary, "standby_w")
	ids := pgtest.DeadLetter(t, primary, q, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	pgtest.CaughtUp(t, primaryURL, standbyURL)
	standby, err := store.Open(ctx, standbyURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(standby.Close)
	svc := newService(t, standby, ops.Options{})
	_, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
	if ops.ErrorKind(err) != ops.KindReadOnly || !strings.Contains(err.Error(), "this server is a standby (a read replica), which takes no writes") ||
		!strings.Contains(err.Error(), "point pgbus at the primary server") || strings.Contains(err.Error(), "default_transaction_read_only") {
		t.Fatalf("a retry on the standby: kind %q, %v; want read_only, saying it is a standby and to use the primary", ops.ErrorKind(err), err)
	}
	if n := pgtest.Live(t, primary, q+"_dlq"); n != 1 {
		t.Fatalf("%d dead messages on the primary after the refused retry, want 1", n)
	}
}
