package store

import (
	"context"
	"fmt"
	"time"
)

// Outcomes are the settled attempts of one queue counted in pgbus.stats_minute
// over some span: completed, failed and run again, dead-lettered, discarded.
type Outcomes struct {
	Succeeded    int64 `json:"succeeded"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"dead_lettered"`
	Discarded    int64 `json:"discarded"`
}

// Total is the number of attempts the outcomes count.
func (o Outcomes) Total() int64 { return o.Succeeded + o.Retried + o.DeadLettered + o.Discarded }

// ThroughputSpan is a window cut into equal buckets: Buckets of Step, the
// first starting at First. Step is a whole number of minutes, since the
// counters are per minute.
type ThroughputSpan struct {
	First   time.Time
	Step    time.Duration
	Buckets int
}

// MaxThroughputBuckets bounds ThroughputSpan.Buckets: a day of minutes.
const MaxThroughputBuckets = 24 * 60

func (sp ThroughputSpan) validate() error {
	if sp.Step < time.Minute || sp.Step%time.Minute != 0 {
		return fmt.Errorf("store: throughput: a bucket must be a whole number of minutes, not %s", sp.Step)
	}
	if sp.Buckets < 1 || sp.Buckets > MaxThroughputBuckets {
		return fmt.Errorf("store: throughput: %d buckets asked for; between 1 and %d are possible", sp.Buckets, MaxThroughputBuckets)
	}
	return nil
}

// ThroughputSeries is one queue's outcomes per bucket of a span, every
// bucket present, oldest first; bucket i starts at First + i*Step.
type ThroughputSeries struct {
	Queue   string
	Buckets []Outcomes
}

// Throughput returns the outcomes per bucket of sp of one queue, or of
// every queue with counters in sp when queue is "", in one statement. A
// named queue is always returned, its buckets zero when nothing was
// counted; of every queue, only those with counters in sp are, by name
// byte by byte, whatever the database's collation.
func (s *Store) Throughput(ctx context.Context, queue string, sp ThroughputSpan) ([]ThroughputSeries, error) {
	if err := sp.validate(); err != nil {
		return nil, err
	}
	if queue != "" {
		if err := ValidatePhysicalName(queue); err != nil {
			return nil, err
		}
	}
	first := sp.First.UTC().Truncate(time.Minute)
	step := int64(sp.Step / time.Second)
	// The counters are summed per queue and bucket first, so that the
	// series (generate_series) joins at most one row per bucket; the
	// named queue is listed even without counters.
	// Each parameter is cast: the simple protocol writes them into the
	// statement as quoted literals, of no type, and "$2 * $3" would then
	// name no one operator.
	rows, err := s.reads.Query(ctx, `
		WITH c AS (
			SELECT queue_name, (extract(epoch FROM minute - $1::timestamptz)::bigint / $2::bigint)::int AS i,
			       sum(succeeded) AS ok, sum(retried) AS again, sum(dead_lettered) AS dead, sum(discarded) AS gone
			FROM pgbus.stats_minute
			WHERE minute >= $1::timestamptz AND minute < $1::timestamptz + $2::bigint * $3::int * interval '1 second'
			  AND ($4::text = '' OR queue_name = $4::text)
			GROUP BY 1, 2),
		q AS (SELECT DISTINCT queue_name FROM c UNION SELECT $4::text WHERE $4::text <> '')
		SELECT q.queue_name, b.i, coalesce(c.ok, 0)::bigint, coalesce(c.again, 0)::bigint,
		       coalesce(c.dead, 0)::bigint, coalesce(c.gone, 0)::bigint
		FROM q CROSS JOIN generate_series(0, $3::int - 1) AS b(i)
		LEFT JOIN c ON c.queue_name = q.queue_name AND c.i = b.i
		ORDER BY q.queue_name COLLATE "C", b.i`, first, step, sp.Buckets, queue)
	if err != nil {
		return nil, fmt.Errorf("store: read throughput: %w", err)
	}
	defer rows.Close()
	var out []ThroughputSeries
	for rows.Next() {
		var name string
		var i int
		var o Outcomes
		if err := rows.Scan(&name, &i, &o.Succeeded, &o.Retried, &o.DeadLettered, &o.Discarded); err != nil {
			return nil, fmt.Errorf("store: read throughput: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Queue != name {
			out = append(out, ThroughputSeries{Queue: name, Buckets: make([]Outcomes, sp.Buckets)})
		}
		out[len(out)-1].Buckets[i] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read throughput: %w", err)
	}
	return out, nil
}
