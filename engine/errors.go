package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error classes the engine itself assigns.
const (
	ClassPanic          = "panic"
	ClassUnknownKind    = "pgbus.UnknownKind"
	ClassDecode         = "pgbus.DecodeError"
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
	delay   time.Duration // retry-after hint, nack delay or snooze duration; 0: backoff
	class   string        // overrides the derived class when set
}

func (e *controlError) Error() string {
	if e.err == nil {
		return "snoozed"
	}
	return e.err.Error()
}

func (e *controlError) Unwrap() error { return e.err }

// NonRetryable marks err as permanent (bad input, a programming error): the
// message is dead-lettered at once with reason non_retryable_error.
func NonRetryable(err error) error {
	return &controlError{err: orUnknown(err), outcome: outcomeDeadLetter}
}

// RetryAfter marks err as transient with a hint from the downstream, such as
// an HTTP Retry-After: the next attempt waits d instead of the backoff. The
// attempt still counts toward max_retries.
func RetryAfter(d time.Duration, err error) error {
	return &controlError{err: orUnknown(err), outcome: outcomeRetry, delay: max(d, 0)}
}

// Nack fails the attempt with an explicit delay and a reason, which is
// recorded as the error message.
func Nack(delay time.Duration, reason string) error {
	return &controlError{err: errors.New(reason), outcome: outcomeRetry, delay: max(delay, 0), class: ClassNack}
}

// Discard archives the message with the failure recorded and the
// pgbus_discarded header; it never reaches the DLQ.
func Discard(err error) error {
	return &controlError{err: orUnknown(err), outcome: outcomeDiscard}
}

// Snooze puts the message back for d without using an attempt, for example
// while a downstream's circuit breaker is open.
func Snooze(d time.Duration) error {
	return &controlError{outcome: outcomeSnooze, delay: max(d, 0)}
}

func orUnknown(err error) error {
	if err == nil {
		return errors.New("unspecified error")
	}
	return err
}

// ErrorClass returns the class recorded for an error: the ErrorClass() of the
// first error in the chain that has one, else the Go type of the innermost
// error ("error" for plain errors.New/fmt.Errorf values).
func ErrorClass(err error) string {
	var ce *controlError
	if errors.As(err, &ce) && ce.class != "" {
		return ce.class
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

// classedError carries an explicit class, for errors the engine makes.
type classedError struct {
	class string
	msg   string
}

func (e *classedError) Error() string      { return e.msg }
func (e *classedError) ErrorClass() string { return e.class }
