package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/schema"
)

// migrationLockKey is the transaction-scoped advisory lock that serialises
// migrations across processes: the ASCII bytes of "pgbusmig".
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
// from several processes at once: each migration is applied in its own
// transaction together with its record, under a transaction-scoped advisory
// lock that serialises migrations across processes and is checked again
// inside the lock. No state outlives a transaction, so Migrate also works
// through a pooler in transaction mode (PgBouncer).
//
// A role that may not read the pgbus schemas gets CheckSchema's
// ErrPermission, which names the grants to run.
//
// A schema that is current already is only read (CheckSchema): no lock and
// no DDL, so that a role that may change rows but create nothing (an
// operator's, or an agent's server that may retry) runs the commands that
// migrate on start once the owner has migrated.
func (s *Store) Migrate(ctx context.Context) (MigrationStatus, error) {
	st, err := s.CheckSchema(ctx)
	if err == nil {
		return st, nil
	}
	if errors.Is(err, ErrPermission) {
		// Migrating reads what this role may not: the check's error names
		// the grants, where the first DDL would only be refused.
		return st, err
	}
	st = MigrationStatus{}
	migrations, err := schema.All()
	if err != nil {
		return st, err
	}
	applied := map[int]bool{}
	err = s.migrationTx(ctx, func(tx pgx.Tx) error {
		// Before anything is written: a schema pgmq of someone else's
		// stops here.
		if err := checkPGMQSchema(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			CREATE SCHEMA IF NOT EXISTS pgbus;
			CREATE TABLE IF NOT EXISTS pgbus.schema_migrations (
				version    int PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`); err != nil {
			return fmt.Errorf("store: migrate: create pgbus.schema_migrations: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT version FROM pgbus.schema_migrations`)
		if err != nil {
			return fmt.Errorf("store: migrate: read applied versions: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("store: migrate: read applied versions: %w", err)
		}
		for _, v := range versions {
			applied[v] = true
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	for _, m := range migrations {
		if !applied[m.Version] {
			ran, err := s.applyMigration(ctx, m)
			if err != nil {
				return st, err
			}
			if ran {
				st.Applied++
			}
		}
		st.Version = m.Version
	}
	if st.PGMQExtension, err = s.hasPGMQExtension(ctx); err != nil {
		return st, err
	}
	st.PGMQFunctions, err = pgmqFunctions(ctx, s.reads)
	return st, err
}

// migrationTx runs fn in a transaction that holds the migration lock.
func (s *Store) migrationTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return poolerHint(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return fmt.Errorf("store: migrate: take advisory lock: %w", err)
		}
		return fn(tx)
	}))
}

// applyMigration applies m unless another process did while this one
// waited for the lock, and reports whether it did.
func (s *Store) applyMigration(ctx context.Context, m schema.Migration) (ran bool, err error) {
	err = s.migrationTx(ctx, func(tx pgx.Tx) error {
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgbus.schema_migrations WHERE version = $1)`, m.Version).Scan(&done); err != nil {
			return fmt.Errorf("store: migration %d (%s): check whether it is applied: %w", m.Version, m.Name, err)
		}
		if done {
			return nil
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("store: migration %d (%s) failed: %w; nothing of it was applied", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("store: migration %d (%s): record: %w", m.Version, m.Name, err)
		}
		ran = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return ran, nil
}

func (s *Store) hasPGMQExtension(ctx context.Context) (bool, error) {
	var ok bool
	err := s.reads.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pgmq')`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("store: check for the pgmq extension: %w", err)
	}
	return ok, nil
}
