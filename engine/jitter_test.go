package engine_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// The polynomial strategy adds rnd*attempt*Jitter seconds to attempt^4 + 2:
// over seeded random numbers, every delay is that sum, at least the base
// and above it as rnd is, and the delays spread over nearly the whole
// jitter range, so that workers failing together do not retry together.
func TestPolynomialJitterSpreadsDelays(t *testing.T) {
	t.Parallel()
	const jitter = 0.15
	p := engine.RetryPolicy{MaxRetries: 10, Strategy: store.BackoffPolynomial, BackoffMax: time.Hour, Jitter: jitter}
	rng := rand.New(rand.NewPCG(7, 11))
	for attempt := 1; attempt <= 6; attempt++ {
		a := float64(attempt)
		base := time.Duration((a*a*a*a + 2) * float64(time.Second))
		width := time.Duration(a * jitter * float64(time.Second))
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 200 {
			rnd := rng.Float64()
			d := p.NextDelay(attempt, rnd)
			want := base + time.Duration(rnd*float64(width))
			if diff := d - want; diff < -time.Microsecond || diff > time.Microsecond {
				t.Fatalf("attempt %d, rnd %.4f: delay %s, want %s (base %s plus rnd of %s)", attempt, rnd, d, want, base, width)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < base || hi > base+width {
			t.Errorf("attempt %d: delays %s..%s outside %s..%s", attempt, lo, hi, base, base+width)
		}
		if spread := hi - lo; spread < width*9/10 {
			t.Errorf("attempt %d: 200 delays spread over %s, want at least 90%% of the jitter range %s", attempt, spread, width)
		}
		if mid := p.NextDelay(attempt, 0.5); mid < base+width/2-time.Microsecond {
			t.Errorf("attempt %d: delay at rnd 0.5 is %s, want at least %s", attempt, mid, base+width/2)
		}
	}
}
