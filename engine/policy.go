package engine

import (
	"errors"
	"time"
)

// Action is what an ErrorPolicy does with a matching error, from "always
// retry" to "give up".
type Action int

const (
	// ActionRetry retries with the policy's own RetryPolicy, or the queue's.
	ActionRetry Action = iota
	// ActionRetryAfterHint retries after the error's hint (RetryAfter, or an
	// error with a RetryAfter() time.Duration method), else the backoff.
	ActionRetryAfterHint
	// ActionDiscard archives the message with the failure recorded.
	ActionDiscard
	// ActionDeadLetter sends it to the DLQ at once (non_retryable_error).
	ActionDeadLetter
)

// ErrorPolicy chooses what happens to errors of one class. A policy matches
// when any of its matchers (Class, Is, Match) does, and Run refuses one
// with none; HandlerOptions.Policies are tried in order and the first
// match wins. Errors no policy matches use the queue's policy.
type ErrorPolicy struct {
	// Class matches ErrorClass(err) exactly, for example "http.503" from a
	// built-in handler, "syscall.Errno" for a connection refused (the
	// innermost error's type) or "mypkg.QuotaError" (a pointer's type
	// without its *). Only a policy of Class ClassPanic applies to a
	// panic, which is otherwise dead-lettered at once.
	Class string
	// Is matches errors.Is(err, Is): a sentinel error.
	Is error
	// Match is any test, for example MatchType[*net.OpError]().
	Match func(error) bool
	// Action is what happens to the errors matched; the zero value is
	// ActionRetry.
	Action Action
	// Retry, for ActionRetry and ActionRetryAfterHint (Run refuses it,
	// and MaxRetries, with the other actions), replaces the attempts and
	// backoff for these errors.
	Retry *RetryPolicy
	// MaxRetries, when Retry is nil, replaces only the attempts for these
	// errors: the backoff stays the queue's (or the kind's).
	MaxRetries int
}

// maxRetries is how many attempts p allows its errors; 0 when it leaves
// them to the queue's.
func (p ErrorPolicy) maxRetries() int {
	if p.Retry != nil {
		return p.Retry.MaxRetries
	}
	return p.MaxRetries
}

// MatchType returns a matcher for errors of type T anywhere in the chain.
func MatchType[T error]() func(error) bool {
	return func(err error) bool {
		var target T
		return errors.As(err, &target)
	}
}

func (p ErrorPolicy) matches(err error) bool {
	return (p.Class != "" && ErrorClass(err) == p.Class) ||
		(p.Is != nil && errors.Is(err, p.Is)) ||
		(p.Match != nil && p.Match(err))
}

// panicPolicies are the policies that name panics by their class
// (ClassPanic): a handler that asks for its panics to be retried (or
// discarded) gets that, where a panic is otherwise dead-lettered at once.
// Only the class counts, so that a catch-all Match written for the errors
// a handler returns does not retry programming errors by accident.
func panicPolicies(policies []ErrorPolicy) []ErrorPolicy {
	var out []ErrorPolicy
	for _, p := range policies {
		if p.Class == ClassPanic {
			out = append(out, p)
		}
	}
	return out
}

// policyFor returns the first policy matching err.
func policyFor(policies []ErrorPolicy, err error) (ErrorPolicy, bool) {
	for _, p := range policies {
		if p.matches(err) {
			return p, true
		}
	}
	return ErrorPolicy{}, false
}

// retryHint returns the delay an error asks for, if any. A hint of an
// error's own RetryAfter method is bounded by MaxDelay, as RetryAfter's
// is: a downstream's Retry-After of years would park the message out of
// sight of every check.
func retryHint(err error) (time.Duration, bool) {
	if ce, ok := asControl(err); ok && ce.outcome == outcomeRetry && (ce.delay > 0 || ce.explicit) {
		return ce.delay, true
	}
	var hinted interface{ RetryAfter() time.Duration }
	if errors.As(err, &hinted) {
		if d := hinted.RetryAfter(); d > 0 {
			return min(d, MaxDelay), true
		}
	}
	return 0, false
}
