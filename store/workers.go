package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WorkerProcess is one registered worker process.
type WorkerProcess struct {
	ID          string     `json:"id"`
	Hostname    string     `json:"hostname"`
	PID         int        `json:"pid"`
	Queues      []string   `json:"queues"`
	Concurrency int        `json:"concurrency"`
	StartedAt   time.Time  `json:"started_at"`
	HeartbeatAt time.Time  `json:"heartbeat_at"`
	StoppedAt   *time.Time `json:"stopped_at,omitempty"`
}

// RegisterWorker records a worker process as started.
func (s *Store) RegisterWorker(ctx context.Context, w WorkerProcess) error {
	_, err := s.db.Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL`,
		w.ID, w.Hostname, w.PID, w.Queues, w.Concurrency)
	if err != nil {
		return fmt.Errorf("store: register worker %s: %w", w.ID, err)
	}
	return nil
}

// HeartbeatWorker marks a worker process alive now.
func (s *Store) HeartbeatWorker(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: heartbeat of worker %s: %w", id, err)
	}
	return nil
}

// StopWorker marks a worker process as stopped.
func (s *Store) StopWorker(ctx context.Context, id string) error {
	_, err := s.db.Exec(ctx, `UPDATE pgbus.workers SET stopped_at = now(), heartbeat_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: stop worker %s: %w", id, err)
	}
	return nil
}

// ListWorkers lists worker processes seen within the window: at most
// 1,000, those not stopped first, newest first within each. Stopped ones
// are included so that a crash is visible as a stale heartbeat with no
// stop.
func (s *Store) ListWorkers(ctx context.Context, within time.Duration) ([]WorkerProcess, error) {
	rows, err := s.reads.Query(ctx, `SELECT id, hostname, pid, queues, concurrency, started_at, heartbeat_at, stopped_at
		FROM pgbus.workers WHERE heartbeat_at > now() - $1 * interval '1 microsecond'
		ORDER BY stopped_at IS NOT NULL, started_at DESC LIMIT 1000`, within.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("store: list workers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WorkerProcess])
	if err != nil {
		return nil, fmt.Errorf("store: list workers: %w", err)
	}
	return out, nil
}

// PruneWorkers deletes worker rows whose last heartbeat is older than age.
func (s *Store) PruneWorkers(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM pgbus.workers WHERE heartbeat_at < now() - $1 * interval '1 microsecond'`, age.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("store: prune workers: %w", err)
	}
	return tag.RowsAffected(), nil
}
