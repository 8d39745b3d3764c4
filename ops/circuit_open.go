package ops

import (
	"context"
	"time"

	"github.com/pgbus/pgbus/store"
)

// CircuitOpenRequest names the breaker to open by hand, for how long and
// why.
type CircuitOpenRequest struct {
	Name string
	// For is how long the breaker stays open: 1s to MaxOpenByHand.
	For time.Duration
	// Reason says why, for whoever finds the breaker open meanwhile (a
	// maintenance window, a ticket): optional, at most MaxOpenReason
	// bytes.
	Reason string
}

// MaxOpenReason is the longest reason an opening by hand keeps, in bytes.
const MaxOpenReason = store.MaxOpenReason

// HandOpening is an opening of a breaker by hand: who opened it and why.
type HandOpening struct {
	By     string `json:"by" jsonschema_description:"Who opened it: cli, dashboard, or mcp: and the client's name."`
	Reason string `json:"reason,omitempty" jsonschema_description:"Why, as they gave it; secrets redacted."`
}

// handOpening is the opening by hand that by and reason record, nil for
// none; its reason redacted, since an operator may paste a link with a
// token in it.
func handOpening(by, reason string) *HandOpening {
	if by == "" {
		return nil
	}
	redacted, _ := RedactText(reason)
	return &HandOpening{By: by, Reason: redacted}
}

// handOpeningOf is the opening by hand b is in, nil when none: its time
// up (a probe due), the window is over even before a job makes the probe.
func handOpeningOf(b store.BreakerState, now time.Time) *HandOpening {
	if probeDue(b, now) {
		return nil
	}
	return handOpening(b.OpenedBy, b.OpenReason)
}

// MaxOpenByHand is the longest a breaker is opened by hand.
const MaxOpenByHand = store.MaxOpenByHand

// CircuitOpen is a breaker opened by hand.
type CircuitOpen struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Was is the breaker's state before: closed, open or half_open.
	Was string `json:"was"`
	// OpenUntil is when the next job that meets it probes it.
	OpenUntil time.Time `json:"open_until"`
	// OpenedByHand is this opening: who, why.
	OpenedByHand HandOpening `json:"opened_by_hand"`
	// Replaced is the opening by hand this one replaced, nil for none.
	Replaced *HandOpening `json:"replaced,omitempty"`
	Next     []Hint       `json:"next"`
}

// CircuitOpen opens a circuit breaker by hand for a while, as for a
// downstream known to be down or under maintenance: every job whose
// handler uses the breaker, in whatever queue, is held (snoozed, no
// attempt used) instead of failing toward its DLQ, while the other jobs
// of the same queues run. When the time is up the next job probes the
// downstream, as after a cool-off; CircuitReset, told to end the opening
// by hand, ends it early and releases the held jobs.
func (s *Service) CircuitOpen(ctx context.Context, req CircuitOpenRequest) (out CircuitOpen, err error) {
	args := func() any {
		args := map[string]any{"name": req.Name, "for": FormatAge(req.For)}
		if req.Reason != "" {
			args["reason"], _ = RedactText(req.Reason)
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "CircuitOpen", writesOnce)
	if err != nil {
		return out, s.refusedByGate(ctx, OpCircuitOpen, false, req.Check, args, err)
	}
	defer end()
	defer func() { s.record(ctx, OpCircuitOpen, args(), out, err) }()
	defer s.explainWrite(ctx, &err, writesOnce, hint(OpCircuits, "shows the breaker's state now, which the call may have changed", "name", req.Name)) // runs before the audit entry
	if err := s.checkWrite(OpCircuitOpen); err != nil {
		return CircuitOpen{}, err
	}
	if err := req.Check(); err != nil {
		return CircuitOpen{}, err
	}
	by := CallerFrom(ctx).who()
	was, until, err := s.store.OpenBreaker(ctx, req.Name, store.BreakerOpening{For: req.For, By: by, Reason: req.Reason})
	if err != nil {
		return CircuitOpen{}, explain(err, hint(OpCircuits, "lists the breakers"))
	}
	return CircuitOpen{Name: req.Name, State: store.BreakerOpen, Was: was.State, OpenUntil: until,
		OpenedByHand: *handOpening(by, req.Reason), Replaced: handOpening(was.OpenedBy, was.OpenReason), Next: []Hint{
			hint(OpCircuits, "counts the jobs it holds (held)"),
			CircuitResetRequest{Name: req.Name, EndOpeningByHand: true}.Hint("once the downstream is back, closes it early and releases the jobs it holds"),
		}}, nil
}

// Check refuses a request that names no breaker, a name no breaker can
// have, or a time out of range.
func (r CircuitOpenRequest) Check() error {
	if err := checkText("reason", r.Reason); err != nil {
		return err
	}
	if err := checkBreakerName(r.Name); err != nil {
		return err
	}
	switch {
	case r.For < time.Second || r.For > MaxOpenByHand:
		return invalidf("for %s is out of range: open a breaker for 1s to %s, such as 30m for a maintenance window", FormatAge(r.For), FormatAge(MaxOpenByHand))
	case len(r.Reason) > MaxOpenReason:
		e := invalidf("reason is %d bytes long; give at most %d, such as the maintenance window's ticket", len(r.Reason), MaxOpenReason)
		e.Field = "reason"
		return e
	}
	return nil
}

// Hint is r as a next step: the same opening.
func (r CircuitOpenRequest) Hint(why string) Hint {
	if r.Reason != "" {
		return hint(OpCircuitOpen, why, "name", r.Name, "for", shortDuration(r.For), "reason", r.Reason)
	}
	return hint(OpCircuitOpen, why, "name", r.Name, "for", shortDuration(r.For))
}
