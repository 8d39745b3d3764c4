package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// WorkedWithin is how recently a worker process must have served a queue
// that has no settings of pgbus's for pgbus to manage it: a process that
// runs, that crashed without shutting down, or that shut down within it.
// It is the span the worker registry's views look back over.
const WorkedWithin = 24 * time.Hour

// ManagedQueues are the queues pgbus manages, as ManagedQueues read them:
// one definition for retention (whose archives it prunes), the health
// check and the gauges (which queues it pages about when no worker serves
// them). A queue another PGMQ client made, which no pgbus worker serves,
// is that client's: pgbus lists it, and leaves its archive and its
// workers to it.
type ManagedQueues struct {
	// levels holds every queue pgbus made or registered (pgbus.queues),
	// with its priority levels.
	levels map[string]int
	// worked holds the queues named by the worker processes seen within
	// WorkedWithin, or that never stopped.
	worked map[string]bool
}

// Manages reports whether pgbus manages the queue name: one it made or
// registered (it has settings, which a queue dropped outside pgbus keeps),
// or one a pgbus worker process serves, crashed serving, or stopped
// serving within WorkedWithin; a priority level or the DLQ of such a
// queue is managed with it.
func (m ManagedQueues) Manages(name string) bool {
	base, isDLQ := strings.CutSuffix(name, DLQSuffix)
	if !isDLQ {
		base = logicalOf(base, m.levels)
	}
	_, registered := m.levels[base]
	return registered || m.worked[base]
}

// ManagedQueues reads which queues pgbus manages (ManagedQueues.Manages).
func (s *Store) ManagedQueues(ctx context.Context) (ManagedQueues, error) {
	levels, err := s.priorityLevels(ctx)
	if err != nil {
		return ManagedQueues{}, err
	}
	worked, err := s.workedQueues(ctx)
	if err != nil {
		return ManagedQueues{}, err
	}
	return ManagedQueues{levels: levels, worked: worked}, nil
}

// workedQueues returns the queues the worker processes name that have not
// stopped, or stopped within WorkedWithin (pgbus.workers).
func (s *Store) workedQueues(ctx context.Context) (map[string]bool, error) {
	rows, err := s.reads.Query(ctx, `SELECT DISTINCT unnest(queues) FROM pgbus.workers
		WHERE stopped_at IS NULL OR heartbeat_at > now() - $1 * interval '1 microsecond'`, WorkedWithin.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("store: list the queues workers work: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: list the queues workers work: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}
