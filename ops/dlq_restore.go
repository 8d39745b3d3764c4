package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgbus/pgbus/store"
)

// DLQDiscardedRequest asks for the messages of one DLQ's archive: those
// discarded from it, which DLQRestore brings back, and the originals of
// retries with a corrected payload, listed but not restorable. Of
// Filter, Queue is required; Kind and ErrorClass match as for DLQList,
// and Since and Until bound when the messages were discarded. Nothing
// else of the filter applies.
type DLQDiscardedRequest struct {
	Filter DeadFilter
	// ByHandler lists instead the messages a handler's rule discarded
	// from the queue itself (engine.Discard, a discard rule of the http or
	// exec handler): kept in the archive of the queue (of each of its
	// priority levels) marked pgbus_discarded, never dead-lettered, and
	// brought back by no restore. Filter.Queue is then the queue, not its
	// DLQ.
	ByHandler bool
	// Limit is how many to list, most recently discarded first: 1 to
	// MaxPageSize, 0 for DefaultPageSize.
	Limit int
	// Cursor is the previous page's NextCursor, with the same filter; ""
	// for the first page.
	Cursor string
}

// ReasonDiscardedByHandler is the reason of a message a handler's rule
// discarded from its queue (DLQDiscardedRequest.ByHandler): it never died.
const ReasonDiscardedByHandler = "discarded_by_handler"

// DiscardedItem is one message of a DLQ's archive, or of a queue's archive
// that a handler discarded (DLQDiscardedRequest.ByHandler).
type DiscardedItem struct {
	DLQ            string    `json:"dlq,omitempty" jsonschema_description:"The DLQ whose archive holds the message; absent for one a handler discarded (by_handler)."`
	Queue          string    `json:"queue,omitempty" jsonschema_description:"For a message a handler discarded (by_handler): the queue, or priority level NAME_pN, whose archive holds it."`
	MsgID          int64     `json:"msg_id" jsonschema_description:"Its id, which it keeps when restored."`
	Kind           string    `json:"kind,omitempty"`
	Reason         string    `json:"reason" jsonschema_description:"Why the message died; not_recorded when it has no dead-letter block; discarded_by_handler for one a handler's rule discarded from its queue, which never died."`
	SourceQueue    string    `json:"source_queue,omitempty" jsonschema_description:"Queue the message died in."`
	ErrorClass     string    `json:"error_class,omitempty"`
	ErrorMessage   string    `json:"error_message,omitempty" jsonschema_description:"Last error message, secrets redacted, shortened."`
	DeadLetteredAt time.Time `json:"dead_lettered_at,omitzero"`
	DiscardedAt    time.Time `json:"discarded_at" jsonschema_description:"When it went to the archive."`
	Restorable     bool      `json:"restorable" jsonschema_description:"Whether a restore brings it back. False for the original of a retry with a corrected payload: the corrected message ran in its place, so restoring it would run the job twice."`
}

// DLQDiscarded is the archive's messages a DLQDiscarded request selects.
type DLQDiscarded struct {
	Items      []DiscardedItem `json:"items" jsonschema_description:"Archived messages, most recently discarded first, without payload."`
	NextCursor string          `json:"next_cursor,omitempty" jsonschema_description:"Pass as cursor, with the same queue and filters, for the next page. Absent on the last page."`
	Notes      []string        `json:"notes" jsonschema_description:"What was shortened or hidden."`
	Next       []Hint          `json:"next" jsonschema_description:"What to do next: the restore of those listed, the next page."`
}

// Check validates the request without the database.
func (r DLQDiscardedRequest) Check() error {
	if strings.TrimSpace(r.Filter.Queue) == "" {
		return fieldf("queue", "is required: give the queue whose discarded messages to list").
			with(hint(OpQueueStats, "lists the queues there are"))
	}
	if base, isDLQ := strings.CutSuffix(strings.TrimSpace(r.Filter.Queue), store.DLQSuffix); isDLQ && r.ByHandler {
		return fieldf("by_handler", "lists the messages handlers discarded from the queue whose jobs they run, and %s is a dead-letter queue: give its queue, %s", strings.TrimSpace(r.Filter.Queue), base)
	}
	f := r.Filter
	var drop []string
	for _, kv := range [][2]string{{"reason", f.Reason}, {"text", f.Text}, {"group", f.Group}} {
		if kv[1] != "" {
			drop = append(drop, kv[0])
		}
	}
	if len(drop) > 0 {
		return invalidf("the discarded messages are selected by queue, kind, error_class, since and until only: drop %s", andList(drop)).
			naming(append([]string{"queue", "kind", "error_class", "since", "until"}, drop...)...)
	}
	if _, err := pageLimit(OpDLQDiscarded, r.Limit); err != nil {
		return err
	}
	return f.Check()
}

// DLQDiscarded lists the messages of a DLQ's archive, most recently
// discarded first.
func (s *Service) DLQDiscarded(ctx context.Context, req DLQDiscardedRequest) (_ DLQDiscarded, err error) {
	ctx, end, err := s.enter(ctx, "DLQDiscarded", reads)
	if err != nil {
		return DLQDiscarded{}, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	if err := req.Check(); err != nil {
		return DLQDiscarded{}, err
	}
	limit, _ := pageLimit(OpDLQDiscarded, req.Limit)
	if err := checkText("cursor", req.Cursor); err != nil {
		return DLQDiscarded{}, err
	}
	again := hint(OpDLQDiscarded, "start again from the first page", req.args("limit", req.Limit)...)
	now, err := s.cursorClock(ctx, req.Cursor)
	if err != nil {
		return DLQDiscarded{}, explain(err, again)
	}
	f, err := req.Filter.resolve(now)
	if err != nil {
		return DLQDiscarded{}, err
	}
	sf := store.DiscardedFilter{Since: f.Since, Until: f.Until, Kind: f.Kind, ErrorClass: f.ErrorClass}
	if req.Filter.relative() {
		sf.Clock = now
	}
	// A page over the response bound is read again with fewer rows, so
	// that its next_cursor follows the last row shown.
	asked := limit
	var out DLQDiscarded
	for {
		list := s.store.ListDiscarded
		if req.ByHandler {
			list = s.store.ListHandlerDiscarded
		}
		page, err := list(ctx, f.Queue, sf, req.Cursor, limit)
		if err != nil {
			if errors.Is(err, ErrNotFound) || req.Cursor == "" {
				redo := levelRedo(err, func(q string) Hint {
					r := req
					r.Filter.Queue = q
					return hint(OpDLQDiscarded, onLevelWhy(q), r.args("limit", req.Limit)...)
				})
				return DLQDiscarded{}, explain(err, append(redo, hint(OpQueueStats, "lists the queues there are"))...)
			}
			return DLQDiscarded{}, explain(err, again)
		}
		out = s.discardedList(page, req.ByHandler)
		// The hints of the whole page are counted, at most those of the
		// rows kept.
		rest := DLQDiscarded{Notes: out.Notes, NextCursor: page.NextCursor, Next: discardedNext(req, out.Items, page.NextCursor, limit)}
		k := shrunkPage(s.opts.Bounds, out.Items, rest)
		if k == 0 || k >= limit {
			break
		}
		limit = k
	}
	out.Next = discardedNext(req, out.Items, out.NextCursor, limit)
	if limit < asked {
		shrunkNote(&out.Notes, new([]Ask), len(out.Items), asked, false)
	}
	return out, nil
}

// discardedNext is what to do after a page of discarded messages: see
// what restoring the restorable ones would do, and read the next page.
func discardedNext(req DLQDiscardedRequest, items []DiscardedItem, next string, limit int) []Hint {
	hints := []Hint{}
	var ids []int64
	for _, it := range items {
		if it.Restorable {
			ids = append(ids, it.MsgID)
		}
	}
	if len(ids) > 0 {
		hints = append(hints, hint(OpDLQRestore, "see what restoring the restorable ones listed would do; the same call, not as a dry run, restores them", "queue", req.Filter.Queue, "ids", ids, "dry_run", true))
	}
	if next != "" {
		hints = append(hints, hint(OpDLQDiscarded, "the next page", req.args("cursor", next, "limit", limit)...))
	}
	return hints
}

// discardedList is the view of a page of discarded messages: of a DLQ's
// archive, or, byHandler, those a handler discarded from their queue.
func (s *Service) discardedList(page store.DiscardedPage, byHandler bool) DLQDiscarded {
	v := s.viewer(false)
	out := DLQDiscarded{Items: make([]DiscardedItem, len(page.Items)), NextCursor: page.NextCursor, Notes: []string{}, Next: []Hint{}}
	for i, it := range page.Items {
		out.Items[i] = DiscardedItem{DLQ: it.DLQ, Queue: it.Queue, MsgID: it.MsgID, Kind: shownKind(it.Kind), Reason: shownReason(it.Reason), SourceQueue: it.SourceQueue,
			ErrorClass: v.class(it.ErrorClass), ErrorMessage: v.errorText(it.ErrorMessage, s.opts.Bounds.ListErrorChars), DeadLetteredAt: it.DeadLetteredAt,
			DiscardedAt: it.ArchivedAt, Restorable: !it.RetryOriginal && !byHandler}
		if byHandler {
			out.Items[i].Reason = ReasonDiscardedByHandler
		}
	}
	out.Notes = append(out.Notes, v.listNotesShown(s.opts.Bounds.ListErrorChars, "showing one message once restored")...)
	return out
}

// args are the arguments of the list req asks for, and more.
func (req DLQDiscardedRequest) args(more ...any) []any {
	if req.ByHandler {
		more = append([]any{"by_handler", true}, more...)
	}
	return discardedArgs(req.Filter, more...)
}

// discardedArgs are the arguments of a list of discarded messages with
// the filter f, and more.
func discardedArgs(f DeadFilter, more ...any) []any {
	f.Queue, f.Since, f.Until = strings.TrimSpace(f.Queue), strings.TrimSpace(f.Since), strings.TrimSpace(f.Until)
	return append([]any{"queue", f.Queue, "kind", f.Kind, "error_class", f.ErrorClass, "since", f.Since, "until", f.Until}, more...)
}

// DLQRestoreRequest asks to bring discarded messages of one DLQ back from
// its archive into the DLQ, by their ids.
type DLQRestoreRequest struct {
	// Queue is the queue or its DLQ; required, since ids are per queue.
	Queue string
	IDs   []int64
	// DryRun reports what would be restored and restores nothing.
	DryRun bool
}

// Check validates the request without the database.
func (r DLQRestoreRequest) Check() error {
	if strings.TrimSpace(r.Queue) == "" {
		return fieldf("queue", "is required: ids are per queue, so give the queue whose DLQ the messages were discarded from").
			with(hint(OpQueueStats, "lists the queues there are"))
	}
	if err := checkDeadQueueName(strings.TrimSpace(r.Queue)); err != nil {
		return err
	}
	list := hint(OpDLQDiscarded, "lists the discarded messages with their ids", "queue", r.Queue)
	switch {
	case len(r.IDs) == 0:
		return invalidf("no ids given: give the ids of the discarded messages to restore").with(list)
	case len(r.IDs) > MaxIDs:
		return invalidf("%d ids given; at most %d are restored per call: split the ids", len(r.IDs), MaxIDs).with(list)
	}
	var e *Error
	if _, err := checkIDs(r.IDs); errors.As(err, &e) {
		return e.with(list)
	}
	return nil
}

// DLQRestore is what a restore did, or in a dry run would do.
type DLQRestore struct {
	DryRun   bool   `json:"dry_run"`
	DLQ      string `json:"dlq" jsonschema_description:"The DLQ the messages came back to."`
	Restored int    `json:"restored" jsonschema_description:"Messages back in the DLQ, with their ids, payload, headers and failure history (in a dry run: that would be)."`
	NotFound int    `json:"not_found" jsonschema_description:"Ids not in the archive: never discarded, purged or deleted by the queue's dead retention, or restored already."`
	Refused  int    `json:"refused" jsonschema_description:"Ids in the archive that are not restored: originals of a retry with a corrected payload, which ran in their place."`
	// FirstError says, in words, the first id not restored.
	FirstError string      `json:"first_error,omitempty" jsonschema_description:"The first problem, in words."`
	Outcomes   []IDOutcome `json:"outcomes" jsonschema_description:"One per id, in the order given, but for outcomes_omitted."`
	// OutcomesOmitted counts the last ids left out of Outcomes so that the
	// result fits the response bound; the counts include them.
	OutcomesOmitted int    `json:"outcomes_omitted,omitempty" jsonschema_description:"Ids handled but not listed in outcomes, the last ones, so that the response stays under 16,000 characters; the counts include them."`
	Next            []Hint `json:"next" jsonschema_description:"What to do next."`
}

func (r DLQRestore) hintCount() int { return len(r.Next) }

// OK reports whether every id asked for was restored (or would be).
func (r DLQRestore) OK() bool { return r.NotFound == 0 && r.Refused == 0 }

// DLQRestore brings discarded messages back from their DLQ's archive,
// all in one transaction, each with the id, payload, headers and failure
// history it had: the undo of a discard, until a purge or the queue's
// dead retention deletes what it archived.
func (s *Service) DLQRestore(ctx context.Context, req DLQRestoreRequest) (out DLQRestore, err error) {
	effect := writesOnce
	if req.DryRun {
		effect = reads
	}
	ctx, end, err := s.enter(ctx, "DLQRestore", effect)
	if err != nil {
		return out, s.refusedByGate(ctx, OpDLQRestore, req.DryRun, req.Check, func() any { return restoreAuditArgs(req) }, err)
	}
	defer end()
	defer func() {
		if !req.DryRun || recordsDryRun(ctx) {
			s.record(ctx, OpDLQRestore, restoreAuditArgs(req), out, err)
		}
	}()
	// One transaction: a failed call restored nothing.
	defer s.explainWrite(ctx, &err, effect, deadNow(req.Queue), discardedNow(req.Queue)) // runs before the audit entry
	defer func() { trimMoved(s.opts.Bounds, &out, &out.Outcomes, &out.OutcomesOmitted) }()
	if err := s.checkWrite(OpDLQRestore); err != nil {
		return DLQRestore{}, err
	}
	if err := req.Check(); err != nil {
		return DLQRestore{}, err
	}
	req.Queue = strings.TrimSpace(req.Queue)
	ids, _ := checkIDs(req.IDs)
	rep, err := s.store.RestoreDead(ctx, req.Queue, ids, req.DryRun)
	if err != nil {
		return DLQRestore{}, req.explain(err)
	}
	return restoreResult(rep, req, ids), nil
}

// PreviewRestore is what DLQRestore would do with req now, as its dry run
// says it, but read without the locks a restore takes and recorded in no
// audit entry, on a read-only service too: for a front end that relays
// the restore to someone who may make it (a read-only server) and answers
// the dry run itself. Its result is a dry run's, whatever req.DryRun says.
func (s *Service) PreviewRestore(ctx context.Context, req DLQRestoreRequest) (out DLQRestore, err error) {
	ctx, end, err := s.enter(ctx, "PreviewRestore", reads)
	if err != nil {
		return out, err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	defer func() { trimMoved(s.opts.Bounds, &out, &out.Outcomes, &out.OutcomesOmitted) }()
	if err := req.Check(); err != nil {
		return DLQRestore{}, err
	}
	req.Queue, req.DryRun = strings.TrimSpace(req.Queue), true
	ids, _ := checkIDs(req.IDs)
	rep, err := s.store.PreviewRestore(ctx, req.Queue, ids)
	if err != nil {
		return DLQRestore{}, req.explain(err)
	}
	return restoreResult(rep, req, ids), nil
}

// explain is err, of a restore asking r, with its next steps.
func (r DLQRestoreRequest) explain(err error) error {
	switch {
	case errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid):
		return explain(err, append(levelRedo(err, r.onQueue), hint(OpQueueStats, "lists the queues there are"))...)
	case errors.Is(err, ErrChanged):
		// A purge or another restore took some of the rows first.
		return &Error{Msg: err.Error(), Err: err,
			Hints: []Hint{hint(OpDLQDiscarded, "lists what the archive holds now", "queue", r.Queue)}}
	}
	return err
}

// restoreResult is the outcome of every id, in the order given, and the
// next steps.
func restoreResult(rep store.RestoreReport, req DLQRestoreRequest, ids []int64) DLQRestore {
	out := DLQRestore{DryRun: rep.DryRun, DLQ: rep.DLQ, Outcomes: make([]IDOutcome, 0, len(ids)), Next: []Hint{}}
	restored := map[int64]bool{}
	for _, id := range rep.Restored {
		restored[id] = true
	}
	refused := map[int64]string{}
	for _, r := range rep.Refused {
		refused[r.MsgID] = r.Why
	}
	for _, id := range ids {
		o := restoreOutcome(id, rep.DLQ, restored[id], refused[id], rep.DryRun)
		switch o.Outcome {
		case OutcomeRestored, OutcomeWouldRestore:
			out.Restored++
		case OutcomeRefused:
			out.Refused++
		default:
			out.NotFound++
		}
		if o.Error != "" && out.FirstError == "" {
			out.FirstError = o.Error
		}
		out.Outcomes = append(out.Outcomes, o)
	}
	out.Next = restoreNext(out, req, ids)
	return out
}

func restoreOutcome(id int64, dlq string, restored bool, why string, dryRun bool) IDOutcome {
	o := IDOutcome{ID: id, DLQ: dlq}
	switch {
	case restored && dryRun:
		o.Outcome = OutcomeWouldRestore
	case restored:
		o.Outcome = OutcomeRestored
	case why == store.RestoreRetryOriginal:
		o.Outcome = OutcomeRefused
		o.Error = fmt.Sprintf("message %d in the archive of %s is the original of a retry with a corrected payload, which ran in its place: restoring it would run the job twice, so it stays in the archive", id, dlq)
	case why == store.RestoreInDLQ:
		o.Outcome = OutcomeNotFound
		o.Error = fmt.Sprintf("message %d is in %s already, not in its archive: restored already, or never discarded", id, dlq)
	default:
		o.Outcome = OutcomeNotFound
		o.Error = fmt.Sprintf("message %d is not in the archive of %s: purged, deleted by the queue's dead retention (30 days by default), or never discarded from it", id, dlq)
	}
	return o
}

func restoreNext(r DLQRestore, req DLQRestoreRequest, ids []int64) []Hint {
	var next []Hint
	switch {
	case r.DryRun && r.Restored > 0:
		// As after a retry's dry run by ids: only the ids that would be
		// restored, since the others would fail the real call again.
		why := "the same call, not as a dry run, restores them"
		if r.Restored < len(ids) {
			why = "the same call, for the ids that would be restored, not as a dry run, restores them"
		}
		next = append(next, hint(OpDLQRestore, why, "queue", req.Queue, "ids", wouldMove(ids, r.Outcomes, OutcomeWouldRestore)))
	case r.Restored > 0:
		next = append(next, hint(OpDLQList, "the restored messages are dead again, to retry or discard", "queue", req.Queue))
	}
	if r.NotFound+r.Refused > 0 {
		next = append(next, hint(OpDLQDiscarded, "lists the discarded messages there are", "queue", req.Queue))
	}
	return next
}

func restoreAuditArgs(r DLQRestoreRequest) map[string]any {
	return map[string]any{"queue": r.Queue, "ids": r.IDs, "dry_run": r.DryRun}
}
