package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/store"
)

// DLQRetryRequest asks to move dead messages back to the queues they died
// in: either IDs (Filter.Queue may name their DLQ; nothing else of the
// filter may be set) or the messages Filter selects, oldest first, up to
// Limit.
type DLQRetryRequest struct {
	IDs    []int64
	Filter DeadFilter
	// Limit bounds a retry by filter: 1 to MaxBulkLimit, 0 for
	// DefaultBulkLimit. It must be 0 with IDs.
	Limit int
	// DryRun reports what would move and moves nothing.
	DryRun bool
	// Payload, with exactly one id, retries the message with this payload
	// instead of its own; the original stays in the DLQ's archive. A
	// payload that still holds Redacted (copied from a view and not fully
	// corrected) is refused, whichever front end sent it; so is one whose
	// JSON type (object, array, string, ...) differs from the stored
	// payload's, such as JSON quoted in a string: its job would fail on it
	// again (null is taken either way).
	Payload json.RawMessage
	// Progress, when set, is called with the messages done and expected.
	Progress func(done, total int)
	// Expect, with a filter, is the set of messages the call must move: the
	// Expect of its dry run, or ids separated by commas (with
	// Filter.Queue). The call moves exactly that set, in one transaction,
	// or nothing with ErrChanged when what the filter selects now differs.
	Expect string
	// All confirms that a request without ids and with an empty filter
	// means every dead message of every DLQ; without it such a request is
	// refused, since an empty selection is more often a caller's mistake.
	All bool
	// ClearDeadline removes the deadline (pgbus_deadline) of the messages
	// it moves, so that they run however late it is. Without it a message
	// whose deadline has passed is not moved, since a worker would
	// dead-letter it again without running it: it fails, saying so.
	ClearDeadline bool
	// Rate, when not 0, paces the retry: the messages moved become
	// visible to workers one after another, Rate a second (0.5: one every
	// 2 seconds), in the order they move, rather than all at once, so that
	// a downstream that just came back is not met with the whole DLQ and
	// messages sent meanwhile run between them. MinRetryRate to
	// MaxRetryRate.
	Rate float64
}

// The range of DLQRetryRequest.Rate, in messages a second: one a minute
// to 10,000 a second.
const (
	MinRetryRate = 1.0 / 60
	MaxRetryRate = 10_000
)

// checkRate checks a retry's rate and returns the gap between messages
// it makes: 0 for no rate.
func checkRate(rate float64) (time.Duration, error) {
	if rate == 0 {
		return 0, nil
	}
	if err := CheckGivenRate(rate); err != nil {
		return 0, err
	}
	return time.Duration(float64(time.Second) / rate), nil
}

// CheckGivenRate checks a rate a caller gave explicitly, for a front end
// that can tell one given from one left out: 0 given would never make a
// message visible, where DLQRetryRequest.Rate 0 means none, all at once.
func CheckGivenRate(rate float64) error {
	if !(rate >= MinRetryRate && rate <= MaxRetryRate) { // NaN too
		return fieldf("rate", "%v is out of range: give messages a second from 0.0167 (one a minute) to 10000, or leave it out to make the messages visible at once", rate)
	}
	return nil
}

// MaxPacedSpan bounds how long a paced retry may take to make its
// messages visible: a rate too low for its limit would hide them for
// months.
const MaxPacedSpan = 7 * 24 * time.Hour

// checkPacedSpan refuses a rate at which limit messages would take
// longer than MaxPacedSpan to become visible. A retry by ids (at most
// 100, one a minute at the least) never does.
func checkPacedSpan(rate float64, limit int) error {
	if rate == 0 || float64(limit)/rate <= MaxPacedSpan.Seconds() {
		return nil
	}
	least := math.Ceil(float64(limit)/MaxPacedSpan.Seconds()*1000) / 1000
	return fieldf("rate", "%v with limit %d would take %.0f days to make the messages visible, while a paced retry may take 7 days at most: give rate %v or more, or a lower limit",
		rate, limit, float64(limit)/rate/86400, least).naming("limit", "rate")
}

// RetriedMessage is one message moved out of a DLQ.
type RetriedMessage struct {
	DLQ      string `json:"dlq"`
	DLQMsgID int64  `json:"dlq_msg_id"`
	Queue    string `json:"queue" jsonschema_description:"Queue it went back to."`
	MsgID    int64  `json:"msg_id,omitempty" jsonschema_description:"Its new id there; absent in a dry run."`
}

// DLQRetry is what a retry did, or in a dry run would do.
type DLQRetry struct {
	DryRun       bool        `json:"dry_run"`
	Retried      int         `json:"retried" jsonschema_description:"Messages moved back (in a dry run: that would move)."`
	NotFound     int         `json:"not_found" jsonschema_description:"Ids in no DLQ (retried or discarded already)."`
	AlreadyMoved int         `json:"already_moved" jsonschema_description:"Messages (ids, or by filter those selected) another call retried or discarded while this one ran; by filter they do not count toward the limit."`
	Ambiguous    int         `json:"ambiguous" jsonschema_description:"Ids in several DLQs and not moved: give the queue."`
	Failed       int         `json:"failed" jsonschema_description:"Messages left in their DLQ by an error."`
	FirstError   string      `json:"first_error,omitempty" jsonschema_description:"The first problem, in words."`
	Outcomes     []IDOutcome `json:"outcomes,omitempty" jsonschema_description:"One per id, in the order given (retry by ids only), but for outcomes_omitted."`
	// OutcomesOmitted counts the last ids left out of Outcomes so that the
	// result fits the response bound; the counts include them.
	OutcomesOmitted int              `json:"outcomes_omitted,omitempty" jsonschema_description:"Ids handled but not listed in outcomes, the last ones, so that the response stays under 16,000 characters; the counts include them."`
	Moved           []RetriedMessage `json:"moved" jsonschema_description:"The first 100 messages moved."`
	MovedOmitted    int              `json:"moved_omitted,omitempty" jsonschema_description:"Messages moved but not listed in moved."`
	LimitReached    bool             `json:"limit_reached,omitempty" jsonschema_description:"A retry by filter stopped at its limit and more messages match: the same call again selects the next ones (absent when exactly the limit matched)."`
	Left            int64            `json:"left,omitempty" jsonschema_description:"With limit_reached: the dead messages the filters still select once the call ended (in a dry run: that it would leave), each next call of the same limit moving up to limit of them."`
	Expect          string           `json:"expect,omitempty" jsonschema_description:"On a dry run by filter: pass as expect to the real call, which then moves exactly these messages or nothing."`
	Next            []Hint           `json:"next" jsonschema_description:"What to do next."`
	// Workers is filled in after the retry, apart from the rest.
	Workers []QueueWorkers `json:"workers,omitempty" jsonschema_description:"Whether a running worker serves each queue the messages went back to (in a dry run: would go back to), those none serves first, but for workers_omitted; a retried message runs again only where one does."`
	// WorkersOmitted counts the last queues left out of Workers so that
	// the result fits the response bound.
	WorkersOmitted  int        `json:"workers_omitted,omitempty" jsonschema_description:"Queues the messages went back to but not listed in workers, the last ones (served ones go last), so that the response stays under 16,000 characters; notes says where to see them."`
	VisibleUntil    *time.Time `json:"visible_until,omitempty" jsonschema_description:"With rate: when the last message moved becomes visible to workers; until then they become visible one after another at that rate. In a dry run, when it would be were the call made now. Absent without rate."`
	DeadlinesPassed int        `json:"deadlines_passed,omitempty" jsonschema_description:"Messages not moved (counted in failed) because their deadline had passed: clear_deadline retries them without it."`
	// CameBack counts the messages moved (in a dry run: that would be)
	// that had been retried out of a DLQ before and died again.
	CameBack int      `json:"came_back,omitempty" jsonschema_description:"Of the messages moved (in a dry run: that would be), those that had been retried out of a DLQ before and died again: that retry did not fix their cause, so check this one does."`
	Notes    []string `json:"notes,omitempty" jsonschema_description:"What was left out of workers and next, and where to see it."`
	// Asks say how to see what notes say was left out, for each front
	// end to word (WordAsks).
	Asks []Ask `json:"-"`

	// queues are the queues the messages went back to, each once: all of
	// them, where Moved lists the first 100 messages.
	queues []string
	// gone are the queues, each once, that no longer exist for messages to
	// go back to, which kept them in their DLQ.
	gone []string
	// failCause is FailureCause's.
	failCause error
}

func (r DLQRetry) hintCount() int   { return len(r.Next) }
func (r DLQDiscard) hintCount() int { return len(r.Next) }

// OK reports whether every message asked for was retried (or would be).
// An id another call moved meanwhile was not: whether that call retried
// or discarded it is not known. A move by filter only moves what is
// there, and what another call took is not its to move.
func (r DLQRetry) OK() bool {
	return r.NotFound == 0 && r.Ambiguous == 0 && r.Failed == 0 && !r.idsMovedMeanwhile()
}

// DLQRetry moves dead messages back to the queue they died in (or to the
// DLQ's own queue when that one is gone), in batches, each batch in one
// transaction: one failing does not stop the rest. The result has an
// outcome for every id.
func (s *Service) DLQRetry(ctx context.Context, req DLQRetryRequest) (out DLQRetry, err error) {
	ctx, end, err := s.enter(ctx, "DLQRetry", bulkEffect(req.DryRun, req.Expect))
	if err != nil {
		return out, s.refusedByGate(ctx, OpDLQRetry, req.DryRun, req.Check, func() any { return retryAuditArgs(req) }, err)
	}
	defer end()
	ctx, auditDone := withAuditStart(ctx)
	defer auditDone() // after the audit entry
	defer func() {
		if !req.DryRun || recordsDryRun(ctx) {
			s.record(ctx, OpDLQRetry, retryAuditArgs(req), retryAuditResult(out), err)
		}
	}()
	defer s.explainWrite(ctx, &err, bulkEffect(req.DryRun, req.Expect), idsNow(req.IDs, req.Filter.Queue), queueNow(req.Filter.Queue)) // runs before the audit entry
	defer func() {
		// The queues' workers first: whether the messages will run at all
		// matters more than which ones moved.
		out.fitWorkers(s.opts.Bounds)
		trimMoved(s.opts.Bounds, &out, &out.Moved, &out.MovedOmitted)
		trimMoved(s.opts.Bounds, &out, &out.Outcomes, &out.OutcomesOmitted)
	}()
	defer func() { // before the audit entry: deferred calls run last first
		if err == nil {
			s.noteRetryWorkers(ctx, &out)
		}
	}()
	if err := s.checkWriteIn(ctx, OpDLQRetry); err != nil {
		return DLQRetry{}, err
	}
	if err := req.Check(); err != nil {
		return DLQRetry{}, err
	}
	pace, _ := checkRate(req.Rate)
	defer func() {
		if err == nil && req.DryRun && pace > 0 && out.Retried > 0 {
			// What the real call would take, were it made now.
			at := s.now().Add(time.Duration(out.Retried-1) * pace).UTC()
			out.VisibleUntil = &at
		}
	}()
	opts := store.RetryOptions{DryRun: req.DryRun, Payload: req.Payload, Progress: req.Progress, Trace: s.retryTrace, ClearDeadline: req.ClearDeadline, Pace: pace}
	if len(req.IDs) > 0 {
		return s.retryIDs(ctx, req, opts)
	}
	limit, _ := bulkLimit(req.Limit)
	now := s.now()
	f, err := req.Filter.resolve(now)
	if err != nil {
		return DLQRetry{}, err
	}
	if err := s.oneGroup(ctx, f, req.Filter); err != nil {
		return DLQRetry{}, err
	}
	if opts.Expect, err = s.expectToken(ctx, OpDLQRetry, req.Expect, req.DryRun, req.Filter.Queue, req.redry); err != nil {
		return DLQRetry{}, err
	}
	if !req.DryRun && opts.Expect == "" {
		// A guarded retry moves in one transaction: killed, it moved
		// nothing, and its one entry at the end is enough.
		s.startAudit(ctx, OpDLQRetry, retryAuditArgs(req))
	}
	// Under way once the database answered the retry: cut off after, it
	// says how far it went even when that is none, whether or not its
	// pending audit entry was written.
	underWay := false
	opts.Began = func() { underWay = true }
	rep, err := s.store.RetryDeadMatching(ctx, f, limit, opts)
	if err == nil && rep.Retried == 0 {
		// Nothing moved, every message refused for one cause (a privilege
		// the role lacks on their tables): that is the call's error, as
		// for a retry by ids, which says what to do about it.
		err = sharedFailure(&rep)
	}
	if store.IsDeadlinePassed(err) {
		again := req // a dry run first: this call was guarded by its expect
		again.DryRun = true
		return DLQRetry{}, explain(err, clearDeadlineHint(again, DLQRetry{}))
	}
	cut := err != nil && underWay && cutOff(err)
	if gone := store.QueueGoneOf(err); gone != "" && opts.Expect != "" && !req.DryRun {
		// A guarded retry moves its whole set or nothing: once the queue
		// is made again, the same call moves it, as the set is unchanged.
		return DLQRetry{}, explain(err, s.createAgainHint(ctx, gone, "creates queue "+gone+" again, so that its dead messages have somewhere to go back to"),
			req.Hint("the same call, once the queue is created again, moves exactly these messages or nothing"))
	}
	if store.IsOtherMoveExpect(err) {
		return DLQRetry{}, explain(err, req.ownDryRun().Hint("shows what this call selects now, with its own expect"))
	}
	if err != nil && (req.DryRun || rep.Retried == 0 && !cut) {
		return DLQRetry{}, explain(changed(err, req.redry), append(levelRedo(err, req.onQueue), hint(OpDLQSummary, "shows the groups there are"))...)
	}
	// Stopped partway (a cancellation, a lost connection), the messages
	// moved so far stay moved: the result and the error count them. Cut
	// off before the first, the error says that none moved and that
	// nothing was lost.
	again := req
	if rep.Retried > 0 {
		again.Expect = "" // which the messages moved no longer match
	}
	// The rest is the rest of what this call selected: the messages that
	// died since it began, those it retried that died again among them,
	// are not, or the same call would retry them a second time and leave
	// as many of its own behind.
	until := ""
	if rep.Retried > 0 || len(rep.Unsure) > 0 {
		// One that retried none is the same call again, retrying them.
		again.Filter = restFilter(req.Filter, now, rep.SelectedUntil)
		until = again.Filter.Until
	}
	err = partlyDoneOrNone(err, cut, "retrying", int64(rep.Retried), int64(limit), deadIDs(rep.Unsure), again.Hint(""))
	if pd := pinRest(err, until); pd != nil {
		if pace > 0 && rep.VisibleUntil.After(s.now()) {
			// The messages it moved still wait their turns: the rest
			// belongs after them, as after a paced call that reached
			// its limit.
			pd.VisibleUntil = rep.VisibleUntil
			pd.Again.Why = pd.Rest()
		}
	}
	out = retryResult(rep)
	if rep.Retried > 0 && (!req.DryRun || rep.DeadlinesPassed == 0) {
		// A dry run that would move nothing has no set to guard: a call
		// with its token would move nothing either. One that found
		// deadlines passed, not clearing them, gives no expect: the call
		// guarded by it would refuse the whole set for them. Its next
		// step, the dry run clearing them, gives one.
		out.Expect = rep.Token
	}
	out.LimitReached = rep.More
	steps := req
	steps.Filter = req.Filter.Pinned(now)
	if out.LimitReached {
		out.Left = s.leftAfter(ctx, steps.Filter, now, out.Retried, req.DryRun)
	}
	out.Next = s.retryNext(ctx, out, steps)
	var limited bool
	if out.FirstError, limited = explainFailure(out.FirstError, rep.Err(), s.store.User()); limited && !hasOp(out.Next, OpDLQRetry) {
		steps.Expect, steps.DryRun = "", false
		out.Next = append(out.Next, steps.Hint("the same call again retries the messages a privilege or setting of the role or database kept in their DLQ (first_error says which), once what held them back is gone"))
	}
	out.failCause = s.failureCause(ctx, &rep)
	return out, err
}

// PreviewRetry is what DLQRetry would do with req now, as its dry run
// says it (by filter, with the expect that guards the set it saw), but
// made on a read-only service too and recorded in no audit entry: for a
// front end that relays the retry to someone who may make it (a
// read-only server) and answers the dry run itself, as PreviewRestore
// does a restore's. Its result is a dry run's, whatever req.DryRun says.
func (s *Service) PreviewRetry(ctx context.Context, req DLQRetryRequest) (DLQRetry, error) {
	req.DryRun = true
	return s.DLQRetry(withPreview(ctx), req)
}

// failureCause is the refusal every message rep failed on shares
// (sharedFailure), explained as the call's own error would be; nil when
// there is none.
func (s *Service) failureCause(ctx context.Context, rep *store.RetryReport) error {
	cause := sharedFailure(rep)
	if cause != nil {
		s.explainDB(ctx, &cause, writesInSteps)
	}
	return cause
}

// FailureCause is the refusal every message r could not retry shares,
// explained as the call's error would be when it moved nothing (a
// privilege the role lacks, with the grants; a setting of the role or
// database), of its kind (ErrorKind); nil when none failed, or they
// failed for different reasons. A front end that makes an error of r's
// failures gives it that kind.
func (r DLQRetry) FailureCause() error { return r.failCause }

// errNothingSelected refuses a move by filter whose filter is empty (or
// blank) without All: a variable the caller meant to fill, left empty,
// must not select every dead message of every DLQ.
func errNothingSelected() *Error {
	return invalidf("nothing is selected: give ids or a filter (queue, kind, error_class, group, ...), or ask for every dead message of every DLQ explicitly").
		with(hint(OpDLQSummary, "shows the groups there are"))
}

// errExpectWithIDs refuses expect on a call by ids, which handles every id
// given and nothing else anyway.
var errExpectWithIDs = fieldf("expect", "applies to a call by filter; a call by ids handles exactly the ids given: drop expect").naming("expect")

// retryIDs is DLQRetry by ids, of a request checked already.
func (s *Service) retryIDs(ctx context.Context, req DLQRetryRequest, opts store.RetryOptions) (DLQRetry, error) {
	ids, _ := checkIDs(req.IDs)
	loc, err := s.locate(ctx, req.Filter.Queue, ids, req.onQueue)
	if err != nil {
		return DLQRetry{}, err
	}
	if len(req.Payload) > 0 && len(loc.targets) == 1 {
		if err := s.checkPayloadType(ctx, req, loc.targets[0].dlq, ids[0]); err != nil {
			return DLQRetry{}, err
		}
		opts.PayloadChecked = true // as the database reads it: a dry run does not again
	}
	rep := store.RetryReport{DryRun: req.DryRun, Moved: []store.RetriedMessage{}}
	var dbErr error // the database refused the work itself
	for _, t := range loc.targets {
		r, err := s.store.RetryDead(ctx, t.dlq, t.ids, opts)
		if r.Retried > 0 && !req.DryRun {
			stepDone(ctx)
		}
		if !r.VisibleUntil.IsZero() {
			// The next DLQ's messages take their turns after these.
			opts.PaceFrom = r.VisibleUntil.Add(opts.Pace)
		}
		if err != nil {
			s.dropIfGivenUp(ctx, err)
			unaccounted(&r, t, err)
		}
		if e := cmp.Or(err, r.Err()); dbErr == nil && e != nil && !errors.Is(e, ErrNotFound) && !errors.Is(e, ErrInvalid) {
			dbErr = e
		}
		rep.Merge(r)
	}
	if rep.Retried == 0 && dbErr != nil {
		// Nothing moved because the database refused (a missing privilege,
		// a lost connection): that is the call's error, not an outcome.
		return DLQRetry{}, dbErr
	}
	out := retryResult(rep)
	out.Failed, out.NotFound, out.AlreadyMoved, out.DeadlinesPassed = 0, 0, 0, 0 // counted per id below
	moved := map[int64]store.RetriedMessage{}
	for _, m := range rep.Moved {
		moved[m.DLQMsgID] = m
	}
	failed := map[int64]store.RetryFailure{}
	for _, f := range rep.Failures {
		failed[f.DLQMsgID] = f
	}
	outcome := OutcomeRetried
	if req.DryRun {
		outcome = OutcomeWouldRetry
	}
	out.Outcomes = make([]IDOutcome, 0, len(ids))
	for _, id := range ids {
		o, missed := loc.missed[id]
		switch m, ok := moved[id]; {
		case missed:
		case ok:
			o = IDOutcome{ID: id, Outcome: outcome, DLQ: m.DLQ, Queue: m.Queue, NewMsgID: m.MsgID}
		default:
			f := failed[id]
			o = IDOutcome{ID: id, Outcome: OutcomeFailed, DLQ: f.DLQ, Error: f.Error, deadlinePassed: f.DeadlinePassed}
			if e := rep.Err(); e != nil && f.Error == e.Error() {
				o.Error, _ = explainFailure(o.Error, e, s.store.User())
			}
			if f.NotFound {
				o = movedMeanwhile(id, f.DLQ)
			}
		}
		out.count(o)
		out.Outcomes = append(out.Outcomes, o)
	}
	out.FirstError, _ = explainFailure(out.FirstError, rep.Err(), s.store.User())
	out.Next = s.retryNext(ctx, out, req)
	if out.Failed > 0 {
		out.failCause = s.failureCause(ctx, &rep)
	}
	return out, nil
}

// unaccounted records err as the failure of every id of t that a retry
// neither moved nor failed on its own: the DLQ could not be read at all.
func unaccounted(r *store.RetryReport, t idTarget, err error) {
	seen := map[int64]bool{}
	for _, m := range r.Moved {
		seen[m.DLQMsgID] = true
	}
	for _, f := range r.Failures {
		seen[f.DLQMsgID] = true
	}
	gone := errors.Is(err, ErrNotFound)
	for _, id := range t.ids {
		if seen[id] {
			continue
		}
		if gone {
			r.Gone++
		} else {
			r.Failed++
		}
		r.Failures = append(r.Failures, store.RetryFailure{DLQ: t.dlq, DLQMsgID: id, Error: err.Error(), NotFound: gone})
	}
}

func (r *DLQRetry) count(o IDOutcome) {
	if o.deadlinePassed {
		r.DeadlinesPassed++
	}
	switch o.Outcome {
	case OutcomeAlreadyMoved:
		r.AlreadyMoved++
		return
	case OutcomeNotFound:
		r.NotFound++
	case OutcomeAmbiguous:
		r.Ambiguous++
	case OutcomeFailed:
		r.Failed++
	default:
		return
	}
	if r.FirstError == "" || r.Retried+r.Failed+r.NotFound+r.Ambiguous == 1 {
		r.FirstError = o.Error
	}
}

// checkByIDs checks a request by ids without the database and returns its
// ids without repeats.
func checkByIDs(f DeadFilter, limit int, ids []int64) ([]int64, error) {
	if !f.OnlyQueue() {
		return nil, invalidf("give either ids (with their queue at most) or a filter, not both: drop %s, or drop the ids", andList(f.given())).naming(f.given()...)
	}
	if limit != 0 {
		return nil, fieldf("limit", "applies to a filter; with ids every id given is handled: drop limit").naming("limit")
	}
	ids, err := checkIDs(ids)
	if err != nil {
		return nil, err
	}
	if q := strings.TrimSpace(f.Queue); q != "" {
		return ids, checkDeadQueueName(q)
	}
	return ids, nil
}

func retryResult(rep store.RetryReport) DLQRetry {
	// Selected, then gone before it could move: another call took it.
	out := DLQRetry{DryRun: rep.DryRun, Retried: rep.Retried, Failed: rep.Failed, AlreadyMoved: rep.Gone,
		DeadlinesPassed: rep.DeadlinesPassed, FirstError: rep.FirstError,
		Moved: make([]RetriedMessage, len(rep.Moved)), MovedOmitted: rep.MovedOmitted, queues: rep.Queues, CameBack: rep.CameBack}
	if !rep.VisibleUntil.IsZero() {
		at := rep.VisibleUntil.UTC()
		out.VisibleUntil = &at
	}
	for i, m := range rep.Moved {
		out.Moved[i] = RetriedMessage{DLQ: m.DLQ, DLQMsgID: m.DLQMsgID, Queue: m.Queue, MsgID: m.MsgID}
	}
	for _, f := range rep.Failures {
		if f.QueueGone != "" && !slices.Contains(out.gone, f.QueueGone) {
			out.gone = append(out.gone, f.QueueGone)
		}
	}
	return out
}

func (s *Service) retryNext(ctx context.Context, r DLQRetry, req DLQRetryRequest) []Hint {
	next := []Hint{}
	if r.DeadlinesPassed > 0 {
		// First: the call the rest would fail without (a guarded call by
		// this dry run's expect refuses the whole set).
		next = append(next, clearDeadlineHint(req, r))
	}
	creates := make([]Hint, 0, len(r.gone))
	for _, gone := range r.gone {
		creates = append(creates, s.createAgainHint(ctx, gone, "creates queue "+gone+" again, so that its dead messages have somewhere to go back to; then the same retry"))
	}
	if r.DryRun {
		// Before the real call, which a guarded call by this dry run's
		// expect refuses, moving nothing, while a queue of its set is gone.
		next, creates = append(next, creates...), nil
	}
	guarded := r.DryRun && r.Expect != "" && r.Retried > 0 && r.DeadlinesPassed == 0
	switch {
	case r.DryRun && len(req.IDs) == 0 && r.DeadlinesPassed > 0:
		// No expect, which the guarded call would refuse: the dry run
		// clearing deadlines, above, gives it.
	case guarded:
		why := "the same call, not as a dry run, with its expect token, moves exactly these messages or nothing"
		if len(r.gone) > 0 {
			which := "queue " + r.gone[0] + " is"
			if len(r.gone) > 1 {
				which = "queues " + strings.Join(r.gone, ", ") + " are"
			}
			why = "once " + which + " created again, as above (until then it is refused whole), " + why
		}
		next = append(next, hint(OpDLQRetry, why,
			req.Filter.moveArgs("limit", req.Limit, "expect", r.Expect, "clear_deadline", req.ClearDeadline, "rate", req.Rate)...))
	case r.DryRun && r.Retried > 0:
		next = append(next, dryRunIDsHint(req, r.Outcomes))
	case r.Retried > 0 && len(r.Moved) > 0:
		next = append(next, s.watchHints(ctx, r)...)
	}
	next = append(next, creates...)
	if r.NotFound+r.Failed > 0 {
		// With the call's filters, all of them: the queue alone, or none
		// for a call by group or kind, would list other messages too.
		next = append(next, hint(OpDLQList, "shows what is still dead", req.Filter.hintArgs()...))
	}
	dlqs, ambiguous := ambiguousByDLQ(r.Outcomes)
	for _, d := range dlqs {
		next = append(next, req.inDLQ(d, ambiguous[d]))
	}
	switch {
	case r.LimitReached && r.Retried > 0:
		h := againHint(OpDLQRetry, r.DryRun, req.Filter, req.Limit, r.Left)
		if req.Rate != 0 {
			// Called at once, the next call's messages would take turns
			// beside these: twice the rate until these are all visible.
			h.Args["rate"] = req.Rate
			h.Why += fmt.Sprintf(", at the same rate once this call's messages are all visible (%s); called before, the two share the queue's turns at twice the rate", visibleWhen(r))
		}
		if r.Failed > 0 {
			// They stay among the oldest the filters select, so the next
			// call spends part of its limit on them again.
			them := plural.Of(r.Failed, "it", "them")
			h.Why += fmt.Sprintf(", but first the %d that could not be moved, which %s tried again: retry %s %s, or discard %s, so that each call moves a whole limit", r.Failed, plural.Of(r.Failed, "is", "are"), them, r.howToRetryFailed(), them)
		}
		next = append(next, h)
	case r.LimitReached:
		them := plural.Of(r.Failed, "it", "them")
		// The selection is oldest first, and messages that cannot move
		// stay where they are: the same call would select them again.
		next = append(next, hint(OpDLQList, fmt.Sprintf("the %s the filters select could not be moved, so the same call again would select %s again: retry %s %s, discard %s, or narrow the filters (since) to leave %s out",
			plural.Of(r.Failed, "oldest message", fmt.Sprintf("%d oldest messages", r.Failed)), them, them, r.howToRetryFailed(), them, them),
			req.Filter.hintArgs()...))
	}
	return uniqueHints(next)
}

// Bounds of the queues a retry's steps to watch its messages name: a step
// each for the first watchNamed, then one step that names the next
// watchListed and counts the rest.
const (
	watchNamed  = 5
	watchListed = 10
)

// watchHints are the steps to watch the messages r moved run: one for
// each queue they went back to, the first watchNamed, in the order they
// went; then, of more queues, one that lists every queue and names the
// next watchListed of them, counting the others.
func (s *Service) watchHints(ctx context.Context, r DLQRetry) []Hint {
	queues, err := s.logicalQueues(ctx, r.queues)
	if err != nil || len(queues) == 0 {
		// The retry happened: its first message's queue, as its own
		// name says it, when the levels cannot be read.
		queues = []string{workQueueOf(r.Moved[0])}
	}
	const why = "watch the retried messages run; if they fail again they return to the DLQ"
	if len(queues) == 1 {
		return []Hint{hint(OpQueueMessages, why, "queue", queues[0])}
	}
	out := make([]Hint, 0, watchNamed+1)
	for i, q := range queues[:min(len(queues), watchNamed)] {
		out = append(out, hint(OpQueueMessages, fmt.Sprintf("watch the retried messages run in %s, queue %d of the %d they went back to; if they fail again they return to the DLQ", q, i+1, len(queues)), "queue", q))
	}
	if rest := queues[min(len(queues), watchNamed):]; len(rest) > 0 {
		names := slices.Clone(rest[:min(len(rest), watchListed)])
		if more := len(rest) - len(names); more > 0 {
			names = append(names, fmt.Sprintf("%d more", more))
		}
		out = append(out, hint(OpQueueStats, "the retried messages also went back to "+andList(names)+": lists every queue with its ready messages and dead letters"))
	}
	return out
}

// howToRetryFailed says how the messages r could not move are retried:
// as the steps before say, when there are steps for them (clearing a
// deadline that passed, creating a queue again), else once what failed
// them, which first_error names, is fixed.
func (r DLQRetry) howToRetryFailed() string {
	if r.DeadlinesPassed > 0 || len(r.gone) > 0 {
		return "as the hints above say"
	}
	return "once what failed them is fixed (first_error says what)"
}

// visibleWhen says when a paced retry's last message becomes visible: at
// visible_until, or in a dry run, once the real call's are.
func visibleWhen(r DLQRetry) string {
	if r.VisibleUntil == nil {
		return "the real call's visible_until says when"
	}
	return "at " + r.VisibleUntil.Format(time.RFC3339)
}

// theIDs names one id or several, for a next step's why.
func theIDs(n int) string {
	if n == 1 {
		return "the id"
	}
	return "the ids"
}

// inDLQ is r on ids of DLQ dlq alone: the step of ids that are in several
// DLQs.
func (r DLQRetryRequest) inDLQ(dlq string, ids []int64) Hint {
	r.IDs, r.Filter = ids, DeadFilter{Queue: dlq}
	return idsHint(r, "retry "+theIDs(len(ids))+" in "+dlq)
}

// inDLQ is r on ids of DLQ dlq alone: the step of ids that are in several
// DLQs.
func (r DLQDiscardRequest) inDLQ(dlq string, ids []int64) Hint {
	return hint(OpDLQDiscard, "discard "+theIDs(len(ids))+" in "+dlq, "queue", dlq, "ids", ids, "dry_run", r.DryRun)
}

// hintPayloadMax bounds a corrected payload a hint repeats: a larger one
// is left out, and the hint says to pass it again.
const hintPayloadMax = 2048

// dryRunIDsHint is the real call after a dry run by ids: the ids of
// outcomes that would move (the others would fail it again), the queue,
// and the corrected payload, without which the real call would retry the
// payload that failed.
func dryRunIDsHint(req DLQRetryRequest, outcomes []IDOutcome) Hint {
	req.DryRun = false
	moving := wouldMove(req.IDs, outcomes, OutcomeWouldRetry)
	why := "the same call, not as a dry run, moves them"
	if len(moving) < len(req.IDs) {
		why = "the same call, for the ids that would move, not as a dry run, moves them"
	}
	req.IDs = moving
	if len(req.Payload) > 0 {
		return idsHint(req, "the same call, not as a dry run, retries it with the corrected payload")
	}
	return idsHint(req, why)
}

// wouldMove is those of ids whose outcome in a dry run is would: the ids
// a real call moves, without those it would report not found, ambiguous
// or failed.
func wouldMove(ids []int64, outcomes []IDOutcome, would string) []int64 {
	ok := map[int64]bool{}
	for _, o := range outcomes {
		if o.Outcome == would {
			ok[o.ID] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return !ok[id] })
}

// idsHint is a retry by ids as req asks for it: its ids and queue, dry
// run, deadline clearing and corrected payload, as RepeatedPayload repeats
// it: one that is large or holds secrets only by a stand-in the retry
// refuses, since the hint is shown and recorded where secrets are not;
// the hint then says what to pass instead (that alone, when why is
// empty). Followed as it is, a hint never retries the payload that failed.
func idsHint(req DLQRetryRequest, why string) Hint {
	args := []any{"ids", req.IDs, "queue", req.Filter.Queue, "dry_run", req.DryRun, "clear_deadline", req.ClearDeadline, "rate", req.Rate}
	if len(req.Payload) > 0 {
		shown, again := RepeatedPayload(req.Payload)
		args = append(args, "payload", shown)
		if again != "" {
			why = strings.TrimPrefix(why+"; "+again, "; ")
		}
	}
	return hint(OpDLQRetry, why, args...)
}

// RepeatedPayload is the corrected payload of a retry by ids as the
// retry's next steps repeat it, shown, and what their why adds about it,
// again. A payload of at most 2 KB without secrets is itself, again
// empty. One that holds secrets is shown with them redacted, and one
// larger than that by a stand-in that says so: the retry refuses either
// as it is (a corrected payload holding Redacted or ShortenedMark), and
// again says to pass the payload whole, so that a next step followed
// without it never retries the payload that failed. A front end that can
// name where the payload came from (a file) may put that in place of a
// step's payload equal to shown, and take "; "+again out of its why.
func RepeatedPayload(payload json.RawMessage) (shown json.RawMessage, again string) {
	red, hidden, ok := RedactJSON(payload)
	switch {
	case ok && hidden == 0 && len(payload) <= hintPayloadMax:
		return payload, ""
	case ok && hidden > 0 && len(red) <= hintPayloadMax && checkNoRedactionMarker(red) != nil:
		return red, fmt.Sprintf("the payload here is the corrected one with its %s shown as %s, refused as it is: put the real %s back, or pass the corrected payload again",
			plural.Count(hidden, "secret value", "secret values"), Redacted, plural.Of(hidden, "one", "ones"))
	}
	b, _ := json.Marshal(fmt.Sprintf("%sthe corrected payload, %d bytes, too large to repeat]", ShortenedMark, len(payload)))
	return b, fmt.Sprintf("the payload here only stands for the corrected one (%d bytes, too large to repeat), refused as it is: pass the corrected payload again, whole", len(payload))
}

// clearDeadlineHint is the call that retries the messages a retry left
// because their deadlines had passed: the same, clearing the deadlines.
func clearDeadlineHint(req DLQRetryRequest, r DLQRetry) Hint {
	const why = "their deadline passed, so they were not moved; this clears it so that they run however late (or discard them)"
	if len(req.IDs) == 0 {
		why := "some deadlines passed, so the retry would leave those messages; this clears the deadline of every message it moves, passed or not (or discard those first)"
		if req.DryRun {
			why = "some deadlines passed, so the retry would leave those messages, and a call guarded by an expect refuses a set that holds any: this dry run clears the deadline of every message it would move, passed or not, and gives the expect that moves them all (or discard those first, then dry run again)"
		}
		return hint(OpDLQRetry, why, req.Filter.moveArgs("limit", req.Limit, "dry_run", req.DryRun, "clear_deadline", true, "rate", req.Rate)...)
	}
	var ids []int64
	for _, o := range r.Outcomes {
		if o.Outcome == OutcomeFailed && o.deadlinePassed {
			ids = append(ids, o.ID)
		}
	}
	again := req
	again.IDs, again.ClearDeadline = ids, true
	return idsHint(again, why) // with the corrected payload, which the retry would otherwise drop
}

// againHint is the next call of a retry or discard by filter that stopped
// at its limit with more messages matching: the same filter and limit
// select the messages left. After a dry run, the real call moves the first
// ones only.
func againHint(op string, dryRun bool, f DeadFilter, limit int, left int64) Hint {
	more := "more messages match"
	if left > 0 {
		more = plural.Count(left, "more message matches", "more messages match")
		if calls := (left + int64(max(limit, 1)) - 1) / int64(max(limit, 1)); calls > 1 {
			more += fmt.Sprintf(" (%d calls of this limit)", calls)
		}
	}
	why := "the limit was reached and " + more + ": the same call again moves the next ones"
	if dryRun {
		why = "the limit was reached and " + more + " besides: a real call moves at most the limit; call it again after that for the next ones"
	}
	return hint(op, why, f.moveArgs("limit", limit)...)
}

// leftAfter counts the dead messages f (pinned at now) selects once a
// retry or discard by f that reached its limit ended: in a dry run, which
// moved nothing, those beyond the moved it would move. It is 0 when they
// cannot be counted: the call was made, and only this count is missing.
func (s *Service) leftAfter(ctx context.Context, f DeadFilter, now time.Time, moved int, dryRun bool) int64 {
	sf, err := f.resolve(now)
	if err != nil {
		return 0
	}
	rows, err := s.store.CountDeadByClass(ctx, sf)
	if err != nil {
		return 0
	}
	var n int64
	for _, r := range rows {
		n += r.Count
	}
	if dryRun {
		n -= int64(moved)
	}
	return max(n, 0)
}

// DLQDiscardRequest asks to move dead messages to their DLQ's archive:
// IDs, or the messages Filter selects up to Limit, as for a retry. A
// discard by filter that is not a dry run needs a go-ahead: the person's
// yes to Ask when it is set, Confirm otherwise.
type DLQDiscardRequest struct {
	IDs      []int64
	Filter   DeadFilter
	Limit    int
	Progress func(done, total int)
	// DryRun reports what would be discarded and discards nothing.
	DryRun bool
	// Expect, with a filter, is the set of messages the call must move, as
	// for DLQRetryRequest.Expect.
	Expect string
	// Confirm is the caller's go-ahead for a discard by filter, used when
	// Ask is not set.
	Confirm bool
	// Ask, when set, asks the person behind the call instead of relying on
	// Confirm: a person's answer outranks an agent's flag.
	Ask Confirmer
	// Deferred, when set instead of Ask, asks the person over two calls
	// (see Deferred); Confirm is not relied on either.
	Deferred *Deferred
	// All confirms that a request without ids and with an empty filter
	// means every dead message of every DLQ, as for DLQRetryRequest.All.
	All bool
}

// DLQDiscard is what a discard did, or in a dry run would do.
type DLQDiscard struct {
	DryRun       bool        `json:"dry_run"`
	Discarded    int         `json:"discarded" jsonschema_description:"Messages moved to their DLQ's archive (in a dry run: that would move)."`
	NotFound     int         `json:"not_found" jsonschema_description:"Ids in no DLQ (retried or discarded already)."`
	AlreadyMoved int         `json:"already_moved" jsonschema_description:"Messages (ids, or by filter those selected) another call retried or discarded while this one ran; by filter they do not count toward the limit."`
	Ambiguous    int         `json:"ambiguous" jsonschema_description:"Ids in several DLQs and not moved: give the queue."`
	Failed       int         `json:"failed" jsonschema_description:"Ids left in their DLQ by an error."`
	FirstError   string      `json:"first_error,omitempty"`
	Outcomes     []IDOutcome `json:"outcomes,omitempty" jsonschema_description:"One per id, in the order given (discard by ids only), but for outcomes_omitted."`
	// OutcomesOmitted counts the last ids left out of Outcomes so that the
	// result fits the response bound; the counts include them.
	OutcomesOmitted int      `json:"outcomes_omitted,omitempty" jsonschema_description:"Ids handled but not listed in outcomes, the last ones, so that the response stays under 16,000 characters; the counts include them."`
	Moved           []DeadID `json:"moved,omitempty" jsonschema_description:"The first 100 messages discarded (in a dry run: that would be)."`
	MovedOmitted    int      `json:"moved_omitted,omitempty" jsonschema_description:"Messages discarded but not listed in moved."`
	LimitReached    bool     `json:"limit_reached,omitempty" jsonschema_description:"A discard by filter stopped at its limit and more messages match: the same call again selects the next ones (absent when exactly the limit matched)."`
	Left            int64    `json:"left,omitempty" jsonschema_description:"With limit_reached: the dead messages the filters still select once the call ended (in a dry run: that it would leave), each next call of the same limit moving up to limit of them."`
	Expect          string   `json:"expect,omitempty" jsonschema_description:"On a dry run by filter: pass as expect to the real call, which then discards exactly these messages or nothing."`
	Declined        bool     `json:"declined,omitempty" jsonschema_description:"The person asked to confirm declined or cancelled: nothing was discarded."`
	Next            []Hint   `json:"next" jsonschema_description:"What to do next."`
}

// OK reports whether every message asked for was discarded, as for
// DLQRetry.OK.
func (r DLQDiscard) OK() bool {
	return r.NotFound == 0 && r.Ambiguous == 0 && r.Failed == 0 && !r.idsMovedMeanwhile()
}

// DLQDiscard moves dead messages to their DLQ's archive, where they are
// kept until purged or their queue's dead retention deletes them; nothing
// runs again.
func (s *Service) DLQDiscard(ctx context.Context, req DLQDiscardRequest) (out DLQDiscard, err error) {
	ctx, end, err := s.enter(ctx, "DLQDiscard", bulkEffect(req.DryRun, req.Expect))
	if err != nil {
		return out, s.refusedByGate(ctx, OpDLQDiscard, req.DryRun, confirmed(req.Check, req.DryRun || len(req.IDs) > 0 || req.Confirm || req.Ask != nil || req.Deferred != nil), func() any { return discardAuditArgs(req) }, err)
	}
	defer end()
	ctx, auditDone := withAuditStart(ctx)
	defer auditDone() // after the audit entry
	defer func() {
		if (!req.DryRun || recordsDryRun(ctx)) && !isQuestion(err) {
			s.record(ctx, OpDLQDiscard, discardAuditArgs(req), discardAuditResult(out), err)
		}
	}()
	defer s.explainWrite(ctx, &err, bulkEffect(req.DryRun, req.Expect), idsNow(req.IDs, req.Filter.Queue), discardedNow(req.Filter.Queue)) // runs before the audit entry
	defer func() {
		trimMoved(s.opts.Bounds, &out, &out.Moved, &out.MovedOmitted)
		trimMoved(s.opts.Bounds, &out, &out.Outcomes, &out.OutcomesOmitted)
	}()
	if err := s.checkWriteIn(ctx, OpDLQDiscard); err != nil {
		return DLQDiscard{}, err
	}
	if err := req.Check(); err != nil {
		return DLQDiscard{}, err
	}
	if len(req.IDs) > 0 {
		return s.discardIDs(ctx, req)
	}
	limit, _ := bulkLimit(req.Limit)
	now := s.now()
	f, err := req.Filter.resolve(now)
	if err != nil {
		return DLQDiscard{}, err
	}
	if err := s.oneGroup(ctx, f, req.Filter); err != nil {
		return DLQDiscard{}, err
	}
	opts := store.DiscardOptions{DryRun: req.DryRun, Progress: req.Progress}
	if opts.Expect, err = s.expectToken(ctx, OpDLQDiscard, req.Expect, req.DryRun, req.Filter.Queue, req.redry); err != nil {
		return DLQDiscard{}, err
	}
	if !req.DryRun {
		declined, err := s.confirmDiscard(ctx, req, now, f, limit, &opts.Expect)
		if err != nil || declined {
			return DLQDiscard{Declined: declined, Next: []Hint{hint(OpDLQSummary, "shows what is left")}}, err
		}
	}
	if !req.DryRun && opts.Expect == "" {
		// Guarded (by expect, or by the set a person confirmed), it
		// moves in one transaction, as a guarded retry does.
		s.startAudit(ctx, OpDLQDiscard, discardAuditArgs(req))
	}
	rep, err := s.store.DiscardDeadSelected(ctx, f, limit, opts)
	if store.IsOtherMoveExpect(err) {
		return DLQDiscard{}, explain(err, req.ownDryRun().Hint("shows what this call selects now, with its own expect"))
	}
	if err != nil && rep.Discarded == 0 && len(rep.Unsure) == 0 {
		return DLQDiscard{}, explain(changed(err, req.redry), append(levelRedo(err, req.onQueue), hint(OpDLQSummary, "shows the groups there are"))...)
	}
	// Stopped partway, the messages discarded so far stay discarded: the
	// result and the error count them. The rest is the rest of what this
	// call selected, as for a retry: the messages that died since it
	// began, which nobody has looked at yet, are not.
	again := req
	again.Expect = ""
	again.Filter = restFilter(req.Filter, now, rep.SelectedUntil)
	steps := req
	steps.Filter = req.Filter.Pinned(now)
	err = partlyDone(err, "discarding", int64(rep.Discarded), int64(limit), deadIDs(rep.Unsure), again.Hint(""))
	pinRest(err, again.Filter.Until)
	var left int64
	if rep.More {
		left = s.leftAfter(ctx, steps.Filter, now, rep.Discarded, req.DryRun)
	}
	return discardResult(rep, steps, left), err
}

// PreviewDiscard is what DLQDiscard would do with req now, as its dry
// run says it, on a read-only service too and recorded in no audit entry,
// as PreviewRetry is a retry's. Its next step, the discard itself (by
// filter, guarded by the expect of the set it saw), is confirmed only
// when req is: whoever makes the discard confirms it. Its result is a dry
// run's, whatever req.DryRun says.
func (s *Service) PreviewDiscard(ctx context.Context, req DLQDiscardRequest) (DLQDiscard, error) {
	req.DryRun = true
	out, err := s.DLQDiscard(withPreview(ctx), req)
	if req.Confirm {
		return out, err
	}
	for i, h := range out.Next {
		if h.Op == OpDLQDiscard && h.Args["confirm"] == true {
			args := maps.Clone(h.Args)
			delete(args, "confirm")
			out.Next[i].Args = args
			out.Next[i].Why = unconfirmedDiscardWhy
		}
	}
	return out, err
}

// deadIDs are the store's ids of dead messages as this package's.
func deadIDs(ids []store.DeadID) []DeadID {
	out := make([]DeadID, len(ids))
	for i, id := range ids {
		out[i] = DeadID{DLQ: id.DLQ, MsgID: id.MsgID}
	}
	return out
}

func discardResult(rep store.DiscardReport, req DLQDiscardRequest, left int64) DLQDiscard {
	out := DLQDiscard{DryRun: rep.DryRun, Discarded: rep.Discarded, Moved: make([]DeadID, len(rep.Moved)),
		MovedOmitted: rep.MovedOmitted, Expect: rep.Token, LimitReached: rep.More, Left: left, AlreadyMoved: rep.Gone}
	for i, m := range rep.Moved {
		out.Moved[i] = DeadID{DLQ: m.DLQ, MsgID: m.MsgID}
	}
	if out.DryRun && out.Discarded > 0 {
		out.Next = append(out.Next, guardedDiscardHint(req, out.Expect))
	}
	out.Next = append(out.Next, hint(OpDLQSummary, "shows what is left"))
	out.Next = append(out.Next, undoDiscardHints(out, req.Filter)...)
	if out.LimitReached {
		h := againHint(OpDLQDiscard, out.DryRun, req.Filter, req.Limit, out.Left)
		if !out.DryRun && req.Confirm && req.Ask == nil && req.Deferred == nil {
			// A caller that confirms itself, as this one did: the call
			// that goes on is this one, confirmed as it was, where
			// without it the call would be refused and name it only then.
			h.Args["confirm"] = true
		}
		out.Next = append(out.Next, h)
	}
	out.Next = uniqueHints(out.Next)
	return out
}

// maxUndoHints bounds the DLQs a discard's next steps name to undo it.
const maxUndoHints = 3

// undoDiscardHints are the steps that undo a discard that moved messages:
// the list of the discarded messages of each DLQ it moved some from, in
// the order of moved, which a restore brings back until the archive is
// purged or the queue's dead retention deletes them; narrowed to the kind and error class the discard was, so that
// the list shows what it moved rather than older discards too.
func undoDiscardHints(out DLQDiscard, f DeadFilter) []Hint {
	if out.DryRun || out.Discarded == 0 {
		return nil
	}
	var hints []Hint
	seen := map[string]bool{}
	for _, m := range out.Moved {
		if seen[m.DLQ] || len(hints) == maxUndoHints {
			continue
		}
		seen[m.DLQ] = true
		hints = append(hints, hint(OpDLQDiscarded, "undoes it: lists the messages discarded from "+m.DLQ+", which a restore by id brings back until the archive is purged or the queue's dead retention (30 days by default) deletes them",
			"queue", baseQueue(m.DLQ), "kind", f.Kind, "error_class", f.ErrorClass))
	}
	return hints
}

// unconfirmedDiscardWhy is why of the step after a discard's dry run by
// filter for a caller who is asked to confirm, or confirms itself.
const unconfirmedDiscardWhy = "the same call, not as a dry run, with its expect token, discards exactly these messages or nothing"

// guardedDiscardHint is the step after a discard's dry run by filter: the
// same call with its expect. A caller that cannot ask its person (no Ask,
// no Deferred) must confirm as well, or the call is refused.
func guardedDiscardHint(req DLQDiscardRequest, expect string) Hint {
	args := req.Filter.moveArgs("limit", req.Limit, "expect", expect)
	why := unconfirmedDiscardWhy
	if req.Ask == nil && req.Deferred == nil {
		args = append(args, "confirm", true)
		why = "once these messages are checked, the same call, not as a dry run, with its expect token and confirmed, discards exactly them or nothing"
	}
	return hint(OpDLQDiscard, why, args...)
}

// discardIDs is DLQDiscard by ids, of a request checked already.
func (s *Service) discardIDs(ctx context.Context, req DLQDiscardRequest) (DLQDiscard, error) {
	ids, _ := checkIDs(req.IDs)
	loc, err := s.locate(ctx, req.Filter.Queue, ids, req.onQueue)
	if err != nil {
		return DLQDiscard{}, err
	}
	done := map[int64]string{}
	errs := map[int64]IDOutcome{}
	var dbErr error
	for _, t := range loc.targets {
		if req.DryRun {
			for _, id := range t.ids {
				done[id] = t.dlq // located just now: it would move
			}
			continue
		}
		moved, err := s.store.ArchiveMany(ctx, t.dlq, t.ids)
		if len(moved) > 0 {
			stepDone(ctx)
		}
		s.dropIfGivenUp(ctx, err)
		for _, id := range moved {
			done[id] = t.dlq
		}
		if err != nil {
			dbErr = cmp.Or(dbErr, err)
			for _, id := range t.ids {
				errs[id] = IDOutcome{ID: id, Outcome: OutcomeFailed, DLQ: t.dlq, Error: err.Error()}
			}
		}
	}
	if len(done) == 0 && dbErr != nil {
		// Nothing moved because the database refused: the call's error.
		return DLQDiscard{}, dbErr
	}
	out := DLQDiscard{DryRun: req.DryRun, Outcomes: make([]IDOutcome, 0, len(ids))}
	outcome := OutcomeDiscarded
	if req.DryRun {
		outcome = OutcomeWouldDiscard
	}
	for _, id := range ids {
		o, missed := loc.missed[id]
		switch dlq, ok := done[id]; {
		case missed:
		case ok:
			o = IDOutcome{ID: id, Outcome: outcome, DLQ: dlq}
		case errs[id].Outcome != "":
			o = errs[id]
		default:
			o = movedMeanwhile(id, loc.dlqOf[id])
		}
		switch o.Outcome {
		case OutcomeDiscarded, OutcomeWouldDiscard:
			out.Discarded++
			// Listed as a discard by filter lists them, so that a dry run
			// shows which ids it would discard.
			if len(out.Moved) < store.MaxRetryMoved {
				out.Moved = append(out.Moved, DeadID{DLQ: o.DLQ, MsgID: id})
			} else {
				out.MovedOmitted++
			}
		case OutcomeAlreadyMoved:
			out.AlreadyMoved++
		case OutcomeNotFound:
			out.NotFound++
		case OutcomeAmbiguous:
			out.Ambiguous++
		case OutcomeFailed:
			out.Failed++
		}
		if o.Error != "" && out.FirstError == "" {
			out.FirstError = o.Error
		}
		out.Outcomes = append(out.Outcomes, o)
	}
	out.Next = []Hint{}
	if req.DryRun && out.Discarded > 0 {
		// As after a retry's dry run by ids: the same ids, for real. A
		// discard by ids needs no confirm, since it names what it moves.
		out.Next = append(out.Next, hint(OpDLQDiscard, "the same call, for the ids that would move, not as a dry run, discards them",
			"ids", wouldMove(ids, out.Outcomes, OutcomeWouldDiscard), "queue", req.Filter.Queue))
	}
	// The same call in each DLQ of an ambiguous id comes first: it is
	// what the call was after.
	dlqs, ambiguous := ambiguousByDLQ(out.Outcomes)
	for _, d := range dlqs {
		out.Next = append(out.Next, req.inDLQ(d, ambiguous[d]))
	}
	out.Next = append(out.Next, hint(OpDLQSummary, "shows what is left"))
	out.Next = append(out.Next, undoDiscardHints(out, req.Filter)...)
	if out.NotFound+out.Failed > 0 {
		out.Next = append(out.Next, hint(OpDLQList, "shows what is still dead", "queue", req.Filter.Queue))
	}
	out.Next = uniqueHints(out.Next)
	return out, nil
}

// DLQPurgeRequest asks to delete for good the archived dead messages of
// one DLQ (Queue) or of every DLQ, archived more than OlderThan ago (0:
// all). A DLQ's archive holds the messages discarded from it and the
// originals of those retried with a corrected payload: both are kept, to
// be recovered, until purged or the queue's dead retention deletes them.
// Confirm must be set: a purge cannot be
// undone. DryRun counts what the purge would delete and deletes nothing,
// without Confirm.
type DLQPurgeRequest struct {
	Queue     string
	OlderThan time.Duration
	Confirm   bool
	DryRun    bool
	// Ask, when set, asks the person behind the call instead of relying on
	// Confirm, as for DLQDiscardRequest.
	Ask Confirmer
	// Deferred, when set instead of Ask, asks the person over two calls, as
	// for DLQDiscardRequest.
	Deferred *Deferred
	// Progress, when set, is called with the messages deleted and expected.
	Progress func(done, total int)
}

// DLQPurge is what a purge deleted.
type DLQPurge struct {
	DryRun    bool   `json:"dry_run,omitempty" jsonschema_description:"Nothing was deleted: purged counts what would be."`
	Purged    int64  `json:"purged" jsonschema_description:"Archived dead messages deleted for good (discarded ones, and originals kept when a message was retried with a corrected payload), with their failure history; in a dry run, that would be."`
	Queue     string `json:"queue,omitempty" jsonschema_description:"The queue purged; absent for every DLQ."`
	OlderThan string `json:"older_than" jsonschema_description:"The age used, written as older_than takes it (such as 30d, 72h or 90m; 0s for every archived dead message)."`
	Declined  bool   `json:"declined,omitempty" jsonschema_description:"The person asked to confirm declined or cancelled: nothing was purged."`
	// DiscardedBefore is the cutoff: messages archived (discarded, or kept
	// as the original of a corrected retry) at or before it were purged.
	// For a person asked, the time their question named. The name stays
	// for the callers that read it.
	DiscardedBefore time.Time `json:"discarded_before,omitzero" jsonschema_description:"The messages purged were archived (discarded, or kept as the original of a retry with a corrected payload) at or before this time (RFC 3339): now less older_than when the purge ran, or, when a person was asked, when they were asked."`
	// Next is, after a dry run that found messages to purge, the purge
	// that deletes them.
	Next []Hint `json:"next,omitempty" jsonschema_description:"What to do next."`
}

// DLQPurge deletes for good the archived dead messages (discarded, or
// originals of a retry with a corrected payload) older than an age. Both
// kinds are purged: the archive keeps them until purged (or until the
// queue's dead retention deletes them), and the note a corrected retry
// leaves in the history says so.
func (s *Service) DLQPurge(ctx context.Context, req DLQPurgeRequest) (out DLQPurge, err error) {
	effect := writesInSteps
	if req.DryRun {
		effect = reads
	}
	args := map[string]any{"queue": req.Queue, "older_than": FormatAge(req.OlderThan), "confirm": req.Confirm, "dry_run": req.DryRun, "asked": req.Ask != nil || req.Deferred != nil}
	ctx, end, err := s.enter(ctx, "DLQPurge", effect)
	if err != nil {
		return out, s.refusedByGate(ctx, OpDLQPurge, req.DryRun, confirmed(req.Check, req.DryRun || req.Confirm || req.Ask != nil || req.Deferred != nil), func() any { return args }, err)
	}
	defer end()
	ctx, auditDone := withAuditStart(ctx)
	defer auditDone() // after the audit entry
	defer func() {
		if (!req.DryRun || recordsDryRun(ctx)) && !isQuestion(err) {
			s.record(ctx, OpDLQPurge, args, out, err)
		}
	}()
	defer s.explainWrite(ctx, &err, effect, discardedNow(req.Queue)) // runs before the audit entry
	if err := s.checkWrite(OpDLQPurge); err != nil {
		return DLQPurge{}, err
	}
	if err := req.Check(); err != nil {
		return DLQPurge{}, err
	}
	if req.DryRun {
		return s.purgeDryRun(ctx, req)
	}
	where := "every DLQ"
	if req.Queue != "" {
		where = "the DLQ of " + baseQueue(req.Queue)
	}
	cutoff, declined, err := s.confirmPurge(ctx, req, where)
	if err != nil || declined {
		return DLQPurge{Queue: req.Queue, OlderThan: FormatAge(req.OlderThan), Declined: declined}, err
	}
	s.startAudit(ctx, OpDLQPurge, args)
	n, err := s.store.PurgeDeadBefore(ctx, req.Queue, cutoff, req.Progress)
	out = DLQPurge{Purged: n, Queue: req.Queue, OlderThan: FormatAge(req.OlderThan), DiscardedBefore: cutoff.UTC()}
	if err != nil && n == 0 {
		return DLQPurge{}, explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	// Stopped partway, what was deleted is gone: the result and the error
	// count it.
	return out, partlyDone(err, "purging", n, 0, nil, req.Hint(""))
}

// purgeDryRun counts the archived dead messages a purge would delete now.
func (s *Service) purgeDryRun(ctx context.Context, req DLQPurgeRequest) (DLQPurge, error) {
	cutoff, err := s.store.PurgeCutoff(ctx, req.OlderThan)
	if err != nil {
		return DLQPurge{}, err
	}
	n, err := s.store.CountPurgeable(ctx, req.Queue, cutoff)
	if err != nil {
		return DLQPurge{}, explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	out := DLQPurge{DryRun: true, Purged: n, Queue: req.Queue, OlderThan: FormatAge(req.OlderThan), DiscardedBefore: cutoff.UTC()}
	if n > 0 {
		req.DryRun, req.Confirm = false, true
		out.Next = []Hint{req.Hint("deletes them for good, with their failure history: only once the user agreed")}
	}
	return out, nil
}

// trimmed is f with every value stripped of surrounding blanks. A filter
// of blanks is taken for an empty one by the moves that refuse an empty
// filter: a blank queue or group selects every DLQ, a blank text nearly
// every message, and neither is what a caller asks for on purpose.
func trimmed(f DeadFilter) DeadFilter {
	for _, v := range []*string{&f.Queue, &f.Kind, &f.ErrorClass, &f.Reason, &f.Since, &f.Until, &f.Text, &f.Group} {
		*v = strings.TrimSpace(*v)
	}
	return f
}

// oneGroup refuses a move by a group's key that names a group in more than
// one DLQ. A key is made of the source queue, kind, error class and error
// pattern, so rows written by another client, which name no source queue,
// share it across DLQs; the key was copied from one of those groups, and
// moving the others too is not what was asked. A key no DLQ holds any
// more, or one given with the queue of another DLQ (groupScope), is
// refused too: the call would move nothing without saying why. given is
// the filter as the request gave it, for the next steps.
func (s *Service) oneGroup(ctx context.Context, f store.DeadFilter, given DeadFilter) error {
	if f.Queue != "" {
		gone, err := s.groupScope(ctx, f)
		if err != nil || !gone {
			return err
		}
		if s.store.CheckDeadQueue(ctx, f.Queue) != nil {
			// The queue's own refusal, which the call gives, says more.
			return nil
		}
		return groupGone(f.Group, given)
	}
	if f.Group == "" {
		return nil
	}
	sum, err := s.store.SummarizeDeadWith(ctx, f, store.SummaryOptions{})
	if err != nil {
		return explain(err, hint(OpDLQSummary, "shows the groups there are"))
	}
	if len(sum.Groups) == 0 {
		// Selected by nothing: held nowhere, or only by messages the
		// other filters leave out.
		if gone, err := s.groupScope(ctx, f); err != nil || gone {
			return cmp.Or(err, error(groupGone(f.Group, given)))
		}
		return nil
	}
	var dlqs []string
	for _, g := range sum.Groups {
		if !slices.Contains(dlqs, g.DLQ) {
			dlqs = append(dlqs, g.DLQ)
		}
	}
	if len(dlqs) < 2 {
		return nil
	}
	slices.Sort(dlqs)
	// Rows another client wrote may share a key across hundreds of DLQs:
	// a few are named, as for an id in several DLQs.
	named, more := dlqs[:min(len(dlqs), ambiguousNamed)], ""
	if len(dlqs) > len(named) {
		more = fmt.Sprintf(" and %d more", len(dlqs)-len(named))
	}
	e := invalidf("group %s names a group in each of %d DLQs (%s%s), and a move by group moves one: give queue as well, to say which",
		f.Group, len(dlqs), strings.Join(named, ", "), more).naming("queue")
	for _, d := range named {
		e.with(hint(OpDLQList, "lists the group's messages in "+d, "queue", d, "group", f.Group))
	}
	if more != "" {
		e.with(hint(OpDLQSummary, "lists the group of this key in each DLQ", "group", f.Group))
	}
	return e
}

// groupScope checks a filter by a group's key against the DLQs that hold
// a group of that key. It refuses one given with a queue whose DLQ does
// not hold that group while other DLQs do: the key was copied from a
// summary of another queue, and the call would select nothing without
// saying why. It reports a key no DLQ holds as gone. It reads the DLQs
// that hold the group from their group counts, in one statement
// (Store.DeadGroupHolders), rather than summarizing every DLQ.
func (s *Service) groupScope(ctx context.Context, f store.DeadFilter) (gone bool, err error) {
	if f.Group == "" {
		return false, nil
	}
	dlqs, err := s.store.DeadGroupHolders(ctx, f.Group)
	if err != nil {
		return false, explain(err, hint(OpDLQSummary, "shows the groups there are"))
	}
	if len(dlqs) == 0 {
		return true, nil
	}
	if f.Queue == "" {
		return false, nil
	}
	dlq := f.Queue
	if !strings.HasSuffix(dlq, store.DLQSuffix) {
		dlq = store.DLQName(dlq)
	}
	if slices.Contains(dlqs, dlq) {
		return false, nil
	}
	named := dlqs[:min(len(dlqs), ambiguousNamed)]
	e := fieldf("group", "%s is a group of %s, not of %s: set queue to that of its DLQ, or leave queue out",
		f.Group, strings.Join(named, ", "), dlq).naming("queue")
	for _, d := range named {
		e.with(hint(OpDLQList, "lists the group's messages in "+d, "queue", baseQueue(d), "group", f.Group))
	}
	return false, e
}

// groupGoneText says that no DLQ holds a group of key, and why a key
// once given out can go.
func groupGoneText(key string) string {
	return "no dead-letter group has key " + key + " any more: group keys change when an upgrade groups error texts differently, " +
		"and a group's key goes when its last message leaves its DLQ; list the groups to find it again"
}

// groupGoneHint is the next step after a key no DLQ holds: the summary
// of the call's other filters, which lists the groups with their keys.
func groupGoneHint(given DeadFilter) Hint {
	given.Group = ""
	return hint(OpDLQSummary, "lists the groups with their keys, to find the group again", given.hintArgs()...)
}

// groupGone refuses a retry or discard by a group's key no DLQ holds, as
// not found: a script that saved the key learns that it selects nothing
// any more, rather than that it moved none.
func groupGone(key string, given DeadFilter) *Error {
	return (&Error{Msg: groupGoneText(key), Err: ErrNotFound}).with(groupGoneHint(given))
}

func (r DLQRetry) idsMovedMeanwhile() bool   { return len(r.Outcomes) > 0 && r.AlreadyMoved > 0 }
func (r DLQDiscard) idsMovedMeanwhile() bool { return len(r.Outcomes) > 0 && r.AlreadyMoved > 0 }

// createAgainHint is the step that creates queue again as it was, with
// the priority levels pgbus still knows it had (its tables dropped outside
// pgbus, its register kept): created without them it is refused, as it
// exists in another layout.
func (s *Service) createAgainHint(ctx context.Context, queue, why string) Hint {
	levels := 0
	if physical, err := s.store.PhysicalQueues(ctx, queue); err == nil && len(physical) > 1 {
		levels = len(physical)
	}
	return hint(OpQueueCreate, why, "queue", queue, "priorities", levels)
}

// workQueueOf is the queue a retried message went back to as its workers
// know it: the queue whose priority level it went to (orders, not
// orders_p1, whose list shows one level only and is refused once the queue
// is dropped), the queue its DLQ belongs to.
func workQueueOf(m RetriedMessage) string {
	if base := baseQueue(m.DLQ); strings.HasPrefix(m.Queue, base+"_p") {
		return base
	}
	return baseQueue(m.Queue)
}
