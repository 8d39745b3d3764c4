package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A check recorded late, by a process that lost the election while it
// delivered that check's alerts, does not replace the newer check of the
// process elected after it.
func TestOlderAlertCheckKeepsTheNewer(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the record is one row for the whole database
	ctx := testContext(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	newer := store.AlertCheck{At: now, Status: "OK"}
	older := store.AlertCheck{At: now.Add(-time.Minute), Status: "STALLED", Reasons: []store.AlertReason{{Code: "no_workers", Queue: "q"}}}
	for _, c := range []store.AlertCheck{newer, older} {
		if err := s.RecordAlertCheck(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LastAlertCheck(ctx)
	if err != nil || !got.At.Equal(now) || got.Status != "OK" || len(got.Reasons) != 0 {
		t.Fatalf("last check %+v, %v; want the newer, OK at %s", got, err, now)
	}
}
