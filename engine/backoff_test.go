package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

func TestDefaultRetryPolicy(t *testing.T) {
	t.Parallel()
	p := engine.DefaultRetryPolicy()
	want := engine.RetryPolicy{MaxRetries: 5, Strategy: store.BackoffExponential, Backoff: 5 * time.Second, BackoffMax: 300 * time.Second, Jitter: 0.15}
	if p != want {
		t.Fatalf("default policy = %+v, want %+v", p, want)
	}
	// By default, four failures wait about 5s, 10s, 20s, 40s.
	for attempt, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second} {
		if got := p.NextDelay(attempt, 0.5); got != want {
			t.Errorf("NextDelay(%d, 0.5) = %s, want %s", attempt, got, want)
		}
	}
}

func TestExponentialJitterBounds(t *testing.T) {
	t.Parallel()
	p := engine.DefaultRetryPolicy()
	for attempt := 1; attempt <= 12; attempt++ {
		base := min(5*time.Second<<(attempt-1), 300*time.Second)
		lo, hi := p.NextDelay(attempt, 0), p.NextDelay(attempt, 0.999999)
		if want := time.Duration(float64(base) * 0.85); lo != want {
			t.Errorf("attempt %d: lowest delay %s, want %s", attempt, lo, want)
		}
		wantHi := min(time.Duration(float64(base)*1.15), 300*time.Second)
		if d := hi - wantHi; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("attempt %d: highest delay %s, want about %s", attempt, hi, wantHi)
		}
		if hi > p.BackoffMax {
			t.Errorf("attempt %d: delay %s over the cap %s", attempt, hi, p.BackoffMax)
		}
	}
}

func TestExponentialHugeAttemptsStayCapped(t *testing.T) {
	t.Parallel()
	p := engine.DefaultRetryPolicy()
	for _, attempt := range []int{0, -3, 63, 64, 1000, 1 << 30} {
		d := p.NextDelay(attempt, 0.5)
		if d <= 0 || d > p.BackoffMax {
			t.Errorf("NextDelay(%d) = %s, want within (0, %s]", attempt, d, p.BackoffMax)
		}
	}
}

// A BackoffMax as long as a Duration goes, as "no cap" is written, caps
// the delays of late attempts at itself: converted from a float at 2^63,
// they were negative, and the message was retried at once.
func TestNoCapBackoffStaysPositive(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{store.BackoffExponential, store.BackoffPolynomial} {
		p := engine.RetryPolicy{MaxRetries: 1000, Strategy: strategy, Backoff: time.Second, BackoffMax: math.MaxInt64, Jitter: 0.15}
		prev := time.Duration(0)
		for _, attempt := range []int{1, 10, 34, 35, 40, 63, 1000} {
			d := p.NextDelay(attempt, 0.5)
			if d < prev {
				t.Errorf("%s: NextDelay(%d) = %s, shorter than an earlier attempt's %s", strategy, attempt, d, prev)
			}
			prev = d
		}
		if d := p.NextDelay(1000, 0.5); d != p.BackoffMax {
			t.Errorf("%s: NextDelay(1000) = %s, want the cap %s", strategy, d, p.BackoffMax)
		}
	}
}

func TestPolynomialStrategy(t *testing.T) {
	t.Parallel()
	p := engine.RetryPolicy{MaxRetries: 10, Strategy: store.BackoffPolynomial, BackoffMax: time.Hour, Jitter: 0.15}
	for attempt, secs := range map[int]float64{1: 3, 2: 18, 3: 83, 4: 258} {
		lo := p.NextDelay(attempt, 0)
		if want := time.Duration(secs * float64(time.Second)); lo != want {
			t.Errorf("polynomial attempt %d without jitter = %s, want %s", attempt, lo, want)
		}
		hi := p.NextDelay(attempt, 0.999999)
		extra := hi - lo
		maxExtra := time.Duration(float64(attempt) * 0.15 * float64(time.Second))
		if extra < 0 || extra > maxExtra {
			t.Errorf("polynomial attempt %d jitter %s, want within [0, %s]", attempt, extra, maxExtra)
		}
	}
	if d := p.NextDelay(20, 0.5); d != time.Hour {
		t.Errorf("polynomial attempt 20 = %s, want capped at 1h", d)
	}
}

// A random source outside [0, 1) (NaN from a broken one) is taken as no
// jitter: NaN made every delay the most negative Duration, and the
// attempts were used up at once.
func TestNextDelayOfABrokenRandomSource(t *testing.T) {
	t.Parallel()
	p := engine.DefaultRetryPolicy()
	for _, rnd := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 1, 5} {
		if got, want := p.NextDelay(1, rnd), p.NextDelay(1, 0.5); got != want {
			t.Errorf("NextDelay(1, %v) = %s; want %s, as with no jitter", rnd, got, want)
		}
	}
}

// A Nack without a reason records that it had none, not an empty error
// message that reads as a failure no one explained.
func TestNackWithoutAReason(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"", "  "} {
		if got := engine.Nack(-5, reason).Error(); got != "nacked without a reason" {
			t.Errorf("Nack(-5, %q).Error() = %q", reason, got)
		}
	}
	if got := engine.Nack(0, "not yet").Error(); got != "not yet" {
		t.Errorf("Nack(0, %q).Error() = %q", "not yet", got)
	}
}
