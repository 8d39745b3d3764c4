package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/schema"
)

// migrationLockKey is the advisory lock that serialises migrations across
// processes: the ASCII bytes of "pgbusmig".
const migrationLockKey int64 = 0x7067627573_6d6967

// MigrationStatus reports the schema after Migrate or CheckSchema.
type MigrationStatus struct {
	Version       int  // highest applied migration
	Applied       int  // migrations applied by this call
	PGMQExtension bool // the pgmq extension is installed and its objects are used
	// PGMQFunctions: PGMQ's functions are installed, by the extension or by
	// PGMQ's SQL installation script, and pgbus creates and drops queues
	// with pgmq.create and pgmq.drop_queue.
	PGMQFunctions bool
}

// Migrate applies every pending migration. It is idempotent and safe to run
// from several processes at once: they queue on an advisory lock, and each
// migration is applied in its own transaction together with its record.
func (s *Store) Migrate(ctx context.Context) (MigrationStatus, error) {
	var st MigrationStatus
	migrations, err := schema.All()
	if err != nil {
		return st, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return st, fmt.Errorf("store: migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return st, fmt.Errorf("store: migrate: take advisory lock: %w", err)
	}
	// Unlock on a fresh context so a cancelled caller still releases the lock.
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey) //nolint:errcheck

	// Before anything is written: a schema pgmq of someone else's stops here.
	if err := checkPGMQSchema(ctx, conn); err != nil {
		return st, err
	}
	if _, err := conn.Exec(ctx, `
		CREATE SCHEMA IF NOT EXISTS pgbus;
		CREATE TABLE IF NOT EXISTS pgbus.schema_migrations (
			version    int PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return st, fmt.Errorf("store: migrate: create pgbus.schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, `SELECT version FROM pgbus.schema_migrations`)
	if err != nil {
		return st, fmt.Errorf("store: migrate: read applied versions: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return st, fmt.Errorf("store: migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("store: migrate: read applied versions: %w", err)
	}
	for _, m := range migrations {
		if applied[m.Version] {
			st.Version = m.Version
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return st, err
		}
		st.Version = m.Version
		st.Applied++
	}
	if st.PGMQExtension, err = s.hasPGMQExtension(ctx); err != nil {
		return st, err
	}
	st.PGMQFunctions, err = pgmqFunctions(ctx, s.reads)
	return st, err
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m schema.Migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: migration %d (%s): begin: %w", m.Version, m.Name, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return fmt.Errorf("store: migration %d (%s) failed: %w; nothing of it was applied", m.Version, m.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return fmt.Errorf("store: migration %d (%s): record: %w", m.Version, m.Name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store: migration %d (%s): commit: %w", m.Version, m.Name, err)
	}
	return nil
}

func (s *Store) hasPGMQExtension(ctx context.Context) (bool, error) {
	var ok bool
	err := s.reads.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pgmq')`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("store: check for the pgmq extension: %w", err)
	}
	return ok, nil
}
