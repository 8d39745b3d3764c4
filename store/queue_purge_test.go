package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// purgeFixture is a queue holding live messages with failure history, and
// an archived one with its own. A purge takes the history of the messages
// it deletes, which nothing else would ever prune (they are in neither the
// queue nor its archive), and leaves the archived message's to retention.
type purgeFixture struct {
	s        *store.Store
	q        string
	live     []int64
	archived int64
	filenode uint32 // the queue table's file before the purge
}

func newPurgeFixture(t *testing.T, s *store.Store, q string) purgeFixture {
	t.Helper()
	ctx := testContext(t)
	ids, err := s.SendBatch(ctx, q, msgs(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveMany(ctx, q, ids[4:]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT $1, id, 1, 'E', 'failed' FROM unnest($2::bigint[]) id`, q, ids); err != nil {
		t.Fatal(err)
	}
	return purgeFixture{s: s, q: q, live: ids[:4], archived: ids[4], filenode: queueFilenode(t, s, q)}
}

func queueFilenode(t *testing.T, s *store.Store, q string) uint32 {
	t.Helper()
	var n uint32
	err := s.Pool().QueryRow(testContext(t), `SELECT pg_relation_filenode(format('pgmq.%I', 'q_' || $1)::regclass)`, q).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// check purges the queue as s, and checks that every live message went,
// with its failure history, and nothing else; truncated says whether the
// table should have been emptied by a truncate (a file of its own) or row
// by row.
func (f purgeFixture) check(t *testing.T, s *store.Store, truncated bool) {
	t.Helper()
	ctx := testContext(t)
	n, err := s.PurgeQueue(ctx, f.q)
	if err != nil || n != int64(len(f.live)) {
		t.Fatalf("purge = %d, %v; want the %d live messages", n, err, len(f.live))
	}
	if got := queueFilenode(t, f.s, f.q) != f.filenode; got != truncated {
		t.Errorf("the queue's table was truncated: %v, want %v", got, truncated)
	}
	m, err := f.s.Metrics(ctx, f.q)
	if err != nil || m.Depth != 0 || m.Archived != 1 {
		t.Fatalf("after the purge: depth %d, archived %d (%v); want 0 and the archived one", m.Depth, m.Archived, err)
	}
	var left []int64
	if err := f.s.Pool().QueryRow(ctx, `SELECT coalesce(array_agg(msg_id ORDER BY msg_id), '{}') FROM pgbus.failures WHERE queue_name = $1`, f.q).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != f.archived {
		t.Errorf("failure history left for %v, want only the archived message's (%d)", left, f.archived)
	}
	// Ids go on from where they were: a dead letter or an audit entry
	// naming an old id never names a new message.
	id, err := f.s.Send(ctx, f.q, msg(`{}`))
	if err != nil || id <= f.archived {
		t.Errorf("the next message sent has id %d (%v), want one after %d", id, err, f.archived)
	}
}

// The owner's purge truncates the queue's table: a backlog of millions
// goes at once, without leaving a bloated table.
func TestPurgeQueueByItsOwnerTruncates(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	f := newPurgeFixture(t, s, newQueue(t, s))
	f.check(t, s, true)
}

// A session holding the queue's table (a long read, a transaction left
// open after one) would make a truncate wait, and the queue's readers and
// senders behind it: the purge deletes row by row instead, and the
// session keeps its transaction.
func TestPurgeQueueWhileASessionReadsIt(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	f := newPurgeFixture(t, s, newQueue(t, s))
	ctx := testContext(t)
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var seen int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pgmq.`+pgx.Identifier{"q_" + f.q}.Sanitize()).Scan(&seen); err != nil || seen != 4 {
		t.Fatalf("the reading session counts %d (%v), want 4", seen, err)
	}
	f.check(t, s, false)
	if err := tx.Commit(ctx); err != nil {
		t.Errorf("the reading session's transaction after the purge: %v", err)
	}
}

// A role with the operator's grants (no TRUNCATE) purges row by row.
func TestPurgeQueueByARoleThatMayNotTruncate(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	q := uniqueName("purge")
	pgtest.CreateQueue(t, owner, q)
	f := newPurgeFixture(t, owner, q)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role+
		"; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role+
		"; GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	f.check(t, openStore(t, roleURL), false)
}

// A worker's retry that holds a message's row as a row-by-row purge comes
// to it writes a failure the purge's statement cannot see: once the worker
// commits, the message goes, and so does that failure, rather than stay
// as history of no message that nothing would ever prune.
func TestPurgeQueueTakesTheFailureOfARetryItWaitedFor(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	f := newPurgeFixture(t, s, newQueue(t, s))
	ctx := testContext(t)
	// As RetryMany does: the message's row updated, its failure written.
	pid, commit := retryUnderWay(t, s, f.q, f.live[0])
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.PurgeQueue(ctx, f.q)
		done <- result{n, err}
	}()
	// The purge waits for the row, past the truncate it gave up on.
	pgtest.Eventually(t, time.Minute, "the purge to wait for the worker's row", func() bool { return blocks(t, s, pid, "WITH d AS (DELETE") })
	commit()
	r := <-done
	if r.err != nil || r.n != int64(len(f.live)) {
		t.Fatalf("purge = %d, %v; want the %d live messages", r.n, r.err, len(f.live))
	}
	var left []int64
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(array_agg(msg_id ORDER BY msg_id), '{}') FROM pgbus.failures WHERE queue_name = $1`, f.q).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != f.archived {
		t.Errorf("failure history left for %v, want only the archived message's (%d)", left, f.archived)
	}
}
