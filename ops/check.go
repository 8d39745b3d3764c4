package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// Limits of what operations accept, for front ends to state in their help.
const (
	// MaxPayloadBytes is the largest payload a message may carry.
	MaxPayloadBytes = store.MaxPayloadBytes
	// MaxPriorities is the most priority levels a queue may have.
	MaxPriorities = store.MaxPriorities
	// MaxDelay is the longest a send may postpone its message.
	MaxDelay = store.MaxDelay
	// MaxKindBytes is the longest kind a send may give.
	MaxKindBytes = engine.MaxKindBytes
	// ReleaseAtOnce is how many of the jobs a circuit breaker held run at
	// once when it closes (CircuitReset.Released); the rest are spread
	// over its cool-off.
	ReleaseAtOnce = store.ReleaseAtOnce
	// MaxReleaseWindow is the longest those rest are spread over.
	MaxReleaseWindow = store.MaxReleaseWindow
)

// States of a circuit breaker (BreakerState.State).
const (
	// BreakerClosed lets calls through.
	BreakerClosed = store.BreakerClosed
	// BreakerOpen refuses calls until its cool-off ends.
	BreakerOpen = store.BreakerOpen
	// BreakerHalfOpen lets one trial call through.
	BreakerHalfOpen = store.BreakerHalfOpen
)

// The requests below check themselves with Check: each operation runs
// Check first, and a front end may run it before it connects, so that a bad
// request is refused in the same words without a database. What only the
// database can tell (whether a queue exists) waits for the operation.

// CheckQueueName checks the name of a queue or of its dead-letter queue
// (orders, orders_dlq) as operations take it.
func CheckQueueName(name string) error {
	if err := checkText("queue", name); err != nil {
		return err
	}
	return explain(store.ValidatePhysicalName(name), hint(OpQueueStats, "lists the queues there are"))
}

// checkDeadQueueName checks the name of a queue or of its dead-letter
// queue as the operations on dead messages take it (orders, orders_dlq,
// or a priority level's, orders_p1, which they refuse naming its queue):
// any other name is a queue's, which has a DLQ only within a queue name's
// length (store.MaxQueueNameLen), and a longer one is refused as that,
// not by the length of the DLQ name it would give.
func checkDeadQueueName(name string) error {
	if err := checkText("queue", name); err != nil {
		return err
	}
	check := store.ValidateQueueName
	if strings.HasSuffix(name, store.DLQSuffix) || store.IsLevelName(name) {
		check = store.ValidatePhysicalName
	}
	err := explain(check(name), hint(OpQueueStats, "lists the queues there are"))
	var e *Error
	if errors.As(err, &e) && strings.HasPrefix(e.Msg, "queue ") {
		// "queue name ...": the field, which a front end names as it
		// takes it (the command line's --queue).
		e.Field = "queue"
	}
	return err
}

// checkWorkQueue checks the name of a work queue, which a DLQ's is not,
// or of one of its priority levels, naming the queues there are as the
// next step.
func checkWorkQueue(name string) error {
	if base, ok := strings.CutSuffix(name, store.DLQSuffix); ok && store.ValidateQueueName(base) == nil {
		// Without a database, whether the DLQ exists is not known: the
		// queues there are come first. An operation asks (dlqGiven).
		e := invalidf("%s is the dead-letter queue of %s: give the queue, %s; dead messages are retried, discarded and purged by the DLQ operations", name, base, base).
			with(hint(OpQueueStats, "lists the queues there are, each with its DLQ"), hint(OpDLQSummary, "its dead messages by cause, if it exists", "queue", base))
		e.dlq = name
		return e
	}
	if store.IsLevelName(name) {
		// A priority level of a queue as long as a name may be is longer
		// by its suffix (_p9), and its tables fit all the same.
		return checkText("queue", name)
	}
	return checkWorkQueueName(name, hint(OpQueueStats, "lists the queues there are"))
}

// checkWorkQueueName checks the name of a work queue with hints as the
// next steps of an error.
func checkWorkQueueName(name string, hints ...Hint) error {
	if err := checkText("queue", name); err != nil {
		return err
	}
	if name == "" {
		return fieldf("queue", "is required: give the queue's name").with(hints...)
	}
	return explain(store.ValidateQueueName(name), hints...)
}

// fieldf is an invalid-request error about one field of a request, whose
// message starts with the field's name.
func fieldf(field, format string, args ...any) *Error {
	e := invalidf(field+" "+format, args...)
	e.Field = field
	return e
}

// JSONError says why raw is not one valid JSON value, or nil when it is:
// a value nested more deeply than a message may be is said as such.
func JSONError(raw []byte) error { return store.JSONError(raw) }

// Check checks the request without the database.
func (r SendRequest) Check() error {
	if err := CheckQueueName(r.Queue); err != nil {
		return err
	}
	if base, ok := strings.CutSuffix(r.Queue, store.DLQSuffix); ok {
		return invalidf("queue %q is a dead-letter queue: messages reach it only by dying; send to %q instead", r.Queue, base)
	}
	switch {
	case len(r.Payload) > MaxPayloadBytes:
		return invalidf("the payload is %d bytes, more than the %d a message may carry; store large data elsewhere and send a reference", len(r.Payload), MaxPayloadBytes)
	case len(r.Payload) == 0:
		return invalidf("the payload must be JSON, for example {} or null")
	case JSONError(r.Payload) != nil:
		return invalidf("the payload must be JSON, for example {} or null: %v", JSONError(r.Payload))
	case r.Delay < 0:
		return fieldf("delay", "%s is negative; give 0 or more", FormatAge(r.Delay))
	case r.DeadlineIn < 0:
		return fieldf("deadline", "%s from now is in the past; give a duration above 0", FormatAge(r.DeadlineIn))
	case r.DeadlineIn > 0 && !r.Deadline.IsZero():
		return fieldf("deadline", "is given twice, as a time and as a duration from now; give one")
	case r.Delay > MaxDelay:
		return fieldf("delay", "%s is too long; at most %s", FormatAge(r.Delay), FormatAge(MaxDelay))
	case r.Priority < 0 || r.Priority >= MaxPriorities:
		return fieldf("priority", "%d is out of range: give a level from 0 (read first) to %d, below the queue's levels", r.Priority, MaxPriorities-1)
	case len(r.Kind) > MaxKindBytes:
		return fieldf("kind", "is %d bytes; at most %d: a kind names its handler, so give a shorter one", len(r.Kind), MaxKindBytes)
	case len(r.IdempotencyKey) > store.MaxIdempotencyKeyBytes:
		return fieldf("idempotency_key", "is %d bytes; at most %d: use a shorter key, such as a hash of a long one", len(r.IdempotencyKey), store.MaxIdempotencyKeyBytes)
	}
	for k := range r.Headers {
		if strings.HasPrefix(k, "pgbus_") {
			// The options by their request fields' names, which each front
			// end names its own way (a flag, an argument).
			return invalidf("header %q is refused: keys starting with pgbus_ are reserved for pgbus, which sets them from options of their own: kind, idempotency_key, deadline, priority", clip(k, 60)).naming("kind", "idempotency_key", "deadline", "priority")
		}
	}
	return checkSendText(r)
}

// ParseDeadline reads when a message stops being worth running: an RFC
// 3339 time (in any spelling ParseTime takes) or a date (midnight UTC),
// returned as at, or a duration from now (30m, 2h, 7d), returned as in:
// SendRequest.Deadline or DeadlineIn.
func ParseDeadline(s string) (at time.Time, in time.Duration, err error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		t, err := time.Parse(layout, rfc3339Text(s))
		if err != nil {
			continue
		}
		// The first instant of year 1 is the zero time.Time, which a
		// SendRequest reads as no deadline: refused here, as any other
		// past deadline is by Send, it would be sent without one.
		if t.IsZero() {
			return time.Time{}, 0, pastDeadline(t)
		}
		return t, 0, nil
	}
	d, err := ParseAge(s)
	if err == nil && d == 0 {
		return time.Time{}, 0, fieldf("deadline", "%q has passed by the time a worker reads the message: it could never run, and would be dead-lettered as deadline_exceeded; give a duration from now such as 10m, 24h or 7d, or none", s)
	}
	if ago, err := ParseAge(strings.TrimPrefix(s, "-")); err == nil && ago > 0 && strings.HasPrefix(s, "-") {
		return time.Time{}, 0, fieldf("deadline", "%q has passed (it is %s before now): the message could never run, and would be dead-lettered as deadline_exceeded; give a duration from now such as 10m, 24h or 7d, or none", s, FormatAge(ago))
	}
	if err != nil || d <= 0 {
		return time.Time{}, 0, fieldf("deadline", "%q is not a time: give an RFC 3339 time (2026-11-29T20:00:00Z), a date (2026-11-29, midnight UTC) or a duration from now such as 10m, 24h or 7d", clip(s, 60))
	}
	return time.Time{}, d, nil
}

// deadlineOf is the deadline of a send: at, or in after now on the
// database server's clock, on which workers judge it.
func (s *Service) deadlineOf(at time.Time, in time.Duration) time.Time {
	if in > 0 {
		return s.now().Add(in)
	}
	return at
}

// Check checks the request without the database.
func (r QueueStatsRequest) Check() error {
	if r.Queue != "" && r.NameContains != "" {
		return fieldf("name_contains", "looks among every queue's name and takes no queue: pass one or the other, not both").naming("queue")
	}
	if r.Queue == "" {
		return checkText("name_contains", r.NameContains)
	}
	return CheckQueueName(r.Queue)
}

// Check checks the request without the database.
func (r QueueRequest) Check() error { return checkWorkQueue(r.Queue) }

// Check checks the request without the database.
func (r QueueDropRequest) Check() error { return checkWorkQueue(r.Queue) }

// Check checks the request without the database.
func (r QueuePurgeRequest) Check() error { return checkWorkQueue(r.Queue) }

// Check checks the request without the database.
func (r QueueRunNowRequest) Check() error {
	if err := checkText("kind", r.Kind); err != nil {
		return err
	}
	if err := checkShownKind(r.Kind, r.Queue); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(r.Kind); n > store.MaxDeadFilterName {
		e := invalidf("kind is %d characters; at most %d are allowed: pass the job kind as the queue's live messages show it", n, store.MaxDeadFilterName)
		e.Field = "kind"
		return e
	}
	return checkWorkQueue(r.Queue)
}

// Check checks the request without the database; the settings are checked
// against the queue's current ones by QueueCreate.
func (r QueueCreateRequest) Check() error {
	if err := checkText("strategy", ptrText(r.Settings.Strategy)); err != nil {
		return err
	}
	// A name for a queue yet to be made: the rule says what to change,
	// and the queues there are would not help.
	if err := checkWorkQueueName(r.Queue); err != nil {
		return err
	}
	if r.Priorities != 0 && (r.Priorities < 2 || r.Priorities > MaxPriorities) {
		return fieldf("priorities", "%d is out of range: give 2 to %d levels, or none for a plain queue", r.Priorities, MaxPriorities)
	}
	return nil
}

// checkShownKind refuses a kind filter holding the marker a view puts
// where a secret was ("sync password=[REDACTED]", copied from a list): no
// message has that kind, and the filter matched nothing without a word.
func checkShownKind(kind, queue string) error {
	if !strings.Contains(kind, Redacted) {
		return nil
	}
	return fieldf("kind", "%q holds %s, which views put where a secret was: no message has that kind; filter by its group (the group key dlq_summary gives) or its ids instead",
		clip(kind, 80), Redacted).with(hint(OpDLQSummary, "lists the groups with their keys", "queue", queue))
}

// Check checks the request without the database: everything but where
// its ids are and the type of the payload it replaces.
func (r DLQRetryRequest) Check() error {
	if err := r.Filter.checkText(); err != nil {
		return err
	}
	if len(r.Payload) > 0 {
		if len(r.Payload) > MaxCorrectedPayloadBytes {
			return invalidf("the corrected payload is %d bytes; at most %d are allowed", len(r.Payload), MaxCorrectedPayloadBytes)
		}
		if !json.Valid(r.Payload) {
			return invalidf("the corrected payload is not valid JSON%s: correct it, or retry without a payload to keep the stored one", jsonProblem(r.Payload))
		}
		if why := store.CheckJSONText(r.Payload); why != "" {
			return invalidf("the corrected payload cannot be stored: %s", why)
		}
		if err := checkNoRedactionMarker(r.Payload); err != nil {
			return err
		}
	}
	if _, err := checkRate(r.Rate); err != nil {
		return err
	}
	if len(r.IDs) > 0 {
		if r.Expect != "" {
			return errExpectWithIDs
		}
		ids, err := checkByIDs(r.Filter, r.Limit, r.IDs)
		if err != nil {
			return err
		}
		if len(r.Payload) > 0 && len(ids) != 1 {
			return invalidf("a corrected payload applies to exactly one message, and %d ids were given: retry that one message alone with its payload", len(ids))
		}
		return nil
	}
	if len(r.Payload) > 0 {
		return invalidf("a corrected payload applies to exactly one message: give its id instead of a filter")
	}
	if trimmed(r.Filter).IsZero() && !r.All {
		return errNothingSelected()
	}
	limit, err := bulkLimit(r.Limit)
	if err != nil {
		return err
	}
	if err := checkPacedSpan(r.Rate, limit); err != nil {
		return err
	}
	return r.Filter.Check()
}

// Check checks the request without the database: everything but where
// its ids are.
func (r DLQDiscardRequest) Check() error {
	if err := r.Filter.checkText(); err != nil {
		return err
	}
	if len(r.IDs) > 0 {
		if r.Expect != "" {
			return errExpectWithIDs
		}
		_, err := checkByIDs(r.Filter, r.Limit, r.IDs)
		return err
	}
	if trimmed(r.Filter).IsZero() && !r.All {
		return errNothingSelected()
	}
	if _, err := bulkLimit(r.Limit); err != nil {
		return err
	}
	return r.Filter.Check()
}

// Check checks the request without the database.
func (r DLQPurgeRequest) Check() error {
	if err := checkText("queue", r.Queue); err != nil {
		return err
	}
	if r.OlderThan < 0 {
		return invalidf("older_than %s is negative; give 0 to purge every archived dead message, or an age such as 720h", FormatAge(r.OlderThan))
	}
	if r.Queue == "" {
		return nil
	}
	return checkDeadQueueName(r.Queue)
}

// Check checks the request without the database; the cursor's signature
// is checked by the list itself.
func (r DLQListRequest) Check() error {
	if _, err := pageLimit(OpDLQList, r.Limit); err != nil {
		return err
	}
	if err := checkText("cursor", r.Cursor, "order", r.Order); err != nil {
		return err
	}
	if r.MinPayloadBytes < 0 {
		return fieldf("min_payload_bytes", "%d is negative; give a size in bytes, such as 100000, or leave it out for every size", r.MinPayloadBytes)
	}
	if o := strings.TrimSpace(r.Order); o != "" && !slices.Contains(ListOrders, o) {
		return fieldf("order", "%q is no order of the list; give %s (the default) or %s (the largest payload first)", clip(o, 60), OrderNewest, OrderLargest)
	}
	return r.Filter.Check()
}

// Check checks the request without the database.
func (r DLQShowRequest) Check() error {
	if err := checkText("queue", r.Queue); err != nil {
		return err
	}
	if r.MsgID <= 0 {
		what := "is missing or 0"
		if r.MsgID < 0 {
			what = fmt.Sprintf("%d is not an id", r.MsgID)
		}
		return invalidf("msg_id %s: give the id of a dead message (a positive whole number)", what).
			with(hint(OpDLQList, "lists dead messages with their ids", "queue", r.Queue))
	}
	if q := strings.TrimSpace(r.Queue); q != "" {
		return checkDeadQueueName(q)
	}
	return nil
}

// Check checks the request without the database; ByField is checked
// against the service's safe fields, and the cursor's signature, by the
// summary itself.
func (r DLQSummaryRequest) Check() error {
	if err := checkText("cursor", r.Cursor); err != nil {
		return err
	}
	if err := r.checkBy(); err != nil {
		return err
	}
	return r.Filter.Check()
}

// Check checks the request without the database.
func (r AuditRequest) Check() error {
	// The audit log names the operation "tool", as its entries do.
	if err := checkText("tool", r.Op, "client", r.Client, "since", r.Since, "cursor", r.Cursor); err != nil {
		return err
	}
	if _, err := pageLimit(OpAudit, r.Limit); err != nil {
		return err
	}
	if tool := OpName(r.Op); tool != "" && tool != AuditAll && !slices.Contains(AuditedOps, tool) {
		return fieldf("tool", "%q is no operation the audit log records: use one of %s, or all", clip(r.Op, 60), strings.Join(AuditedOps, ", "))
	}
	_, err := parseField("since", r.Since, time.Now())
	return err
}

// Check checks the request without the database.
func (r CircuitResetRequest) Check() error { return checkBreakerName(r.Name) }

// checkBreakerName refuses a missing breaker name, or one no breaker can
// have.
func checkBreakerName(name string) error {
	if err := checkText("name", name); err != nil {
		return err
	}
	switch {
	case name == "":
		return invalidf("name is required: give the breaker's name").with(hint(OpCircuits, "lists the breakers"))
	case len(name) > store.MaxBreakerName:
		return invalidf("name %q is %d bytes long; no breaker has a name over %d", clip(name, 80), len(name), store.MaxBreakerName).
			with(hint(OpCircuits, "lists the breakers"))
	}
	return nil
}

// Check checks the request without the database; an empty name lists
// every breaker.
func (r CircuitsRequest) Check() error { return checkText("name", r.Name) }

// Check checks the request without the database.
func (r QueueMessagesRequest) Check() error {
	if err := checkText("queue", r.Queue, "state", r.State, "cursor", r.Cursor); err != nil {
		return err
	}
	if err := checkWorkQueue(r.Queue); err != nil {
		return err
	}
	if r.State != "" && !slices.Contains(LiveStates, r.State) {
		return fieldf("state", "%q is unknown; use one of %s, or leave it out for all", clip(r.State, 60), strings.Join(LiveStates, ", "))
	}
	_, err := pageLimit(OpQueueMessages, r.Limit)
	return err
}

// Check checks the request, which holds nothing that can be wrong: it is
// here so that every request checks itself alike.
func (r WorkersRequest) Check() error { return nil }
