package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A role that may change rows but not create tables (the README's
// operator) works a queue another PGMQ client made, its tables there and
// no settings of pgbus's: the create a configuration file declaring it
// asks for writes its settings only. A queue that is not there is still
// refused, saying who creates it.
func TestQueueCreateOfAForeignQueueByAnOperator(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	// As pgmq.create makes it: its tables, and no row of pgbus's.
	if err := owner.CreateQueue(ctx, "ext"); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, "DELETE FROM pgbus.queues WHERE queue_name = 'ext'")
	role, roleURL := pgtest.NewRole(t, url)
	for _, grant := range []string{
		"GRANT USAGE ON SCHEMA pgmq, pgbus TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO " + role,
		"GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO " + role,
	} {
		pgtest.Exec(t, url, grant)
	}
	svc := newService(t, pgtest.OpenStore(t, roleURL), ops.Options{})
	three := 3
	out, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "ext", Settings: ops.SettingsChange{MaxRetries: &three}})
	if err != nil || out.Created || !out.Changed {
		t.Fatalf("create of the foreign queue as the operator = %+v, %v; want its settings written, nothing created", out, err)
	}
	if st, err := owner.QueueSettingsOf(ctx, "ext"); err != nil || st.MaxRetries != 3 {
		t.Errorf("the foreign queue's settings = %+v, %v; want max_retries 3", st, err)
	}
	_, err = svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: "nowhere"})
	if err == nil || !strings.Contains(err.Error(), `queue "nowhere" does not exist, and the database role `+role+` may not create its tables`) ||
		!strings.Contains(err.Error(), "the role that owns schema pgmq (") || ops.ErrorKind(err) != ops.KindPermission {
		t.Errorf("create of a missing queue as the operator: %v (kind %s); want it refused as a privilege, naming the role that creates it", err, ops.ErrorKind(err))
	}
}
