package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// Bounds of what the audit log keeps of one operation.
const (
	maxAuditValue = 1 << 10
	maxAuditJSON  = 8 << 10
	auditTimeout  = 5 * time.Second
)

// record writes one write operation to the audit log: the operation, its
// arguments (secrets redacted, payloads only by size), a summary of its
// result or its error, and the client. A request rejected before anything
// was written (invalid, or refused as read-only) leaves no entry; any
// other outcome does, even after the caller's context ended, since the
// write may have happened. An entry the database cannot take (it does not
// answer, or refuses) is held and written later (see holdAudit), never
// returned as the operation's error: the operation is done either way.
func (s *Service) record(ctx context.Context, op string, args, result any, opErr error) {
	pd, ps := (*PartlyDone)(nil), (*PartlySent)(nil)
	// A call that did part of its work before an error is recorded,
	// whatever the error: what it did stays done.
	partly := errors.As(opErr, &pd) || errors.As(opErr, &ps)
	// A call that wrote its pending entry (startAudit) completes it,
	// whatever its outcome: unless completed, it reads as not finished.
	started := startedAudit(ctx)
	if started == 0 && !partly && (errors.Is(opErr, ErrInvalid) || errors.Is(opErr, ErrReadOnly)) {
		return
	}
	// The time the operation ended, kept by an entry written later.
	at := s.now()
	who := CallerFrom(ctx)
	e := store.AuditEntry{Client: who.Client, Transport: who.Transport, Principal: who.Principal,
		Tool: op, Arguments: auditJSON(args), IsError: opErr != nil, Completes: started}
	if opErr != nil {
		msg, _ := RedactText(opErr.Error())
		e.Result = marshalPlain(map[string]string{"error": msg})
		if partly {
			// What was done before the error stays done: the entry
			// counts it.
			e.Result = withError(auditResult(result), msg)
			if pd != nil && len(pd.Unsure) > 0 {
				// Counted neither done nor left: the entry says which.
				e.Result = withField(e.Result, "unsure", pd.Unsure)
			}
		}
	} else {
		e.Result = auditResult(result)
	}
	if ok, isOK := result.(interface{ OK() bool }); isOK && opErr == nil && !ok.OK() {
		e.IsError = true // some ids were not handled
	}
	if s.audit.waiting() {
		// Entries are held: this one goes behind them, so that the log
		// keeps the order of the operations.
		e.At = at
		s.holdAudit(e, nil)
		return
	}
	if errors.Is(opErr, ErrNotReady) {
		// Refused by the gate (refusedByGate): the database is not ready
		// for this process, and a try would only make the refusal wait.
		e.At = at
		s.holdAudit(e, opErr)
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	err := s.store.RecordAudit(actx, e)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrInvalid):
		s.unrecorded(e, err) // no later attempt would take it
	case started == 0 && changedNothing(args, opErr, partly) && (store.IsPermissionDenied(err) || store.LimitOf(err) == store.LimitReadOnly):
		// A dry run, or a write the database refused, by a role that
		// may only read: the operation's own answer says it all, and an
		// entry given up as unrecorded would claim something was done.
		if s.opts.Logger != nil {
			s.opts.Logger.Debug("pgbus: this operation changed nothing and the database role may not record it in the audit log",
				"op", e.Tool, "err", err)
		}
	default:
		e.At = at
		s.holdAudit(e, err)
	}
}

// refusedByGate records a write that the gate (Options.Gate) refused
// with err while this process readies its database at start, as a write
// refused during an outage after start is recorded: its entry is held in
// memory (see holdAudit), without trying a database that is not ready,
// and written in order, with the time of the refusal, once the gate opens;
// a process that stops first gives it to its log as unrecorded (Close).
// The database itself cannot take it before then: it does not answer, or
// its schema, the audit log's table included, is not ready. As for any
// write, a request refused anyway, by a read-only service or for its
// arguments (check), is not recorded, nor a dry run made to show a page.
// It returns err, for the call to return; any other error is returned
// as it is, unrecorded: enter refused the call before it was asked of
// this service at all.
func (s *Service) refusedByGate(ctx context.Context, op string, dryRun bool, check func() error, args func() any, err error) error {
	if !errors.Is(err, ErrNotReady) || s.checkWrite(op) != nil || (check != nil && check() != nil) || (dryRun && !recordsDryRun(ctx)) {
		return err
	}
	s.record(ctx, op, args(), nil, err)
	return err
}

// confirmed is check, then the refusal of a destructive call made without
// its confirmation, which its operation refuses for its arguments.
func confirmed(check func() error, confirm bool) func() error {
	return func() error {
		if err := check(); err != nil {
			return err
		}
		if !confirm {
			return invalidf("not confirmed")
		}
		return nil
	}
}

// auditStartKey is the context key of a call's auditStart.
type auditStartKey struct{}

// auditStart is the pending entry a long write wrote before its work
// (startAudit), which the entry of its outcome (record) completes, and the
// session it holds while it runs, which tells readers it still runs.
type auditStart struct {
	id  int64
	run *store.AuditRun
}

// withAuditStart returns ctx, with which startAudit can write a pending
// entry that record completes: each write that may run long calls it
// first, and startAudit just before its work. done releases the session
// startAudit held: deferred before the call's record, it runs once the
// outcome is recorded (or held), so that the entry never reads as
// stopped while its operation runs.
func withAuditStart(ctx context.Context) (_ context.Context, done func()) {
	st := &auditStart{}
	return context.WithValue(ctx, auditStartKey{}, st), func() { st.run.Release(ctx) }
}

// startedAudit is the id of the pending entry written for the call of
// ctx, 0 for none.
func startedAudit(ctx context.Context) int64 {
	if st, _ := ctx.Value(auditStartKey{}).(*auditStart); st != nil {
		return st.id
	}
	return 0
}

// startAudit writes the pending entry of a write that may run long (a
// move or purge by filter, over any number of messages), just before its
// work: what was asked, and by whom. A process killed partway (SIGKILL,
// out of memory, evicted) leaves it, and the audit shows it as not
// finished; the entry record writes at the end completes it. One
// statement before and one after: a short write (by ids, a pause) writes
// only the one after, and so does a move guarded by expect, which runs in
// one transaction: killed before it commits, it moved nothing, and an
// entry before it would read as not finished with counts that may be
// partial. The pending entry is best effort: when the database
// cannot take it, or entries are held (see holdAudit), whose order it
// would break, the call goes on and record writes its one entry as
// before.
func (s *Service) startAudit(ctx context.Context, op string, args any) {
	st, _ := ctx.Value(auditStartKey{}).(*auditStart)
	if st == nil || st.id != 0 || s.audit.waiting() {
		return
	}
	who := CallerFrom(ctx)
	actx, cancel := context.WithTimeout(ctx, auditTimeout)
	defer cancel()
	e := store.AuditEntry{Client: who.Client, Transport: who.Transport, Principal: who.Principal, Tool: op, Arguments: auditJSON(args)}
	// The session held while the operation runs, taken first, so that no
	// reader sees the entry name a session that does not hold it yet.
	// Without it, the entry reads as it did before pgbus held one.
	run, err := s.store.HoldAuditRun(actx)
	if err != nil && s.opts.Logger != nil {
		s.opts.Logger.Debug("pgbus: could not hold a session that tells the audit log this operation runs; an entry it leaves unfinished reads as still running or stopped",
			"op", op, "err", err)
	}
	if run != nil {
		e.RunPID, e.RunKey = run.PID, run.Key
	}
	id, err := s.store.StartAudit(actx, e)
	if err != nil {
		run.Release(ctx)
		if s.opts.Logger != nil {
			s.opts.Logger.Debug("pgbus: could not record the start of this operation in the audit log; its outcome is recorded at its end",
				"op", op, "err", err)
		}
		return
	}
	st.id, st.run = id, run
}

// changedNothing reports whether an operation with these audit arguments,
// ending with opErr, certainly changed nothing: a dry run, or a write the
// database refused (for a privilege, or as a standby) before doing any
// part of it.
func changedNothing(args any, opErr error, partly bool) bool {
	if m, ok := args.(map[string]any); ok && m["dry_run"] == true {
		return true
	}
	return !partly && (store.IsPermissionDenied(opErr) || store.LimitOf(opErr) == store.LimitReadOnly)
}

type pageViewKey struct{}

// WithPageView marks the calls made with ctx as the showing of a page that
// nobody submitted (the dashboard's GET requests: a link followed, a
// reload, a browser's prefetch): a dry run made to show it is not recorded
// in the audit log, since opening a page asks for no operation. Anything
// else is recorded as always, and so is a dry run a person submits (a
// form sent by POST) or asks for from the CLI or an MCP tool.
func WithPageView(ctx context.Context) context.Context {
	return context.WithValue(ctx, pageViewKey{}, true)
}

// recordsDryRun reports whether a dry run made with ctx goes in the audit
// log: unless it shows a page (WithPageView) or is a preview
// (withPreview).
func recordsDryRun(ctx context.Context) bool {
	pageView, _ := ctx.Value(pageViewKey{}).(bool)
	return !pageView && !previewing(ctx)
}

type previewKey struct{}

// withPreview marks the call made with ctx as a preview (PreviewRetry,
// PreviewDiscard, PreviewRunNow): the dry run of a write that a front end
// relays to someone who may make it, answered on a read-only service too
// and recorded in no audit entry. A nil ctx stays nil, for the operation
// to refuse.
func withPreview(ctx context.Context) context.Context {
	if ctx == nil {
		return nil
	}
	return context.WithValue(ctx, previewKey{}, true)
}

// previewing reports whether ctx is a preview's (withPreview).
func previewing(ctx context.Context) bool {
	p, _ := ctx.Value(previewKey{}).(bool)
	return p
}

// auditJSON marshals v for the audit log: secrets redacted, values over a
// kilobyte replaced by a note of their size, the whole bounded.
func auditJSON(v any) json.RawMessage {
	raw, n, ok := RedactJSON(marshalPlain(v))
	if !ok {
		return json.RawMessage(`{"unreadable": true}`)
	}
	_ = n
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		if len(raw) > maxAuditJSON {
			return sizeNote(len(raw))
		}
		return raw
	}
	for k, val := range fields {
		if len(val) > maxAuditValue {
			fields[k] = sizeNote(len(val))
		}
	}
	out := marshalPlain(fields)
	if len(out) > maxAuditJSON {
		return sizeNote(len(out))
	}
	return out
}

// auditResult is auditJSON of an operation's result, without its next
// steps: those were advice for the caller at the time of the call, in the
// operations layer's names, not part of what the call did, and read back
// from the log they would be stale.
func auditResult(v any) json.RawMessage {
	return auditJSON(withoutNext(marshalPlain(v)))
}

// withoutNext is a result recorded in the audit log without its next
// steps ("next"), as older versions recorded them: record leaves them out
// and the audit reads entries recorded before without them.
func withoutNext(raw json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return raw
	}
	if _, ok := fields["next"]; !ok {
		return raw
	}
	delete(fields, "next")
	return marshalPlain(fields)
}

func sizeNote(n int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"truncated": true, "bytes": %d}`, n))
}

func retryAuditArgs(r DLQRetryRequest) map[string]any {
	args := map[string]any{"filter": r.Filter, "dry_run": r.DryRun}
	if r.Expect != "" {
		args["expect"] = r.Expect
	}
	if len(r.IDs) > 0 {
		args["ids"] = r.IDs
	}
	if r.Limit != 0 {
		args["limit"] = r.Limit
	}
	if len(r.Payload) > 0 {
		// A corrected payload is a payload: the audit log, readable by
		// every agent, keeps only its size.
		args["payload_bytes"] = len(r.Payload)
	}
	if r.ClearDeadline {
		args["clear_deadline"] = true
	}
	if r.All {
		args["all"] = true
	}
	if r.Rate != 0 {
		args["rate"] = r.Rate
	}
	return args
}

// retryAuditResult is what the audit log keeps of a retry's result: its
// counts, without the list of the messages moved (nor the count of those
// the list left out, which would read as a part of them), nor, as for
// every result, its next steps (auditResult).
func retryAuditResult(r DLQRetry) any {
	r.Moved, r.MovedOmitted = nil, 0
	return r
}

func discardAuditArgs(r DLQDiscardRequest) map[string]any {
	args := map[string]any{"filter": r.Filter, "dry_run": r.DryRun}
	if len(r.IDs) == 0 && !r.DryRun {
		args["confirm"], args["asked"] = r.Confirm, r.Ask != nil || r.Deferred != nil
	}
	if r.Expect != "" {
		args["expect"] = r.Expect
	}
	if len(r.IDs) > 0 {
		args["ids"] = r.IDs
	}
	if r.Limit != 0 {
		args["limit"] = r.Limit
	}
	if r.All {
		args["all"] = true
	}
	return args
}

// discardAuditResult is retryAuditResult for a discard.
func discardAuditResult(r DLQDiscard) any {
	r.Moved, r.MovedOmitted = nil, 0
	return r
}

// AuditRequest asks for a page of the audit log, newest first.
type AuditRequest struct {
	// Op is an operation name (dlq_retry) or, for entries recorded by older
	// versions, a tool or command name (pgbus_dlq_retry, "dlq retry");
	// AuditAll for every operation; "" for every operation but sends.
	Op string
	// Client is a client name as recorded (cli, an MCP client); "" for all.
	Client string
	// Since leaves out older entries: a time in the grammar of ParseTime
	// (RFC 3339, a date, or an age such as 2h); "" for all.
	Since  string
	Cursor string
	Limit  int
}

// AuditAll is the Op of an audit request for every operation, sends
// included. Sends are left out unless asked for: they are the workload
// itself, often many, and would hide the retries, discards, purges, pauses
// and resumes an audit is read for.
const AuditAll = "all"

// AuditEntry is one recorded write operation.
type AuditEntry struct {
	ID        int64           `json:"id"`
	At        time.Time       `json:"at"`
	Client    string          `json:"client" jsonschema_description:"Who called, as the caller said: cli, dashboard, or mcp: and the name/version an MCP client declared."`
	Transport string          `json:"transport" jsonschema_description:"How the call came in: cli (the command line), stdio, sse or http (MCP); empty for entries recorded before pgbus kept it."`
	Principal string          `json:"principal,omitempty" jsonschema_description:"Who authenticated the call, when someone did: over HTTP with the bearer token, token sha256: and the start of the token's SHA-256."`
	Op        string          `json:"tool" jsonschema_description:"The operation (dlq_retry, dlq_discard, queue_pause, ...)."`
	Arguments json.RawMessage `json:"arguments" jsonschema_description:"Its arguments, secrets redacted, payloads only by size."`
	Result    json.RawMessage `json:"result" jsonschema_description:"A summary of its result, or its error."`
	IsError   bool            `json:"is_error" jsonschema_description:"It failed, or some of its ids were not handled."`
	// Unfinished marks an entry recorded before its work with no outcome
	// since: at is when it started, and result says the outcome is
	// unknown.
	Unfinished bool `json:"unfinished,omitempty" jsonschema_description:"Not finished, outcome unknown: still running, or its process stopped partway (killed). What it did stays done; counts may be partial. at is when it started."`
	// Running marks an unfinished entry whose operation still runs: the
	// database session it holds is there.
	Running bool `json:"running,omitempty" jsonschema_description:"Unfinished and still running: its database session is there."`
}

// AuditPage is a page of the audit log.
type AuditPage struct {
	Items      []AuditEntry `json:"items" jsonschema_description:"Write operations, newest first."`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor for the next page. Absent on the last page."`
	Notes      []string     `json:"notes" jsonschema_description:"What was left out or shortened."`
	Next       []Hint       `json:"next" jsonschema_description:"What to do next: the next page, when there is one."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`
}

// Audit lists recorded write operations, newest first.
func (s *Service) Audit(ctx context.Context, req AuditRequest) (_ AuditPage, err error) {
	ctx, end, err := s.enter(ctx, "Audit", reads)
	if err != nil {
		return AuditPage{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return AuditPage{}, err
	}
	limit, _ := pageLimit(OpAudit, req.Limit)
	// The first page of this call's filters, all of them: without them it
	// would list other entries.
	restart := hint(OpAudit, "start again from the first page", "tool", req.Op, "client", req.Client, "since", req.Since, "limit", req.Limit)
	now := s.now()
	if req.Cursor != "" {
		// An age means the same moment on every page: the one the first
		// page counted it back from, which the cursor carries signed.
		clock, err := s.store.AuditCursorClock(ctx, req.Cursor)
		if err != nil {
			return AuditPage{}, explain(err, restart)
		}
		if !clock.IsZero() {
			now = clock
		}
	}
	f := store.AuditFilter{Tool: OpName(req.Op), Client: req.Client}
	switch f.Tool {
	case AuditAll:
		f.Tool = ""
	case "":
		f.ExceptTools = []string{OpSend}
	}
	if req.Since != "" {
		if f.Since, err = parseField("since", req.Since, now); err != nil {
			return AuditPage{}, err
		}
		if isAge(req.Since) {
			f.Clock = now
		}
	}
	// A page over the response bound is read again with fewer rows, so
	// that its next_cursor follows the last row shown.
	asked := limit
	var out AuditPage
	for {
		page, err := s.store.ListAudit(ctx, f, req.Cursor, limit)
		if err != nil {
			return AuditPage{}, explain(err, restart)
		}
		// Which unfinished entries still run; unknown (nil) where the
		// database cannot tell this reader.
		running, rerr := s.store.AuditRunning(ctx, page.Items)
		if rerr != nil {
			running = nil
			if s.opts.Logger != nil {
				s.opts.Logger.Debug("pgbus: cannot tell which unfinished operations still run", "err", rerr)
			}
		}
		out = auditView(page, running)
		k := shrunkPage(s.opts.Bounds, out.Items, AuditPage{NextCursor: page.NextCursor, Notes: out.Notes})
		if k == 0 || k >= limit {
			break
		}
		limit = k
	}
	if f.Tool == "" && len(f.ExceptTools) > 0 {
		ask(&out.Notes, &out.Asks, AskSends, "sends are left out", 0)
	}
	if limit < asked {
		shrunkNote(&out.Notes, &out.Asks, len(out.Items), asked, out.NextCursor != "")
	}
	if out.NextCursor != "" {
		// The cursor is a place in the log: the next page needs the same
		// filters with it.
		out.Next = append(out.Next, hint(OpAudit, "the next page", "tool", req.Op, "client", req.Client, "since", req.Since, "cursor", out.NextCursor, "limit", limit))
	}
	return out, nil
}

// AuditedOps are the operations the audit log records.
var AuditedOps = []string{OpDLQRetry, OpDLQDiscard, OpDLQRestore, OpDLQPurge, OpQueueCreate, OpQueueDrop, OpQueuePause, OpQueueResume, OpQueuePurge, OpQueueRunNow, OpCircuitReset, OpCircuitOpen, OpSend}

// maxAuditShown bounds the arguments and the result of one entry as the
// audit shows them, so that a page lists many entries: larger ones are
// shown by their size.
const maxAuditShown = 1500

// auditView is page as the audit shows it. running says which pending
// entries that name their session still run (store.AuditRunning); nil
// where that is not known, and such entries read as still running or
// stopped.
func auditView(page store.AuditPage, running map[int64]bool) AuditPage {
	out := AuditPage{Items: make([]AuditEntry, len(page.Items)), NextCursor: page.NextCursor, Notes: []string{}, Next: []Hint{}}
	cut := 0
	shown := func(raw json.RawMessage) json.RawMessage {
		red, _, _ := RedactJSON(raw)
		if len(red) > maxAuditShown {
			cut++
			return sizeNote(len(red))
		}
		return red
	}
	live, gone, unknown := 0, 0, 0
	for i, e := range page.Items {
		stopped := false
		out.Items[i] = AuditEntry{ID: e.ID, At: e.At, Client: e.Client, Transport: e.Transport, Principal: e.Principal,
			Op: e.Tool, Arguments: shown(e.Arguments), Result: shown(withoutNext(e.Result)), IsError: e.IsError}
		if !e.Pending {
			continue
		}
		out.Items[i].Unfinished = true
		switch {
		case e.RunPID == 0 || running == nil:
			unknown++
			out.Items[i].Result = unfinishedResult
		case running[e.ID]:
			live++
			out.Items[i].Running = true
			out.Items[i].Result = runningResult(e)
		default:
			gone++
			stopped = true
			out.Items[i].Result = stoppedResult(e)
		}
		if e.Tool == OpSend {
			out.Items[i].Result = withSendProgress(out.Items[i].Result, e.Result)
			if h, ok := sendRest(e, stopped, running != nil && running[e.ID]); ok {
				out.Next = append(out.Next, h)
			}
		}
	}
	if cut > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s over %d bytes %s shown by %s size", plural.Count(cut, "argument or result", "arguments or results"), maxAuditShown, plural.Of(cut, "is", "are"), plural.Of(cut, "its", "their")))
	}
	if live > 0 {
		out.Notes = append(out.Notes, plural.Count(live, "entry is", "entries are")+" still running: "+plural.Of(live, "its outcome is", "their outcomes are")+
			" recorded at the end, and what was done so far stays done, so counts are partial until then")
	}
	if stopped := gone + unknown; stopped > 0 {
		why := "still running, or stopped partway (the process killed, out of memory) before recording the outcome"
		if unknown == 0 {
			why = plural.Of(stopped, "the database session that ran it", "the database sessions that ran them") + " ended before recording the outcome " +
				"(the process killed, out of memory, or cut off from the database)"
		}
		out.Notes = append(out.Notes, plural.Count(stopped, "entry", "entries")+" did not finish, outcome unknown: "+why+"; what was done stays done, so counts may be partial: "+
			"the dead-letter summary and the queues' counts show what is there now")
	}
	if live+gone+unknown > 0 {
		out.Next = append(out.Next, hint(OpDLQSummary, "shows the dead messages there are now, whatever an operation that did not finish moved"),
			hint(OpQueueStats, "shows the queues' counts now"))
	}
	return out
}

// sendProgress is how far a send of many payloads went, as its pending
// entry records it after each batch (SendManyRequest.progress).
type sendProgress struct {
	Sent     *int `json:"sent"`
	Total    int  `json:"total"`
	NextLine int  `json:"next_line"`
}

// withSendProgress is result, the result an unfinished send shows, with
// the counts its pending entry recorded, from raw: what it sent before it
// stopped, which stays sent.
func withSendProgress(result, raw json.RawMessage) json.RawMessage {
	var p sendProgress
	var fields map[string]any
	if json.Unmarshal(raw, &p) != nil || p.Sent == nil || json.Unmarshal(result, &fields) != nil {
		return result
	}
	fields["sent"], fields["total"] = *p.Sent, p.Total
	if p.NextLine > 0 {
		fields["next_line"] = p.NextLine
	}
	return marshalPlain(fields)
}

// sendRest is the next step of a send of many payloads that did not
// finish: the same send from the line after the last it sent, of the same
// input, which its entry names, with the same options. Where whether it
// still runs is not known (stopped false), the step says to take it only
// once it no longer does: taken while it runs, it would send its lines
// twice. There is none while it runs (live), for an entry that names no
// input or line, or whose headers the audit log keeps redacted, which the
// step could not send as they were.
func sendRest(e store.AuditEntry, stopped, live bool) (Hint, bool) {
	var p sendProgress
	var args struct {
		Queue    string         `json:"queue"`
		Input    string         `json:"ndjson"`
		Kind     string         `json:"kind"`
		Delay    string         `json:"delay"`
		Deadline string         `json:"deadline"`
		Headers  map[string]any `json:"headers"`
		Priority int            `json:"priority"`
	}
	if live || json.Unmarshal(e.Result, &p) != nil || p.NextLine < 1 || json.Unmarshal(e.Arguments, &args) != nil || args.Queue == "" || args.Input == "" {
		return Hint{}, false
	}
	var headers []string
	for k, v := range args.Headers {
		text := fmt.Sprint(v)
		if strings.Contains(k+text, Redacted) {
			return Hint{}, false
		}
		headers = append(headers, k+"="+text)
	}
	slices.Sort(headers)
	why := fmt.Sprintf("sends the rest of the input of send %d, which did not finish: from line %d, the line after the last it sent, so that none is sent twice", e.ID, p.NextLine)
	if !stopped {
		why = fmt.Sprintf("only once send %d no longer runs, which is not known here (its process may still be sending): ", e.ID) + why
	}
	h := hint(OpSend, why,
		"queue", args.Queue, sendInputArg, args.Input, "from_line", p.NextLine, "kind", args.Kind, "delay", args.Delay, "deadline", args.Deadline, "priority", args.Priority)
	if len(headers) > 0 {
		h.Args["header"] = headers
	}
	return h, true
}

// unfinishedResult is the result an unfinished entry shows, in every
// front end, where whether it still runs is not known (its entry names no
// session, or the reader cannot see the sessions): the outcome is not
// known, and where to see the current state.
var unfinishedResult = json.RawMessage(`{"outcome":"unknown","not_finished":"recorded when it started, with no outcome since: it is still running, or its process stopped partway (killed, out of memory); what it did stays done, so counts may be partial: the dead-letter summary and the queues' counts show the current state"}`)

// runningResult is the result of an unfinished entry whose operation
// still runs: the session it holds is there.
func runningResult(e store.AuditEntry) json.RawMessage {
	return marshalPlain(map[string]string{"outcome": "unknown", "running": fmt.Sprintf("still running, in database session %d, since %s: "+
		"its outcome is recorded when it ends; what it did so far stays done, so counts are partial until then: "+
		"the dead-letter summary and the queues' counts show the current state", e.RunPID, e.At.UTC().Format(time.RFC3339))})
}

// stoppedResult is the result of an unfinished entry whose operation no
// longer runs: the session it held has ended.
func stoppedResult(e store.AuditEntry) json.RawMessage {
	return marshalPlain(map[string]string{"outcome": "unknown", "not_finished": fmt.Sprintf("not finished: the database session that ran it (%d) "+
		"ended before it recorded its outcome: its process stopped partway (killed, out of memory), or lost the database, "+
		"in which case the outcome it holds is written once the database is back; what it did stays done, so counts may be partial: "+
		"the dead-letter summary and the queues' counts show the current state", e.RunPID)})
}

// OpName turns a tool name (pgbus_dlq_retry) or command ("dlq retry",
// "dlq retry-all") into the operation name the audit log records.
func OpName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "pgbus_")
	s = strings.NewReplacer(" ", "_", "-", "_").Replace(s)
	switch s {
	case "dlq_retry_all":
		return OpDLQRetry
	case "queues":
		return OpQueueStats
	}
	return s
}
