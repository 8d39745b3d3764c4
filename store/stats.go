package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// LatencyBuckets is the length of StatsDelta.LatencyBuckets: bucket 0 counts
// latencies under 0.5 ms, bucket i those in [2^(i-2), 2^(i-1)) ms, the last
// everything above (about 2^(LatencyBuckets-3) ms, 4.6 hours).
const LatencyBuckets = 26

// StatsDelta is what a worker counted for one queue, kind and minute since
// its last flush.
type StatsDelta struct {
	Minute time.Time
	Queue  string
	// Table is the object id of the table the counted messages were read
	// from (Message.Table), or 0. When set, the counts are written only
	// while that table exists: those of a queue dropped since they were
	// counted are left out, even once a queue is made again under its
	// name, which ran none of them.
	Table          uint32
	Kind           string
	Succeeded      int64
	Failed         int64
	Retried        int64
	DeadLettered   int64
	Discarded      int64
	Snoozed        int64
	LatencyCount   int64
	LatencySumMS   float64
	LatencyBuckets [LatencyBuckets]int64
}

// Add adds the counts of o to d's.
func (d *StatsDelta) Add(o StatsDelta) {
	d.Succeeded += o.Succeeded
	d.Failed += o.Failed
	d.Retried += o.Retried
	d.DeadLettered += o.DeadLettered
	d.Discarded += o.Discarded
	d.Snoozed += o.Snoozed
	d.LatencyCount += o.LatencyCount
	d.LatencySumMS += o.LatencySumMS
	for i := range d.LatencyBuckets {
		d.LatencyBuckets[i] += o.LatencyBuckets[i]
	}
}

// LatencyBucket returns the bucket of a latency.
func LatencyBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	b, limit := 0, 0.5
	for ms >= limit && b < LatencyBuckets-1 {
		b++
		limit *= 2
	}
	return b
}

// AddStats adds counters to the per-minute table. The counters of a queue
// that does not exist are left out, as are those whose Table no longer
// exists: those of a queue dropped while its workers ran, counted before
// the drop and written after it, would otherwise stay as the counts of a
// queue made again under its name, which starts at zero. A drop or
// creation of one of the queues under way (which takes the lock of its
// name) is not waited for: that queue's deltas are left unwritten and
// returned in a *StatsDeferredError, the others written, so that a drop
// waiting for its tables holds up no flush; the same deltas added once it
// is over are written, or left out if their queue or Table is gone.
// Deltas of one queue, kind and minute are added up.
func (s *Store) AddStats(ctx context.Context, deltas []StatsDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	var deferred []StatsDelta
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// The lock a drop or creation of each queue takes (lockNames),
		// shared, held to the commit: READ COMMITTED, the statements
		// after it see a drop that committed before. Tried, not waited
		// for, so that no order of them matters.
		names := make([]string, 0, len(deltas))
		for _, d := range deltas {
			names = append(names, d.Queue)
		}
		slices.Sort(names)
		var busy []string
		err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(n), '{}') FROM unnest($1::text[]) AS n
			WHERE NOT pg_try_advisory_xact_lock_shared(hashtext('pgbus.queue:' || n))`, slices.Compact(names)).Scan(&busy)
		if err != nil {
			return err
		}
		var free []StatsDelta
		for _, d := range deltas {
			if slices.Contains(busy, d.Queue) {
				deferred = append(deferred, d)
			} else {
				free = append(free, d)
			}
		}
		live, err := liveStats(ctx, tx, free)
		if err != nil || len(live) == 0 {
			return err
		}
		return insertStats(ctx, tx, live)
	})
	if err != nil {
		return fmt.Errorf("store: add stats: %w", err)
	}
	if len(deferred) > 0 {
		return &StatsDeferredError{Deferred: deferred}
	}
	return nil
}

// StatsDeferredError is AddStats having written every delta but those of
// queues a drop or creation of was under way for: Deferred holds them, to
// be added again later.
type StatsDeferredError struct {
	Deferred []StatsDelta
}

// Error names the queues whose counters were left for later.
func (e *StatsDeferredError) Error() string {
	var names []string
	for _, d := range e.Deferred {
		if !slices.Contains(names, d.Queue) {
			names = append(names, d.Queue)
		}
	}
	return fmt.Sprintf("store: add stats: the counters of queues %s were not written, as a drop or creation of them was under way: add them again once it is over",
		strings.Join(names, ", "))
}

// insertStats adds deltas, whose keys are unique, to the per-minute table
// in one statement, but for those of queues that do not exist.
func insertStats(ctx context.Context, tx pgx.Tx, deltas []StatsDelta) error {
	n := len(deltas)
	minutes := make([]time.Time, n)
	queues, kinds := make([]string, n), make([]string, n)
	counts := make([][]int64, 7)
	for i := range counts {
		counts[i] = make([]int64, n)
	}
	sums := make([]float64, n)
	buckets := make([]string, n)
	for i, d := range deltas {
		minutes[i], queues[i], kinds[i] = d.Minute.UTC().Truncate(time.Minute), d.Queue, d.Kind
		for j, v := range []int64{d.Succeeded, d.Failed, d.Retried, d.DeadLettered, d.Discarded, d.Snoozed, d.LatencyCount} {
			counts[j][i] = v
		}
		sums[i] = d.LatencySumMS
		buckets[i] = pgArray(d.LatencyBuckets[:])
	}
	// Keys are unique (liveStats): ON CONFLICT cannot touch a row twice.
	_, err := tx.Exec(ctx, `
		INSERT INTO pgbus.stats_minute AS s (minute, queue_name, kind, succeeded, failed, retried, dead_lettered,
			discarded, snoozed, latency_count, latency_sum_ms, latency_buckets)
		SELECT t.minute, t.queue, t.kind, t.s, t.f, t.r, t.d, t.x, t.z, t.lc, t.ls, t.lb::bigint[]
		FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[],
			$7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::float8[], $12::text[])
			AS t(minute, queue, kind, s, f, r, d, x, z, lc, ls, lb)
		WHERE EXISTS (SELECT 1 FROM pgbus.queues q WHERE q.queue_name = t.queue)
		   OR EXISTS (SELECT 1 FROM pgmq.meta m WHERE m.queue_name = t.queue)
		ON CONFLICT (queue_name, minute, kind) DO UPDATE SET
			succeeded = s.succeeded + excluded.succeeded,
			failed = s.failed + excluded.failed,
			retried = s.retried + excluded.retried,
			dead_lettered = s.dead_lettered + excluded.dead_lettered,
			discarded = s.discarded + excluded.discarded,
			snoozed = s.snoozed + excluded.snoozed,
			latency_count = s.latency_count + excluded.latency_count,
			latency_sum_ms = s.latency_sum_ms + excluded.latency_sum_ms,
			latency_buckets = (
				SELECT array_agg(coalesce(a, 0) + coalesce(b, 0) ORDER BY i)
				FROM unnest(s.latency_buckets, excluded.latency_buckets) WITH ORDINALITY AS u(a, b, i))`,
		minutes, queues, kinds, counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], sums, buckets)
	return err
}

// liveStats returns deltas without those whose Table no longer exists,
// with the counts of one queue, kind and minute added up: a worker counts
// them apart per table read (the levels of a queue with priorities).
func liveStats(ctx context.Context, tx pgx.Tx, deltas []StatsDelta) ([]StatsDelta, error) {
	var tables []int64
	for _, d := range deltas {
		if d.Table != 0 && !slices.Contains(tables, int64(d.Table)) {
			tables = append(tables, int64(d.Table))
		}
	}
	live := map[uint32]bool{}
	if len(tables) > 0 {
		rows, err := tx.Query(ctx, `SELECT t FROM unnest($1::bigint[]) AS t
			WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = t::oid AND c.relnamespace = 'pgmq'::regnamespace)`, tables)
		if err != nil {
			return nil, err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, err
		}
		for _, t := range found {
			live[uint32(t)] = true
		}
	}
	type key struct {
		minute      int64
		queue, kind string
	}
	at := map[key]int{}
	out := make([]StatsDelta, 0, len(deltas))
	for _, d := range deltas {
		if d.Table != 0 && !live[d.Table] {
			continue
		}
		d.Minute = d.Minute.UTC().Truncate(time.Minute)
		k := key{d.Minute.Unix(), d.Queue, d.Kind}
		if i, ok := at[k]; ok {
			out[i].Add(d)
			continue
		}
		at[k] = len(out)
		out = append(out, d)
	}
	return out, nil
}

// pgArray renders integers as a PostgreSQL array literal.
func pgArray(v []int64) string {
	b := make([]byte, 0, 4*len(v)+2)
	b = append(b, '{')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(append(b, '}'))
}
