package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A reset of a breaker that holds more jobs than run at once says so: the
// first run at once, the rest are spread over its cool-off. --json counts
// them all in released.
func TestCircuitResetSaysTheReleaseIsSpread(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	ctx := context.Background()
	const api = "http:api.example.com:443"
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: api, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// hold has the breaker, open, hold n jobs of a new queue.
	hold := func(queue string, n int) {
		t.Helper()
		d.ok(t, "queue", "create", queue)
		if _, err := s.BreakerFailure(ctx, api, "503"); err != nil {
			t.Fatal(err)
		}
		for range n {
			pgtest.Held(t, s, queue, api)
		}
	}
	hold("orders", ops.ReleaseAtOnce+10)
	want := fmt.Sprintf("%d jobs it held released now, in the order held: the first %d at once, the rest spread over its cool-off (5m at most)", ops.ReleaseAtOnce+10, ops.ReleaseAtOnce)
	if out := d.ok(t, "circuit", "reset", api); !strings.Contains(out, want) {
		t.Fatalf("circuit reset of a breaker holding %d jobs says:\n%s\nwant %q", ops.ReleaseAtOnce+10, out, want)
	}
	hold("mails", ops.ReleaseAtOnce+1)
	var reset ops.CircuitReset
	d.json(t, &reset, "circuit", "reset", api)
	if reset.Released < ops.ReleaseAtOnce+1 || reset.Released > 2*ops.ReleaseAtOnce+11 {
		t.Fatalf("circuit reset --json: released %d; want the %d held since, and those of the first reset still to come", reset.Released, ops.ReleaseAtOnce+1)
	}
}
