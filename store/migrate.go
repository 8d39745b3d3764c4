package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/schema"
)

// migrationLockKey is the transaction-scoped advisory lock that serialises
// migrations across processes: the ASCII bytes of "pgbusmig".
const migrationLockKey int64 = 0x7067627573_6d6967

// MigrationStatus reports the schema after Migrate or CheckSchema.
type MigrationStatus struct {
	Version int // highest applied migration
	// Known is the newest migration this pgbus has. A Version above it
	// was applied by a newer pgbus (see Newer).
	Known int
	// From is the highest version recorded when this call read the
	// record, before it applied anything. Processes that migrate at once
	// share the work, so Version less Applied may be higher, and the first
	// version this call applied above From+1: Upgrade says what it did.
	From int
	// Settled is the highest version recorded at that read that was
	// applied more than RunWindow before it: the versions above it, up to
	// From, were applied by a migration under way, of processes started
	// at once with this one (Upgrade). 0 when the record was empty, or
	// all of it that recent: a first install under way.
	Settled int
	Applied int // migrations applied by this call
	// AppliedVersions are the versions this call applied itself, in
	// order: with processes that migrate at once, the others applied the
	// rest (see Upgrade).
	AppliedVersions []int
	PGMQExtension   bool // the pgmq extension is installed and its objects are used
	// PGMQFunctions: PGMQ's functions are installed, by the extension or by
	// PGMQ's SQL installation script, and pgbus creates and drops queues
	// with pgmq.create and pgmq.drop_queue.
	PGMQFunctions bool
	// DLQsRepaired lists the dead-letter queues this call gave what
	// CreateDLQ gives one and they lacked; DLQGaps those it could not,
	// which the caller should warn of (see Migrate).
	DLQsRepaired []string
	DLQGaps      []DLQGap
}

// Newer reports whether a newer pgbus migrated the database: it records
// migrations this pgbus does not have. This pgbus then works on the schema,
// as migrations only add, but changes nothing of it.
func (st MigrationStatus) Newer() bool { return st.Version > st.Known }

// RunWindow is how recent a version recorded when Migrate read the record
// must be to count as applied by a migration under way, of processes
// started at once with it (MigrationStatus.Settled): the migrations of one
// run follow one another within seconds, those of an earlier deploy came
// long before.
const RunWindow = time.Minute

// Upgrade says what this call took part in: the version the schema had
// before the upgrade, the version it has after it, and the versions in
// between that other processes applied, in order, AppliedVersions being
// this call's own. Processes that migrate at once share the work, their
// migrations interleaved: where others applied versions after this
// call's first (or had applied some within RunWindow before it read the
// record), they and this call ran one upgrade, from Settled. Otherwise
// another process's upgrade came before this call's (an older pgbus's,
// applied while this one waited for the lock), and this call's is from
// the version just before its first. ok is false when it applied
// nothing, or when it took part in a first install: the record was empty,
// or all of it applied within RunWindow, when it read it (Settled 0).
func (st MigrationStatus) Upgrade() (from, to int, byOthers []int, ok bool) {
	if len(st.AppliedVersions) == 0 || st.Settled == 0 {
		return 0, 0, nil, false
	}
	first := st.AppliedVersions[0]
	interleaved := false
	for v := first + 1; v <= st.Version; v++ {
		interleaved = interleaved || !slices.Contains(st.AppliedVersions, v)
	}
	from = max(st.From, first-1)
	if interleaved || st.Settled < st.From {
		from = st.Settled
	}
	to = st.Version
	for v := min(from, st.From) + 1; v <= st.Version; v++ {
		if !slices.Contains(st.AppliedVersions, v) {
			byOthers = append(byOthers, v)
		}
	}
	return from, to, byOthers, true
}

// LogNewer warns on logger, when st (this store's schema, from
// CheckSchema or Migrate) says a newer pgbus migrated the database, that
// this pgbus is older than it, with both versions: a process that keeps
// working on such a schema lacks what the newer versions added, and its
// log is where whoever deploys it looks for what to upgrade. It warns once
// for the store, whoever checks the schema: a process that checks it on
// start and then runs workers on the same store, which check it again, is
// told once. A nil logger, or a schema that is not newer, logs nothing.
func (s *Store) LogNewer(st MigrationStatus, logger *slog.Logger) {
	if logger == nil || !st.Newer() || s.warnedNewer.Swap(true) {
		return
	}
	logger.Warn("pgbus: a newer pgbus migrated this database; this pgbus changes nothing of the schema and keeps working on it, "+
		"as migrations only add, without what the newer versions added: upgrade this pgbus",
		"schema_version", st.Version, "this_pgbus_schema_version", st.Known)
}

// RecordedSchema reads the newest schema version the database records,
// whoever migrated it, in one statement on a table of a few rows: the
// status's Version is that version (0 for an empty record) and Known this
// pgbus's newest, so that Newer tells whether a newer pgbus migrated it
// since this process checked the schema. Unlike CheckSchema it checks
// nothing else, for a caller that asks again while the process runs.
func (s *Store) RecordedSchema(ctx context.Context) (MigrationStatus, error) {
	migrations, err := schema.All()
	if err != nil {
		return MigrationStatus{}, err
	}
	st := MigrationStatus{Known: len(migrations)}
	if err := s.reads.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pgbus.schema_migrations`).Scan(&st.Version); err != nil {
		return MigrationStatus{}, fmt.Errorf("store: read the recorded schema version: %w", err)
	}
	return st, nil
}

// Migrate applies every pending migration. It is idempotent and safe to run
// from several processes at once: each migration is applied in its own
// transaction together with its record, under a transaction-scoped advisory
// lock that serialises migrations across processes and is checked again
// inside the lock. No state outlives a transaction, so Migrate also works
// through a pooler in transaction mode (PgBouncer).
//
// It is safe on a live system: a migration waits for a table's lock
// migrationLockWait at a time (SET LOCAL lock_timeout), so the statements
// queued behind it on a busy table wait no longer, and is tried again for
// migrationRetryFor; then Migrate gives up with nothing of it applied and
// an error naming the backends that held the lock and what to do (see
// migrationTx). It waits migrationTurnWait at most for another process
// that migrates, then names it. Its context ends every wait.
//
// A role that may not read the pgbus schemas gets CheckSchema's
// ErrPermission, which names the grants to run.
//
// A schema that is current already is only read (CheckSchema): no
// migration lock and no DDL but the repairs of DLQs below, so that a role
// that may change rows but create nothing (an operator's, or an agent's
// server that may retry) runs the commands that migrate on start once the
// owner has migrated.
//
// Each call, the schema current or not, then gives every dead-letter queue
// what CreateDLQ gives one where it lacks some of it (its index, its
// filter statistics, analyzed, and its group counts): a DLQ made after the
// migrations by an older pgbus still running, or by another PGMQ client,
// lacks them, and its filters then plan badly. One catalog query finds
// them, so a database where nothing is missing pays one more round trip,
// however many queues it has. A DLQ this role does not own, or whose table
// stays locked, is left as it is and listed in the status's DLQGaps, which
// the caller should log: a worker started as an operator's role must not
// fail for it.
//
// A schema a newer pgbus migrated is left as it is, repairs included: what
// a DLQ needs is the newer pgbus's to say, and its migrate gives it. The
// status says so (Newer); a newer schema whose record lacks migrations of
// this pgbus fails with ErrSchemaNewer, nothing applied (see CheckSchema).
func (s *Store) Migrate(ctx context.Context) (MigrationStatus, error) {
	st, err := s.CheckSchema(ctx)
	if err == nil {
		if st.Newer() {
			return st, nil
		}
		return s.repairDLQs(ctx, st)
	}
	if errors.Is(err, ErrPermission) && !errors.Is(err, ErrSchemaNewer) {
		// Migrating reads what this role may not: the check names what it
		// lacks, where the first DDL would only be refused.
		return st, s.mayNotReadToMigrate(ctx, err)
	}
	if errors.Is(err, ErrSchemaNewer) || errors.Is(err, ErrStandby) || errors.Is(err, ErrPGMQMissing) || errors.Is(err, ErrShadowingSearchPath) ||
		errors.Is(err, ErrSessionSettings) {
		// A newer schema is never migrated by an older pgbus, nor any under
		// a search_path that puts other functions in place of
		// PostgreSQL's, or session settings its SQL is not written for.
		return st, err
	}
	checked := err
	st = MigrationStatus{}
	migrations, err := schema.All()
	if err != nil {
		return st, err
	}
	st, err = s.migrate(ctx, migrations)
	if err != nil {
		return st, s.mayNotMigrate(ctx, checked, err)
	}
	if st.Newer() {
		return st, nil
	}
	return s.repairDLQs(ctx, st)
}

// mayNotMigrate is the error of a migration refused to a role that may not
// change the schema: the schema check's error first, which says which
// version the database has and which this pgbus needs, then the refusal;
// a role deployed with a new pgbus before the schema was migrated (the
// operator grants, say) was told only that it lacked a privilege. Last,
// the role that may. Other errors pass unchanged.
func (s *Store) mayNotMigrate(ctx context.Context, checked, err error) error {
	if !errors.Is(checked, ErrSchemaOld) && !errors.Is(checked, ErrSchemaMissing) {
		return err
	}
	if LimitOf(err) == LimitReadOnly {
		// A standby's check says so itself: this is a primary's role or
		// database with default_transaction_read_only on.
		return fmt.Errorf("%w, which this server does not take: %w; migrate as a role whose transactions may write (ALTER ROLE %s SET default_transaction_read_only = off, or the same for the database)",
			checked, err, RoleSQL(s.User()))
	}
	if err == nil || !IsPermissionDenied(err) {
		return err
	}
	if why := s.RefusedByEventTrigger(ctx, err); why != "" {
		// The function refused, not the role's privileges: another role
		// to migrate with would be refused the same way.
		return fmt.Errorf("%w; the migration was refused: %w; %s", withoutMigrateAdvice(checked), err, why)
	}
	return fmt.Errorf("%w, which the role %s may not do: %w; %s", checked, cmp.Or(s.User(), "<role>"), err, s.migrator(ctx))
}

// migrator says which role may migrate. Where schema pgmq is another
// role's (PGMQ installed first by it) and this role lacks what migrating
// needs there (USAGE and CREATE on the schema, and the rows of pgmq.meta,
// which the migrations read and queues are listed in), the owner of
// schema pgmq, or this role once it grants them. Else the one that owns
// schema pgbus, or, before there is one, the database's owner; never this
// role itself.
func (s *Store) migrator(ctx context.Context) string {
	var me, pgbusOwner, pgmqOwner, dbOwner, db string
	var pgmqLacks, hasMeta, dbCreate bool
	err := s.reads.QueryRow(ctx, `
		WITH pgmq AS (SELECT oid, nspowner FROM pg_catalog.pg_namespace WHERE nspname = 'pgmq'),
		     meta AS (SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relnamespace = (SELECT oid FROM pgmq) AND c.relname = 'meta')
		SELECT quote_ident(current_user),
		       coalesce((SELECT quote_ident(pg_catalog.pg_get_userbyid(nspowner)) FROM pg_catalog.pg_namespace WHERE nspname = 'pgbus'), ''),
		       coalesce((SELECT quote_ident(pg_catalog.pg_get_userbyid(nspowner)) FROM pgmq), ''),
		       coalesce((SELECT NOT (has_schema_privilege(oid, 'USAGE') AND has_schema_privilege(oid, 'CREATE')) FROM pgmq), false)
		       OR coalesce((SELECT NOT (has_table_privilege(oid, 'SELECT') AND has_table_privilege(oid, 'INSERT')
		                                AND has_table_privilege(oid, 'UPDATE') AND has_table_privilege(oid, 'DELETE')) FROM meta), false),
		       EXISTS (SELECT 1 FROM meta),
		       has_database_privilege(current_database(), 'CREATE'),
		       quote_ident(pg_catalog.pg_get_userbyid(datdba)), quote_ident(datname)
		FROM pg_catalog.pg_database WHERE datname = current_database()`).
		Scan(&me, &pgbusOwner, &pgmqOwner, &pgmqLacks, &hasMeta, &dbCreate, &dbOwner, &db)
	switch {
	case err != nil:
		return "migrate as the role that owns the pgbus schemas, or the database's owner"
	case pgmqLacks && (pgbusOwner == "" || pgbusOwner == me):
		grants := "GRANT USAGE, CREATE ON SCHEMA pgmq TO " + me
		if hasMeta {
			grants += "; GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.meta TO " + me
		}
		advice := fmt.Sprintf("migrate as the role that owns schema pgmq, %s, or let %s migrate: as %s, %s", pgmqOwner, me, pgmqOwner, grants)
		if pgbusOwner == "" && !dbCreate {
			advice += fmt.Sprintf("; and as the database's owner, %s, GRANT CREATE ON DATABASE %s TO %s", dbOwner, db, me)
		}
		return advice
	case pgbusOwner != "" && pgbusOwner != me:
		return "migrate as the role that owns schema pgbus, " + pgbusOwner
	case pgbusOwner == "" && !dbCreate:
		return fmt.Sprintf("migrate as the database's owner, %s, or a role it grants CREATE ON DATABASE %s", dbOwner, db)
	}
	return "migrate as a role that may do what the refusal names: the owner of what it names, or a superuser"
}

// mayNotReadToMigrate is err, the schema check's refusal to a role that
// may not read what it reads, as Migrate gives it: where the role may read
// the record of migrations and it says the schema is not current, the
// role is to migrate it, and the grants that let a role read would not let
// it, so the error says the schema is old, what the role lacks and who may
// migrate. Where the schema is current, or the record out of reach, err
// passes unchanged.
func (s *Store) mayNotReadToMigrate(ctx context.Context, err error) error {
	var access *accessError
	if !errors.As(err, &access) {
		return err
	}
	migrations, serr := schema.All()
	if serr != nil {
		return err
	}
	rows, _ := s.reads.Query(ctx, `SELECT version FROM pgbus.schema_migrations`)
	versions, rerr := pgx.CollectRows(rows, pgx.RowTo[int])
	if rerr != nil {
		return err
	}
	version, newest := recordedVersion(versions)
	if version >= len(migrations) || newest > len(migrations) {
		return err
	}
	old := oldSchema(version, len(migrations))
	return &kindError{kind: errors.Join(ErrSchemaOld, ErrPermission), msg: fmt.Sprintf("%s, which the role %s may not do: it lacks %s; %s",
		old.msg, cmp.Or(s.User(), "<role>"), access.lacks, s.migrator(ctx))}
}

// migrate applies the migrations not applied yet, in order. A newer
// pgbus may have migrated the database while this one waited for the
// migration lock: its record, read under the lock, then holds versions
// this one lacks, and the schema is checked as it is instead, nothing
// applied.
func (s *Store) migrate(ctx context.Context, migrations []schema.Migration) (MigrationStatus, error) {
	st := MigrationStatus{Known: len(migrations)}
	applied := map[int]bool{}
	newer := false
	again := 0 // the first version to apply again, if any
	err := s.migrationTx(ctx, "migrate", func(tx pgx.Tx) error {
		// Before anything is written: a schema pgmq of someone else's
		// stops here.
		if err := checkPGMQSchema(ctx, tx); err != nil {
			return err
		}
		// Without a record, nothing is applied: the first migration makes
		// it (applyMigration), so that one that fails leaves nothing.
		_, record, err := recordExists(ctx, tx)
		if err != nil || !record {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version, name, coalesce(applied_at < clock_timestamp() - make_interval(secs => $1), true) FROM pgbus.schema_migrations`,
			RunWindow.Seconds())
		if err != nil {
			return fmt.Errorf("store: migrate: read applied versions: %w", err)
		}
		recorded, err := pgx.CollectRows(rows, pgx.RowToStructByPos[appliedMigration])
		if err != nil {
			return fmt.Errorf("store: migrate: read applied versions: %w", err)
		}
		for _, r := range recorded {
			applied[r.Version] = true
			newer = newer || r.Version > len(migrations)
			st.From = max(st.From, r.Version)
			if r.Settled {
				st.Settled = max(st.Settled, r.Version)
			}
		}
		if newer {
			return nil // a newer pgbus's record, checked as it is
		}
		again, err = placeholderFrom(recorded, migrations)
		return err
	})
	if err != nil {
		return st, err
	}
	if newer {
		return s.CheckSchema(ctx)
	}
	if s.recordRead != nil {
		s.recordRead()
	}
	for _, m := range migrations {
		if !applied[m.Version] || (again > 0 && m.Version >= again) {
			ran, err := s.applyMigration(ctx, m, again > 0 && m.Version >= again)
			if err != nil {
				return st, err
			}
			if ran {
				st.Applied++
				st.AppliedVersions = append(st.AppliedVersions, m.Version)
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

// appliedMigration is a row of pgbus.schema_migrations.
type appliedMigration struct {
	Version int
	Name    string
	// Settled: applied more than RunWindow before the record was read.
	Settled bool
}

// placeholderName is the name an early build of pgbus recorded version 10
// under: a placeholder that changed nothing, held while the real
// migration was being written.
const placeholderName = "reserved"

// placeholderFrom returns the version from which the migrations recorded
// must be applied again: the first recorded as a placeholder that changed
// nothing. The versions after it were applied over the placeholder, and
// are applied again after the real one, in order, as they were written to
// be (IF NOT EXISTS, CREATE OR REPLACE); 0 if there is none. A version
// recorded under another name than this pgbus's, not a placeholder, is
// refused before anything is applied: another build's migration.
func placeholderFrom(recorded []appliedMigration, migrations []schema.Migration) (int, error) {
	from := 0
	for _, r := range recorded {
		if r.Version < 1 || r.Version > len(migrations) {
			continue
		}
		m := migrations[r.Version-1]
		switch {
		case r.Name == m.Name:
		case r.Name == placeholderName:
			if from == 0 || r.Version < from {
				from = r.Version
			}
		default:
			return 0, fmt.Errorf("store: migrate: pgbus.schema_migrations records version %d as %q, and this pgbus's migration %d is %q: the database was migrated by another build of pgbus; nothing was applied: migrate it with the build that wrote it, or restore it from a backup",
				r.Version, r.Name, m.Version, m.Name)
		}
	}
	return from, nil
}

// Migrations bound their lock waits, so that one never stalls a live
// system for long. Variables, not constants, so that tests can shorten them.
var (
	// migrationLockWait is the lock_timeout of a migration's statements. A
	// statement waiting for a table's lock (an ALTER TABLE behind a long
	// transaction that read the table) makes every later statement on that
	// table wait behind it, so it waits this long at most; the migration
	// is then rolled back and tried again.
	migrationLockWait = 5 * time.Second
	// migrationRetryPause is the pause before the first retry after a lock
	// timeout; each further pause is twice the one before.
	migrationRetryPause = time.Second
	// migrationRetryFor is how long after its first try a migration may
	// still be tried again; then it gives up, naming who held the lock.
	migrationRetryFor = time.Minute
	// migrationTurnWait bounds the wait for the migration lock, which
	// another process holds while it migrates. A migration holds it for at
	// most migrationLockWait per lock wait and the time of its DDL.
	migrationTurnWait = 2 * time.Minute
)

// migrationTx runs fn in a transaction that holds the migration lock, and
// reports errors as about what ("migration 3 (engine)").
//
// The wait for the migration lock is bounded by migrationTurnWait, and
// every lock wait of fn's statements by migrationLockWait. When one of
// those times out, the transaction is rolled back, so nothing of it is
// applied, and fn is run again in a new one after a pause, twice as long
// each time, until migrationRetryFor has passed. The error of a migration
// that gives up names the relation it waited for and the backends that
// held it, seen from another connection while it waited, and says what to
// do. Only SET LOCAL is used, so a pooler in transaction mode (PgBouncer)
// keeps nothing of it.
func (s *Store) migrationTx(ctx context.Context, what string, fn func(pgx.Tx) error) error {
	start := time.Now()
	pause := migrationRetryPause
	var waited *lockWait // the last wait for a lock other than the migration lock
	for tries := 1; ; tries++ {
		seen, turn, err := s.migrationAttempt(ctx, fn)
		if seen != nil && !seen.migLock {
			waited = seen
		}
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if seen == nil { // stopped before this try's wait was seen
				seen = waited
			}
			return stoppedWaiting(err, seen)
		case !isLockTimeout(err):
			return err
		case turn:
			return turnTimeout(what, seen, err)
		case time.Since(start)+pause > migrationRetryFor:
			return lockTimeout(what, tries, time.Since(start), waited, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return stoppedWaiting(fmt.Errorf("store: %s: stopped before trying again after a lock timeout; nothing of it was applied: %w", what, ctx.Err()), waited)
		case <-t.C:
		}
		pause *= 2
	}
}

// migrationAttempt runs fn once in a transaction holding the migration
// lock, with lock waits bounded as migrationTx says. It reports the last
// lock wait a watch from another connection saw, and whether the error
// came from the wait for the migration lock (turn). The transaction is
// READ COMMITTED whatever the database's default (s.db begins it so):
// under a stricter one, a migrator that waited for the lock would read the
// applied versions as they were before it waited, and apply them again.
func (s *Store) migrationAttempt(ctx context.Context, fn func(pgx.Tx) error) (seen *lockWait, turn bool, err error) {
	var stopWatch func() *lockWait
	err = poolerHint(pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			return fmt.Errorf("store: migrate: %w", err)
		}
		stopWatch = s.watchLocks(ctx, pid, migrationLockWait/4)
		if err := setLockTimeout(ctx, tx, migrationTurnWait); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			turn = true
			return fmt.Errorf("store: migrate: take the migration lock: %w", err)
		}
		if err := setLockTimeout(ctx, tx, migrationLockWait); err != nil {
			return err
		}
		return fn(tx)
	}), s.closing)
	if stopWatch != nil { // once the transaction ended and let go of its locks
		seen = stopWatch()
	}
	return seen, turn, err
}

// stoppedWaiting adds to err, the error of a migration whose context
// ended, the lock it was seen waiting for, if any.
func stoppedWaiting(err error, w *lockWait) error {
	if w == nil {
		return err
	}
	return fmt.Errorf("%w (it was waiting for %s held by %s)", err, w.on, w.heldBy())
}

// MigrationLockError is the error of a migration that gave up waiting for
// a lock another session held: a table's, each wait bounded by the
// migration's own lock_timeout and tried again for about a minute, or the
// migration lock, which another process holds while it migrates. Nothing
// of the migration was applied. Its message names the sessions that held
// the lock, when they were seen, and the statement that ends them: once
// they ended, the migration is to run again. The lock_timeout it waited by
// is the migration's own (SET LOCAL), which no setting of the role or
// database changes, so LimitOf reports no limit for it. It wraps
// PostgreSQL's lock_not_available (SQLSTATE 55P03).
type MigrationLockError struct {
	msg string
	err error
}

func (e *MigrationLockError) Error() string { return e.msg }
func (e *MigrationLockError) Unwrap() error { return e.err }

// migrationLockError is a MigrationLockError saying msg, then err,
// PostgreSQL's lock_not_available.
func migrationLockError(msg string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		err = pgErr
	}
	return &MigrationLockError{msg: fmt.Sprintf("%s: %v", msg, err), err: err}
}

// lockTimeout is the error of a migration that gave up waiting for a lock
// after tries attempts over took.
func lockTimeout(what string, tries int, took time.Duration, seen *lockWait, err error) error {
	if seen == nil {
		return migrationLockError(fmt.Sprintf("store: %s: waited for a lock %s, %s each (the migration's own lock_timeout), and gave up after %s; nothing of it was applied. "+
			"Find the transaction that holds the lock (in pg_stat_activity: state 'idle in transaction', or an old xact_start), "+
			"end it (let it finish, or SELECT pg_terminate_backend(pid)) and migrate again",
			what, plural.Count(tries, "time", "times"), migrationLockWait, took.Round(time.Second)), err)
	}
	return migrationLockError(fmt.Sprintf("store: %s: waited for %s (%s), held by %s, %s, %s each (the migration's own lock_timeout), and gave up after %s; nothing of it was applied. "+
		"End that transaction (let it finish, or %s) and migrate again",
		what, seen.on, seen.mode, seen.heldBy(), plural.Count(tries, "time", "times"), migrationLockWait, took.Round(time.Second), seen.terminate()), err)
}

// turnTimeout is the error of a migration that waited migrationTurnWait
// for the migration lock.
func turnTimeout(what string, seen *lockWait, err error) error {
	if seen == nil || !seen.migLock {
		return migrationLockError(fmt.Sprintf("store: %s: another process has held the migration lock for over %s; nothing of it was applied. "+
			"It is migrating this database: let it finish and migrate again", what, migrationTurnWait), err)
	}
	return migrationLockError(fmt.Sprintf("store: %s: another process, %s, has held the migration lock for over %s; nothing of it was applied. "+
		"It is migrating this database: let it finish and migrate again, or if it is stuck end it (%s) first",
		what, seen.heldBy(), migrationTurnWait, seen.terminate()), err)
}

// applyMigration applies m unless another process did while this one
// waited for the lock, and reports whether it did.
func (s *Store) applyMigration(ctx context.Context, m schema.Migration, again bool) (ran bool, err error) {
	err = s.migrationTx(ctx, fmt.Sprintf("migration %d (%s)", m.Version, m.Name), func(tx pgx.Tx) error {
		if err := makeRecord(ctx, tx); err != nil {
			return err
		}
		var done bool
		// Applied again (again), it runs whether or not it is recorded:
		// two processes doing so both run the versions in order.
		if err := tx.QueryRow(ctx, `SELECT NOT $2 AND EXISTS (SELECT 1 FROM pgbus.schema_migrations WHERE version = $1)`,
			m.Version, again).Scan(&done); err != nil {
			return fmt.Errorf("store: migration %d (%s): check whether it is applied: %w", m.Version, m.Name, err)
		}
		if done {
			return nil
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("store: migration %d (%s) failed: %w; nothing of it was applied", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pgbus.schema_migrations (version, name) VALUES ($1, $2)
			ON CONFLICT (version) DO UPDATE SET name = EXCLUDED.name, applied_at = now()`, m.Version, m.Name); err != nil {
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

// recordExists reports whether schema pgbus and its record of migrations,
// pgbus.schema_migrations, exist, from the catalogs, which every role may
// read.
func recordExists(ctx context.Context, tx pgx.Tx) (hasSchema, record bool, err error) {
	err = tx.QueryRow(ctx, `
		SELECT n.oid IS NOT NULL, c.oid IS NOT NULL
		FROM (SELECT 1) AS one
		LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'pgbus'
		LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'schema_migrations'`).Scan(&hasSchema, &record)
	if err != nil {
		return false, false, fmt.Errorf("store: migrate: look for pgbus.schema_migrations: %w", err)
	}
	return hasSchema, record, nil
}

// makeRecord makes schema pgbus and its record of migrations where they
// are missing, in the transaction of the migration about to be applied:
// one that fails rolls them back with it, and leaves no schema owned by a
// role that could not migrate. Only what is missing is created, so that a
// role owning a schema pgbus made for it needs no CREATE on the database.
func makeRecord(ctx context.Context, tx pgx.Tx) error {
	hasSchema, record, err := recordExists(ctx, tx)
	if err != nil || record {
		return err
	}
	if !hasSchema {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS pgbus`); err != nil {
			return fmt.Errorf("store: migrate: create schema pgbus: %w; nothing was applied", err)
		}
	}
	if _, err := tx.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS pgbus.schema_migrations (
			version    int PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return fmt.Errorf("store: migrate: create pgbus.schema_migrations: %w; nothing was applied", err)
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
