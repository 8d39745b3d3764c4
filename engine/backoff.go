package engine

import (
	"math"
	"time"

	"github.com/pgbus/pgbus/store"
)

// RetryPolicy decides how often and how far apart a failing message is
// retried. Queues carry one in their settings; a kind may override it.
type RetryPolicy struct {
	// MaxRetries is how many times a message runs at most: the failure of
	// attempt MaxRetries dead-letters it.
	MaxRetries int
	// Strategy is store.BackoffExponential or store.BackoffPolynomial;
	// empty is exponential.
	Strategy string
	// Backoff is the exponential strategy's first delay, doubled at each
	// failure after; the polynomial strategy does not use it.
	Backoff time.Duration
	// BackoffMax caps every delay.
	BackoffMax time.Duration
	// Jitter, from 0 to 1, spreads delays by a uniform factor in
	// [1-Jitter, 1+Jitter] (polynomial: adds up to attempt*Jitter seconds).
	Jitter float64
}

// DefaultRetryPolicy is the policy of a queue with default settings: 5 runs,
// 5s doubling to 300s, 15% jitter.
func DefaultRetryPolicy() RetryPolicy {
	return policyOf(store.DefaultQueueSettings(""))
}

func policyOf(q store.QueueSettings) RetryPolicy {
	return RetryPolicy{
		MaxRetries: q.MaxRetries,
		Strategy:   q.BackoffStrategy,
		Backoff:    q.RetryBackoff,
		BackoffMax: q.RetryBackoffMax,
		Jitter:     q.RetryBackoffJitter,
	}
}

// NextDelay returns the wait after failed attempt number attempt (1-based).
// rnd is a uniform random number in [0, 1) (one outside it is taken as
// 0.5, no jitter); passing it in keeps the formula testable.
//
// Exponential: min(Backoff * 2^(attempt-1), BackoffMax), times a factor in
// [1-Jitter, 1+Jitter], capped at BackoffMax.
// Polynomial: attempt^4 + 2 + rnd*attempt*Jitter seconds, capped at
// BackoffMax (Rails' polynomially_longer).
func (p RetryPolicy) NextDelay(attempt int, rnd float64) time.Duration {
	attempt = max(attempt, 1)
	if !(rnd >= 0 && rnd < 1) {
		// Outside its range (NaN from a broken source) it would stretch
		// delays, or make them negative, using the attempts up at once.
		rnd = 0.5
	}
	var d float64
	if p.Strategy == store.BackoffPolynomial {
		a := float64(attempt)
		d = (math.Pow(a, 4) + 2 + rnd*a*p.Jitter) * float64(time.Second)
	} else {
		d = float64(p.Backoff) * math.Pow(2, float64(min(attempt-1, 62)))
		d = math.Min(d, float64(p.BackoffMax))
		d *= 1 - p.Jitter + 2*p.Jitter*rnd
	}
	// Compared as floats, not converted first: float64(math.MaxInt64) is
	// 2^63, past what a Duration holds, so a delay capped at a BackoffMax
	// near it (as "no cap" is written) converted to a negative one, which
	// retried at once.
	if d >= float64(p.BackoffMax) {
		return p.BackoffMax
	}
	return time.Duration(max(d, 0))
}
