package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// ErrChanged: a guarded call (one given expect) was refused because the
// messages it would move are no longer the ones expected; nothing was
// written.
var ErrChanged = store.ErrChanged

// Confirmer asks the person behind a call whether to go ahead with what
// question describes, and reports their answer: false when they decline
// or cancel. Front ends that can reach a person while a call runs (MCP
// elicitation) set it on a request; others pass Confirm.
type Confirmer func(ctx context.Context, question string) (bool, error)

// DeadID names one dead message: its DLQ and its id there.
type DeadID struct {
	DLQ   string `json:"dlq"`
	MsgID int64  `json:"msg_id"`
}

// hintArgs returns the filter as a hint's arguments, followed by more.
func (f DeadFilter) hintArgs(more ...any) []any {
	// The fields matched without their blanks are repeated without them.
	for _, v := range []*string{&f.Queue, &f.Since, &f.Until, &f.Group} {
		*v = strings.TrimSpace(*v)
	}
	return append([]any{"queue", f.Queue, "kind", f.Kind, "error_class", f.ErrorClass, "reason", f.Reason,
		"since", f.Since, "until", f.Until, "text", f.Text, "group", f.Group}, more...)
}

// moveArgs is hintArgs for a retry or discard by filter: an empty filter
// is a call for every dead message, which such a call must say (all).
func (f DeadFilter) moveArgs(more ...any) []any {
	if trimmed(f).IsZero() {
		more = append(more, "all", true)
	}
	return f.hintArgs(more...)
}

// describe names what the filter selects, for a question to a person.
func (f DeadFilter) describe() string {
	where := "every DLQ"
	if f.Queue != "" {
		where = "the DLQ of " + baseQueue(f.Queue)
	}
	var parts []string
	for _, kv := range [][2]string{{"kind", f.Kind}, {"error class", f.ErrorClass}, {"reason", f.Reason},
		{"since", f.Since}, {"until", f.Until}, {"error text", f.Text}, {"group", f.Group}} {
		if kv[1] != "" {
			parts = append(parts, fmt.Sprintf("%s %q", kv[0], clip(kv[1], 100)))
		}
	}
	if len(parts) == 0 {
		return where
	}
	return where + " with " + strings.Join(parts, ", ")
}

// expectToken turns the expect of a call by filter into the token the
// store checks: a dry run's expect passes as it is; ids separated by
// commas name the messages of queue, the filter's. redry is the call's own
// dry run (its request's redry), which an expect it cannot read suggests.
func (s *Service) expectToken(ctx context.Context, op, expect string, dryRun bool, queue string, redry func(why string) Hint) (string, error) {
	token, ids, err := readExpect(op, expect, dryRun, queue, redry)
	if err != nil || ids == nil {
		return token, err
	}
	use := store.DeadSetRetry
	if op == OpDLQDiscard {
		use = store.DeadSetDiscard
	}
	tok, err := s.store.DeadIDsToken(ctx, use, queue, ids)
	return tok, explain(err, hint(OpQueueStats, "lists the queues there are"))
}

// readExpect reads the expect of a call by filter without the database,
// as expectToken takes it: none, a dry run's expect (token), or ids of
// the filter's queue.
func readExpect(op, expect string, dryRun bool, queue string, redry func(why string) Hint) (token string, ids []int64, err error) {
	expect = strings.TrimSpace(expect)
	switch {
	case expect == "":
		return "", nil, nil
	case dryRun:
		return "", nil, invalidf("a dry run moves nothing, so it takes no expect: drop expect, or dry_run").naming("expect", "dry_run")
	case strings.Trim(expect, "0123456789,+ ") != "": // not ids (signed ones are refused below)
		return expect, nil, explain(store.CheckDeadSetToken(expect), redry("shows what is selected now, with its expect"))
	case queue == "":
		return "", nil, fieldf("expect", "given as ids needs queue, since an id names a message only within one DLQ: add queue, or pass the expect of a dry run").naming("queue")
	}
	for w := range strings.FieldsFuncSeq(expect, func(r rune) bool { return r == ',' || r == ' ' }) {
		id, err := ParseID(w)
		if err != nil {
			return "", nil, fieldf("expect", "%q is not an id: give message ids (msg_id in the DLQ list) separated by commas, each %s", clip(w, 30), IDForm)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return "", nil, fieldf("expect", "holds no id: give the expect of a dry run, or message ids separated by commas")
	}
	return "", ids, nil
}

// ChangedCause returns what changed, as a refusal wrapping ErrChanged says
// it ("3 then, 4 now"), secrets redacted, without what it goes on to say
// to do in the words of a call's arguments: for a front end that says that
// in its own. "" when err is no such refusal.
func ChangedCause(err error) string {
	c, _ := RedactText(store.ChangedCause(err))
	return c
}

// changed gives the refusal of a guarded call the step that helps: a
// dry run of the same call (redry, its request's), every argument that
// shapes it kept, which shows what is selected now and its expect. Other
// errors pass unchanged.
func changed(err error, redry func(why string) Hint) error {
	var e *Error
	if !errors.Is(err, ErrChanged) || errors.As(err, &e) {
		return err
	}
	return &Error{Msg: err.Error(), Err: err, Hints: []Hint{redry("shows what is selected now, with a new expect")}}
}

// confirmDiscard gets the go-ahead for a discard by filter. Without Ask
// or Deferred, that is Confirm. Otherwise the person is asked about the
// exact set a dry run selects, and that set becomes the call's expect, so
// what moves is what they agreed to; declined reports their no. With
// Deferred, the first call returns the question, and the second takes the
// set from the answer's state.
func (s *Service) confirmDiscard(ctx context.Context, req DLQDiscardRequest, now time.Time, f store.DeadFilter, limit int, expect *string) (declined bool, err error) {
	call := discardCall{Filter: req.Filter, Limit: req.Limit, All: req.All, Expect: req.Expect, Confirm: req.Confirm}
	if d := req.Deferred; d != nil && d.Answered {
		declined, *expect, err = s.answered(ctx, OpDLQDiscard, call, d, "discarded")
		if err == nil && *expect == "" {
			// Without the set asked about, the move would be unguarded.
			return false, &Error{Msg: "the answer's state names no set of messages; nothing was discarded: make the call again, without the answer, to have the person asked again", Err: ErrNotAsked}
		}
		return declined, err
	}
	if req.Ask == nil && req.Deferred == nil {
		if req.Confirm {
			return false, nil
		}
		if req.Expect != "" {
			// The dry run was made: the step left is the go-ahead, for
			// the same set, so the hint keeps the expect.
			return false, invalidf("a discard by filter needs confirm as well as expect when the user cannot be asked (the client declares no elicitation, or the transport, SSE, carries no question to it); nothing was discarded: once the user agreed to the dry run's set, make the same call with confirm").
				with(hint(OpDLQDiscard, "discards exactly the dry run's set, or nothing", req.Filter.Pinned(now).moveArgs("limit", limit, "expect", req.Expect, "confirm", true)...))
		}
		return false, invalidf("a discard by filter moves up to %s out of %s DLQ: check what it would move with a dry run, then confirm it", plural.Count(limit, "dead message", "dead messages"), plural.Of(limit, "its", "their")).
			with(hint(OpDLQDiscard, "shows what would be discarded", req.Filter.moveArgs("limit", limit, "dry_run", true)...),
				hint(OpDLQDiscard, "discards them once checked", req.Filter.moveArgs("limit", limit, "confirm", true)...))
	}
	dry, err := s.store.DiscardDeadSelected(ctx, f, limit, store.DiscardOptions{DryRun: true})
	if err != nil {
		return false, explain(err, hint(OpDLQSummary, "shows the groups there are"))
	}
	if *expect != "" && *expect != dry.Token {
		return false, changed(fmt.Errorf("the dead messages selected changed since the dry run (%s selected now); nothing was discarded: %w", plural.Count(dry.Discarded, "is", "are"), ErrChanged), req.redry)
	}
	*expect = dry.Token
	if dry.Discarded == 0 {
		return false, nil // nothing to ask about; the guarded call moves nothing
	}
	q := fmt.Sprintf("Discard %s of %s? %s", plural.Count(dry.Discarded, "dead message", "dead messages"), req.Filter.describe(),
		plural.Of(dry.Discarded, "It moves to the DLQ's archive, kept until purged or the queue's dead retention (30 days by default) deletes it, and does not run again.", "They move to the DLQ's archive, kept until purged or the queue's dead retention (30 days by default) deletes them; none runs again."))
	if req.Deferred != nil {
		return false, s.ask(ctx, OpDLQDiscard, call, dry.Token, q, "discarded")
	}
	ok, err := req.Ask(ctx, q)
	if err != nil {
		return false, fmt.Errorf("ops: could not ask for confirmation, so nothing was discarded: %w", err)
	}
	return !ok, nil
}

// discardCall is what an answer to a discard's question is bound to: the
// arguments of the call asked about.
type discardCall struct {
	Filter  DeadFilter
	Limit   int
	All     bool
	Expect  string
	Confirm bool
}

// confirmPurge gets the go-ahead for a purge: the person's yes to Ask or
// Deferred, or without them, Confirm. where names what is purged. It
// returns the cutoff the purge deletes up to: for a person asked, the one
// their question named, with how many messages it selected then, so that
// a yes given minutes later deletes nothing that grew old meanwhile.
func (s *Service) confirmPurge(ctx context.Context, req DLQPurgeRequest, where string) (cutoff time.Time, declined bool, err error) {
	call := purgeCall{Queue: req.Queue, OlderThan: req.OlderThan, Confirm: req.Confirm}
	if d := req.Deferred; d != nil && d.Answered {
		declined, set, err := s.answered(ctx, OpDLQPurge, call, d, "purged")
		if err != nil || declined {
			return time.Time{}, declined, err
		}
		micros, perr := strconv.ParseInt(set, 10, 64)
		if perr != nil {
			// Without the cutoff asked about, the purge would reach
			// whatever grew old since.
			return time.Time{}, false, &Error{Msg: "the answer's state names no cutoff time; nothing was purged: make the call again, without the answer, to have the person asked again", Err: ErrNotAsked}
		}
		return time.UnixMicro(micros), false, nil
	}
	if req.Ask == nil && req.Deferred == nil && !req.Confirm {
		// What it would delete shows in its dry run and in the archive
		// of the queue's DLQ (of every DLQ, the discards of the audit);
		// the DLQ itself holds what a purge leaves.
		see := hint(OpAudit, "shows what was discarded and when", "tool", OpDLQDiscard)
		if req.Queue != "" {
			see = hint(OpDLQDiscarded, "lists what it would delete, the DLQ's archive", "queue", req.Queue)
		}
		return time.Time{}, false, invalidf("a purge deletes the archived dead messages of %s (discarded, or originals of a retry with a corrected payload) older than %s for good: check first, then confirm", where, FormatAge(req.OlderThan)).
			with(hint(OpDLQPurge, "counts what it would delete, deleting nothing", "queue", req.Queue, "older_than", FormatAge(req.OlderThan), "dry_run", true),
				see,
				hint(OpDLQPurge, "purges them once checked", "queue", req.Queue, "older_than", FormatAge(req.OlderThan), "confirm", true))
	}
	if cutoff, err = s.store.PurgeCutoff(ctx, req.OlderThan); err != nil {
		return time.Time{}, false, err
	}
	if req.Ask == nil && req.Deferred == nil {
		return cutoff, false, nil
	}
	n, err := s.store.CountPurgeable(ctx, req.Queue, cutoff)
	if err != nil {
		return time.Time{}, false, explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	if n == 0 {
		return cutoff, false, nil // nothing to ask about; the purge deletes nothing
	}
	q := fmt.Sprintf("Delete for good the %d %s archived in %s at or before %s (discarded, or originals kept by a retry with a corrected payload), with their failure history? This cannot be undone.",
		n, plural.Of(n, "dead message", "dead messages"), where, cutoff.UTC().Format(time.DateTime+"Z"))
	if req.Deferred != nil {
		return time.Time{}, false, s.ask(ctx, OpDLQPurge, call, strconv.FormatInt(cutoff.UnixMicro(), 10), q, "purged")
	}
	ok, err := req.Ask(ctx, q)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("ops: could not ask for confirmation, so nothing was purged: %w", err)
	}
	return cutoff, !ok, nil
}

// purgeCall is what an answer to a purge's question is bound to.
type purgeCall struct {
	Queue     string
	OlderThan time.Duration
	Confirm   bool
}
