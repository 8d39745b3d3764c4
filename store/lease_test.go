package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// One process at a time wins an election: a second one loses while the
// first holds the lease, and wins once it is released.
func TestTryLeadOneAtATime(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	a, b := pgtest.OpenStore(t, url), pgtest.OpenStore(t, url)
	ctx := testContext(t)
	la, err := a.TryLead(ctx, store.ElectionAlerts)
	if err != nil || la == nil {
		t.Fatalf("the first process: lease %v, %v; want it elected", la, err)
	}
	if lb, err := b.TryLead(ctx, store.ElectionAlerts); err != nil || lb != nil {
		t.Fatalf("the second process: lease %v, %v; want it to lose while the first leads", lb, err)
	}
	if err := la.Check(ctx); err != nil {
		t.Fatalf("the held lease: %v", err)
	}
	la.Release(ctx)
	la.Release(ctx)
	if err := la.Check(ctx); err == nil {
		t.Fatal("a released lease passes its check")
	}
	lb, err := b.TryLead(ctx, store.ElectionAlerts)
	if err != nil || lb == nil {
		t.Fatalf("after the release: lease %v, %v; want the second process elected", lb, err)
	}
	lb.Release(ctx)
}
