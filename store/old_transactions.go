package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// OldTransaction is a transaction that has held back vacuum for a while:
// a session's transaction still open, or one prepared and never
// committed. While it lasts, PostgreSQL keeps every row deleted after it
// began, and the queue tables' dead rows (each finished message leaves
// one) pile up, making reads slower as they grow.
type OldTransaction struct {
	// PID is the session's backend; 0 for a prepared transaction.
	PID int `json:"pid,omitempty"`
	// User is the role that began it.
	User string `json:"user"`
	// Application is the session's application_name.
	Application string `json:"application,omitempty"`
	// State is the session's state (idle in transaction, active) or
	// "prepared".
	State string `json:"state"`
	// GID names a prepared transaction.
	GID string `json:"gid,omitempty"`
	// Since is when it began (a prepared one: when it was prepared).
	Since time.Time `json:"since"`
}

// MaxOldTransactions is how many OldTransactions returns at most.
const MaxOldTransactions = 3

// OldTransactions returns the oldest transactions open longer than
// olderThan that hold back vacuum in this database, oldest first. A role
// without pg_read_all_stats (pg_monitor) sees only its own sessions: the
// others' transactions are not listed.
func (s *Store) OldTransactions(ctx context.Context, olderThan time.Duration) ([]OldTransaction, error) {
	rows, err := s.reads.Query(ctx, `
		SELECT pid, coalesce(usename::text, ''), coalesce(application_name, ''), coalesce(state, ''), '' AS gid, xact_start
		FROM pg_catalog.pg_stat_activity
		WHERE (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND backend_type = 'client backend' AND pid <> pg_catalog.pg_backend_pid()
		  AND datname = pg_catalog.current_database()
		  AND xact_start < pg_catalog.now() - $1 * interval '1 microsecond'
		UNION ALL
		SELECT 0, owner::text, '', 'prepared', gid, prepared
		FROM pg_catalog.pg_prepared_xacts
		WHERE database = pg_catalog.current_database() AND prepared < pg_catalog.now() - $1 * interval '1 microsecond'
		ORDER BY 6
		LIMIT `+fmt.Sprint(MaxOldTransactions), olderThan.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("store: look for old transactions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OldTransaction, error) {
		var t OldTransaction
		err := r.Scan(&t.PID, &t.User, &t.Application, &t.State, &t.GID, &t.Since)
		t.Since = t.Since.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: look for old transactions: %w", err)
	}
	return out, nil
}
