package store

import (
	"context"
	"time"
)

// QueueMetrics is a snapshot of one physical queue.
type QueueMetrics struct {
	Queue string `json:"queue"`
	// Depth counts every message in the queue; Visible those ready to read;
	// Invisible those in flight or waiting for a retry or a delay.
	Depth     int64 `json:"depth"`
	Visible   int64 `json:"visible"`
	Invisible int64 `json:"invisible"`
	// Ages are zero when there is no such message.
	OldestAge        time.Duration `json:"oldest_age_ns"`
	NewestAge        time.Duration `json:"newest_age_ns"`
	OldestVisibleAge time.Duration `json:"oldest_visible_age_ns"`
	// TotalSent counts the messages sent to the queue since it was
	// created: the ids its sequence handed out since its start; for a role that may not read
	// the sequence, a lower bound of them (totalSentSQL), as QueueStats
	// gives it.
	TotalSent int64     `json:"total_sent"`
	Archived  int64     `json:"archived"`
	ScrapedAt time.Time `json:"scraped_at"`
}

// Metrics returns a snapshot of one physical queue.
func (s *Store) Metrics(ctx context.Context, queue string) (QueueMetrics, error) {
	m := QueueMetrics{Queue: queue}
	if err := ValidatePhysicalName(queue); err != nil {
		return m, err
	}
	q, a := queueTable(queue), archiveTable(queue)
	var oldest, newest, oldestVisible float64
	sql := `
		SELECT count(*),
		       count(*) FILTER (WHERE vt <= now()),
		       coalesce(extract(epoch FROM now() - min(enqueued_at)), 0),
		       coalesce(extract(epoch FROM now() - max(enqueued_at)), 0),
		       coalesce(extract(epoch FROM now() - min(enqueued_at) FILTER (WHERE vt <= now())), 0),
		       ` + totalSentSQL(queue, "$1", true) + `,
		       (SELECT count(*) FROM ` + a + `),
		       now()
		FROM ` + q
	err := s.reads.QueryRow(ctx, sql, q).Scan(&m.Depth, &m.Visible, &oldest, &newest, &oldestVisible, &m.TotalSent, &m.Archived, &m.ScrapedAt)
	if err != nil {
		return m, s.archiveErr(ctx, err, "read metrics of", queue)
	}
	m.Invisible = m.Depth - m.Visible
	m.OldestAge, m.NewestAge, m.OldestVisibleAge = seconds(oldest), seconds(newest), seconds(oldestVisible)
	return m, nil
}

func seconds(f float64) time.Duration {
	if f < 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// IsEmpty reports whether a physical queue holds no message, cheaply.
func (s *Store) IsEmpty(ctx context.Context, queue string) (bool, error) {
	if err := ValidatePhysicalName(queue); err != nil {
		return false, err
	}
	var exists bool
	if err := s.reads.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+queueTable(queue)+`)`).Scan(&exists); err != nil {
		return false, queueErr(err, "inspect", queue)
	}
	return !exists, nil
}
