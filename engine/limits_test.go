package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// limitedStore opens a store on a database of its own, migrated, with a
// fast queue, and then given the setting set (such as "lock_timeout =
// '100ms'"), as a DBA sets it with ALTER DATABASE ... SET. It returns the
// store, whose sessions take the setting, the queue, and a store opened
// before, whose sessions do not.
func limitedStore(t *testing.T, set string) (st *store.Store, queue string, before *store.Store) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	before = pgtest.OpenStore(t, url)
	queue = newQueue(t, before, nil)
	pgtest.Exec(t, url, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET `+strings.ReplaceAll(set, "'", "''")+`', current_database()); END $$`)
	st, err := store.Open(testContext(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, queue, before
}

// On a database that takes no writes (a standby, or
// default_transaction_read_only on), Run refuses to start, saying so and
// to point pgbus at the primary, rather than in the server's words alone.
func TestRunOnReadOnlyDatabaseSaysPointAtThePrimary(t *testing.T) {
	t.Parallel()
	st, q, _ := limitedStore(t, "default_transaction_read_only = on")
	c := pgtest.NewClient(t, st, q, nil)
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	ctx, cancel := context.WithTimeout(testContext(t), time.Minute)
	defer cancel()
	err := c.Run(ctx)
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("Run on a read-only database: %v, want the database's refusal (SQLSTATE 25006)", err)
	}
	for _, want := range []string{"takes no writes", "default_transaction_read_only", "point pgbus at the primary", "ALTER ROLE " + store.RoleSQL(st.User())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %q does not say %q", err, want)
		}
	}
}

// An outcome that waits for a lock longer than the lock_timeout the role
// or database sets is logged with the setting named and what to do, and
// written once the lock is free: the workers go on.
func TestLockTimeoutOnOutcomesIsNamedAndWorkGoesOn(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, q, before := limitedStore(t, "lock_timeout = '100ms'")
	// Another client's transaction holds the queue's archive, as a long
	// maintenance statement would.
	holder, err := before.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background()) //nolint:errcheck
	if _, err := holder.Exec(ctx, `LOCK TABLE pgmq."a_`+q+`" IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	logs := &pgtest.SyncBuffer{}
	c := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Start(t, c)
	pgtest.Eventually(t, time.Minute, "the refused outcome to be logged", func() bool {
		return strings.Contains(logs.String(), "writing outcomes failed")
	})
	// The text log writes the quotes of the role's name escaped.
	for _, want := range []string{"lock_timeout", strings.ReplaceAll("ALTER ROLE "+store.RoleSQL(st.User())+" SET lock_timeout", `"`, `\"`)} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the job's outcome to be written", func() bool { return pgtest.Archived(t, st, q) == 1 })
}

// default_transaction_read_only turned on for the database, then off
// again (the fix pgbus's own message gives): the workers' writes are taken
// again at once, where the connections made while it was on kept it, and
// the process's heartbeat, retried on them, was refused for as long as the
// pool kept them: the process looked crashed while it ran.
func TestWorkersTakeWritesAgainOnceReadOnlyIsTurnedOff(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, st, nil)
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, st, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.ProcessHeartbeat = 100 * time.Millisecond
	})
	c.HandleQueue(q, func(context.Context, *engine.Job) error { return nil })
	pgtest.Start(t, c)
	// Registered first: a process that cannot register does not start.
	pgtest.Eventually(t, time.Minute, "the process registered", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.workers WHERE id = $1`, c.ID()) == 1
	})
	setReadOnly := func(set string) {
		t.Helper()
		// From another database: this one's sessions may write no more.
		pgtest.Exec(t, pgtest.URL(t), `ALTER DATABASE `+pgx.Identifier{cfg.Database}.Sanitize()+` `+set)
	}
	setReadOnly("SET default_transaction_read_only = on")
	// The sessions made before take the setting only when made again, as
	// after a restart.
	st.DropConnections()
	pgtest.Eventually(t, time.Minute, "the workers to say the database takes no writes", func() bool {
		return strings.Contains(logs.String(), "takes no writes")
	})
	setReadOnly("RESET default_transaction_read_only")
	other := pgtest.OpenStore(t, url) // connects now: takes writes
	var turnedOff time.Time
	if err := other.Pool().QueryRow(testContext(t), `SELECT now()`).Scan(&turnedOff); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 2*time.Minute, "the process's heartbeat to be written again", func() bool {
		return pgtest.Int(t, other, `SELECT count(*) FROM pgbus.workers WHERE id = $1 AND heartbeat_at > $2`, c.ID(), turnedOff) == 1
	})
}
