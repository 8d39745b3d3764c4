package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Validate reports what Run would refuse at start without reading the
// database: no queues to work, a kind or queue whose handler is
// registered twice, handlers that would dead-letter every message (see
// Run), a circuit breaker whose settings are out of range
// (store.BreakerConfig.Validate) and one named with different settings. A
// caller that runs Run in the background calls it first, so that such a
// mistake stops it rather than a log line.
func (c *Client) Validate() error {
	if err := c.made("Validate"); err != nil {
		return err
	}
	if err := c.checkQueuesGiven(); err != nil {
		return err
	}
	if err := c.checkHandlers(); err != nil {
		return err
	}
	_, _, err := c.breakerUses()
	return err
}

// checkQueuesGiven refuses a client without queues to work: one made only
// to send can send, but not Run.
func (c *Client) checkQueuesGiven() error {
	if len(c.cfg.Queues) == 0 {
		return fmt.Errorf("%w: no queues to work; list them in Config.Queues", store.ErrInvalid)
	}
	return nil
}

// checkHandlers refuses, before anything runs, a kind or queue registered
// twice (the last registration silently replaced the first), and
// registrations that would dead-letter every message they meet: no
// handler at all, a nil function,
// the empty kind (no message names it), a kind longer than Send takes (no
// message can name it), a queue's default handler for a
// queue this client does not work (a typo), and retry policies whose
// attempts are out of range (a RetryPolicy filled in part has zero
// attempts, which dead-letters messages unrun), or whose jitter or
// strategy no queue could have; and error policies that match no error or
// name no action.
func (c *Client) checkHandlers() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.kinds) == 0 && len(c.defaults) == 0 {
		return fmt.Errorf("%w: no handlers: register them with Handle or HandleQueue before Run, or every message read would be dead-lettered", store.ErrInvalid)
	}
	if c.misregistered != "" {
		return fmt.Errorf("%w: %s", store.ErrInvalid, c.misregistered)
	}
	worked := map[string]bool{}
	for _, q := range c.cfg.Queues {
		worked[q.Name] = true
	}
	for kind, h := range c.kinds {
		if kind == "" {
			return fmt.Errorf("%w: Handle with an empty kind: no message names it; use HandleQueue for the handler of a queue's messages without a kind", store.ErrInvalid)
		}
		if err := checkKindBytes(kind); err != nil {
			return fmt.Errorf("Handle: %w", err)
		}
		if err := h.check(fmt.Sprintf("kind %q", kind)); err != nil {
			return err
		}
	}
	for queue, h := range c.defaults {
		if !worked[queue] {
			return fmt.Errorf("%w: HandleQueue for queue %q, which this client does not work: give it in Config.Queues, or fix the name", store.ErrInvalid, queue)
		}
		if err := h.check(fmt.Sprintf("queue %q", queue)); err != nil {
			return err
		}
	}
	return nil
}

func (h handler) check(what string) error {
	if h.fn == nil {
		return fmt.Errorf("%w: the handler of %s is nil", store.ErrInvalid, what)
	}
	if err := checkRetry(what, "HandlerOptions.Retry", h.opts.Retry); err != nil {
		return err
	}
	// A Duration is nanoseconds: Timeout: 30, meant as seconds, timed out
	// every attempt at once, and dead-lettered every message.
	if t := h.opts.Timeout; t < 0 || (t > 0 && t < minHandlerTimeout) {
		return fmt.Errorf("%w: %s: HandlerOptions.Timeout %s is shorter than %s, so every attempt would time out: give a time.Duration such as 30 * time.Second (a bare 30 is 30ns), or leave it zero for the queue's visibility timeout",
			store.ErrInvalid, what, t, minHandlerTimeout)
	}
	if b := h.opts.Breaker; b != nil {
		// Checked here, not only as Run makes the breakers: Validate sees
		// it, the error names the handler, and a Run refused makes none
		// of the other handlers' breakers first.
		if err := b.Validate(); err != nil {
			return fmt.Errorf("%w: %s: HandlerOptions.Breaker: %w", store.ErrInvalid, what, err)
		}
	}
	for i, p := range h.opts.Policies {
		// A policy without a matcher matches no error, so it would be
		// skipped without a word, when it was most likely meant for all.
		if p.Class == "" && p.Is == nil && p.Match == nil {
			return fmt.Errorf("%w: %s: HandlerOptions.Policies[%d] matches no error: give it a Class, an Is or a Match (for every error, Match: func(error) bool { return true })", store.ErrInvalid, what, i)
		}
		if strings.HasPrefix(p.Class, "*") {
			// ErrorClass names a pointer's type without its *: the policy
			// would never match, and its errors would follow the queue's.
			return fmt.Errorf("%w: %s: HandlerOptions.Policies[%d].Class %q never matches: a class names a type without the * of a pointer (%q), as ErrorClass gives it; or match the type itself with Match: MatchType[%s]()",
				store.ErrInvalid, what, i, p.Class, strings.TrimPrefix(p.Class, "*"), p.Class)
		}
		if p.Action < ActionRetry || p.Action > ActionDeadLetter {
			return fmt.Errorf("%w: %s: HandlerOptions.Policies[%d].Action %d is not an action; use ActionRetry, ActionRetryAfterHint, ActionDiscard or ActionDeadLetter", store.ErrInvalid, what, i, p.Action)
		}
		// A discard or a dead letter never retries: attempts given with
		// one were ignored without a word.
		if (p.Retry != nil || p.MaxRetries != 0) && p.Action != ActionRetry && p.Action != ActionRetryAfterHint {
			return fmt.Errorf("%w: %s: HandlerOptions.Policies[%d] gives Retry or MaxRetries with an action that never retries: drop them, or use ActionRetry or ActionRetryAfterHint", store.ErrInvalid, what, i)
		}
		if err := checkRetry(what, fmt.Sprintf("HandlerOptions.Policies[%d].Retry", i), p.Retry); err != nil {
			return err
		}
		if p.MaxRetries < 0 || p.MaxRetries > maxRetriesBound {
			return fmt.Errorf("%w: %s: HandlerOptions.Policies[%d].MaxRetries %d is out of range 0..%d", store.ErrInvalid, what, i, p.MaxRetries, maxRetriesBound)
		}
	}
	return nil
}

func checkRetry(what, field string, p *RetryPolicy) error {
	if p == nil {
		return nil
	}
	if p.MaxRetries < 1 || p.MaxRetries > maxRetriesBound {
		return fmt.Errorf("%w: %s: %s.MaxRetries %d is out of range 1..%d; a RetryPolicy replaces the whole policy, so start from engine.DefaultRetryPolicy() and change what you need", store.ErrInvalid, what, field, p.MaxRetries, maxRetriesBound)
	}
	// The bounds of a queue's settings, which a kind's policy overrides.
	switch {
	case p.BackoffMax == 0:
		// Most likely left out: every attempt would run back to back.
		return fmt.Errorf("%w: %s: %s.BackoffMax is 0, which caps every delay at 0, so the attempts would run back to back; a RetryPolicy replaces the whole policy, so start from engine.DefaultRetryPolicy() and change what you need", store.ErrInvalid, what, field)
	case p.Backoff < 0 || p.Backoff > 24*time.Hour:
		return fmt.Errorf("%w: %s: %s.Backoff %s is out of range 0..24h (start from engine.DefaultRetryPolicy())", store.ErrInvalid, what, field, p.Backoff)
	case p.BackoffMax > MaxDelay:
		return fmt.Errorf("%w: %s: %s.BackoffMax %s is more than %s", store.ErrInvalid, what, field, p.BackoffMax, MaxDelay)
	case p.Backoff > 0 && p.Backoff < time.Millisecond, p.BackoffMax > 0 && p.BackoffMax < time.Millisecond:
		// As a queue's: a wait so short is none, most likely a bare
		// number meant as seconds, which used the attempts up in a burst.
		name, d := "Backoff", p.Backoff
		if !(d > 0 && d < time.Millisecond) {
			name, d = "BackoffMax", p.BackoffMax
		}
		return fmt.Errorf("%w: %s: %s.%s %s is shorter than 1ms, which is no wait at all: give a time.Duration such as 5 * time.Second (a bare 5 is 5ns), or a Backoff of 0 to retry at once",
			store.ErrInvalid, what, field, name, d)
	case p.BackoffMax < p.Backoff && p.Strategy != store.BackoffPolynomial:
		return fmt.Errorf("%w: %s: %s has backoff %s and backoff max %s; the max caps every delay, so make it at least the backoff (start from engine.DefaultRetryPolicy())", store.ErrInvalid, what, field, p.Backoff, p.BackoffMax)
	}
	// A jitter past 1 makes some delays negative, and NaN makes them all
	// so: either retries at once, using up the attempts in a burst.
	if !(p.Jitter >= 0 && p.Jitter <= 1) {
		return fmt.Errorf("%w: %s: %s.Jitter %v is out of range 0..1 (0.15 spreads delays by ±15%%)", store.ErrInvalid, what, field, p.Jitter)
	}
	switch p.Strategy {
	case "", store.BackoffExponential, store.BackoffPolynomial:
	default:
		// Anything else would silently back off exponentially.
		return fmt.Errorf("%w: %s: %s.Strategy %q is not a backoff strategy; use store.BackoffExponential or store.BackoffPolynomial", store.ErrInvalid, what, field, p.Strategy)
	}
	return nil
}

// minHandlerTimeout is the shortest HandlerOptions.Timeout Run takes.
const minHandlerTimeout = time.Millisecond

// maxRetriesBound is the most attempts a policy may give, as for a queue.
const maxRetriesBound = 1000
