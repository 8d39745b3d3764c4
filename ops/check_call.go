package ops

import (
	"context"
	"errors"
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
// meant, a queue without a DLQ, an expect no dry run gave, a corrected
// payload of another type than the stored one, a breaker opened by hand
// that a reset without EndOpeningByHand leaves open. The go-ahead of a
// purge or a discard by filter is not checked: a call not confirmed is
// relayed as a command that asks for it. A read that fails is no fault of
// the call's and is not reported: the call is taken as it is.
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
		check = s.checkMoveCall(ctx, OpDLQDiscard, r.IDs, r.Filter, r.Expect, r.DryRun, r.onQueue, r.redry)
	case DLQRestoreRequest:
		check = s.checkDeadQueue(ctx, r.Queue, r.onQueue, hint(OpQueueStats, "lists the queues there are"))
	case DLQPurgeRequest:
		check = s.checkDeadQueue(ctx, r.Queue, nil, hint(OpQueueStats, "lists the queues there are"))
	case QueueRequest:
		if op == OpQueuePause || op == OpQueueResume {
			check = s.refuseLevel(ctx, op, r.Queue)
		}
	case CircuitResetRequest:
		check = s.checkResetCall(ctx, r)
	}
	if errors.Is(check, ErrInvalid) || errors.Is(check, ErrNotFound) {
		return check
	}
	return nil
}

// checkRetryCall is CheckCall of a retry: as a move, and by one id with a
// corrected payload, the payload's type against the stored one's.
func (s *Service) checkRetryCall(ctx context.Context, r DLQRetryRequest) error {
	if err := s.checkMoveCall(ctx, OpDLQRetry, r.IDs, r.Filter, r.Expect, r.DryRun, r.onQueue, r.redry); err != nil || len(r.IDs) == 0 || len(r.Payload) == 0 {
		return err
	}
	ids, _ := checkIDs(r.IDs)
	loc, err := s.locate(ctx, r.Filter.Queue, ids, r.onQueue)
	if err != nil || len(loc.targets) != 1 {
		return err
	}
	return s.checkPayloadType(ctx, r, loc.targets[0].dlq, ids[0])
}

// checkMoveCall is CheckCall of a retry or discard: by ids, where they
// are; by filter, its times, its group, its expect and its queue, in the
// order the operation checks them. redo is the call on another queue
// (levelRedo), redry its dry run (the request's redry).
func (s *Service) checkMoveCall(ctx context.Context, op string, ids []int64, f DeadFilter, expect string, dryRun bool, redo func(queue string) Hint, redry func(why string) Hint) error {
	if len(ids) > 0 {
		ids, _ = checkIDs(ids)
		_, err := s.locate(ctx, f.Queue, ids, redo)
		return err
	}
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
	if err := CheckQueueName(queue); err != nil {
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

// checkResetCall is CheckCall of a reset: a breaker opened by hand, whose
// window is not over, is left open by a reset that does not end it.
func (s *Service) checkResetCall(ctx context.Context, r CircuitResetRequest) error {
	if r.EndOpeningByHand {
		return nil
	}
	bs, err := s.store.ListBreakers(ctx, r.Name)
	if err != nil {
		return nil
	}
	for _, b := range bs {
		if b.Name == r.Name && b.OpenedBy != "" && b.OpenUntil != nil && b.OpenUntil.After(s.now()) {
			return keptOpeningByHand(r, store.BreakerWas{State: b.State, OpenedBy: b.OpenedBy, OpenReason: b.OpenReason, OpenUntil: b.OpenUntil})
		}
	}
	return nil
}
