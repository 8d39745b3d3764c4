package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// deadRef is a dead message as the bulk operations need it.
type deadRef struct {
	dlq    string
	id     int64
	at     time.Time
	source string // the block's source_queue; "" when none
	group  string // the x-pgmq-group header; "" when none
	keyed  bool   // it carries an idempotency key a send could have written
	// deadline is its pgbus_deadline header; "" when none.
	deadline string
	// visibleAt is when a paced retry makes it visible (RetryOptions.Pace);
	// zero for at once.
	visibleAt time.Time
	// trips is its block's retries_from_dlq: how often it had been
	// retried out of a DLQ before it died this time.
	trips int
}

// deadlinePassed returns r's deadline and whether it is before now.
func (r deadRef) deadlinePassed(now time.Time) (time.Time, bool) {
	at, ok := ParseDeadline(r.deadline)
	return at, ok && at.Before(now)
}

var deadRefCols = `msg_id, enqueued_at, coalesce(` + sqlDeadBlock + `->>'source_queue', '') AS source_queue,
	coalesce(headers->>'` + HeaderPGMQGroup + `', '') AS grp, ` + sqlDeadKeyed + `,
	coalesce(CASE WHEN jsonb_typeof(headers) = 'object' THEN headers->>'` + HeaderDeadline + `' END, '') AS deadline,
	` + sqlDeadTrips + ` AS trips`

// sqlDeadKeyed tells whether a dead message's headers carry an
// idempotency key that a send could have written, which a retry hands on
// (sqlDeadRetryKey).
// A key a retry set (HeaderIdempotencyKeyKept) is none: no send wrote it.
var sqlDeadKeyed = fmt.Sprintf(`coalesce(jsonb_typeof(headers) = 'object' AND octet_length(headers->>'%s') BETWEEN 1 AND %d AND NOT headers ? '%s', false)`,
	HeaderIdempotencyKey, MaxIdempotencyKeyBytes, HeaderIdempotencyKeyKept)

func (s *Store) queryDeadRefs(ctx context.Context, sql string, args []any) ([]deadRef, error) {
	rows, err := s.reads.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (deadRef, error) {
		var d deadRef
		err := r.Scan(&d.dlq, &d.id, &d.at, &d.source, &d.group, &d.keyed, &d.deadline, &d.trips)
		return d, err
	})
}

// deadRefsByID returns those of ids that are in dlq, ordered by id.
func (s *Store) deadRefsByID(ctx context.Context, dlq string, ids []int64) ([]deadRef, error) {
	sql := `SELECT $1::text, ` + deadRefCols + ` FROM ` + queueTable(dlq) + ` WHERE msg_id = ANY($2) ORDER BY msg_id`
	refs, err := s.queryDeadRefs(ctx, sql, []any{dlq, ids})
	if isUndefinedTable(err) {
		return nil, s.dlqMissing(ctx, dlq)
	}
	return refs, wrapDead("read dead messages of "+dlq, err)
}

// eachDeadPage calls fn with the messages f selects, oldest first, in pages
// of deadBatch, up to limit in all; done counts the messages passed so far.
// It pages by keyset, so messages fn leaves in place are not seen twice.
// more reports that f selected at least one message past the limit: the
// last page asks for one more row than it passes to fn, so that a caller
// can say "more match" without a call that would find nothing.
//
// fn returns how many of refs were gone when it came to move them: another
// call retried or discarded them. Those do not count toward limit, so that
// of two calls racing over the same messages the one that finds them taken
// goes on to the next ones, and each moves up to its limit.
//
// A DLQ seen to hold nothing more that f selects is left out of the pages
// that follow: each page would otherwise scan it to its end again, which
// made a bulk operation over every DLQ quadratic in the size of those
// that hold none of what it selects. The callers bound f in time
// (deadFrozen), so no message it selects arrives meanwhile.
func (s *Store) eachDeadPage(ctx context.Context, f DeadFilter, limit int, fn func(refs []deadRef, done int) (gone int, err error)) (more bool, err error) {
	var after *deadCursor
	exhausted := map[string]bool{}
	for done := 0; done < limit; {
		n := min(deadBatch, limit-done)
		ask := n
		if n == limit-done {
			ask++ // the last page: one more tells whether more match
		}
		refs, err := s.deadPage(ctx, f, after, ask, exhausted)
		if err != nil || len(refs) == 0 {
			return false, wrapDead("page through dead messages", err)
		}
		more = len(refs) > n
		if more { // the row past the limit: counted, not passed
			refs = refs[:n]
		}
		last := refs[len(refs)-1]
		after = &deadCursor{T: last.at, Q: last.dlq, I: last.id}
		done += len(refs)
		gone, err := fn(refs, done)
		if err != nil {
			return false, err
		}
		done -= gone
	}
	return more, nil
}

// deadPage returns the first n messages f selects after the cursor, from
// the DLQs not yet exhausted, and marks those it finds exhausted.
func (s *Store) deadPage(ctx context.Context, f DeadFilter, after *deadCursor, n int, exhausted map[string]bool) ([]deadRef, error) {
	var refs []deadRef
	err := s.runDead(ctx, f, func(q *deadQuery) error {
		q.dlqs = slices.DeleteFunc(q.dlqs, func(d string) bool { return exhausted[d] })
		if len(q.dlqs) == 0 {
			refs = nil
			return nil
		}
		// Up to n of each DLQ, a chunk of DLQs to a statement.
		refs = nil
		err := inChunks(ctx, nil, q.dlqs, func(_ pgx.Tx, chunk []string) error {
			cq := q.chunk(chunk)
			got, err := s.queryDeadRefs(ctx, cq.pageQuery(deadRefCols, after, false, n, true), cq.args)
			refs = append(refs, got...)
			return err
		})
		if err == nil {
			refs = firstDead(refs, q.dlqs, n, exhausted)
		}
		return err
	})
	return refs, err
}

// firstDead returns the first n of refs, up to n from each DLQ of dlqs, in
// (enqueued_at, dlq, msg_id) order, and marks exhausted the DLQs that hold
// nothing after them: fewer than n rows, none of them past the n returned.
func firstDead(refs []deadRef, dlqs []string, n int, exhausted map[string]bool) []deadRef {
	slices.SortFunc(refs, func(a, b deadRef) int {
		return cmp.Or(a.at.Compare(b.at), strings.Compare(a.dlq, b.dlq), cmp.Compare(a.id, b.id))
	})
	rows, cut := map[string]int{}, map[string]bool{}
	for i, r := range refs {
		rows[r.dlq]++
		if i >= n {
			cut[r.dlq] = true
		}
	}
	for _, d := range dlqs {
		if rows[d] < n && !cut[d] {
			exhausted[d] = true
		}
	}
	return refs[:min(n, len(refs))]
}

// countDead counts the messages f selects, up to limit.
func (s *Store) countDead(ctx context.Context, f DeadFilter, limit int) (int, error) {
	n := 0
	err := s.runDead(ctx, f, func(q *deadQuery) error {
		n = 0
		// A chunk of DLQs to a statement, each counting up to what the
		// limit leaves.
		return inChunks(ctx, nil, q.dlqs, func(_ pgx.Tx, chunk []string) error {
			if n >= limit {
				return nil
			}
			cq := q.chunk(chunk)
			lim := cq.arg(limit - n)
			sql := `SELECT count(*) FROM (SELECT 1 FROM (` + cq.union("msg_id", nil, "LIMIT "+lim) + `) u LIMIT ` + lim + `) c`
			var c int
			err := s.reads.QueryRow(ctx, sql, cq.args...).Scan(&c)
			n += c
			return err
		})
	})
	return n, wrapDead("count dead messages", err)
}

// deadFrozen bounds f to messages dead-lettered before now, so that a bulk
// operation does not meet again the messages it retried and that died again
// while it ran.
func (s *Store) deadFrozen(ctx context.Context, f DeadFilter) (DeadFilter, error) {
	var now time.Time
	if err := s.reads.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return f, fmt.Errorf("store: read the server clock: %w", err)
	}
	if f.Until.IsZero() || f.Until.After(now) {
		f.Until = now
	}
	return f, nil
}

func validateDeadBulk(op string, f DeadFilter, limit int) error {
	if limit < 1 || limit > MaxDeadBulk {
		return invalidf("%s dead messages: limit %d is out of range; pass 1 to %d, and repeat the call for more", op, limit, MaxDeadBulk)
	}
	return f.validate()
}

func deadUniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
