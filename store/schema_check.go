package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/schema"
)

// ErrSchemaMissing is wrapped by the error of CheckSchema when the database
// has no pgbus schema at all: pgbus migrate never ran on it.
var ErrSchemaMissing = errors.New("pgbus schema missing")

// ErrSchemaOld is wrapped by the error of CheckSchema when the database's
// pgbus schema lacks migrations this binary has: a newer pgbus is running
// against a database that an older one migrated.
var ErrSchemaOld = errors.New("pgbus schema out of date")

// ErrStandby is wrapped, beside ErrSchemaMissing or ErrSchemaOld, by the
// error of CheckSchema and Migrate on a standby (a read replica): it takes
// its schema from the primary, so migrate the primary, not it.
var ErrStandby = errors.New("the server is a standby")

// ErrPGMQMissing comes with ErrSchemaMissing where schema pgbus is there
// and PGMQ's tables are not (a restore of schema pgbus alone): no
// migration makes them, since the first one is recorded as done, so its
// error names what does instead: a backup of schema pgmq, or PGMQ
// installed from its script (InstallPGMQ) for an empty one.
var ErrPGMQMissing = errors.New("PGMQ's tables are missing")

// ErrSchemaNewer is wrapped by the error of CheckSchema and Migrate when
// a newer pgbus migrated the database and its record of migrations lacks
// some of this binary's: this binary cannot tell what the schema holds, so
// it neither works on it nor migrates it, which would apply its own
// migrations over the newer ones. A newer schema that records every
// migration of this binary passes the check instead (see CheckSchema).
var ErrSchemaNewer = errors.New("pgbus schema newer than this pgbus")

// ErrPermission is wrapped by errors PostgreSQL raised because the database
// role lacks a privilege (SQLSTATE 42501), and by the error of CheckSchema
// when the role may not read the pgbus schemas. IsPermissionDenied tells
// both apart from other errors.
var ErrPermission = errors.New("permission denied")

// ReadGrants are the statements that let role read what pgbus keeps, enough
// for the read commands and for pgbus serve --read-only, to be run by the
// role that migrates and creates queues. USAGE and SELECT on the tables are
// what the read commands need; SELECT on the sequences makes the count of
// messages sent to a queue since it was created exact rather than a lower bound; the default
// privileges cover the queues created later.
func ReadGrants(role string) string { return grantsTo(role, "SELECT") }

// OperatorGrants returns the statements, run as the role that owns the
// pgbus schemas, that let role change the rows of their tables and own
// nothing: retry, discard, pause, send, and work queues that exist. Its
// audit entries stay append-only to it.
func OperatorGrants(role string) string {
	return grantsTo(role, "SELECT, INSERT, UPDATE, DELETE", "REVOKE UPDATE, DELETE ON pgbus.audit_log FROM")
}

// grantsTo are the statements that give role USAGE on the schemas, the
// privileges tables on their tables and SELECT on their sequences, then
// more (each followed by the role), then the same for the tables and
// sequences made later.
func grantsTo(role, tables string, more ...string) string {
	r := pgx.Identifier{role}.Sanitize()
	parts := []string{"GRANT USAGE ON SCHEMA pgmq, pgbus TO " + r,
		"GRANT " + tables + " ON ALL TABLES IN SCHEMA pgmq, pgbus TO " + r,
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO " + r}
	for _, m := range more {
		parts = append(parts, m+" "+r)
	}
	return strings.Join(append(parts,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT "+tables+" ON TABLES TO "+r,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON SEQUENCES TO "+r), "; ")
}

// IsPermissionDenied reports whether err is, or wraps, PostgreSQL's
// "permission denied" (SQLSTATE 42501) or ErrPermission.
func IsPermissionDenied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, ErrPermission) || errors.As(err, &pgErr) && pgErr.Code == "42501"
}

// SchemaGone reports whether err is, or wraps, a statement's failure for
// want of what pgbus's schema holds: a table, function or the schema
// pgbus itself that does not exist (SQLSTATE 42P01, 42883 or 3F000, naming
// pgbus's), as when the schema is dropped under running workers, or a
// restore left it out. Migrating the database makes it again; its rows
// come back only from a backup. It is not ErrSchemaMissing, which
// CheckSchema finds before anything runs.
func SchemaGone(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42P01", "42883":
		return strings.Contains(pgErr.Message, "pgbus.")
	case "3F000":
		return strings.Contains(pgErr.Message, "pgbus")
	}
	return false
}

// CheckSchema reports the database's schema version without changing
// anything: it reads the catalogs and pgbus.schema_migrations in a
// read-only transaction and takes no lock beyond what a SELECT takes, so a
// role that may only read can call it. It returns an error wrapping
// ErrSchemaMissing when pgbus migrate never ran on the database,
// ErrSchemaOld when migrations of this binary are missing,
// ErrForeignPGMQSchema when schema pgmq is someone else's, ErrPermission
// when the role may not read the pgbus schemas, ErrSessionSettings when the
// session runs without the settings ConfigurePool gives it
// (standard_conforming_strings on, client_encoding UTF8: a pool passed to
// New that it did not configure), and ErrShadowingSearchPath when the
// session's search_path puts another schema's functions in place of
// PostgreSQL's; each says what to do.
//
// A database migrated by a newer pgbus passes: migrations only add, so
// what this binary's migrations made is there. The status's Version is
// then the newer version, above its Known; Applied is always 0. One whose
// record lacks a migration of this binary, below the newer ones, fails
// with ErrSchemaNewer rather than ErrSchemaOld, so that Migrate does not
// apply this binary's migrations over a newer schema.
func (s *Store) CheckSchema(ctx context.Context) (MigrationStatus, error) {
	// Its statements run in a transaction of its own, whose errors the
	// pool's wrapper does not see: a pooler's lost prepared statement is
	// said here, as the first statement of every command.
	st, err := s.checkSchema(ctx)
	return st, poolerHint(err, s.closing)
}

func (s *Store) checkSchema(ctx context.Context) (MigrationStatus, error) {
	var st MigrationStatus
	migrations, err := schema.All()
	if err != nil {
		return st, err
	}
	need := len(migrations)
	st.Known = need
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return st, fmt.Errorf("store: check schema: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck

	if err := checkSessionSettings(ctx, tx); err != nil {
		return st, err
	}
	if err := checkSearchPath(ctx, tx); err != nil {
		return st, err
	}
	if err := checkPGMQSchema(ctx, tx); err != nil {
		return st, err
	}
	// The catalogs are readable by every role, whatever it may do with the
	// objects they describe, so this works where the tables are out of reach.
	rows, err := tx.Query(ctx, `
		SELECT current_user::text, want.nsp, want.rel, n.oid IS NOT NULL,
		       coalesce(has_schema_privilege(n.oid, 'USAGE'), false),
		       c.oid IS NOT NULL,
		       coalesce(has_table_privilege(c.oid, 'SELECT'), false)
		FROM (VALUES (1, 'pgbus', 'schema_migrations'), (2, 'pgmq', 'meta')) AS want(ord, nsp, rel)
		LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = want.nsp
		LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = want.rel
		ORDER BY want.ord`)
	if err != nil {
		return st, fmt.Errorf("store: check schema: read the catalogs: %w", err)
	}
	var (
		role    string
		missing bool
		there   = map[string]bool{}
		lacks   []string
	)
	for rows.Next() {
		var nsp, rel string
		var hasSchema, usage, hasTable, sel bool
		if err := rows.Scan(&role, &nsp, &rel, &hasSchema, &usage, &hasTable, &sel); err != nil {
			return st, fmt.Errorf("store: check schema: %w", err)
		}
		there[nsp] = hasSchema && hasTable
		switch {
		case !hasSchema || !hasTable:
			missing = true
		case !usage:
			lacks = append(lacks, "USAGE on schema "+nsp)
		case !sel:
			lacks = append(lacks, "SELECT on "+nsp+"."+rel)
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("store: check schema: read the catalogs: %w", err)
	}
	if missing && there["pgbus"] && pgmqMigrated(ctx, tx) {
		// The migration that installs PGMQ is the front end's to name
		// (InstallPGMQ from Go), as a next step.
		return st, &kindError{kind: errors.Join(ErrSchemaMissing, ErrPGMQMissing), msg: "the database has the pgbus schema but not PGMQ's tables, which hold the queues (schema pgmq with its table meta): " +
			"restore schema pgmq from the backup schema pgbus came from (pg_restore --schema pgmq); without it the queues' messages are lost, and a migration that installs PGMQ from its SQL script first (PGMQ's pgmq.sql) makes an empty PGMQ for pgbus to use"}
	}
	if missing {
		return st, onStandby(ctx, tx, &kindError{kind: ErrSchemaMissing, msg: fmt.Sprintf(
			"the database has no pgbus schema (this pgbus needs schema version %d)"+migrateWithCreator, need)})
	}
	if len(lacks) > 0 {
		return st, noReadAccess(role, strings.Join(lacks, " and "))
	}

	rows, _ = tx.Query(ctx, `SELECT version FROM pgbus.schema_migrations`) // CollectRows returns the error
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		if IsPermissionDenied(err) {
			return st, noReadAccess(role, "SELECT on pgbus.schema_migrations")
		}
		return st, fmt.Errorf("store: check schema: read applied versions: %w", err)
	}
	var newest int
	st.Version, newest = recordedVersion(versions)
	if newest > need {
		if st.Version < need {
			return st, newerSchema(newest, need, st.Version+1)
		}
		st.Version = newest
	}
	if st.Version < need {
		return st, onStandby(ctx, tx, oldSchema(st.Version, need))
	}
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pgmq')`).Scan(&st.PGMQExtension); err != nil {
		return st, fmt.Errorf("store: check for the pgmq extension: %w", err)
	}
	st.PGMQFunctions, err = pgmqFunctions(ctx, tx)
	return st, err
}

// newerSchema is the error of a schema a newer pgbus migrated, recording
// version newest, whose record lacks missing, a migration of this binary,
// which has versions up to known.
func newerSchema(newest, known, missing int) error {
	return &kindError{kind: ErrSchemaNewer, msg: fmt.Sprintf(
		"the database was migrated by a newer pgbus: it records pgbus schema version %d, this pgbus has versions up to %d, "+
			"and the record lacks version %d of this one's, so this pgbus cannot tell what the schema holds and leaves it as it is; "+
			"upgrade this pgbus to the version that migrated the database (or newer)", newest, known, missing)}
}

// recordedVersion is the schema version the record of migrations holds,
// the versions given: the last of an unbroken run from 1 (migrations apply
// in order, so a gap means one is missing whatever comes after it), and
// the newest version recorded.
func recordedVersion(versions []int) (version, newest int) {
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
		newest = max(newest, v)
	}
	for applied[version+1] {
		version++
	}
	return version, newest
}

// oldSchema is the error of a schema at version, older than need.
func oldSchema(version, need int) *kindError {
	what := fmt.Sprintf("version %d", version)
	if version == 0 {
		what = "an empty pgbus.schema_migrations"
	}
	return &kindError{kind: ErrSchemaOld, msg: fmt.Sprintf(
		"the database has pgbus schema %s, this pgbus needs %d"+migrateWithCreator, what, need)}
}

// migrateWithCreator is the advice a missing or old schema's error ends
// with, where nothing else is known of why it was not migrated.
const migrateWithCreator = "; migrate it with a role that may create tables"

// withoutMigrateAdvice is err, the schema check's error of a missing or
// old schema, without its advice to migrate with a role that may create
// tables (migrateWithCreator), for an error that says what stands in the
// way instead: a standby, a function set off by the migration. Another
// error passes unchanged.
func withoutMigrateAdvice(err error) error {
	var e *kindError
	if !errors.As(err, &e) || !strings.HasSuffix(e.msg, migrateWithCreator) {
		return err
	}
	return &kindError{kind: e.kind, msg: strings.TrimSuffix(e.msg, migrateWithCreator)}
}

// accessError is the schema check's refusal to a role that may not read
// what it reads: it lacks, in words ("USAGE on schema pgmq").
type accessError struct {
	role, lacks string
}

func (e *accessError) Error() string {
	return fmt.Sprintf("the database role %s may not read the pgbus schema: it lacks %s; to let it read, run as the role that migrates and creates queues: %s",
		pgx.Identifier{e.role}.Sanitize(), e.lacks, ReadGrants(e.role))
}

func (e *accessError) Unwrap() error { return ErrPermission }

func noReadAccess(role, lacks string) error {
	return &accessError{role: role, lacks: lacks}
}

// onStandby is e, the schema check's error of a missing or old schema,
// saying to migrate the primary when the server is a standby, where no
// migration can run: it follows the primary's schema.
func onStandby(ctx context.Context, tx pgx.Tx, e *kindError) error {
	var standby bool
	if err := tx.QueryRow(ctx, `SELECT pg_catalog.pg_is_in_recovery()`).Scan(&standby); err != nil || !standby {
		return e
	}
	return &kindError{kind: errors.Join(e.kind, ErrStandby), msg: withoutMigrateAdvice(e).Error() +
		"; this server is a standby (a read replica), which takes no writes and follows the primary's schema: migrate the primary, and this one has the new schema once it replays it"}
}

// pgmqMigrated reports whether the record of migrations holds the first,
// which makes PGMQ's tables, while they are still missing: a record
// without it is one an older pgbus made before its first migration, which
// never finished (this one makes the record with the first migration);
// false too when the
// record cannot be read. One statement, one snapshot: the catalog read
// before may predate that migration's commit, which this one then sees.
func pgmqMigrated(ctx context.Context, tx pgx.Tx) bool {
	var gone bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pgbus.schema_migrations WHERE version = 1) AND to_regclass('pgmq.meta') IS NULL`).Scan(&gone)
	return err == nil && gone
}
