package ops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A transaction left open (a client's session idle in transaction) keeps
// vacuum from removing the queue tables' dead rows, which slows reads with
// nothing else to say why: health notes it, naming the session, what it
// does to the queues and how to end it, and says nothing once it ended.
func TestHealthNotesAnOldTransaction(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	svc := newService(t, s, ops.Options{OldTransactionAfter: time.Millisecond})
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "nightly-report"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pgbus.schema_migrations"); err != nil {
		t.Fatal(err)
	}
	pid := holder.PgConn().PID()
	time.Sleep(10 * time.Millisecond) // past OldTransactionAfter
	named := func(h ops.Health) *ops.HealthReason {
		for i, r := range h.Reasons {
			if r.Code == "old_transaction" && strings.Contains(r.Message, fmt.Sprintf("pid %d,", pid)) {
				return &h.Reasons[i]
			}
		}
		return nil
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := named(h)
	if r == nil {
		t.Fatalf("health with a transaction open: %+v; want an old_transaction reason naming pid %d", h.Reasons, pid)
	}
	for _, want := range []string{"application nightly-report", "idle in transaction", "dead rows", fmt.Sprintf("pg_terminate_backend(%d)", pid)} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("the reason %q does not say %q", r.Message, want)
		}
	}
	if r.Status != ops.HealthNotice || h.Status != ops.HealthOK {
		t.Errorf("a transaction open for less than an hour: reason %s, verdict %s; want a NOTICE that leaves the verdict OK", r.Status, h.Status)
	}
	if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if h, err := svc.Health(ctx); err != nil || named(h) != nil {
		t.Errorf("health once the transaction ended: %+v, %v; want no reason naming pid %d", h.Reasons, err, pid)
	}
}
