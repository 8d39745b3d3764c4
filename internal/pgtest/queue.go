package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// CreateQueue creates queue name (and its DLQ) on st, failing the test on
// error, and drops it when the test ends.
func CreateQueue(tb testing.TB, st *store.Store, name string) {
	tb.Helper()
	if err := st.CreateQueue(Context(tb), name); err != nil {
		tb.Fatalf("create queue %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = st.DropQueue(context.Background(), name) })
}

// NewQueue creates a queue no other test uses, named prefix_ and random hex
// digits (Name), dropped when the test ends; it returns its name.
func NewQueue(tb testing.TB, st *store.Store, prefix string) string {
	tb.Helper()
	name := Name(prefix)
	CreateQueue(tb, st, name)
	return name
}

// FastSettings are queue's default settings with retries quick enough for
// tests while keeping the formula: base 100ms doubling, capped at 10s, and a
// visibility timeout of 5s.
func FastSettings(queue string) store.QueueSettings {
	q := store.DefaultQueueSettings(queue)
	q.RetryBackoff = 100 * time.Millisecond
	q.RetryBackoffMax = 10 * time.Second
	q.VisibilityTimeout = 5 * time.Second
	return q
}

// SetFastSettings stores FastSettings(queue), changed by edit when it is
// not nil, as queue's settings.
func SetFastSettings(tb testing.TB, st *store.Store, queue string, edit func(*store.QueueSettings)) {
	tb.Helper()
	set := FastSettings(queue)
	if edit != nil {
		edit(&set)
	}
	if err := st.SetQueueSettings(Context(tb), set); err != nil {
		tb.Fatalf("set the settings of %s: %v", queue, err)
	}
}

// NewFastQueue is NewQueue followed by SetFastSettings.
func NewFastQueue(tb testing.TB, st *store.Store, prefix string, edit func(*store.QueueSettings)) string {
	tb.Helper()
	name := NewQueue(tb, st, prefix)
	SetFastSettings(tb, st, name, edit)
	return name
}

// DLQStart returns a random large number, at least 2^41, for RestartDLQ:
// queues whose DLQ ids start there hold ids no other queue holds, although
// tests and packages share the database.
func DLQStart() int64 {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return 1<<41 + n.Int64()
}

// MissingDLQID returns an id no DLQ holds: far above the ids DLQStart
// returns.
func MissingDLQID() int64 {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return 1<<61 + n.Int64()
}

// RestartDLQ makes the next message id of queue's DLQ first: two queues
// restarted at the same first hold the same DLQ ids.
func RestartDLQ(tb testing.TB, st *store.Store, queue string, first int64) {
	tb.Helper()
	sql := fmt.Sprintf(`ALTER TABLE pgmq."q_%s_dlq" ALTER COLUMN msg_id RESTART WITH %d`, queue, first)
	if _, err := st.Pool().Exec(Context(tb), sql); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// DropOutside drops the tables of the physical queues named as PGMQ's
// drop_queue does, from outside pgbus: their queue and archive tables (the
// archive's if it exists) and their PGMQ entries, leaving pgbus's own entry
// and the DLQ.
func DropOutside(tb testing.TB, st *store.Store, physical ...string) {
	tb.Helper()
	for _, name := range physical {
		for _, sql := range []string{fmt.Sprintf(`DROP TABLE pgmq.%q`, "q_"+name), fmt.Sprintf(`DROP TABLE IF EXISTS pgmq.%q`, "a_"+name),
			fmt.Sprintf(`DELETE FROM pgmq.meta WHERE queue_name = '%s'`, name)} {
			if _, err := st.Pool().Exec(Context(tb), sql); err != nil {
				tb.Fatalf("drop the tables of queue %s: %v", name, err)
			}
		}
	}
}

// RestartIDs makes physical queue name hand its ids out from 1 again, as
// a queue dropped and made again outside pgbus (pgmq.drop_queue,
// pgmq.create) does: pgbus's own drop and create go on from the ids the
// name had.
func RestartIDs(tb testing.TB, st *store.Store, name string) {
	tb.Helper()
	if _, err := st.Pool().Exec(Context(tb), `SELECT setval(pg_get_serial_sequence($1, 'msg_id'), 1, false)`, fmt.Sprintf(`pgmq.%q`, "q_"+name)); err != nil {
		tb.Fatalf("restart the ids of queue %s: %v", name, err)
	}
}
