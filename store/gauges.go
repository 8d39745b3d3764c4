package store

import (
	"context"
	"errors"
	"fmt"
)

// QueueDepth is how many messages one logical queue holds in each state,
// and its DLQ's depth: what a metrics scrape reads, cheaply. Unlike
// QueueStats it reads no archive and no per-minute counters.
type QueueDepth struct {
	Queue string
	// Visible + InFlight + WaitingRetry + Scheduled is the queue's depth,
	// split as QueueStats splits it.
	Visible      int64
	InFlight     int64
	WaitingRetry int64
	Scheduled    int64
	// OldestVisibleAgeSeconds is how long the oldest ready message has
	// waited since it was enqueued; 0 when none is ready.
	OldestVisibleAgeSeconds float64
	// DLQDepth is the number of messages in the queue's DLQ, from its
	// groups' counts where they are kept (no scan of the DLQ).
	DLQDepth int64
}

// QueueDepths returns the depth of every work queue, by name. It reads
// each live queue table once (they hold the backlog, not the history) and
// each DLQ's group counts; a queue dropped while they are read is left out.
func (s *Store) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	queues, err := s.WorkQueues(ctx)
	if err != nil {
		return nil, err
	}
	levels, err := s.priorityLevels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]QueueDepth, 0, len(queues))
	for _, q := range queues {
		d, err := s.queueDepth(ctx, q, physicalNames(q, levels[q]))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (s *Store) queueDepth(ctx context.Context, queue string, physical []string) (QueueDepth, error) {
	d := QueueDepth{Queue: queue}
	for _, p := range physical {
		var depth, visible, scheduled, retrying int64
		var oldest float64
		err := s.reads.QueryRow(ctx, `
			SELECT count(*),
			       count(*) FILTER (WHERE vt <= now()),
			       count(*) FILTER (WHERE vt > now() AND read_ct = 0),
			       count(*) FILTER (WHERE vt > now() AND read_ct > 0 AND EXISTS (
			           SELECT 1 FROM pgbus.failures f WHERE f.queue_name = $1 AND f.msg_id = q.msg_id AND f.attempt = q.read_ct)),
			       coalesce(extract(epoch FROM now() - min(enqueued_at) FILTER (WHERE vt <= now())), 0)
			FROM `+queueTable(p)+` q`, p).Scan(&depth, &visible, &scheduled, &retrying, &oldest)
		if err != nil {
			return d, queueErr(err, "read the depth of", p)
		}
		d.Visible += visible
		d.Scheduled += scheduled
		d.WaitingRetry += retrying
		d.InFlight += depth - visible - scheduled - retrying
		d.OldestVisibleAgeSeconds = max(d.OldestVisibleAgeSeconds, oldest)
	}
	dlq := DLQName(queue)
	err := s.reads.QueryRow(ctx, `SELECT CASE WHEN pgbus.dlq_groups_tracked($1::regclass)
			THEN `+sqlDLQCountedDepth+`
			ELSE (SELECT count(*) FROM `+queueTable(dlq)+`) END`,
		queueTable(dlq), dlq).Scan(&d.DLQDepth)
	if err != nil && !isUndefinedTable(err) {
		return d, queueErr(err, "read the depth of", dlq)
	}
	return d, nil
}

// BreakerStates returns the state of every circuit breaker, by name.
func (s *Store) BreakerStates(ctx context.Context) (map[string]string, error) {
	rows, err := s.reads.Query(ctx, `SELECT name, state FROM pgbus.circuit_breakers`)
	if err != nil {
		return nil, fmt.Errorf("store: read circuit breaker states: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, state string
		if err := rows.Scan(&name, &state); err != nil {
			return nil, fmt.Errorf("store: read circuit breaker states: %w", err)
		}
		out[name] = state
	}
	return out, rows.Err()
}
