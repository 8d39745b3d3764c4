package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pgbus/pgbus/store"
)

// CheckCall checks a write call of operation op, asking req, as the
// operation checks it before it writes, for a front end that does not
// make the call: a read-only server, which relays it as the command a
// person can run instead. A call no server could make is then refused as
// a writable server refuses it, with what to fix, rather than relayed as
// a command that fails. req is the request of op's operation
// (QueueRequest for a pause or a resume).
//
// It runs the request's Check, then what reads of the database tell, on
// a read-only service too: a priority level's name where its queue is
// meant, a queue, a queue's DLQ or a breaker that does not exist, an
// expect no dry run gave, a corrected payload of another type than the
// stored one, a breaker opened by hand that a reset without
// EndOpeningByHand leaves open. A call by ids is refused when none of
// them would move: each is in no DLQ (not found; in a restore, not in the
// archive) or in several (invalid, with the call in each of them as its
// next steps); with one that would, it passes whole, as its operation
// takes it, the others reported per id. The go-ahead of a purge or a
// discard by filter is not checked: a call not confirmed is relayed as a
// command that asks for it. A read that fails is no fault of the call's
// and is not reported: the call is taken as it is.
func (s *Service) CheckCall(ctx context.Context, op string, req any) error {
	var invalid error
	if c, ok := req.(interface{ Check() error }); ok {
		invalid = c.Check()
	}
	if s == nil || s.store == nil {
		return invalid
	}
	ctx, end, err := s.enter(ctx, "CheckCall", reads)
	if err != nil {
		return invalid
	}
	defer end()
	if invalid != nil {
		s.dlqGiven(ctx, invalid) // the steps that run, as the operation gives them
		return invalid
	}
	var check error
	switch r := req.(type) {
	case DLQRetryRequest:
		check = s.checkRetryCall(ctx, r)
	case DLQDiscardRequest:
		if len(r.IDs) > 0 {
			_, _, check = s.checkIDsCall(ctx, r.IDs, r.Filter.Queue, r.onQueue, r.inDLQ)
		} else {
			check = s.checkMoveCall(ctx, OpDLQDiscard, r.Filter, r.Expect, r.DryRun, r.onQueue, r.redry)
		}
	case DLQRestoreRequest:
		check = s.checkRestoreCall(ctx, r)
	case DLQPurgeRequest:
		check = s.checkDeadQueue(ctx, r.Queue, nil, hint(OpQueueStats, "lists the queues there are"))
	case QueueRequest:
		if op == OpQueuePause || op == OpQueueResume {
			check = s.checkPauseCall(ctx, op, r.Queue)
		}
	case QueueRunNowRequest:
		check = s.checkRunNowCall(ctx, r.Queue)
	case CircuitResetRequest:
		check = s.checkResetCall(ctx, r)
	case CircuitOpenRequest:
		check = s.checkBreaker(ctx, r.Name)
	}
	if errors.Is(check, ErrInvalid) || errors.Is(check, ErrNotFound) {
		return check
	}
	return nil
}

// checkRetryCall is CheckCall of a retry: as a move, and by one id with a
// corrected payload, the payload's type against the stored one's.
func (s *Service) checkRetryCall(ctx context.Context, r DLQRetryRequest) error {
	if len(r.IDs) == 0 {
		return s.checkMoveCall(ctx, OpDLQRetry, r.Filter, r.Expect, r.DryRun, r.onQueue, r.redry)
	}
	loc, ids, err := s.checkIDsCall(ctx, r.IDs, r.Filter.Queue, r.onQueue, r.inDLQ)
	if err != nil || len(r.Payload) == 0 || len(loc.targets) != 1 {
		return err
	}
	return s.checkPayloadType(ctx, r, loc.targets[0].dlq, ids[0])
}

// checkIDsCall is CheckCall of a retry or discard by ids, given in queue
// ("" for every DLQ): where they are, and a refusal when none of them
// would move, each id in no DLQ or in several, with inDLQ, the call on
// the ids of one DLQ, for each DLQ of those in several. redo is the call
// on another queue (levelRedo).
func (s *Service) checkIDsCall(ctx context.Context, given []int64, queue string, redo func(queue string) Hint, inDLQ func(dlq string, ids []int64) Hint) (located, []int64, error) {
	ids, _ := checkIDs(given)
	loc, err := s.locate(ctx, queue, ids, redo)
	if err != nil || len(loc.targets) > 0 || len(ids) == 0 {
		return loc, ids, err
	}
	outcomes := make([]IDOutcome, len(ids))
	var ambiguous *IDOutcome
	for i, id := range ids {
		outcomes[i] = loc.missed[id]
		if ambiguous == nil && outcomes[i].Outcome == OutcomeAmbiguous {
			ambiguous = &outcomes[i]
		}
	}
	if ambiguous == nil {
		if len(ids) == 1 {
			return loc, ids, notFoundOne(outcomes[0], queue)
		}
		return loc, ids, notFoundf("none of the %d ids given was found: %s", len(ids), outcomes[0].Error).
			with(hint(OpDLQList, "shows what is still dead", "queue", baseQueue(strings.TrimSpace(queue))))
	}
	e := invalidf("%s", ambiguous.Error)
	if len(ids) > 1 {
		e.Msg = fmt.Sprintf("none of the %d ids given is in one DLQ alone: %s", len(ids), e.Msg)
	}
	dlqs, in := ambiguousByDLQ(outcomes)
	for _, d := range dlqs {
		e.with(inDLQ(d, in[d]))
	}
	return loc, ids, e
}

// checkMoveCall is CheckCall of a retry or discard by filter: its times,
// its group, its expect and its queue, in the order the operation checks
// them. redo is the call on another queue (levelRedo), redry its dry run
// (the request's redry).
func (s *Service) checkMoveCall(ctx context.Context, op string, f DeadFilter, expect string, dryRun bool, redo func(queue string) Hint, redry func(why string) Hint) error {
	resolved, err := f.resolve(s.now())
	if err != nil {
		return err
	}
	if err := s.oneGroup(ctx, resolved, f); err != nil {
		return err
	}
	if _, _, err := readExpect(op, expect, dryRun, f.Queue, redry); err != nil {
		return err
	}
	return s.checkDeadQueue(ctx, f.Queue, redo, hint(OpDLQSummary, "shows the groups there are"))
}

// checkRestoreCall is CheckCall of a restore: the queue's DLQ, and a
// refusal when none of the ids would be restored, as the restore's
// outcomes say of each, with its next steps.
func (s *Service) checkRestoreCall(ctx context.Context, r DLQRestoreRequest) error {
	if err := s.checkDeadQueue(ctx, r.Queue, r.onQueue, hint(OpQueueStats, "lists the queues there are")); err != nil {
		return err
	}
	r.Queue = strings.TrimSpace(r.Queue)
	ids, _ := checkIDs(r.IDs)
	rep, err := s.store.PreviewRestore(ctx, r.Queue, ids)
	if err != nil {
		return nil // a read that failed: the restore's own error, if any, is the operator's
	}
	rep.DryRun = r.DryRun
	out := restoreResult(rep, r, ids)
	if out.Restored > 0 || len(out.Outcomes) == 0 {
		return nil
	}
	msg := out.FirstError
	if len(ids) > 1 {
		msg = fmt.Sprintf("none of the %d ids given would be restored: %s", len(ids), msg)
	}
	kind := ErrNotFound
	if out.Refused > 0 {
		kind = ErrInvalid
	}
	return &Error{Msg: msg, Err: kind, Hints: out.Next}
}

// CheckDeadQueue refuses queue, a queue (orders) or its DLQ (orders_dlq)
// whose dead messages a front end is to look into before any operation
// does (the investigation's prompt), as the operations on dead messages
// refuse it: a name no queue can have, a priority level's, or one of a
// queue without a DLQ, each with what to call instead. "" (every DLQ)
// passes. It only reads; a database that cannot answer is its error.
func (s *Service) CheckDeadQueue(ctx context.Context, queue string) (err error) {
	if queue = strings.TrimSpace(queue); queue == "" {
		return nil
	}
	if err := checkDeadQueueName(queue); err != nil {
		return err
	}
	ctx, end, err := s.enter(ctx, "CheckDeadQueue", reads)
	if err != nil {
		return err
	}
	defer end()
	defer s.explainDB(ctx, &err, reads)
	return s.checkDeadQueue(ctx, queue, func(base string) Hint {
		return hint(OpDLQSummary, "the dead messages of queue "+base+", whose DLQ holds those of all its levels", "queue", base)
	}, hint(OpQueueStats, "lists the queues there are"))
}

// checkDeadQueue refuses the name of a queue whose dead messages a call
// asks for, as its operation does: a priority level's, or one of a queue
// without a DLQ, with the steps of its operation: redo on the queue of a
// level (levelRedo), then next. "" (every DLQ) passes.
func (s *Service) checkDeadQueue(ctx context.Context, queue string, redo func(queue string) Hint, next Hint) error {
	if queue = strings.TrimSpace(queue); queue == "" {
		return nil
	}
	err := s.store.CheckDeadQueue(ctx, queue)
	return explain(err, append(levelRedo(err, redo), next)...)
}

// checkResetCall is CheckCall of a reset: the breaker, and one opened by
// hand, whose window is not over, is left open by a reset that does not
// end it.
func (s *Service) checkResetCall(ctx context.Context, r CircuitResetRequest) error {
	bs, err := s.store.ListBreakers(ctx, r.Name)
	if err != nil {
		return nil
	}
	for _, b := range bs {
		if b.Name != r.Name {
			continue
		}
		if !r.EndOpeningByHand && b.OpenedBy != "" && b.OpenUntil != nil && b.OpenUntil.After(s.now()) {
			return keptOpeningByHand(r, store.BreakerWas{State: b.State, OpenedBy: b.OpenedBy, OpenReason: b.OpenReason, OpenUntil: b.OpenUntil})
		}
		return nil
	}
	return breakerMissing(r.Name)
}

// checkBreaker is CheckCall of an opening of breaker name: that it exists.
func (s *Service) checkBreaker(ctx context.Context, name string) error {
	bs, err := s.store.ListBreakers(ctx, name)
	if err != nil {
		return nil
	}
	for _, b := range bs {
		if b.Name == name {
			return nil
		}
	}
	return breakerMissing(name)
}

// breakerMissing is the error of a call on breaker name, which does not
// exist, as a reset or an opening gives it.
func breakerMissing(name string) error {
	return explain(store.BreakerMissing(name), hint(OpCircuits, "lists the breakers"))
}

// checkPauseCall is CheckCall of a pause or resume (op) of queue: a
// priority level's name, then the queue, which a pause finds when pgbus
// created it and one of its levels' tables is there.
func (s *Service) checkPauseCall(ctx context.Context, op, queue string) error {
	if err := s.refuseLevel(ctx, op, queue); err != nil {
		return err
	}
	if _, err := s.store.QueueSettingsOf(ctx, queue); err != nil {
		return explain(err, hint(OpQueueStats, "lists the queues there are"))
	}
	levels, err := s.store.PhysicalQueues(ctx, queue)
	if err != nil {
		return nil
	}
	for _, l := range levels {
		if ok, err := s.store.QueueExists(ctx, l); err != nil || ok {
			return nil
		}
	}
	return notFoundf("queue %q does not exist", queue).with(hint(OpQueueStats, "lists the queues there are"))
}

// checkRunNowCall is CheckCall of a run-now of queue (or one of its
// levels): the tables of each of its levels, or the queue dropped, as the
// run-now refuses it.
func (s *Service) checkRunNowCall(ctx context.Context, queue string) error {
	levels, err := s.store.PhysicalQueues(ctx, queue)
	if err != nil {
		return nil
	}
	for _, l := range levels {
		ok, err := s.store.QueueExists(ctx, l)
		if err != nil || ok {
			continue
		}
		if dropped := s.droppedQueue(ctx, queue); dropped != nil {
			return dropped
		}
		return notFoundf("queue %q does not exist", l).with(hint(OpQueueStats, "lists the queues there are"))
	}
	return nil
}
