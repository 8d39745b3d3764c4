package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Unsure lists the messages that may or may not have been handled:
	// the connection broke, or the call gave up, after their statement
	// was sent, so that whether it committed is not known. They are not
	// counted in Done, and the limit of Again leaves them out, so that the
	// two calls never handle more than the limit asked for.
	Unsure []DeadID
	// Err is why it stopped.
	Err error
	// Again is the same call as a next step, which does the rest: the
	// operation and the arguments of the request, without the expect of a
	// guarded call, which the messages it moved no longer match, and with
	// the limit that is left (Left). Empty when the call did all its limit
	// allowed before it stopped: there is no rest.
	Again Hint
	// Until, for a retry or discard by filter, is the end of what it
	// selected (RFC 3339), which Again takes as its until: the call that
	// does the rest handles the rest of the same messages, not those that
	// died since it began, among them those a retry retried that died
	// again, and those nobody has looked at yet. "" when Again has none.
	Until string
	// VisibleUntil, for a paced retry, is when the last message it moved
	// becomes visible: the call that does the rest belongs after it, at
	// the same rate, or the two reach the downstream at twice the rate.
	// Zero when there is no pace, or all are visible already.
	VisibleUntil time.Time
}

func (e *PartlyDone) Error() string {
	if e.Again.Op == "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Stopped())
	}
	again := "the same call again"
	var with []string
	if left := e.Left(); left > 0 {
		with = append(with, "limit "+strconv.FormatInt(left, 10))
	}
	if e.Until != "" {
		with = append(with, "until "+e.Until)
	}
	if len(with) > 0 {
		again += " with " + strings.Join(with, " and ")
	}
	return fmt.Sprintf("%v: %s; %s %s", e.Err, e.Stopped(), again, e.Rest())
}

// Left is the limit a call that does the rest takes: the call's limit less
// what it did and what it may have done (Unsure), so that the two
// together keep to the limit asked for; 0 for a call without a limit (a
// purge), and for one that did nothing, whose own limit is left whole.
func (e *PartlyDone) Left() int64 {
	if e.Limit == 0 || e.Done == 0 && len(e.Unsure) == 0 {
		return 0
	}
	return max(e.Limit-e.Done-int64(len(e.Unsure)), 0)
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
		if len(e.Unsure) > 0 {
			// "stopped before retrying any of up to 600 dead messages
			// for certain: 1 may or may not have been retried (...)"
			return fmt.Sprintf("stopped before %s any%s for certain: %s; %s", e.Verb, of, e.unsure(""), w.others)
		}
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
	out := fmt.Sprintf("stopped after %s %s%s %s, which %s", e.Verb, thousands(e.Done), of, plural.Of(noun, w.noun1, w.nounN), stay)
	if len(e.Unsure) > 0 {
		out += "; " + e.unsure(" more")
	}
	return out
}

// maxUnsureIDs bounds the ids the words of a PartlyDone name of the
// messages that may or may not have been handled.
const maxUnsureIDs = 5

// unsure says which messages may or may not have been handled, and where
// to look for them: "1 more may or may not have been retried (message 42
// of orders_dlq), as the connection broke while it was written: look for
// it in its queue and its DLQ".
func (e *PartlyDone) unsure(more string) string {
	w := partlyWords[e.Verb]
	n := len(e.Unsure)
	var ids []string
	for i, id := range e.Unsure[:min(n, maxUnsureIDs)] {
		s := strconv.FormatInt(id.MsgID, 10)
		if i == min(n, maxUnsureIDs)-1 || e.Unsure[i+1].DLQ != id.DLQ {
			s += " of " + id.DLQ
		}
		ids = append(ids, s)
	}
	list := strings.Join(ids, ", ")
	if n > maxUnsureIDs {
		list += " and " + thousands(int64(n-maxUnsureIDs)) + " more"
	}
	if n == 1 {
		return fmt.Sprintf("1%s may or may not have been %s (message %s), as the connection broke while it was written: look for it in %s", more, w.done, list, w.look1)
	}
	return fmt.Sprintf("%s%s may or may not have been %s (messages %s), as the connection broke while they were written: look for them in %s", thousands(int64(n)), more, w.done, list, w.lookN)
}

// Rest is the end of a sentence whose start names what to run again: the
// same call or command "retries the rest", or "retries them" after a call
// that did none.
func (e *PartlyDone) Rest() string {
	w := partlyWords[e.Verb]
	paced := ""
	if !e.VisibleUntil.IsZero() {
		paced = ", at the same rate once the messages it moved are all visible (at " + e.VisibleUntil.UTC().Format(time.RFC3339) + "); made before, the two share the queues' turns at twice the rate"
	}
	switch {
	case len(e.Unsure) > 0 && e.Limit > 0:
		return fmt.Sprintf("%s once you have looked, its limit counting the %s that may have been %s as %s, so that the two never %s more than the limit asked for%s",
			w.rest, thousands(int64(len(e.Unsure))), w.done, w.done, w.verb, paced)
	case len(e.Unsure) > 0:
		return w.rest + " once you have looked" + paced
	case e.Done == 0:
		return w.all
	}
	return w.rest + paced
}

// partlyWords word a PartlyDone of each verb: what it handles, what the
// handled ones are now (of one, of several), what the same call again
// does, and, for a call that did none, what that means and what the same
// call again does; and, for the messages that may or may not have been
// handled (only a retry's and a discard's), what handled means, where to
// look for one and for several, what the others are, and the verb.
var partlyWords = map[string]struct{ noun1, nounN, stay1, stayN, rest, none, all, done, look1, lookN, others, verb string }{
	"retrying":    {"dead message", "dead messages", "stays retried", "stay retried", "retries the rest", "none was retried and nothing was lost: they stay in their DLQ", "retries them", "retried", "its queue and its DLQ", "their queues and their DLQs", "the others stay in their DLQ", "retry"},
	"discarding":  {"dead message", "dead messages", "stays discarded", "stay discarded", "discards the rest", "none was discarded: they stay in their DLQ", "discards them", "discarded", "its DLQ and among its discarded messages", "their DLQs and among their discarded messages", "the others stay in their DLQ", "discard"},
	"purging":     {"dead message", "dead messages", "is gone", "are gone", "purges the rest", "none is gone: they stay in their DLQ", "purges them", "purged", "", "", "", "purge"},
	"running now": {"retrying message", "retrying messages", "stays visible", "stay visible", "runs the rest now", "none was made visible: they stay retrying", "runs them now", "made visible", "", "", "", "run"},
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
	out = append(out, e.lookHints()...)
	if e.Again.Op != "" {
		out = append(out, e.Again)
	}
	return out
}

// lookHints are the reads that show where the messages that may or may
// not have been handled (Unsure) are, to look at before the same call
// again: the dead messages of each of their queues (up to
// maxUndoHints), and the queue's stats after a retry, its discarded
// messages after a discard.
func (e *PartlyDone) lookHints() []Hint {
	var out []Hint
	w := partlyWords[e.Verb]
	for _, id := range e.Unsure {
		q := baseQueue(id.DLQ)
		if slices.ContainsFunc(out, func(h Hint) bool { return h.Args["queue"] == q }) {
			continue
		}
		if len(out) >= 2*maxUndoHints {
			break
		}
		out = append(out, hint(OpDLQList, "shows whether the messages that may or may not have been "+w.done+" are still dead", "queue", q))
		switch e.Verb {
		case "retrying":
			out = append(out, hint(OpQueueStats, "shows whether the messages that may or may not have been retried came back to the queue", "queue", q))
		case "discarding":
			out = append(out, hint(OpDLQDiscarded, "shows whether the messages that may or may not have been discarded are among the discarded ones", "queue", q))
		}
	}
	return out
}

// partlyDone returns err as a *PartlyDone when done > 0 or some messages
// may or may not have been handled (unsure), err otherwise: a call that
// did nothing before its error is no partial one. again is the call, as a
// next step, that does the rest; its limit and why are set here.
func partlyDone(err error, verb string, done, limit int64, unsure []DeadID, again Hint) error {
	if err == nil || done == 0 && len(unsure) == 0 {
		return err
	}
	p := &PartlyDone{Verb: verb, Done: done, Limit: limit, Unsure: unsure, Err: err, Again: again}
	switch {
	case limit > 0 && done+int64(len(unsure)) >= limit:
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

// restFilter is the filter of the call that does the rest of a retry or
// discard by filter stopped partway: f, pinned at now, ending where the
// stopped call's selection ended (selectedUntil, when known), so that it
// selects the rest of the same messages and not those that died since.
func restFilter(f DeadFilter, now, selectedUntil time.Time) DeadFilter {
	f = f.Pinned(now)
	if !selectedUntil.IsZero() {
		f.Until = selectedUntil.UTC().Format(time.RFC3339Nano)
	}
	return f
}

// pinRest sets the Until of err's PartlyDone to until, the until of the
// filter its Again takes (restFilter), when it names a call that does the
// rest, and returns it; nil when err names none.
func pinRest(err error, until string) *PartlyDone {
	var pd *PartlyDone
	if !errors.As(err, &pd) || pd.Again.Op == "" {
		return nil
	}
	pd.Until = until
	return pd
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
func partlyDoneOrNone(err error, began bool, verb string, done, limit int64, unsure []DeadID, again Hint) error {
	if err == nil || done > 0 || len(unsure) > 0 || !began || !cutOff(err) {
		return partlyDone(err, verb, done, limit, unsure, again)
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

// withField is an audit entry's result, res, with one more field.
func withField(res json.RawMessage, name string, v any) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(res, &fields) != nil || fields == nil {
		fields = map[string]json.RawMessage{"done": res}
	}
	fields[name] = marshalPlain(v)
	return marshalPlain(fields)
}
