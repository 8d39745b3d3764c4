package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Jobs a closed breaker still holds, those its closing releases over its
// cool-off, are shown held by it, with the breaker to look at as their
// next step: a reset, which offered to close it, has nothing to close and
// would only start the release over.
func TestJobsAClosedBreakerReleasesOfferNoReset(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	name := uniqueName("bank")
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BreakerFailure(ctx, name, "503 from the bank"); err != nil {
		t.Fatal(err)
	}
	for range ops.ReleaseAtOnce + 10 {
		pgtest.Held(t, s, q, name)
	}
	svc := newService(t, s, ops.Options{})
	if r, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: name}); err != nil || r.Released != int64(ops.ReleaseAtOnce+10) {
		t.Fatalf("reset = %+v, %v; want the %d jobs held released", r, err, ops.ReleaseAtOnce+10)
	}
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: store.StateScheduled})
	if err != nil || len(page.Items) == 0 || page.Items[0].HeldBy != name {
		t.Fatalf("scheduled messages after the reset: %+v, %v; want those still to come, held by %s", page.Items, err, name)
	}
	var look int
	for _, h := range page.Next {
		if h.Op == ops.OpCircuitReset {
			t.Errorf("next steps of jobs a closed breaker releases offer its reset: %+v", h)
		}
		if h.Op == ops.OpCircuits && h.Args["name"] == name && strings.Contains(h.Why, "is closed and releases them over its cool-off") {
			look++
		}
	}
	if look != 1 {
		t.Errorf("next steps of jobs a closed breaker releases: %+v; want the breaker to look at, saying it releases them", page.Next)
	}
}
