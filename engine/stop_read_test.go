package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A stop that comes while a read is on its way to the server does not cut
// it off: the server may commit the read's claims whatever the client
// does, and a read given up names none of them to give back. The read
// goes on; what it claimed is given back unrun, visible at once with its
// attempt returned, rather than held for the visibility timeout an
// attempt down.
func TestStopDuringReadGivesItsClaimsBack(t *testing.T) {
	t.Parallel()
	// The read's transaction ends with the worker's own COMMIT (the
	// statement's text ends at the NUL after it): held on its way, the
	// read has claimed the messages.
	r := readHeldAt(t, "COMMIT\x00")
	direct, q, path, ran, done, stop, release := r.direct, r.q, r.path, &r.ran, r.done, r.stop, r.release
	stop()
	// A worker that gave the read up returns now; one that goes on with
	// it waits for its answer.
	returned := false
	select {
	case err := <-done:
		returned = true
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(2 * time.Second):
	}
	release()
	if !returned {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Run did not return within a minute of the read's answer")
		}
	}
	// The held COMMIT reaches the server on release, whatever the worker
	// did meanwhile: its transaction ends.
	pgtest.Eventually(t, time.Minute, "the read's transaction to end", func() bool {
		return pgtest.Int(t, direct, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, path.app) == 0
	})
	if n := ran.Load(); n != 0 {
		t.Errorf("%d jobs ran after the stop; want none: a stop starts no more jobs", n)
	}
	rows := pgtest.Int(t, direct, `SELECT count(*) FROM pgmq.q_`+q)
	stranded := pgtest.Int(t, direct, `SELECT count(*) FROM pgmq.q_`+q+` WHERE vt > clock_timestamp() + interval '1 second' OR read_ct > 0`)
	if rows != 3 || stranded != 0 {
		t.Errorf("after a stop during a read, the queue holds %d messages, %d of them claimed (read_ct > 0, or invisible for the visibility timeout); want 3 messages, all visible at once with no attempt used", rows, stranded)
	}
}

// A stop that finds the read before its commit has it rolled back: the
// read claims nothing, and nothing is left to give back (which a database
// that stopped answering, or a store closed meanwhile, could refuse).
func TestStopBeforeReadsCommitUndoesIt(t *testing.T) {
	t.Parallel()
	// The read is sent with the BEGIN of its transaction.
	r := readHeldAt(t, "read_ct = m.read_ct + 1")
	direct, q, path, ran, done, stop, release := r.direct, r.q, r.path, &r.ran, r.done, r.stop, r.release
	visible := func() string { // when each message is visible from
		var s string
		if err := direct.Pool().QueryRow(testContext(t), `SELECT string_agg(vt::text || '/' || read_ct, ',' ORDER BY msg_id) FROM pgmq.q_`+q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := visible() // the read is held on its way: it has not run
	stop()
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the stop")
	}
	pgtest.Eventually(t, time.Minute, "the read's transaction to end", func() bool {
		return pgtest.Int(t, direct, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'`, path.app) == 0
	})
	// A message given back is visible from the moment it was given back;
	// one no read claimed, from when it was sent.
	if n, after := ran.Load(), visible(); n != 0 || after != before || strings.Count(after, "/0") != 3 {
		t.Errorf("after a stop before the read's commit: %d jobs ran, and the messages are visible from (and read) %s; want no job, and %s: the read undone", n, after, before)
	}
}

// heldRead is a worker running through a proxy that holds its read of
// three messages on its way to the server.
type heldRead struct {
	direct  *store.Store
	q       string
	path    *frozenPath
	ran     atomic.Int64 // jobs run
	done    chan error   // Run's return
	stop    context.CancelFunc
	release func() // lets the read go on
}

// readHeldAt starts a worker of a new queue (a visibility timeout of
// 30 s, as by default) through a proxy, sends the queue three messages,
// and returns once the proxy holds the first bytes of the worker's read
// that hold marker. Run and the hold end with the test.
func readHeldAt(t *testing.T, marker string) *heldRead {
	t.Helper()
	r := &heldRead{direct: testStore(t), done: make(chan error, 1)}
	r.q = newQueue(t, r.direct, nil)
	r.path = storeThroughProxy(t, nil)
	c := pgtest.NewClient(t, r.path.store, r.q, func(cfg *engine.Config) { cfg.PollInterval = 20 * time.Millisecond })
	c.HandleQueue(r.q, func(context.Context, *engine.Job) error { r.ran.Add(1); return nil })
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	t.Cleanup(stop)
	go func() { r.done <- c.Run(ctx) }()
	held, release := r.path.proxy.HoldWhenSent(marker)
	r.release = release
	t.Cleanup(release)
	sender := pgtest.NewClient(t, r.direct, r.q, nil) // never run: it only sends
	for i := range 3 {
		pgtest.Send(t, sender, r.q, map[string]int{"n": i}, engine.SendOptions{})
	}
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("no read of the messages reached the proxy within a minute")
	}
	return r
}
