package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A breaker whose last failure was a 429 with a Retry-After is told in
// pgbus circuits by a line under the table that says the downstream
// limits its rate or concurrency and names max_concurrency, where it goes,
// and in --json by rate_limited; a breaker opened by a 503 without a
// Retry-After, a downstream that is down, gets no such line.
func TestCircuitsSayRateLimited(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	ctx := context.Background()
	const limited, down = "http:api.example.com:443", "http:down.example.com:443"
	for name, f := range map[string]store.FailedCall{
		limited: {Error: "POST https://api.example.com/charge: 429 Too Many Requests", Class: "http.429", RetryAfter: 30 * time.Second},
		down:    {Error: "POST https://down.example.com/x: 503 Service Unavailable", Class: "http.503"},
	} {
		if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if c, err := s.BreakerFailedWith(ctx, name, f); err != nil || c.To != store.BreakerOpen {
			t.Fatalf("failure of %s = %+v, %v; want it open", name, c, err)
		}
	}

	out := d.ok(t, "circuits")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, limited+": ") {
			line = l
		}
	}
	for _, want := range []string{"the downstream limits its rate or concurrency (its last answer a 429)", "bound the requests in flight with max_concurrency",
		"in the options of the http handler of each queue that uses the breaker"} {
		if !strings.Contains(line, want) {
			t.Errorf("circuits says of %s %q; want it to say %q\n%s", limited, line, want, out)
		}
	}
	if strings.Contains(out, down+": ") || strings.Count(out, "max_concurrency") != 1 {
		t.Errorf("circuits names max_concurrency for the breaker of a downstream that is down, or more than once:\n%s", out)
	}

	var cs ops.Circuits
	d.json(t, &cs, "circuits", limited)
	if len(cs.Circuits) != 1 {
		t.Fatalf("circuits %s --json: %+v", limited, cs)
	}
	if l := cs.Circuits[0].RateLimited; l == nil || l.Status != 429 || l.RetryAfterSeconds != 30 || l.Setting != "max_concurrency" || l.Where == "" {
		t.Errorf("circuits %s --json: rate_limited %+v; want status 429, retry_after_seconds 30 and the setting max_concurrency", limited, l)
	}
	var downs ops.Circuits
	d.json(t, &downs, "circuits", down)
	if len(downs.Circuits) != 1 || downs.Circuits[0].RateLimited != nil {
		t.Errorf("circuits %s --json: %+v; want no rate_limited", down, downs)
	}
}
