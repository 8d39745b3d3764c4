package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Bounds of SendMany: what one call may send, and what it holds of it
// at once.
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

// PayloadSource is where SendMany reads its payloads from when they are
// more than it should hold in memory at once: a file, or other input that
// can be read again from its start. SendMany reads it twice: all of it
// first, to check every payload before it sends any, then again to send
// them, a batch at a time, holding about a batch of payloads, not the
// input. The second read must give the same payloads as the first: one
// that differs stops the call before the batch that would hold it.
type PayloadSource interface {
	// Each calls yield with each payload, in order, and the line of the
	// input (from 1) it came from, or 0 for input without lines; it stops
	// at yield's first error and returns it. The payload's bytes are
	// yield's only until it returns: Each may reuse them for the next.
	// Any other error of Each is one of reading the input, which stops
	// the call as it is.
	Each(yield func(payload json.RawMessage, line int) error) error
}

// SendManyRequest is many payloads to send to one queue with the same
// options, in order. It has no idempotency key: one key for every payload
// would send only the first.
type SendManyRequest struct {
	Queue string
	// Payloads are the payloads to send, held in memory; or give Source.
	Payloads []json.RawMessage
	// Source, instead of Payloads, is where the payloads are read from,
	// twice (see PayloadSource): a call holds about a batch of them at
	// once, however many it sends.
	Source PayloadSource
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
	// Lines, when set with Payloads, are the line of Input each payload
	// came from (from 1), one a payload: the audit log counts what was
	// sent by them, and names the line to go on from. A Source gives the
	// line of each payload itself.
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
// any is sent, read from its Source when it has one; an error about one
// names its index (from 0).
func (r SendManyRequest) Check() error {
	_, err := r.check()
	return err
}

// manyInput is what the check of a SendManyRequest read of its payloads:
// how many, how many bytes, the line of each when its input has lines,
// and, for a Source, each payload's hash, against which the read that
// sends them is compared.
type manyInput struct {
	count, bytes int
	// batches is how many transactions the payloads take (batchEnds).
	batches int
	lines   []int
	sums    []uint64
	seed    maphash.Seed
}

// check is Check, returning what it read of the payloads.
func (r SendManyRequest) check() (in manyInput, err error) {
	// The options once, with a payload that passes, so that an error in
	// them is not taken for one of the first payload.
	if err := r.one(json.RawMessage("null")).Check(); err != nil {
		return in, err
	}
	switch {
	case r.Source != nil && r.Payloads != nil:
		return in, invalidf("the payloads are given twice, held and as a source to read: give one")
	case r.Source != nil && r.Lines != nil:
		return in, invalidf("lines are given for payloads read from a source, which gives the line of each itself: give none")
	case r.Source == nil && len(r.Payloads) > MaxSendManyPayloads:
		return in, invalidf("%s payloads are more than the %s one call sends; send them in parts", thousands(int64(len(r.Payloads))), thousands(MaxSendManyPayloads))
	case r.Lines != nil && len(r.Lines) != len(r.Payloads):
		return in, invalidf("%s lines are given for %s payloads: give one line a payload, or none", thousands(int64(len(r.Lines))), thousands(int64(len(r.Payloads))))
	}
	if r.Source != nil {
		in.seed = maphash.MakeSeed()
	} else {
		in.lines = r.Lines
	}
	var b batcher
	err = r.each(func(p json.RawMessage, line int) error {
		i := in.count
		if i == MaxSendManyPayloads {
			return payloadError(invalidf("it is one more than the %s payloads one call sends; send them in parts", thousands(MaxSendManyPayloads)), i)
		}
		if in.bytes+len(p) > MaxSendManyBytes {
			return payloadError(invalidf("the payloads come to more than %d bytes with this one, the most one call sends; send them in parts", MaxSendManyBytes), i)
		}
		if err := r.one(p).Check(); err != nil {
			return payloadError(err, i)
		}
		in.count++
		in.bytes += len(p)
		if b.full(len(p)) {
			in.batches++
			b = batcher{}
		}
		b.add(len(p))
		if r.Source != nil {
			in.sums = append(in.sums, maphash.Bytes(in.seed, p))
			if line > 0 {
				in.lines = append(in.lines, line)
			}
		}
		return nil
	})
	if err != nil {
		return in, err
	}
	if in.count == 0 {
		return in, invalidf("there are no payloads to send: give at least one")
	}
	if len(in.lines) != in.count {
		in.lines = nil // lines for some payloads only: named by index
	}
	in.batches++
	return in, nil
}

// each calls yield with each payload of the request and its line, from
// Payloads or read from Source; it returns yield's first error as it was,
// or the Source's own error, of reading, wrapped in a sourceError.
func (r SendManyRequest) each(yield func(p json.RawMessage, line int) error) error {
	if r.Source == nil {
		for i, p := range r.Payloads {
			line := 0
			if i < len(r.Lines) {
				line = r.Lines[i]
			}
			if err := yield(p, line); err != nil {
				return err
			}
		}
		return nil
	}
	var stop error
	err := r.Source.Each(func(p json.RawMessage, line int) error {
		stop = yield(p, line)
		return stop
	})
	switch {
	case stop != nil:
		return stop
	case err != nil:
		return sourceError{err}
	}
	return nil
}

// sourceError is an error of reading a SendMany's Source, as the source
// said it.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

// batcher counts the batch SendMany fills: at most SendManyBatch payloads
// and SendManyBatchBytes bytes, but at least one payload.
type batcher struct{ n, bytes int }

// full reports whether the batch is full before a payload of size bytes.
func (b batcher) full(size int) bool {
	return b.n > 0 && (b.n == SendManyBatch || b.bytes+size > SendManyBatchBytes)
}

func (b *batcher) add(size int) { b.n, b.bytes = b.n+1, b.bytes+size }

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
// payload is checked before anything is sent; payloads read from a Source
// are read again to be sent, a batch at a time. It is one entry in the
// audit log, counting what was sent. One of more than one batch records
// its start there too, before its first batch, and how far it went in
// each batch's transaction, so that a process killed partway leaves it
// unfinished with what it sent (and, with lines, the line to go on from).
// A failure after some batches were sent is a *PartlySent, returned with
// the ids of those sent.
func (s *Service) SendMany(ctx context.Context, req SendManyRequest) (out SentMany, err error) {
	var in manyInput
	check := func() error {
		var err error
		in, err = req.check()
		return err
	}
	args := func() any {
		args := sendAuditArgs(req.Queue, req.Kind, req.Delay, req.Deadline, req.Headers, req.Priority)
		args["messages"], args["payload_bytes"] = in.count, in.bytes
		if req.Input != "" && store.CheckText(req.Input) == "" {
			args[sendInputArg] = req.Input
		}
		return args
	}
	ctx, end, err := s.enter(ctx, "SendMany", writesInSteps)
	if err != nil {
		return out, s.refusedByGate(ctx, OpSend, false, check, args, err)
	}
	defer end()
	// A send has no limit: the batches are SendManyBatch payloads or fewer.
	ctx = withFewer(ctx, "send fewer payloads in one call (its input in smaller parts, each sent on its own)")
	ctx, auditDone := withAuditStart(ctx)
	defer auditDone()
	defer func() { s.record(ctx, OpSend, args(), in.progress(len(out.MsgIDs)), err) }()
	if err := s.checkWrite(OpSend); err != nil {
		return out, err
	}
	if err := check(); err != nil {
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
	out = SentMany{Queue: req.Queue, MsgIDs: make([]int64, 0, in.count), Priority: req.Priority}
	var noted json.RawMessage
	if in.batches > 1 {
		// Several transactions: a process killed between two leaves what
		// it sent, which its entry says.
		a := args()
		noted = auditJSON(a)
		s.startAudit(ctx, OpSend, a)
	}
	// stopped is the error of a call stopped after the first start
	// payloads were sent, unsure whether the next unsure were too.
	stopped := func(err error, start, unsure int) error {
		if start > 0 || unsure > 0 {
			err = &PartlySent{Sent: start, Unsure: unsure, Total: in.count, Err: err}
		}
		return err
	}
	// send sends part, the batch of the payloads from start on.
	send := func(part []json.RawMessage, start int) error {
		ids, err := s.sendBatch(ctx, req.Queue, part, opts, noted, in.progress(start+len(part)))
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
			err = stopped(err, start, unsure)
			// Explained once it says what was sent: the words of a call
			// that sent nothing ("try the call again") would contradict it.
			s.explainWrite(ctx, &err, writesOnce, queueNow(req.Queue))
			return err
		}
		out.MsgIDs = append(out.MsgIDs, ids...)
		if req.Progress != nil {
			req.Progress(ids, len(out.MsgIDs))
		}
		return nil
	}
	// The payloads again, a batch at a time: the batch is sent before the
	// payload that does not fit in it is kept. A payload of a Source is
	// copied, its bytes the source's to reuse, and compared with what was
	// checked.
	var (
		batch []json.RawMessage
		b     batcher
		start int
		next  int
		sent  error // a batch's error, already worded
	)
	flush := func() error {
		if err := send(batch, start); err != nil {
			sent = err
			return err
		}
		start += len(batch)
		clear(batch) // the sent payloads are not kept
		batch, b = batch[:0], batcher{}
		return nil
	}
	err = req.each(func(p json.RawMessage, _ int) error {
		i := next
		if req.Source != nil {
			if i >= in.count || maphash.Bytes(in.seed, p) != in.sums[i] {
				return payloadError(invalidf("it changed since it was checked, as did its input, which must stay as it is until the call ends: check the input, then send what was not sent"), i)
			}
			p = bytes.Clone(p)
		}
		if b.full(len(p)) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, p)
		b.add(len(p))
		next++
		return nil
	})
	switch {
	case sent != nil:
		return out, sent
	case err == nil && next < in.count:
		err = invalidf("the input ended after %s of the %s payloads checked: it changed since it was checked, and must stay as it is until the call ends; check it, then send what was not sent", thousands(int64(next)), thousands(int64(in.count)))
	}
	if err != nil {
		return out, stopped(err, start, 0)
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// sendInputArg is the audit argument, and the argument of the next step
// that sends the rest, naming the input of a SendMany (its Input).
const sendInputArg = "ndjson"

// progress is what the audit log records of a SendMany that sent its
// first sent payloads: how many of how many, and with lines the line to
// go on from while some are left.
func (in manyInput) progress(sent int) map[string]any {
	p := map[string]any{"sent": sent, "total": in.count}
	if len(in.lines) == in.count && sent < len(in.lines) {
		p["next_line"] = in.lines[sent]
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
