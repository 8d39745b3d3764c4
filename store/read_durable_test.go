//go:build linux || darwin

package store_test

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A read is a worker's claim on a message: an outcome is written only to
// the message at the read that ran it. A read whose commit PostgreSQL
// forgot in a crash (it did not wait for the WAL to reach disk) let the
// next read claim the message under the same read count, so the first
// run's outcome, arriving later, landed on the message the second run
// held: a job that then succeeded was found dead-lettered. A read that
// returned is now one a crash keeps.
func TestReadSurvivesACrash(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Context(t)
	dir, c, s := privateStore(t)
	// The WAL writer then waits 10 s between flushes, and the background
	// writer writes no page (whose WAL it would flush first): a commit
	// that does not flush its own WAL is lost in a crash within them.
	for _, set := range []string{"ALTER SYSTEM SET wal_writer_delay = '10s'", "ALTER SYSTEM SET bgwriter_lru_maxpages = 0"} {
		if _, err := s.Pool().Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	// A restart, not a reload: the WAL writer takes a reload in its own
	// time, and until it has, a read that does not wait for the disk may
	// still be flushed before the crash, and the test pass without the fix.
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	c = pgtest.StartCluster(t, dir)
	var delay string
	if err := s.Pool().QueryRow(ctx, "SHOW wal_writer_delay").Scan(&delay); err != nil || delay != "10s" {
		t.Fatalf("wal_writer_delay after the restart: %q, %v; want 10s", delay, err)
	}
	id, err := s.Send(ctx, "rc", store.NewMessage{Payload: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.ReadRouting(ctx, "rc", time.Hour, 1, "rc_dlq", func([]store.Message) []store.DeadLetterItem { return nil }) // as a worker reads
	if err != nil || len(msgs) != 1 || msgs[0].ID != id || msgs[0].ReadCount != 1 {
		t.Fatalf("read %+v, %v; want message %d at read 1", msgs, err, id)
	}
	if err := syscall.Kill(postmasterPID(t, dir), syscall.SIGQUIT); err != nil { // an immediate shutdown: no checkpoint
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.StartCluster(t, dir)
	var reads int
	if err := s.Pool().QueryRow(ctx, "SELECT read_ct FROM pgmq.q_rc WHERE msg_id = $1", id).Scan(&reads); err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Fatalf("after a crash message %d is at read %d; want the read that returned kept (1), so that its outcome cannot land on a later read's", id, reads)
	}
}
