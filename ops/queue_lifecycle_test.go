package ops_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestQueueDropGivenUpWhileTablesHeld: a confirmed drop whose DLQ another
// session holds past the database call timeout says that nothing was
// dropped, names the session, and says how to end it; it is unavailable,
// not a database that does not answer, and the queue stays.
func TestQueueDropGivenUpWhileTablesHeld(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	q := pgtest.NewQueue(t, s, "held")
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var holder int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT count(*) FROM `+pgx.Identifier{"pgmq", "q_" + q + "_dlq"}.Sanitize()+`) c`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, s, ops.Options{DatabaseCallTimeout: time.Second})
	_, err = svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
	if err == nil {
		t.Fatal("the drop of a queue whose DLQ another session holds succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"was not dropped", "nothing was dropped", "q_" + q + "_dlq", "AccessShareLock", "pid " + strconv.Itoa(holder), "pg_terminate_backend(" + strconv.Itoa(holder) + ")"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error of the given-up drop lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "did not answer") || ops.ErrorKind(err) != ops.KindUnavailable {
		t.Errorf("the given-up drop is of kind %s, or blames a database that does not answer: %s", ops.ErrorKind(err), msg)
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil {
		t.Errorf("the queue whose drop was given up: %v; want it kept", err)
	}
}

// TestQueueDropByANonOwnerSaysWhoMay: a role that may read the queues,
// or work them with the operator's grants, may not drop one, which only
// the owner of its tables may: the refusal says so and to run the drop
// as that role, rather than give grants that would not let it, and the
// queue stays.
func TestQueueDropByANonOwnerSaysWhoMay(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, dbURL)
	q := newQueue(t, owner, nil)
	for _, c := range []struct{ role, grants string }{
		{"dropreader", "GRANT USAGE ON SCHEMA pgmq, pgbus TO dropreader; GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO dropreader"},
		{"dropoperator", store.OperatorGrants("dropoperator")},
	} {
		pgtest.Exec(t, dbURL, "CREATE ROLE "+c.role+" LOGIN PASSWORD 'pw'")
		t.Cleanup(func() {
			pgtest.Exec(t, dbURL, "DROP OWNED BY "+c.role)
			pgtest.Exec(t, dbURL, "DROP ROLE "+c.role)
		})
		pgtest.Exec(t, dbURL, c.grants)
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(c.role, "pw")
		st, err := store.Open(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		_, err = newService(t, st, ops.Options{}).QueueDrop(ctx, ops.QueueDropRequest{Queue: q, Confirm: true})
		st.Close()
		if err == nil {
			t.Fatalf("queue drop as %s worked", c.role)
		}
		msg := err.Error()
		if ops.ErrorKind(err) != ops.KindPermission || !strings.Contains(msg, "was not dropped") || !strings.Contains(msg, "may not drop its tables") ||
			!strings.Contains(msg, "owns the pgbus schemas") || strings.Contains(msg, "GRANT") {
			t.Errorf("queue drop as %s: kind %s: %s; want a refusal that names the tables' owner as the role to drop with, and no grants", c.role, ops.ErrorKind(err), msg)
		}
	}
	if _, err := newService(t, owner, ops.Options{}).QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil {
		t.Errorf("the queue after refused drops: %v; want it kept", err)
	}
}

// TestQueueCreateWritesItsSettingsWithTheQueue: a queue created with
// settings gets them in the transaction that makes it, so that no worker
// waiting for it (one dropped to be made again) finds it without them;
// a refused write of the settings leaves no queue behind.
func TestQueueCreateWritesItsSettingsWithTheQueue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dbURL := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, dbURL)
	svc := newService(t, s, ops.Options{})
	q := pgtest.Name("atomic")
	// A check of the database's that refuses the settings of q, which
	// pgbus's own validation lets through.
	pgtest.Exec(t, dbURL, `CREATE FUNCTION refuse_settings() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'settings of % refused', NEW.queue_name USING ERRCODE = 'check_violation'; END $$`)
	pgtest.Exec(t, dbURL, `CREATE TRIGGER refuse_settings BEFORE UPDATE ON pgbus.queues FOR EACH ROW
		WHEN (NEW.queue_name = '`+q+`' AND NEW.max_retries = 7) EXECUTE FUNCTION refuse_settings()`)
	seven := 7
	for _, levels := range []int{0, 3} {
		_, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: levels, Settings: ops.SettingsChange{MaxRetries: &seven}})
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("create of %s with %d levels and settings the database refuses: %v; want the refusal", q, levels, err)
		}
		if ok, err := s.QueueExists(ctx, store.DLQName(q)); err != nil || ok {
			t.Fatalf("create of %s with %d levels whose settings were refused left its DLQ (%v, %v); want nothing made", q, levels, ok, err)
		}
	}
	two := 2
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{MaxRetries: &two}}); err != nil {
		t.Fatal(err)
	}
	if st, err := s.QueueSettingsOf(ctx, q); err != nil || st.MaxRetries != 2 {
		t.Fatalf("settings of %s created with max_retries 2: %+v, %v", q, st, err)
	}
}
