package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Bounds of the audit entries a Service holds while the database cannot
// take them: an outage of hours under a busy MCP server must not grow the
// process without end. An entry past them is given to Options.Unrecorded
// (or the log) at once, as one that could not be recorded.
const (
	maxHeldAudit      = 10000
	maxHeldAuditBytes = 16 << 20
	// heldAuditBatch is how many held entries one write takes: a long
	// backlog is written in transactions of a bounded size.
	heldAuditBatch = 500
)

// How often held audit entries are tried again: soon after the first
// failure, since most outages are restarts of seconds, then every few
// seconds for as long as they last.
const (
	heldAuditFirstRetry = 250 * time.Millisecond
	heldAuditMaxRetry   = 5 * time.Second
)

// AuditCloseWait is the longest Close keeps trying to write the audit
// entries the service holds before it gives them up as unrecorded: long
// enough for a database restart or a failover to end, short enough that a
// command does not seem to hang at its exit.
const AuditCloseWait = 30 * time.Second

// auditHold is the audit entries a Service could not write yet, oldest
// first, and the goroutine that writes them once the database answers.
type auditHold struct {
	mu       sync.Mutex
	entries  []store.AuditEntry
	bytes    int
	retrying bool          // the goroutine of retryHeldAudit runs
	closed   chan struct{} // closed by Close: nothing is held any more
	once     sync.Once

	// writing is held through each write of held entries, so that two
	// writes never take the same entries, nor write them out of order.
	writing sync.Mutex
}

func (h *auditHold) closedCh() chan struct{} {
	h.once.Do(func() { h.closed = make(chan struct{}) })
	return h.closed
}

func (h *auditHold) isClosed() bool {
	select {
	case <-h.closedCh():
		return true
	default:
		return false
	}
}

// waiting reports whether entries are held, to be written before any new
// one.
func (h *auditHold) waiting() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries) > 0
}

// holdAudit keeps e, which the database could not take (err; nil when e
// only queues behind entries held before it), to be written once it
// answers, and starts the goroutine that tries. Past the bounds of what is
// held, or once the service is closed, e is given up as unrecorded.
func (s *Service) holdAudit(e store.AuditEntry, err error) {
	if cerr := store.CheckAuditEntry(e); cerr != nil {
		// Held, it would stop every entry behind it.
		s.unrecorded(e, cerr)
		return
	}
	if store.LimitOf(err) == store.LimitReadOnly {
		// Waiting does not make a standby take writes: held, the entry
		// would keep a command from ending, for nothing.
		what, todo := limitAdvice(store.LimitReadOnly, s.store.User(), "")
		s.unrecorded(e, fmt.Errorf("%w: %s; %s", err, what, todo))
		return
	}
	if store.IsPermissionDenied(err) {
		// Nor does it grant a privilege: a command run by a role that
		// may only read would wait AuditCloseWait at its exit.
		s.unrecorded(e, fmt.Errorf("%w: the database role %s may not write the audit log; grant it INSERT on pgbus.audit_log, or run writes as a role that may", err, cmp.Or(s.store.User(), "in use")))
		return
	}
	h := &s.audit
	size := len(e.Arguments) + len(e.Result)
	h.mu.Lock()
	full := len(h.entries) >= maxHeldAudit || h.bytes+size > maxHeldAuditBytes
	if h.isClosed() || full {
		h.mu.Unlock()
		why := err
		if full {
			why = fmt.Errorf("%d audit entries (%d bytes) are already held while the database cannot take them, as many as pgbus holds (last error: %v)", maxHeldAudit, h.bytes, err)
		}
		s.unrecorded(e, why)
		return
	}
	first := len(h.entries) == 0
	h.entries = append(h.entries, e)
	h.bytes += size
	start := !h.retrying
	h.retrying = true
	h.mu.Unlock()
	if first && err != nil && s.opts.Logger != nil {
		s.opts.Logger.Warn("pgbus: could not record an operation in the audit log; it is held, with any after it, and written in order once the database takes it",
			"op", e.Tool, "err", err)
	}
	if start {
		go s.retryHeldAudit()
	}
}

// retryHeldAudit writes the held entries, trying again with a growing
// pause until none is left or the service is closed.
func (s *Service) retryHeldAudit() {
	h := &s.audit
	delay := heldAuditFirstRetry
	written := 0
	for {
		select {
		case <-h.closedCh():
			h.mu.Lock()
			h.retrying = false
			h.mu.Unlock()
			return
		case <-time.After(delay):
		}
		if !s.opts.Gate.Ready() {
			// The database is not ready for this process yet (entries
			// of writes the gate refused): none is tried before it is.
			delay = heldAuditFirstRetry
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
		n, left, _ := s.writeHeldAudit(ctx)
		cancel()
		written += n
		if n > 0 {
			delay = heldAuditFirstRetry
		} else {
			delay = min(2*delay, heldAuditMaxRetry)
		}
		h.mu.Lock()
		if left == 0 && len(h.entries) == 0 {
			h.retrying = false
			h.mu.Unlock()
			if written > 0 && s.opts.Logger != nil {
				s.opts.Logger.Info("pgbus: wrote the operations held for the audit log", "entries", written)
			}
			return
		}
		h.mu.Unlock()
	}
}

// writeHeldAudit writes the oldest held entries, at most heldAuditBatch,
// in one transaction, and returns how many it wrote and how many are
// still held.
func (s *Service) writeHeldAudit(ctx context.Context) (written, left int, err error) {
	h := &s.audit
	h.writing.Lock()
	defer h.writing.Unlock()
	h.mu.Lock()
	batch := append([]store.AuditEntry(nil), h.entries[:min(len(h.entries), heldAuditBatch)]...)
	h.mu.Unlock()
	if len(batch) == 0 {
		return 0, 0, nil
	}
	err = s.store.RecordAudits(ctx, batch)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		for _, e := range batch {
			h.bytes -= len(e.Arguments) + len(e.Result)
		}
		// Only this write removes entries, and new ones are appended
		// behind: the batch is still the front of the queue.
		h.entries = h.entries[len(batch):]
		if len(h.entries) == 0 {
			h.entries = nil // lets the backlog's array go
		}
		written = len(batch)
	}
	return written, len(h.entries), err
}

// Close writes the audit entries the service holds, those the database
// could not take when their operations ended, trying again until they are
// written, ctx ends or AuditCloseWait has passed. Each it could not write
// is given to Options.Unrecorded (or the log) as one JSON line saying so,
// so that the log of whoever ran the operation keeps it. A short-lived
// process (a command) calls it before it exits; a long-running one when
// it stops. After Close, an entry the database cannot take is given up at
// once. A ctx that ends, as a process's stop signal ends it, ends the
// wait at once, and the entries are given up then. Close on a nil
// Service does nothing.
func (s *Service) Close(ctx context.Context) {
	if s == nil || s.store == nil {
		return
	}
	h := &s.audit
	h.mu.Lock()
	if !h.isClosed() {
		close(h.closedCh())
	}
	held := len(h.entries)
	h.mu.Unlock()
	if held == 0 {
		return
	}
	if s.opts.Logger != nil && s.opts.Gate.Ready() {
		s.opts.Logger.Warn("pgbus: operations are not yet recorded in the audit log: trying again before stopping",
			"entries", held, "for", AuditCloseWait.String())
	}
	wait, cancel := context.WithTimeout(ctx, AuditCloseWait)
	defer cancel()
	var err error
	if !s.opts.Gate.Ready() {
		// Stopped before its database was ready: no wait would make it
		// so, and the held entries are given up at once, saying why.
		err = s.opts.Gate.refusal(context.Background())
		cancel()
	}
	delay := heldAuditFirstRetry
	for wait.Err() == nil {
		actx, acancel := context.WithTimeout(wait, auditTimeout)
		var left int
		_, left, err = s.writeHeldAudit(actx)
		acancel()
		if left == 0 {
			return
		}
		if err == nil {
			continue // a batch went: the next at once
		}
		select {
		case <-wait.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, heldAuditMaxRetry)
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("stopped before the database took it (%w); the last try: %v", context.Cause(ctx), err)
	}
	h.writing.Lock()
	defer h.writing.Unlock()
	h.mu.Lock()
	lost := h.entries
	h.entries, h.bytes = nil, 0
	h.mu.Unlock()
	for _, e := range lost {
		s.unrecorded(e, err)
	}
}

// unrecordedLine is the JSON line of an audit entry that could not be
// recorded: the entry as the audit log would have stored it (arguments
// and result already redacted and bounded).
type unrecordedLine struct {
	Level string          `json:"level"`
	Msg   string          `json:"msg"`
	Err   string          `json:"err,omitempty"`
	Entry unrecordedEntry `json:"audit_entry"`
}

type unrecordedEntry struct {
	At        time.Time       `json:"at"`
	Client    string          `json:"client"`
	Transport string          `json:"transport"`
	Principal string          `json:"principal,omitempty"`
	Op        string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
	IsError   bool            `json:"is_error"`
	// Completes is the id of the entry recorded when the operation
	// started, which this one would have completed: the audit log shows
	// that one as not finished.
	Completes int64 `json:"completes,omitempty"`
}

// unrecordedMsg says what an unrecorded line is, for a person reading a
// log and for a search of it.
const unrecordedMsg = "pgbus: could not record this operation in the audit log; it was done as the entry says, and this line is its only record"

// unrecorded gives up e, which the audit log could not take (err), to
// Options.Unrecorded as one JSON line, or else to the log at level ERROR.
func (s *Service) unrecorded(e store.AuditEntry, err error) {
	if e.At.IsZero() {
		e.At = s.now()
	}
	line := unrecordedLine{Level: "ERROR", Msg: unrecordedMsg, Entry: unrecordedEntry{At: e.At, Client: e.Client, Transport: e.Transport,
		Principal: e.Principal, Op: e.Tool, Arguments: validJSON(e.Arguments), Result: validJSON(e.Result), IsError: e.IsError, Completes: e.Completes}}
	if err != nil {
		line.Err, _ = RedactText(err.Error())
	}
	if s.opts.Unrecorded != nil {
		raw := marshalPlain(line)
		_, _ = s.opts.Unrecorded.Write(append(raw, '\n'))
		return
	}
	if s.opts.Logger != nil {
		// Raw JSON: a JSON log embeds it as it is, a text log shows it
		// as text.
		s.opts.Logger.Error(unrecordedMsg, "err", line.Err, "audit_entry", marshalPlain(line.Entry))
	}
}

// validJSON is raw, or {} when it is no JSON (as the store writes it).
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return json.RawMessage(`{}`)
	}
	return raw
}
