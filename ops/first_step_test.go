package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A call in steps refused at its first step (a retry or discard of one
// id, a queue's creation) says that nothing was changed, not that the
// steps done before it stay done: it did none, and it spoke of them.
func TestRefusedFirstStepSaysNothingChanged(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	owner, svc := readerService(t)
	q := newQueue(t, owner, nil)
	ids := pgtest.DeadLetterN(t, owner, q, 1, pgtest.DeadSpec{Kind: "charge", Message: "declined"})
	calls := map[string]func() error{
		"DLQRetry of one id": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
			return err
		},
		"DLQDiscard of one id": func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Confirm: true})
			return err
		},
		"QueueCreate": func() error {
			_, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: uniqueName("nope")})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if err == nil {
			t.Errorf("%s as a role that may only read: no error", name)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "done before") {
			t.Errorf("%s as a role that may only read: %q\nspeaks of steps done before", name, msg)
		}
		if name != "QueueCreate" && (!strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "GRANT")) {
			t.Errorf("%s as a role that may only read: %q\nwant it to say nothing was changed, and the grants", name, msg)
		}
	}
}

// A write refused for want of a privilege says what the role needs in
// words for whoever calls (the command line, the dashboard, a Go program
// as well as an agent's server), naming no front end. It told every
// caller "to let it repair and send ... or serve agents read-only".
func TestPermissionAdviceIsForEveryCaller(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	owner, svc := readerService(t)
	q := newQueue(t, owner, nil)
	_, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q})
	if err == nil {
		t.Fatal("pause as a role that may only read: no error")
	}
	msg := err.Error()
	for _, word := range []string{"agents", "serve", "repair"} {
		if strings.Contains(msg, word) {
			t.Errorf("pause as a role that may only read: %q\nsays %q, words for one caller", msg, word)
		}
	}
	if !strings.Contains(msg, "GRANT SELECT, INSERT, UPDATE, DELETE") || !strings.Contains(msg, "as a role that has them") {
		t.Errorf("pause as a role that may only read: %q\nwant the grants, and to make the call as a role that has them", msg)
	}
}

// readerService returns a fresh database's owner store and a service
// working as a role that may only read it.
func readerService(t *testing.T) (*store.Store, *ops.Service) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	owner := pgtest.OpenStore(t, url)
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, store.ReadGrants(role))
	reader, err := store.Open(testContext(t), roleURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	return owner, newService(t, reader, ops.Options{})
}
