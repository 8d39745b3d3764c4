package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// PartlyDone is the error of a bulk retry, discard or purge that stopped
// before its end (a cancellation, a lost connection) after doing part of
// its work. What it did stays done: each message moves or goes in its own
// transaction or batch. The error counts it, so that nobody takes the call
// for one that did nothing, and the result returned with it, and the
// audit entry, hold the same counts. A retry by filter cut off before it
// retried any message is one too, with Done 0: it says that none was
// retried, that nothing was lost, and that the same call does them all.
type PartlyDone struct {
	// Verb is what the call was doing: "retrying", "discarding",
	// "purging", "running now".
	Verb string
	// Done is how many messages it handled before it stopped.
	Done int64
	// Limit is the most it would have handled (a move's limit); 0 when
	// there is none (a purge).
	Limit int64
	// Err is why it stopped.
	Err error
	// Again is the same call as a next step, which does the rest: the
	// operation and the arguments of the request, without the expect of a
	// guarded call, which the messages it moved no longer match, and with
	// the limit that is left (Left). Empty when the call did all its limit
	// allowed before it stopped: there is no rest.
	Again Hint
}

func (e *PartlyDone) Error() string {
	if e.Again.Op == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Stopped())
	}
	again := "the same call again"
	if left := e.Left(); left > 0 {
		again += " with limit " + strconv.FormatInt(left, 10)
	}
	return fmt.Sprintf("%v: %s; %s %s", e.Err, e.Stopped(), again, e.Rest())
}

// Left is the limit a call that does the rest takes: the call's limit less
// what it did, so that the two together keep to the limit asked for; 0
// for a call without a limit (a purge), and for one that did nothing,
// whose own limit is left whole.
func (e *PartlyDone) Left() int64 {
	if e.Limit == 0 || e.Done == 0 {
		return 0
	}
	return e.Limit - e.Done
}

func (e *PartlyDone) Unwrap() error { return e.Err }

// Stopped says how far the call went, such as "stopped after retrying
// 2,032 of up to 100,000 dead messages, which stay retried", for a front
// end that words the rest itself.
func (e *PartlyDone) Stopped() string {
	w := partlyWords[e.Verb]
	of := ""
	if e.Limit > 0 {
		of = " of up to " + thousands(e.Limit)
	}
	if e.Done == 0 {
		// "stopped before retrying any of up to 100,000 dead messages,
		// so none was retried and nothing was lost: they stay in their
		// DLQ"
		noun := w.nounN
		if e.Limit == 1 {
			noun = w.noun1
		}
		of += " " + noun
		return fmt.Sprintf("stopped before %s any%s, so %s", e.Verb, of, w.none)
	}
	noun := e.Done
	if e.Limit > 0 {
		noun = e.Limit
	}
	stay := w.stayN
	if e.Done == 1 {
		stay = w.stay1
	}
	return fmt.Sprintf("stopped after %s %s%s %s, which %s", e.Verb, thousands(e.Done), of, plural.Of(noun, w.noun1, w.nounN), stay)
}

// Rest is the end of a sentence whose start names what to run again: the
// same call or command "retries the rest", or "retries them" after a call
// that did none.
func (e *PartlyDone) Rest() string {
	if e.Done == 0 {
		return partlyWords[e.Verb].all
	}
	return partlyWords[e.Verb].rest
}

// partlyWords word a PartlyDone of each verb: what it handles, what the
// handled ones are now (of one, of several), what the same call again
// does, and, for a call that did none, what that means and what the same
// call again does.
var partlyWords = map[string]struct{ noun1, nounN, stay1, stayN, rest, none, all string }{
	"retrying":    {"dead message", "dead messages", "stays retried", "stay retried", "retries the rest", "none was retried and nothing was lost: they stay in their DLQ", "retries them"},
	"discarding":  {"dead message", "dead messages", "stays discarded", "stay discarded", "discards the rest", "none was discarded: they stay in their DLQ", "discards them"},
	"purging":     {"dead message", "dead messages", "is gone", "are gone", "purges the rest", "none is gone: they stay in their DLQ", "purges them"},
	"running now": {"retrying message", "retrying messages", "stays visible", "stay visible", "runs the rest now", "none was made visible: they stay retrying", "runs them now"},
}

// next is what to do after a call stopped partway: the same call again,
// after the health check when it stopped because the database does not
// answer, which says when the call can go on (not when it waited for
// another session's lock: its message says how to end that).
func (e *PartlyDone) next() []Hint {
	var out []Hint
	var c cause
	if errors.Is(e.Err, ErrUnavailable) && !(errors.As(e.Err, &c) && c.lockWait) {
		out = append(out, healthHint())
	}
	if e.Again.Op != "" {
		out = append(out, e.Again)
	}
	return out
}

// partlyDone returns err as a *PartlyDone when done > 0, err otherwise: a
// call that did nothing before its error is no partial one. again is the
// call, as a next step, that does the rest; its limit and why are set
// here.
func partlyDone(err error, verb string, done, limit int64, again Hint) error {
	if err == nil || done == 0 {
		return err
	}
	p := &PartlyDone{Verb: verb, Done: done, Limit: limit, Err: err, Again: again}
	switch {
	case limit > 0 && done >= limit:
		p.Again = Hint{}
	case limit > 0:
		if p.Again.Args == nil {
			p.Again.Args = map[string]any{}
		}
		p.Again.Args["limit"] = int(p.Left())
		p.Again.Why = p.Rest()
	default:
		p.Again.Why = p.Rest()
	}
	return p
}

// cutOff reports whether err stopped a call before its end without
// refusing its work: the database could not be reached or stopped
// answering (a restart, a pooler killed), or the call was given up at its
// bound or cancelled. What the call did not reach is as it was.
func cutOff(err error) bool {
	return store.IsUnreachable(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// partlyDoneOrNone is partlyDone, and for a call cut off (cutOff) once
// under way (began) before it did anything, a *PartlyDone of none done,
// whose again is the same call: so that a bulk call cut off says so
// whether it had done any. A call that never reached the database is
// no cut one: its error says that nothing was changed.
func partlyDoneOrNone(err error, began bool, verb string, done, limit int64, again Hint) error {
	if err == nil || done > 0 || !began || !cutOff(err) {
		return partlyDone(err, verb, done, limit, again)
	}
	again.Why = partlyWords[verb].all
	return &PartlyDone{Verb: verb, Limit: limit, Err: err, Again: again}
}

// thousands writes n with commas between groups of three digits, as the
// counts of a long operation are easier read.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// withError is an audit entry's result, the fields of done (what a call
// did before its error), with the error as one more field.
func withError(done json.RawMessage, msg string) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(done, &fields) != nil || fields == nil {
		fields = map[string]json.RawMessage{"done": done}
	}
	fields["error"] = marshalPlain(msg)
	return marshalPlain(fields)
}
