package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// wantOpsError returns err as an *ops.Error whose message holds every
// part of want and that still wraps PostgreSQL's error of SQLSTATE code.
func wantOpsError(t *testing.T, what string, err error, code string, want ...string) *ops.Error {
	t.Helper()
	var oe *ops.Error
	if !errors.As(err, &oe) {
		t.Fatalf("%s: want an *ops.Error, got %T: %v", what, err, err)
	}
	for _, w := range want {
		if !strings.Contains(oe.Msg, w) {
			t.Errorf("%s: message %q does not say %q", what, oe.Msg, w)
		}
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Errorf("%s: the database's error (SQLSTATE %s) is not reachable with errors.As: %v", what, code, err)
	}
	return oe
}

// TestUnmigratedDatabaseSaysMigrate: a Go program whose service runs on a
// database pgbus migrate never ran on is told, by reads and writes alike,
// which schema version this pgbus needs and to migrate, not what relation
// a statement missed.
func TestUnmigratedDatabaseSaysMigrate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	svc := newService(t, st, ops.Options{})
	calls := map[string]func() error{
		"DLQList":    func() error { _, err := svc.DLQList(ctx, ops.DLQListRequest{}); return err },
		"QueueStats": func() error { _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: "orders"}); return err },
		"Send": func() error {
			_, err := svc.Send(ctx, ops.SendRequest{Queue: "orders", Payload: []byte(`{}`)})
			return err
		},
		"QueuePause": func() error { _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "orders"}); return err },
	}
	for name, call := range calls {
		err := call()
		oe := wantOpsError(t, name, err, "42P01", "no pgbus schema", "needs schema version", "Store.Migrate")
		if !hasHint(oe.Hints, ops.OpMigrate, nil) {
			t.Errorf("%s: hints %+v do not point at migrate", name, oe.Hints)
		}
		if !errors.Is(err, store.ErrSchemaMissing) {
			t.Errorf("%s: %v does not wrap store.ErrSchemaMissing", name, err)
		}
		if kind := ops.ErrorKind(err); kind != ops.KindSchema {
			t.Errorf("%s: ErrorKind = %q, want %q: a script should not need the sentence to know to migrate", name, kind, ops.KindSchema)
		}
	}
	// A queue named by the call is looked up in pgmq's catalog first, which
	// on such a database lists no queue: the answer is still to migrate,
	// not that the queue has no DLQ.
	named := map[string]func() error{
		"DLQShow": func() error {
			_, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: "orders", MsgID: 1})
			return err
		},
		"DLQSummary": func() error {
			_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: "orders"}})
			return err
		},
	}
	for name, call := range named {
		err := call()
		var oe *ops.Error
		if !errors.As(err, &oe) || !strings.Contains(oe.Msg, "no pgbus schema") || strings.Contains(oe.Msg, "dead-letter queue") {
			t.Fatalf("%s: %v, want the schema missing and no word of the queue's DLQ", name, err)
		}
		if errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v still wraps store.ErrNotFound, which front ends answer as a queue not found", name, err)
		}
		if !hasHint(oe.Hints, ops.OpMigrate, nil) {
			t.Errorf("%s: hints %+v do not point at migrate", name, oe.Hints)
		}
		if !errors.Is(err, store.ErrSchemaMissing) {
			t.Errorf("%s: %v does not wrap store.ErrSchemaMissing", name, err)
		}
	}
}

// TestOldSchemaSaysMigrate: on a database an older pgbus migrated (the
// last migration's column and record missing), a read that needs the
// column names the version the database has.
func TestOldSchemaSaysMigrate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	pgtest.Exec(t, url, `ALTER TABLE pgbus.workers DROP COLUMN heartbeat_interval_ms;
		DELETE FROM pgbus.schema_migrations WHERE version >= 18`)
	_, err := newService(t, st, ops.Options{}).Workers(ctx, ops.WorkersRequest{})
	oe := wantOpsError(t, "Workers", err, "42703", "pgbus schema version 17, this pgbus needs")
	if !hasHint(oe.Hints, ops.OpMigrate, nil) || !errors.Is(err, store.ErrSchemaOld) {
		t.Errorf("Workers: %v (hints %+v) neither points at migrate nor wraps store.ErrSchemaOld", err, oe.Hints)
	}
}

// TestDroppedQueueStaysNotFound: on a current schema, a queue whose tables
// are gone keeps its not-found error, without advice to migrate.
func TestDroppedQueueStaysNotFound(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st := testStore(t)
	q := newQueue(t, st, nil)
	pgtest.DropOutside(t, st, q, store.DLQName(q))
	svc := newService(t, st, ops.Options{})
	_, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if !errors.Is(err, ops.ErrNotFound) || hasHint(ops.HintsOf(err), ops.OpMigrate, nil) {
		t.Fatalf("DLQList of dropped queue %s: want not found without a migrate hint, got %v (hints %+v)", q, err, ops.HintsOf(err))
	}
}

// TestTooManyConnectionsAdvises: a database that refuses the service's
// connections (a role allowed none) gets advice on the pool's size, with
// the database's words kept, and a write says nothing was changed.
func TestTooManyConnectionsAdvises(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "ALTER ROLE "+role+" CONNECTION LIMIT 0")
	// A pool connects on first use, as a program's does when the
	// database fills up after it started.
	pool, err := pgxpool.New(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(pool)
	t.Cleanup(st.Close)
	svc := newService(t, st, ops.Options{})
	advice := []string{"too many connections for role", "pool_max_conns", "PgBouncer", "try the call again"}

	_, err = svc.QueueStats(ctx, ops.QueueStatsRequest{})
	oe := wantOpsError(t, "QueueStats", err, "53300", advice...)
	if strings.Contains(oe.Msg, "changed") {
		t.Errorf("QueueStats: a read speaks of changes: %q", oe.Msg)
	}
	_, err = svc.Send(ctx, ops.SendRequest{Queue: "orders", Payload: []byte(`{}`)})
	wantOpsError(t, "Send", err, "53300", append(advice, "nothing was changed")...)
}

// TestResourceRefusalsAdvise: each refusal for want of a resource, and a
// database that takes no connections now, says what to do in the words of
// its cause, keeping the database's; other errors pass unchanged.
func TestResourceRefusalsAdvise(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code, text string
		want       []string
		file       string
	}{
		{"53100", `could not extend file "base/16384/16385": No space left on device`, []string{"out of disk space", "free disk space"}, ""},
		{"53200", "out of memory", []string{"ran out of memory", "work_mem", "max_locks_per_transaction", "one queue"}, "mcxt.c"},
		// The lock table full, told by the lock manager's file, whatever
		// the server's language: here German.
		{"53200", "Speicher im Shared Memory aufgebraucht", []string{"lock table is full", "ALTER SYSTEM SET max_locks_per_transaction", "restarts", "narrow the call to one queue"}, "lock.c"},
		{"53300", "sorry, too many clients already", []string{"pool_max_conns", "PgBouncer"}, ""},
		{"53400", "all replication slots are in use", []string{"limit of its configuration", "raise the setting", "the database's hint: Free one or increase max_replication_slots;"}, ""},
		{"57P03", "the database system is starting up", []string{"takes no connections now", "once it is up"}, ""},
	} {
		pgErr := &pgconn.PgError{Severity: "ERROR", Code: c.code, Message: c.text, File: c.file}
		if c.code == "53400" {
			pgErr.Hint = "Free one or increase max_replication_slots."
		}
		err := ops.ResourceError(fmt.Errorf("store: send to queue %q: %w", "orders", pgErr), true)
		wantOpsError(t, c.code, err, c.code, append(c.want, c.text, "nothing was changed", "try the call again")...)
	}
	other := fmt.Errorf("store: send: %w", &pgconn.PgError{Code: "23505", Message: "duplicate key"})
	if err := ops.ResourceError(other, true); err != other {
		t.Errorf("a unique violation was changed into %v", err)
	}
}

// TestSchemaWithoutPGMQNamesItsInstallation: where PGMQ's tables are gone
// from under a pgbus schema, which no migration makes again, an operation
// and a front end's own schema check give the migration that installs PGMQ
// from its script as the next step, as data each front end words, and the
// message names no front end's command.
func TestSchemaWithoutPGMQNamesItsInstallation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	pgtest.Exec(t, url, "DROP SCHEMA pgmq CASCADE")
	install := map[string]any{ops.MigrateInstallPGMQ: "PGMQ_SQL"}
	_, err := newService(t, st, ops.Options{}).DLQList(ctx, ops.DLQListRequest{})
	var oe *ops.Error
	if !errors.As(err, &oe) || !errors.Is(err, store.ErrPGMQMissing) || strings.Contains(oe.Msg, "pgbus migrate") ||
		len(oe.Hints) != 1 || !hasHint(oe.Hints, ops.OpMigrate, install) {
		t.Fatalf("DLQList without PGMQ's tables: %v (hints %+v); want ErrPGMQMissing with the installation of PGMQ as its one step", err, ops.HintsOf(err))
	}
	_, err = st.CheckSchema(ctx)
	if next := ops.NextSteps(err); !errors.Is(err, store.ErrPGMQMissing) || len(next) != 1 || !hasHint(next, ops.OpMigrate, install) {
		t.Fatalf("next steps of the schema check without PGMQ's tables (%v): %+v; want the installation of PGMQ", err, next)
	}
}
