package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A breaker whose name starts with a dash is named after the flags and a
// "--" in next steps, so that the step runs as printed: before the name,
// it was read as a flag (pgbus circuit reset --yes: unknown flag).
func TestNextStepOfADashedNameRunsAsPrinted(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	ctx := context.Background()
	const name = "--yes"
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	out := d.ok(t, "circuit", "open", "--for", "1h", "--", name)
	var step string
	for _, line := range strings.Split(out, "\n") {
		if _, cmd, ok := strings.Cut(line, "next: pgbus circuit reset"); ok {
			step = strings.TrimSpace("circuit reset" + strings.SplitN(cmd, " #", 2)[0])
			break
		}
	}
	if want := "circuit reset --end-opening-by-hand -- --yes"; step != want {
		t.Fatalf("circuit open's step to reset the breaker: %q; want %s\n%s", step, want, out)
	}
	if out := d.ok(t, strings.Fields(step)...); !strings.Contains(out, "closed") {
		t.Fatalf("the step as printed: %q; want the breaker closed", out)
	}
	if b, err := s.ListBreakers(ctx, name); err != nil || len(b) != 1 || b[0].State != store.BreakerClosed {
		t.Fatalf("breaker after the step: %+v, %v; want it closed", b, err)
	}
}
