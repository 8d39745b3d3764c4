package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// deadReadTries is how many times a read of every DLQ reads them, each
// time a DLQ dropped meanwhile cuts it short.
const deadReadTries = 8

// wantQueuesChanged checks err, of a call whose every read of every DLQ
// found a DLQ dropped under it: it says so and to try again, of kind
// unavailable without the health check (the database answers), rather
// than as a failure of the database.
func wantQueuesChanged(t *testing.T, what string, err error, drops int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s under a drop at each read: no error", what)
	}
	if drops != deadReadTries {
		t.Errorf("%s: %d DLQs dropped under its reads; want %d", what, drops, deadReadTries)
	}
	for _, w := range []string{"the queues changed during the read", "queues were created or dropped meanwhile", "try again"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	if k := ops.ErrorKind(err); k != ops.KindUnavailable {
		t.Errorf("%s: kind %q; want %q", what, k, ops.KindUnavailable)
	}
	if hasHint(ops.NextSteps(err), ops.OpHealth, nil) {
		t.Errorf("%s: next %+v holds the health check, which would say OK", what, ops.NextSteps(err))
	}
}

// A list of every DLQ whose every read met a DLQ dropped meanwhile says
// that the queues changed during the read, with the same call again as
// its next step.
func TestListOfEveryDLQChangingUnderEachRead(t *testing.T) {
	t.Parallel()
	url, drops := pgtest.DroppedUnderDeadReads(t, deadReadTries)
	// Each read waits for a drop, which a busy machine may take seconds
	// to make: a call timeout as long as the call's context keeps the
	// default's 30s from cutting the call short before its last read.
	svc := newService(t, pgtest.OpenStore(t, url), ops.Options{DatabaseCallTimeout: 2 * time.Minute})
	_, err := svc.DLQList(testContext(t), ops.DLQListRequest{Limit: 10})
	wantQueuesChanged(t, "list of every DLQ", err, drops())
	if next := ops.NextSteps(err); len(next) != 1 || !hasHint(next, ops.OpDLQList, map[string]any{"limit": 10}) {
		t.Errorf("list of every DLQ: next %+v; want the same call again", next)
	}
}

// A retry by ids in every DLQ, whose lookup of the ids met a DLQ dropped
// at each read, says so and that nothing was changed.
func TestRetryByIDsInEveryDLQChangingUnderEachRead(t *testing.T) {
	t.Parallel()
	url, drops := pgtest.DroppedUnderDeadReads(t, deadReadTries)
	svc := newService(t, pgtest.OpenStore(t, url), ops.Options{})
	_, err := svc.DLQRetry(testContext(t), ops.DLQRetryRequest{IDs: []int64{1}})
	wantQueuesChanged(t, "retry by ids in every DLQ", err, drops())
	if !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("retry by ids in every DLQ: %q does not say that nothing was changed", err)
	}
}
