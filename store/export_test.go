package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SetAuditPruneBatch makes PruneAudit delete n entries per statement until
// the test ends, so that a test prunes over several batches with few rows.
//
// Other tests' calls read the setting: a test that changes it does not
// run in parallel.
func SetAuditPruneBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &auditPruneBatch, n)
}

// SetRunNowBatch makes RunNow make n messages visible per statement until
// the test ends. A test that changes it does not run in parallel.
func SetRunNowBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &runNowBatch, n)
}

// MigrationLockKey is the advisory lock key that serialises migrations.
const MigrationLockKey = migrationLockKey

// SetMigrationLockWaits shortens the bounds on the lock waits of
// migrations for the length of the test: each lock wait (lock_timeout),
// the first pause before a retry, the time a migration may be retried for,
// and the wait for the migration lock.
//
// Other tests' calls read the setting: a test that changes it does not
// run in parallel.
func SetMigrationLockWaits(tb testing.TB, wait, pause, retryFor, turn time.Duration) {
	old := [4]time.Duration{migrationLockWait, migrationRetryPause, migrationRetryFor, migrationTurnWait}
	migrationLockWait, migrationRetryPause, migrationRetryFor, migrationTurnWait = wait, pause, retryFor, turn
	tb.Cleanup(func() {
		migrationLockWait, migrationRetryPause, migrationRetryFor, migrationTurnWait = old[0], old[1], old[2], old[3]
	})
}

// RepairDLQ runs the repair Migrate runs on a DLQ that lacks something.
func RepairDLQ(ctx context.Context, s *Store, dlq string) (bool, error) { return s.repairDLQ(ctx, dlq) }

// DeadQueues lists every DLQ as the operations over all of them read them.
func DeadQueues(ctx context.Context, s *Store) ([]string, error) { return s.deadQueues(ctx) }

// RunDead runs read as a read of the DLQs f selects, as the operations
// over every DLQ run theirs (runDead): read gets the DLQs listed for it,
// and is run again with the DLQs listed anew when the DLQs changed under it.
func RunDead(ctx context.Context, s *Store, f DeadFilter, read func(dlqs []string) error) error {
	return s.runDead(ctx, f, func(q *deadQuery) error { return read(q.dlqs) })
}

// DeadBatch is the number of messages of one page of a bulk operation.
const DeadBatch = deadBatch

// PruneGoneFailures runs the step of retention that deletes the failure
// history of queues dropped outside pgbus, batch rows to a statement.
func PruneGoneFailures(ctx context.Context, s *Store, batch int) (int64, error) {
	return s.pruneGoneFailures(ctx, batch)
}

// SetPurgeBatch makes PurgeDead delete n archived rows per statement until
// the test ends, so that a test purges over several batches with few rows.
//
// Other tests' calls read the setting: a test that changes it does not
// run in parallel.
func SetPurgeBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &purgeBatch, n)
}

// ListDiscardedSQL is ListDiscarded's query and its arguments, to be
// explained.
func ListDiscardedSQL(dlq string, f DiscardedFilter, limit int) (string, []any) {
	return listDiscardedSQL(dlq, f, nil, limit)
}

// RestoreSortSQL is the query by which RestoreDead sorts ids into those it
// restores and those it refuses, and its arguments, to be explained.
func RestoreSortSQL(dlq string, ids []int64) (string, []any) { return restoreSortSQL(dlq, ids) }

// WithoutConflictRetries returns ctx for statements that return a
// conflict with another transaction (a deadlock, a serialization failure)
// as their error rather than run again.
func WithoutConflictRetries(ctx context.Context) context.Context {
	return context.WithValue(ctx, noConflictRetries{}, true)
}

// HoldAside takes the one connection a Store may make beside its
// exhausted pool, as a question asked on it would, until release.
func (s *Store) HoldAside() (release func()) {
	s.aside <- struct{}{}
	return func() { <-s.aside }
}

// OnRecordRead runs f when Migrate on s has read which migrations are
// recorded, before it applies any: where another process may apply some.
func OnRecordRead(s *Store, f func()) { s.recordRead = f }

// OpenSockets counts the network connections of s, a Store Open made,
// that are not closed yet.
func OpenSockets(s *Store) int {
	s.sockets.mu.Lock()
	defer s.sockets.mu.Unlock()
	return len(s.sockets.open)
}

// Setting reads the setting name as the store's statements see it: on
// their own (QueryRow) and, in, as the first statement of a transaction
// the store begins (BeginTx). Both run under ctx, so under its lock bound
// when WithLockWait set one.
func Setting(ctx context.Context, s *Store, name string) (alone, in string, err error) {
	if err := s.reads.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&alone); err != nil {
		return "", "", err
	}
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return "", "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	err = tx.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&in)
	return alone, in, err
}

// ObserveSummaryScans returns ctx under which summaries record the DLQs
// they read message by message, and a function that returns them.
// With indexAlways, they read through the group index every DLQ that has
// one, whatever it costs; else they choose as they do outside tests.
func ObserveSummaryScans(ctx context.Context, indexAlways bool) (context.Context, func() []string) {
	p := &summaryProbe{indexAlways: indexAlways}
	return context.WithValue(ctx, summaryProbeKey{}, p), func() []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Clone(p.scanned)
	}
}

// ObserveSummaryProbes returns ctx under which summaries count the groups
// whose first time, samples and newest message they probe through the
// pgbus.dlq_group_counts way, and a function that returns the count.
func ObserveSummaryProbes(ctx context.Context) (context.Context, func() int) {
	p := &summaryProbe{}
	return context.WithValue(ctx, summaryProbeKey{}, p), func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.probed
	}
}

// ForceSummaryScan returns ctx under which summaries read every DLQ
// message by message, as they did before any other way: what the other
// ways are tested against.
func ForceSummaryScan(ctx context.Context) context.Context {
	return context.WithValue(ctx, summaryProbeKey{}, &summaryProbe{scanOnly: true})
}

// AuditListSQL is the statement of one page of ListAudit, and its
// arguments, for a test of its plan.
func AuditListSQL(f AuditFilter, before, mark int64, limit int) (string, []any) {
	return auditListSQL(f, before, mark, limit)
}

// SetStatsPruneBatch makes retention delete n counters per statement until
// the test ends. A test that changes it does not run in parallel.
func SetStatsPruneBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &statsPruneBatch, n)
}

// DropLockTryMax is the longest a try of a queue drop waits for its
// tables.
const DropLockTryMax = dropLockTryMax

// TableStatesSQL is the statement a depth read first runs, on the names
// of the queue tables and DLQs it reads ($1, text[]).
var TableStatesSQL = tableStatesSQL

// DeadHoldingSQL is the statement that picks, of the DLQs named in $1
// (text[]), those that may hold messages.
var DeadHoldingSQL = deadHoldingSQL

// DepthReadSQL is the statement, with its arguments, that a depth read
// runs on the table of queue q (a queue without priority levels), as the
// state of its table now chooses it: counted or estimated.
func DepthReadSQL(ctx context.Context, s *Store, q string) (string, []any, error) {
	states, err := s.tableStates(ctx, []string{q}, false)
	if err != nil {
		return "", nil, err
	}
	sql, args := depthSQL([]depthArm{s.workArm(0, 0, q, states[q], depthRead{})})
	return sql, args, nil
}

// SetArchiveFindBatch makes a retention pass look into n archives per
// statement for rows to prune until the test ends. A test that changes it
// does not run in parallel.
func SetArchiveFindBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &archiveFindBatch, n)
}

// SetKeysPruneBatch makes retention delete at most n idempotency keys per
// statement until the test ends. A test that changes it does not run in
// parallel.
func SetKeysPruneBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &keysPruneBatch, n)
}

// SetForgetBatch makes a queue drop delete n rows of its messages' failure
// history, or idempotency keys, per statement once it committed, until
// the test ends. A test that changes it does not run in parallel.
func SetForgetBatch(tb testing.TB, n int) {
	setUntilEnd(tb, &forgetBatch, n)
}

// setUntilEnd sets *p to v until the test ends.
func setUntilEnd[T any](tb testing.TB, p *T, v T) {
	old := *p
	*p = v
	tb.Cleanup(func() { *p = old })
}
