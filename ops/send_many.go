package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Bounds of SendMany: what one call may hold, in memory at once.
const (
	// MaxSendManyPayloads is the most payloads one SendMany sends.
	MaxSendManyPayloads = 100_000
	// MaxSendManyBytes is the most bytes of payloads one SendMany sends,
	// all of them together.
	MaxSendManyBytes = 256 << 20
	// SendManyBatch is how many payloads SendMany sends in one
	// transaction at most: each batch is written all or none, and a failure
	// leaves the batches before it sent.
	SendManyBatch = 1000
	// SendManyBatchBytes is how many bytes of payloads SendMany sends in
	// one transaction at most, but for a single payload larger than it:
	// a batch of large payloads holds fewer than SendManyBatch, so that
	// one statement never carries hundreds of MiB, which no database call
	// timeout lets through and which the process would hold several
	// times over to send.
	SendManyBatchBytes = 16 << 20
)

// SendManyRequest is many payloads to send to one queue with the same
// options, in order. It has no idempotency key: one key for every payload
// would send only the first.
type SendManyRequest struct {
	Queue    string
	Payloads []json.RawMessage
	// Kind chooses the handler (the pgbus_kind header) of every message.
	Kind string
	// Delay postpones the first delivery of every message.
	Delay time.Duration
	// Deadline, when set, is when the messages stop being worth running.
	Deadline time.Time
	// DeadlineIn, when set instead, is a deadline this long after the
	// call, on the database server's clock, on which workers judge it.
	DeadlineIn time.Duration
	// Headers are extra headers; keys starting with pgbus_ are reserved.
	Headers map[string]any
	// Priority is the level of a queue created with priority levels (0 is
	// read first); 0 for a plain queue.
	Priority int
	// Input, when set, names where the payloads were read from, as the
	// caller would name it to read them again (a file's path, "-" for
	// standard input): the audit log records it, and a call that spans
	// several batches and did not finish names it in the next step that
	// sends the rest.
	Input string
	// Lines, when set, are the line of Input each payload came from (from
	// 1), one a payload: the audit log counts what was sent by them, and
	// names the line to go on from.
	Lines []int
	// Progress, when set, is called after each batch commits, with the
	// ids it sent and how many payloads, the first ones, are sent so far:
	// for a caller to tell what is sent as it goes, so that a process
	// killed partway has told it.
	Progress func(ids []int64, sent int)
}

// SentMany is where the payloads of a SendMany went: their ids, in the
// order of the payloads.
type SentMany struct {
	Queue    string  `json:"queue"`
	MsgIDs   []int64 `json:"msg_ids"`
	Priority int     `json:"priority,omitempty"`
}

// PartlySent is the error of a SendMany that failed after sending some of
// its batches: the first Sent payloads are sent and stay so, the rest are
// not. Sending the same payloads again would send the first Sent twice, so
// the words say to send only the rest.
type PartlySent struct {
	// Sent is how many payloads, the first ones, were sent.
	Sent int
	// Total is how many the call had.
	Total int
	// Unsure is how many payloads after the first Sent may or may not
	// have been sent: the connection broke as their transaction
	// committed, and whether it did is not known. The rest were not sent.
	Unsure int
	// Err is why it stopped.
	Err error
}

func (e *PartlySent) Error() string {
	if e.Unsure > 0 {
		return fmt.Sprintf("%v; %s: send only the payloads from index %d on (counting from 0) if those are not in the queue, from index %d on if they are, since the same call again would send the first %s twice",
			e.Err, e.Stopped(), e.Sent, e.Sent+e.Unsure, plural.Of(int64(e.Sent), "payload", "payloads"))
	}
	return fmt.Sprintf("%v; %s: send only the payloads from index %d on (counting from 0), since the same call again would send the first %s twice",
		e.Err, e.Stopped(), e.Sent, plural.Of(int64(e.Sent), "payload", "payloads"))
}

func (e *PartlySent) Unwrap() error { return e.Err }

// Stopped says how far the call went, for a front end that words the
// resumption itself: "stopped after sending 2,000 of 2,500 payloads,
// which stay sent; the other 500 were not sent".
func (e *PartlySent) Stopped() string {
	unsent := e.Total - e.Sent - e.Unsure
	rest := "the other " + thousands(int64(unsent)) + " were not sent"
	if unsent == 1 {
		rest = "the last one was not sent"
	}
	if e.Unsure > 0 {
		unsure := fmt.Sprintf("the next %s may or may not have been sent, as their commit was sent but not answered (the connection broke, or the call was stopped, as it was made): look before sending them again", thousands(int64(e.Unsure)))
		if unsent > 0 {
			unsure += "; " + rest
		}
		rest = unsure
	}
	return fmt.Sprintf("stopped after sending %s of %s payloads, which stay sent; %s", thousands(int64(e.Sent)), thousands(int64(e.Total)), rest)
}

// Check checks the request without the database: every payload, before
// any is sent; an error about one names its index (from 0).
func (r SendManyRequest) Check() error {
	// The options once, with a payload that passes, so that an error in
	// them is not taken for one of the first payload.
	if err := r.one(json.RawMessage("null")).Check(); err != nil {
		return err
	}
	switch {
	case len(r.Payloads) == 0:
		return invalidf("there are no payloads to send: give at least one")
	case len(r.Payloads) > MaxSendManyPayloads:
		return invalidf("%s payloads are more than the %s one call sends; send them in parts", thousands(int64(len(r.Payloads))), thousands(MaxSendManyPayloads))
	case r.Lines != nil && len(r.Lines) != len(r.Payloads):
		return invalidf("%s lines are given for %s payloads: give one line a payload, or none", thousands(int64(len(r.Lines))), thousands(int64(len(r.Payloads))))
	}
	total := 0
	for i, p := range r.Payloads {
		total += len(p)
		if total > MaxSendManyBytes {
			return invalidf("the payloads come to more than %d bytes by payload %d, the most one call sends; send them in parts", MaxSendManyBytes, i)
		}
		if err := r.one(p).Check(); err != nil {
			return payloadError(err, i)
		}
	}
	return nil
}

// one is the SendRequest of one payload of the request.
func (r SendManyRequest) one(p json.RawMessage) SendRequest {
	return SendRequest{Queue: r.Queue, Payload: p, Kind: r.Kind, Delay: r.Delay, Deadline: r.Deadline, DeadlineIn: r.DeadlineIn, Headers: r.Headers, Priority: r.Priority}
}

// PayloadIndex is the index (from 0) of the payload of a SendMany that an
// error is about, or -1 when it is about none; a front end that read the
// payloads from lines names the line instead.
func PayloadIndex(err error) int {
	var e *payloadErr
	if errors.As(err, &e) {
		return e.index
	}
	return -1
}

type payloadErr struct {
	index int
	err   error
}

func (e *payloadErr) Error() string { return fmt.Sprintf("payload %d: %v", e.index, e.err) }
func (e *payloadErr) Unwrap() error { return e.err }

// PayloadReason is err without the index of the payload it is about, as
// PayloadIndex gives it, or err itself when it is about none.
func PayloadReason(err error) error {
	var e *payloadErr
	if errors.As(err, &e) {
		return e.err
	}
	return err
}

func payloadError(err error, i int) error { return &payloadErr{index: i, err: err} }

// SendMany sends payloads to one queue, each a message with the same
// options, in order, in batches of SendManyBatch, or fewer when they pass
// SendManyBatchBytes, each all or none. Every
// payload is checked before anything is sent. It is one entry in the
// audit log, counting what was sent. One of more than one batch records
// its start there too, before its first batch, and how far it went in
// each batch's transaction, so that a process killed partway leaves it
// unfinished with what it sent (and, with the request's Lines, the line to
// go on from). A failure after some batches were sent is a *PartlySent,
// returned with the ids of those sent.
func (s *Service) SendMany(ctx context.Context, req SendManyRequest) (out SentMany, err error) {
	args := func() any {
		bytes := 0
		for _, p := range req.Payloads {
			bytes += len(p)
		}
		args := sendAuditArgs(req.Queue, req.Kind, req.Delay, req.Deadline, req.Headers, req.Priority)
		args["messages"], args["payload_bytes"] = len(req.Payloads), bytes
		if req.Input != "" && store.CheckText(req.Input) == "" {
			args[sendInputArg] = req.Input
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "SendMany", writesInSteps)
	if err != nil {
		return out, s.refusedByGate(ctx, OpSend, false, req.Check, args, err)
	}
	defer end()
	// A send has no limit: the batches are SendManyBatch payloads or fewer.
	ctx = withFewer(ctx, "send fewer payloads in one call (its input in smaller parts, each sent on its own)")
	ctx, auditDone := withAuditStart(ctx)
	defer auditDone()
	defer func() { s.record(ctx, OpSend, args(), req.progress(len(out.MsgIDs)), err) }()
	if err := s.checkWrite(OpSend); err != nil {
		return out, err
	}
	if err := req.Check(); err != nil {
		return out, err
	}
	req.Deadline, req.DeadlineIn = s.deadlineOf(req.Deadline, req.DeadlineIn), 0
	one := req.one(nil)
	if err := s.checkSendTimes(one); err != nil {
		return out, err
	}
	if err := s.checkDelayFitsDeadline(ctx, one); err != nil {
		return out, err
	}
	opts := engine.SendOptions{Kind: req.Kind, Delay: req.Delay, Deadline: req.Deadline, Headers: req.Headers, Priority: req.Priority}
	out = SentMany{Queue: req.Queue, MsgIDs: make([]int64, 0, len(req.Payloads)), Priority: req.Priority}
	var noted json.RawMessage
	ends := batchEnds(req.Payloads)
	if len(ends) > 1 {
		// Several transactions: a process killed between two leaves what
		// it sent, which its entry says.
		a := args()
		noted = auditJSON(a)
		s.startAudit(ctx, OpSend, a)
	}
	start := 0
	for _, end := range ends {
		part := req.Payloads[start:end]
		ids, err := s.sendBatch(ctx, req.Queue, part, opts, noted, req.progress(start+len(part)))
		if bm, ok := errors.AsType[*engine.BatchMessageError](err); ok {
			// The engine counts from the batch's start; the caller, from
			// the request's. A priority the queue has no levels for, or
			// a level it does not have, is every payload's: the request's.
			if errors.Is(bm.Err, engine.ErrNoPriorityLevels) || errors.As(bm.Err, new(*engine.PriorityLevelsError)) {
				err = explainSend(bm.Err, req.Queue, req.Priority)
			} else {
				err = payloadError(explain(bm.Err), start+bm.Index)
			}
		}
		if err != nil {
			// A batch whose commit went unanswered may be in the queue:
			// the words must not say it was not sent. A call stopped
			// (Ctrl-C) as the commit's answer was on its way is one.
			unsure := 0
			if _, gaveUp := givenUp(ctx, err); errors.Is(err, store.ErrCommitUnknown) || (gaveUp || store.IsUnreachable(err)) && !store.NeverSent(err) {
				unsure = len(part)
			}
			if start > 0 || unsure > 0 {
				err = &PartlySent{Sent: start, Unsure: unsure, Total: len(req.Payloads), Err: err}
			}
			// Explained once it says what was sent: the words of a call
			// that sent nothing ("try the call again") would contradict it.
			s.explainWrite(ctx, &err, writesOnce, queueNow(req.Queue))
			return out, err
		}
		out.MsgIDs = append(out.MsgIDs, ids...)
		if req.Progress != nil {
			req.Progress(ids, len(out.MsgIDs))
		}
		start = end
	}
	return out, nil
}

// batchEnds splits payloads into the batches SendMany sends, each in a
// transaction of its own: at most SendManyBatch payloads and
// SendManyBatchBytes bytes, but at least one payload. It returns where
// each batch ends, in order.
func batchEnds(payloads []json.RawMessage) []int {
	var ends []int
	n, bytes := 0, 0
	for i, p := range payloads {
		if n > 0 && (n == SendManyBatch || bytes+len(p) > SendManyBatchBytes) {
			ends = append(ends, i)
			n, bytes = 0, 0
		}
		n, bytes = n+1, bytes+len(p)
	}
	if n > 0 {
		ends = append(ends, len(payloads))
	}
	return ends
}

// sendInputArg is the audit argument, and the argument of the next step
// that sends the rest, naming the input of a SendMany (its Input).
const sendInputArg = "ndjson"

// progress is what the audit log records of a SendMany that sent its
// first sent payloads: how many of how many, and with the request's Lines
// the line to go on from while some are left.
func (r SendManyRequest) progress(sent int) map[string]any {
	p := map[string]any{"sent": sent, "total": len(r.Payloads)}
	if len(r.Lines) == len(r.Payloads) && sent < len(r.Lines) {
		p["next_line"] = r.Lines[sent]
	}
	return p
}

// sendBatch sends one batch of SendMany, in one transaction; its error is
// the caller's to explain (explainWrite). With args, the audit arguments
// of a call whose start was recorded (startAudit), the transaction also
// records progress, what the call has sent once the batch is, in the
// entry that replaces its pending one.
func (s *Service) sendBatch(ctx context.Context, queue string, payloads []json.RawMessage, opts engine.SendOptions, args json.RawMessage, progress any) (ids []int64, err error) {
	msgs := make([]engine.BatchMessage, len(payloads))
	for i, p := range payloads {
		msgs[i] = engine.BatchMessage{Payload: p, Options: opts}
	}
	st, _ := ctx.Value(auditStartKey{}).(*auditStart)
	if st == nil || st.id == 0 || args == nil {
		ids, err = s.sender.SendBatch(ctx, queue, msgs)
	} else {
		who := CallerFrom(ctx)
		note := store.AuditEntry{Client: who.Client, Transport: who.Transport, Principal: who.Principal, Tool: OpSend,
			Arguments: args, Result: auditResult(progress), Completes: st.id}
		if st.run != nil {
			note.RunPID, note.RunKey = st.run.PID, st.run.Key
		}
		var noteID int64
		ids, noteID, err = s.sender.SendBatchNoted(ctx, queue, msgs, note)
		if noteID != 0 {
			st.id = noteID
		}
	}
	if errors.Is(err, ErrNotFound) {
		return nil, missingQueue(err, queue, hint(OpQueueStats, "lists the queues there are"))
	}
	return ids, explainSend(err, queue, opts.Priority)
}
