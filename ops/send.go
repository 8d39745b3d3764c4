package ops

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// SendRequest is one message to send.
type SendRequest struct {
	Queue   string
	Payload json.RawMessage
	// Kind chooses the handler (the pgbus_kind header).
	Kind string
	// Delay postpones the first delivery.
	Delay time.Duration
	// Deadline, when set, is when the message stops being worth running.
	Deadline time.Time
	// DeadlineIn, when set instead, is a deadline this long after the
	// call, on the database server's clock, on which workers judge it.
	DeadlineIn time.Duration
	// IdempotencyKey makes a second send with the same key return the first
	// message's id.
	IdempotencyKey string
	// Headers are extra headers; keys starting with pgbus_ are reserved.
	Headers map[string]any
	// Priority is the level of a queue created with priority levels (0 is
	// read first); 0 for a plain queue.
	Priority int
}

// Sent is where a message was sent. AlreadySent says that the request's
// idempotency key matched a message sent with it before, which MsgID
// names: nothing new was sent.
type Sent struct {
	Queue       string `json:"queue"`
	MsgID       int64  `json:"msg_id"`
	Priority    int    `json:"priority,omitempty"`
	AlreadySent bool   `json:"already_sent,omitempty"`
}

// sendAuditArgs are the arguments of a send's audit entry: the options
// given, without those left out (a deadline not given would read as the
// year 1).
func sendAuditArgs(queue, kind string, delay time.Duration, deadline time.Time, headers map[string]any, priority int) map[string]any {
	args := map[string]any{"queue": queue}
	if kind != "" {
		args["kind"] = kind
	}
	if delay != 0 {
		args["delay"] = FormatAge(delay)
	}
	if !deadline.IsZero() {
		args["deadline"] = deadline.UTC()
	}
	if len(headers) > 0 {
		args["headers"] = headers
	}
	if priority != 0 {
		args["priority"] = priority
	}
	return args
}

// Send enqueues one message, on the queue's priority sub-queue when it has
// levels.
func (s *Service) Send(ctx context.Context, req SendRequest) (out Sent, err error) {
	args := func() any {
		args := sendAuditArgs(req.Queue, req.Kind, req.Delay, req.Deadline, req.Headers, req.Priority)
		args["payload_bytes"] = len(req.Payload)
		if req.IdempotencyKey != "" {
			args["idempotency_key"] = req.IdempotencyKey
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "Send", writesOnce)
	if err != nil {
		return out, s.refusedByGate(ctx, OpSend, false, req.Check, args, err)
	}
	defer end()
	ctx = withFewer(ctx, "") // one message: none fewer
	defer func() { s.record(ctx, OpSend, args(), out, err) }()
	defer s.explainWrite(ctx, &err, writesOnce, queueNow(req.Queue)) // runs before the audit entry
	if err := s.checkWrite(OpSend); err != nil {
		return Sent{}, err
	}
	if err := req.Check(); err != nil {
		return Sent{}, err
	}
	req.Deadline, req.DeadlineIn = s.deadlineOf(req.Deadline, req.DeadlineIn), 0
	if err := s.checkSendTimes(req); err != nil {
		return Sent{}, err
	}
	if err := s.checkDelayFitsDeadline(ctx, req); err != nil {
		return Sent{}, err
	}
	id, found, err := s.sender.SendOrFind(ctx, req.Queue, req.Payload, engine.SendOptions{
		Kind: req.Kind, Delay: req.Delay, Deadline: req.Deadline, IdempotencyKey: req.IdempotencyKey,
		Headers: req.Headers, Priority: req.Priority,
	})
	if errors.Is(err, ErrNotFound) {
		return Sent{}, missingQueue(err, req.Queue, hint(OpQueueStats, "lists the queues there are"))
	}
	if err != nil {
		return Sent{}, explainSend(err, req.Queue, req.Priority)
	}
	return Sent{Queue: req.Queue, MsgID: id, Priority: req.Priority, AlreadySent: found}, nil
}

// explainSend is explain of the error of a send of priority to queue: a
// priority given to a queue without levels, or one its levels do not
// have, is refused naming the priority as the field at fault, which a
// front end names its own way.
func explainSend(err error, queue string, priority int) error {
	if errors.Is(err, engine.ErrNoPriorityLevels) {
		return fieldf("priority", "%d is out of range: queue %q is a plain queue, without levels: send with priority 0 (the default), or create the queue with levels",
			priority, queue).naming("priority")
	}
	if le, ok := errors.AsType[*engine.PriorityLevelsError](err); ok {
		return fieldf("priority", "%d is out of range: queue %q has priority levels 0 to %d: give one of them (0 runs first)", le.Priority, le.Queue, le.Levels-1)
	}
	return explain(err)
}

// checkSendTimes refuses a deadline that would dead-letter the message
// without running: one that has passed, or comes before its delay ends,
// on the service's clock, by the rule the engine's sends apply.
func (s *Service) checkSendTimes(req SendRequest) error {
	return explain(engine.CheckDeadline(s.now(), engine.SendOptions{Deadline: req.Deadline, Delay: req.Delay}))
}

// pastDeadline refuses deadline at, which has passed.
func pastDeadline(at time.Time) *Error {
	return invalidf("deadline %s is in the past: the message would be dead-lettered without running", at.UTC().Format(time.RFC3339))
}

// checkDelayFitsDeadline refuses a delay that outlasts the queue's
// deadline setting, which counts from the send: the message would be
// dead-lettered when it became due, without running. A deadline of the
// message's own replaces the queue's, so a send that gives one is left to
// the checks of Send.
func (s *Service) checkDelayFitsDeadline(ctx context.Context, req SendRequest) error {
	if req.Delay <= 0 || !req.Deadline.IsZero() {
		return nil
	}
	set, err := s.store.QueueSettingsOf(ctx, req.Queue)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil // not made by pgbus: no deadline of its own; Send says when it does not exist
	case err != nil:
		return explain(err)
	case set.Deadline <= 0 || req.Delay < set.Deadline:
		return nil
	}
	return explain(invalidf("queue %q dead-letters a message %s after it is sent (its deadline setting), before this one's delay of %s ends: it would be dead-lettered without running; give a delay under %s, or the message a deadline of its own after its delay ends, which replaces the queue's",
		req.Queue, set.Deadline, req.Delay, set.Deadline), hint(OpQueueStats, "shows the queue's settings", "queue", req.Queue))
}

// SendBatch sends messages already built with engine.NewMessage to one
// physical queue (of a queue with priority levels, one level, such as
// orders_p0), all or none, as a scenario does (the demo): they are
// sent as built, a deadline in the past included. A batch holds at most
// store.MaxBatch messages, and at most store.MaxBatchKeys distinct
// idempotency keys.
func (s *Service) SendBatch(ctx context.Context, queue string, msgs []store.NewMessage) (ids []int64, err error) {
	ctx, end, err := s.enter(ctx, "SendBatch", writesOnce)
	if err != nil {
		return ids, s.refusedByGate(ctx, OpSend, false, nil, func() any { return map[string]any{"queue": queue, "messages": len(msgs)} }, err)
	}
	defer end()
	defer func() {
		s.record(ctx, OpSend, map[string]any{"queue": queue, "messages": len(msgs)}, map[string]any{"sent": len(ids)}, err)
	}()
	defer s.explainWrite(ctx, &err, writesOnce, queueNow(queue)) // runs before the audit entry
	if err := s.checkWrite(OpSend); err != nil {
		return nil, err
	}
	ids, err = s.store.SendBatch(ctx, queue, msgs)
	if errors.Is(err, ErrNotFound) {
		// A queue with priority levels has a table per level, none under
		// its own name: it exists, and creating it is no remedy.
		if levels, lerr := s.store.PhysicalQueues(ctx, queue); lerr == nil && len(levels) > 1 {
			return nil, invalidf("queue %q has priority levels, and a batch goes to one of them: send it to %s (read first) to %s",
				queue, levels[0], levels[len(levels)-1])
		}
	}
	if errors.Is(err, ErrNotFound) {
		return ids, missingQueue(err, queue)
	}
	return ids, explain(err)
}

// createSteps is the step that creates a queue a send did not find, none
// for a name no new queue may take (orders_idx, or one longer than a
// queue's name may be): it would be refused.
func createSteps(queue string) []Hint {
	if store.NameClashes(queue) || store.TooLongToCreate(queue) != "" {
		return nil
	}
	return []Hint{hint(OpQueueCreate, "creates the queue", "queue", queue)}
}

// missingQueue is explain for err, the queue of a send not found, with
// the step that creates it (createSteps) and more; for a name too long
// for a queue pgbus creates, which gets no such step, the error says why.
func missingQueue(err error, queue string, more ...Hint) error {
	out := explain(err, append(createSteps(queue), more...)...)
	var e *Error
	if why := store.TooLongToCreate(queue); why != "" && errors.As(out, &e) {
		e.Msg += "; no queue of that name can be created: " + why
	}
	return out
}

// checkSendText refuses text PostgreSQL cannot store (bytes that are not
// UTF-8, NUL characters) in the payload, kind, idempotency key and headers,
// before anything is written: encoding/json would otherwise pass it on to
// fail in the database, or silently turn bad bytes into U+FFFD.
func checkSendText(req SendRequest) error {
	if why := store.CheckJSONText(req.Payload); why != "" {
		return invalidf("the payload cannot be stored: %s", why)
	}
	if why := store.CheckText(req.Kind); why != "" {
		return invalidf("the kind cannot be stored: %s", why)
	}
	if why := store.CheckText(req.IdempotencyKey); why != "" {
		return invalidf("the idempotency key cannot be stored: %s", why)
	}
	for k, v := range req.Headers {
		if why := store.CheckText(k); why != "" {
			return invalidf("header key %q cannot be stored: %s", k, why)
		}
		if why := store.CheckValueText(v); why != "" {
			return invalidf("header %q cannot be stored: %s", k, why)
		}
	}
	return nil
}
