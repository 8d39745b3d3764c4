package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Error classes the engine itself assigns.
const (
	ClassPanic          = "panic"
	ClassUnknownKind    = "pgbus.UnknownKind"
	ClassDecode         = "pgbus.DecodeError"
	ClassDecodeTarget   = "pgbus.DecodeTargetError" // Job.Decode given no non-nil pointer: the handler's mistake
	ClassHandlerTimeout = "pgbus.HandlerTimeout"
	ClassNack           = "pgbus.Nack"
)

// outcome is what a handler's error asks the engine to do.
type outcome int

const (
	outcomeRetry outcome = iota
	outcomeDeadLetter
	outcomeDiscard
	outcomeSnooze
)

// controlError wraps a handler error with the engine's instruction for it.
type controlError struct {
	err     error
	outcome outcome
	delay   time.Duration // retry-after hint, nack delay or snooze duration; 0: backoff, unless explicit
	// explicit says delay is the retry's wait even when 0 (a Nack's).
	explicit bool
	class    string // overrides the derived class when set
}

func (e *controlError) Error() string {
	if e.err == nil {
		return "snoozed"
	}
	return e.err.Error()
}

func (e *controlError) Unwrap() error { return e.err }

// NonRetryable marks err as permanent (bad input, a programming error): the
// message is dead-lettered at once with reason non_retryable_error. A nil
// err stays nil, so return NonRetryable(validate(in)) succeeds when the
// input is valid.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &controlError{err: err, outcome: outcomeDeadLetter}
}

// RetryAfter marks err as transient with a hint from the downstream, such as
// an HTTP Retry-After: the next attempt waits d instead of the backoff; a d
// of 0 or less is no hint, and the backoff applies. The attempt still
// counts toward max_retries. A d over MaxDelay waits MaxDelay. A nil err
// stays nil.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &controlError{err: err, outcome: outcomeRetry, delay: min(max(d, 0), MaxDelay)}
}

// MaxDelay bounds the delay of RetryAfter, Nack and Snooze, the hint of
// an error's own RetryAfter method, and a RetryPolicy's BackoffMax, as a
// queue's backoff max is bounded: a longer
// one (a Retry-After of years, a mistyped constant) would park the message
// out of sight of every check.
const MaxDelay = 7 * 24 * time.Hour

// Nack fails the attempt with an explicit delay, instead of the backoff, and
// a reason, which is recorded as the error message ("nacked without a
// reason" when it is empty). A delay of 0 or less retries at once, one over
// MaxDelay waits MaxDelay. The attempt counts toward max_retries.
func Nack(delay time.Duration, reason string) error {
	if strings.TrimSpace(reason) == "" {
		reason = "nacked without a reason"
	}
	return &controlError{err: errors.New(reason), outcome: outcomeRetry, delay: min(max(delay, 0), MaxDelay), explicit: true, class: ClassNack}
}

// Discard archives the message with the failure recorded and the
// pgbus_discarded header; it never reaches the DLQ. A nil err stays nil.
func Discard(err error) error {
	if err == nil {
		return nil
	}
	return &controlError{err: err, outcome: outcomeDiscard}
}

// MinSnooze is the shortest a snooze puts a message back for: a shorter
// one, used without an attempt, would have workers read it again and again.
const MinSnooze = time.Second

// Snooze puts the message back for d, at least MinSnooze and at most
// MaxDelay, without using an attempt, for example while a downstream's
// circuit breaker is open.
func Snooze(d time.Duration) error {
	return &controlError{outcome: outcomeSnooze, delay: min(max(d, MinSnooze), MaxDelay)}
}

// SnoozeBecause is Snooze for a reason of the worker's rather than the
// job's, such as a handler that could not start for want of file
// descriptors or processes: the message goes back for d without using an
// attempt, and the worker's log says why, at most once a minute for its
// queue, since the job's failure history records nothing.
func SnoozeBecause(d time.Duration, reason error) error {
	return &controlError{err: reason, outcome: outcomeSnooze, delay: min(max(d, MinSnooze), MaxDelay)}
}

// SnoozeOf reports how long err, a handler's error, puts its message back
// for when it is a Snooze or a SnoozeBecause (ok), and the reason given
// with it (nil for a Snooze), which the worker's log says: for a handler's
// tests, and a wrapper that passes a handler's snooze on.
func SnoozeOf(err error) (d time.Duration, reason error, ok bool) {
	var ce *controlError
	if !errors.As(err, &ce) || ce.outcome != outcomeSnooze {
		return 0, nil, false
	}
	return ce.delay, ce.err, true
}

// ErrorClass returns the class recorded for an error: the ErrorClass() of the
// first error in the chain that has one, else the Go type of the innermost
// error ("error" for plain errors.New/fmt.Errorf values). No error has no
// class, nor has a Snooze, which is no failure: ErrorClass(nil) and
// ErrorClass(Snooze(d)) are "".
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var ce *controlError
	if errors.As(err, &ce) && ce.class != "" {
		return ce.class
	}
	if ce != nil && ce.outcome == outcomeSnooze {
		return ""
	}
	var classed interface{ ErrorClass() string }
	if errors.As(err, &classed) {
		return classed.ErrorClass()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	}
	root := err
	for {
		next := errors.Unwrap(root)
		if next == nil {
			break
		}
		root = next
	}
	name := strings.TrimPrefix(fmt.Sprintf("%T", root), "*")
	switch name {
	case "errors.errorString", "fmt.wrapError", "fmt.wrapErrors", "errors.joinError":
		return "error"
	}
	return name
}

// classedError carries an explicit class, for errors the engine makes,
// and the error it reports, if any, for errors.As.
type classedError struct {
	class string
	msg   string
	cause error
}

func (e *classedError) Error() string      { return e.msg }
func (e *classedError) ErrorClass() string { return e.class }
func (e *classedError) Unwrap() error      { return e.cause }

// MaxOutputChars is how much of a downstream's output (a command's stderr,
// a response body) the failure history keeps: 2,000 characters.
const MaxOutputChars = store.FailureOutputMax

// Output is what a downstream said when an attempt failed.
type Output struct {
	// Source names it: "stderr", "stdout" or "response_body".
	Source string
	// Text is at most MaxOutputChars characters of it.
	Text string
	// Truncated says Text is only part of it.
	Truncated bool
}

// OutputError is implemented by errors that carry a downstream's output,
// such as the built-in exec and http handlers' errors: the failure history
// keeps it next to the error message.
type OutputError interface {
	error
	FailureOutput() Output
}

// TimeoutError is implemented by errors of an attempt cut off by a time
// limit of its own (a request or command timeout): the failure history
// records the limit. An attempt whose context passed its deadline records
// the handler's timeout without it.
type TimeoutError interface {
	error
	TimeoutLimit() time.Duration
}

// detail is what the failure history keeps of an attempt besides its error.
func (a attempt) detail() store.FailureDetail {
	elapsed := a.elapsed.Milliseconds()
	d := store.FailureDetail{ElapsedMS: &elapsed}
	var te TimeoutError
	switch {
	case errors.As(a.err, &te) && te.TimeoutLimit() > 0:
		d.TimeoutMS = te.TimeoutLimit().Milliseconds()
	case a.timedOut || ErrorClass(a.err) == ClassHandlerTimeout:
		d.TimeoutMS = a.limit.Milliseconds()
	}
	var oe OutputError
	if errors.As(a.err, &oe) {
		o := oe.FailureOutput()
		d.Output, d.OutputSource, d.OutputTruncated = o.Text, o.Source, o.Truncated
	}
	return d
}
