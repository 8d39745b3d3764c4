package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/plural"
)

// retryBatchMax is the most messages one transaction of a retry moves. A
// lane starts with one message, whose move is as it always was, and
// doubles its batch from there: a call of a few messages, or one stopped
// early, moves them as before, while a large one pays a commit, and its
// wait for the disk, for every retryBatchMax messages rather than for
// each. It also bounds what one statement bound (WithStatementTimeout),
// which covers a batch's moves together, must leave room for.
const retryBatchMax = 64

// retryRun is one retryParallel: the moves of refs, whose outcomes go to
// out, over a few lanes.
type retryRun struct {
	s      *Store
	ctx    context.Context // the caller's: its end stops the lanes between batches
	moves  context.Context // the moves': ctx, with a grace once it ends
	refs   []deadRef
	out    []deadRetryOutcome
	places retryPlaces
	opts   RetryOptions
	// traces and dones are each message's trace context and the end of its
	// span (deadRetryTrace), once traced; each index is one lane's alone.
	traces []*TraceContext
	dones  []func(string, int64, error)
	traced []bool

	mu     sync.Mutex
	gaveUp error
}

// goOn tells whether a lane may start another batch or move.
func (r *retryRun) goOn() bool {
	if r.ctx.Err() != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gaveUp == nil
}

// giveUp records err, a move's failure, as the one that stops every lane
// when it is a statement bound passed or the database out of reach (see
// retryParallel), and reports whether it is.
func (r *retryRun) giveUp(err error) bool {
	if err == nil || r.ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) && !IsUnreachable(err) {
		return false
	}
	r.stop(err)
	return true
}

// stop stops every lane with err, unless the caller's end stopped them:
// the call then returns its own error.
func (r *retryRun) stop(err error) {
	if r.ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gaveUp == nil {
		r.gaveUp = err
	}
}

// lane moves the messages of refs at mine, in their order: a batch at a
// time, each batch twice the one before up to retryBatchMax.
func (r *retryRun) lane(mine []int) {
	size := 1
	for len(mine) > 0 && r.goOn() {
		n := min(size, len(mine))
		mine = mine[r.some(mine[:n]):]
		size = min(2*size, retryBatchMax)
	}
}

// trace reads the trace context of the message at i, once; false when it
// cannot be moved (gone, or its trace context unreadable), its outcome
// then set.
func (r *retryRun) trace(i int) bool {
	if r.out[i].err != nil {
		return false
	}
	if r.traced[i] {
		return true
	}
	tc, done, err := deadRetryTrace(r.moves, r.s.db, r.refs[i], r.opts)
	if err != nil {
		r.out[i].err = err
		return false
	}
	r.traces[i], r.dones[i], r.traced[i] = tc, done, true
	return true
}

// finish sets the outcome of the message at i and ends its span.
func (r *retryRun) finish(i int, o deadRetryOutcome) {
	r.out[i] = o
	r.endSpan(i, o.target, o.newID, o.err)
}

func (r *retryRun) endSpan(i int, target string, newID int64, err error) {
	if done := r.dones[i]; done != nil {
		r.dones[i] = nil
		done(target, newID, err)
	}
}

// one moves the message at i in a transaction of its own.
func (r *retryRun) one(i int) {
	if !r.trace(i) {
		return
	}
	o := r.s.moveWithFallback(r.moves, r.refs[i], r.out[i].target, r.places, r.opts, r.traces[i])
	r.finish(i, o)
	r.giveUp(o.err)
}

// some moves the messages at idx, in their order, in one transaction,
// and returns how many of idx it dealt with: all, or, when the move of
// one of them failed, up to that one. The messages before it are moved
// again, a batch, and it on its own (one), which says why it failed as a
// retry of it alone would; a failure no message is known for (a lock of
// the batch's, its commit refused) has each moved on its own instead. A
// batch cut off by a statement bound, a database out of reach or the end
// of the grace stops the lanes: its messages did not move, or, when its
// commit went unanswered, are listed as unsure.
func (r *retryRun) some(idx []int) int {
	if len(idx) == 1 {
		r.one(idx[0])
		return 1
	}
	var batch []int
	for _, i := range idx {
		if r.trace(i) {
			batch = append(batch, i)
		}
	}
	if len(batch) == 0 {
		return len(idx)
	}
	refs, targets, tcs := make([]deadRef, len(batch)), make([]string, len(batch)), make([]*TraceContext, len(batch))
	for j, i := range batch {
		refs[j], targets[j], tcs[j] = r.refs[i], r.out[i].target, r.traces[i]
	}
	ids, f := r.s.retryBatch(r.moves, refs, targets, tcs, r.opts)
	switch {
	case f == nil:
		for j, i := range batch {
			o := deadRetryOutcome{target: targets[j], newID: ids[j]}
			if ids[j] == 0 {
				o.err = deadGoneErr(refs[j].dlq, refs[j].id)
			}
			r.finish(i, o)
		}
		return len(idx)
	case f.unsure || r.giveUp(f.err) || r.ctx.Err() != nil || r.moves.Err() != nil:
		if f.unsure {
			// Whatever broke at the commit, the call stops there: the
			// report lists these as unsure only for a call stopped.
			r.stop(f.err)
		}
		for j, i := range batch {
			if f.unsure {
				r.finish(i, deadRetryOutcome{target: targets[j], err: f.err, unsure: true})
			} else {
				r.endSpan(i, targets[j], 0, f.err) // not moved, and left untried
			}
		}
		return len(idx)
	case f.at >= 0:
		at := slices.Index(idx, batch[f.at])
		for done := 0; done < at && r.goOn(); {
			done += r.some(idx[done:at])
		}
		if r.goOn() {
			r.one(idx[at])
		}
		return at + 1
	}
	for _, i := range idx {
		if !r.goOn() {
			break
		}
		r.one(i)
	}
	return len(idx)
}

// batchFailure is why a batch of moves did not commit.
type batchFailure struct {
	err error
	// at is the index of the message whose move failed; -1 when the batch
	// failed at none (its locks, its commit, its connection).
	at int
	// unsure: its commit was sent, and whether it committed is not known
	// (OutcomeUnknown).
	unsure bool
}

// retryBatch moves refs, each to its target (with its trace context,
// tcs), in one transaction at READ COMMITTED on one connection: every one
// that was still in its DLQ moves, or none does. It returns the new ids,
// 0 for a message gone from its DLQ meanwhile, or why nothing moved.
//
// The transaction first locks the batch's rows, DLQ by DLQ in name order
// and by id, as a guarded retry or a discard does (lockDead,
// ArchiveMany), then the idempotency keys of its keyed messages in the
// order of their locks' ids, as a keyed send does (lockDeadKeysSQL), and
// then moves each message with the statement of a move on its own
// (deadRetrySQL), in the order of refs, each with a snapshot taken once
// the locks are held. The moves go in one round trip, its commit in
// another: a connection that breaks before the commit was sent leaves
// nothing moved, known so, and only one that breaks at the commit leaves
// the batch unsure. The statement bound (WithStatementTimeout) bounds
// each of the two round trips.
func (s *Store) retryBatch(ctx context.Context, refs []deadRef, targets []string, tcs []*TraceContext, opts RetryOptions) ([]int64, *batchFailure) {
	ids, f := s.retryBatchOnce(ctx, refs, targets, tcs, opts)
	// As s.db does for one statement: once more on a checked connection
	// when the first was dead and nothing was sent.
	for try := 0; try < maxReruns && f != nil && !f.unsure && s.db.retry(ctx, f.err); try++ {
		ids, f = s.retryBatchOnce(withForcedPing(ctx), refs, targets, tcs, opts)
	}
	if f != nil {
		f.err = poolerHint(f.err, s.closing)
	}
	return ids, f
}

func (s *Store) retryBatchOnce(ctx context.Context, refs []deadRef, targets []string, tcs []*TraceContext, opts RetryOptions) ([]int64, *batchFailure) {
	by := deadByDLQ(refs)
	dlqs := slices.Sorted(maps.Keys(by))
	what := fmt.Sprintf(`retry %s of "%s"`, plural.Count(len(refs), "dead message", "dead messages"), strings.Join(dlqs, `", "`))
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	if d := lockBound(ctx); d > 0 {
		b.Queue(`SELECT pg_catalog.set_config('lock_timeout', CASE WHEN cur.ms > 0 AND cur.ms < $1::bigint THEN cur.ms ELSE $1::bigint END::text, true)
			FROM (SELECT (pg_catalog.date_part('epoch', pg_catalog.current_setting('lock_timeout')::interval) * 1000)::bigint AS ms) cur`, max(d.Milliseconds(), 1))
	}
	for _, dlq := range dlqs {
		b.Queue(`SELECT 1 FROM `+queueTable(dlq)+` WHERE msg_id = ANY($1) ORDER BY msg_id FOR UPDATE`, by[dlq])
	}
	if sql, args := lockDeadKeysSQL(refs, targets); sql != "" {
		b.Queue(sql, args...)
	}
	locks := b.Len()
	for j, r := range refs {
		sql, args := deadRetrySQL(r, targets[j], nil, tcs[j], opts.ClearDeadline, false)
		b.Queue(sql, args...)
	}

	moves, cancel := boundStatement(ctx)
	defer cancel()
	conn, err := s.pool.Acquire(moves)
	if err != nil {
		return nil, &batchFailure{err: fmt.Errorf("store: %s: %w", what, err), at: -1}
	}
	// A connection left in a transaction, after a failure, is closed by
	// the pool on release, which rolls it back, unless the ROLLBACK below
	// got through.
	defer conn.Release()
	failed := func(err error, at int) *batchFailure {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = conn.Exec(c, "ROLLBACK")
		if at >= 0 {
			return &batchFailure{err: fmt.Errorf("store: retry message %d from %q into %q: %w", refs[at].id, refs[at].dlq, targets[at], err), at: at}
		}
		return &batchFailure{err: fmt.Errorf("store: %s: %w", what, err), at: -1}
	}
	br := conn.SendBatch(moves, b)
	for range locks {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, failed(err, -1)
		}
	}
	ids := make([]int64, len(refs))
	for j := range refs {
		err := br.QueryRow().Scan(&ids[j])
		if errors.Is(err, pgx.ErrNoRows) {
			ids[j] = 0 // retried or discarded by another call meanwhile
			continue
		}
		if err != nil {
			_ = br.Close()
			return nil, failed(err, j)
		}
	}
	if err := br.Close(); err != nil {
		return nil, failed(err, -1)
	}
	cancel()

	commit, cancel := boundStatement(ctx)
	defer cancel()
	if err := commit.Err(); err != nil { // the grace ended: nothing was sent
		return nil, failed(err, -1)
	}
	tag, err := conn.Exec(commit, "COMMIT")
	switch {
	case err != nil:
		// A commit refused (a deferred trigger, a full notification
		// queue) moved nothing. One that got no answer may have: pgx
		// may say of it that it was never sent ("conn closed", safe to
		// retry) when its connection broke as it was written, so any
		// error but the server's is taken for that.
		return nil, &batchFailure{err: fmt.Errorf("store: %s: commit: %w", what, err), at: -1, unsure: !errors.As(err, new(*pgconn.PgError))}
	case tag.String() != "COMMIT":
		return nil, &batchFailure{err: fmt.Errorf("store: %s: the transaction was rolled back at its commit (%s)", what, tag), at: -1}
	}
	return ids, nil
}

// lockDeadKeysSQL is one statement that takes the lock of lockDeadKeySQL
// for each keyed message of refs, going to targets, in the order of the
// locks' ids, as a keyed send of many messages takes its keys' locks
// (sendKeyed): two transactions that share keys wait for each other
// rather than deadlock. "" when no message of refs is keyed.
func lockDeadKeysSQL(refs []deadRef, targets []string) (string, []any) {
	type keyed struct {
		ids     []int64
		targets []string
	}
	by := map[string]*keyed{}
	for j, r := range refs {
		if !r.keyed {
			continue
		}
		k := by[r.dlq]
		if k == nil {
			k = &keyed{}
			by[r.dlq] = k
		}
		k.ids, k.targets = append(k.ids, r.id), append(k.targets, targets[j])
	}
	if len(by) == 0 {
		return "", nil
	}
	var parts []string
	var args []any
	for _, dlq := range slices.Sorted(maps.Keys(by)) {
		args = append(args, by[dlq].ids, by[dlq].targets)
		parts = append(parts, fmt.Sprintf(`SELECT %s AS h FROM %s d JOIN unnest($%d::bigint[], $%d::text[]) AS t(id, q) ON d.msg_id = t.id WHERE %s`,
			keyLockSQL("t.q", "(d.headers->>'"+HeaderIdempotencyKey+"')"), queueTable(dlq), len(args)-1, len(args), sqlDeadKeyed))
	}
	// The subquery's order is the order the locks are taken in.
	return `SELECT pg_advisory_xact_lock(l.h) FROM (SELECT DISTINCT u.h FROM (` + strings.Join(parts, " UNION ALL ") + `) u ORDER BY 1) AS l`, args
}
