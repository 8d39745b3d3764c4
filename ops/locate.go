package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pgbus/pgbus/store"
)

// Outcomes of one id of a retry, discard or restore.
const (
	OutcomeRetried      = "retried"
	OutcomeWouldRetry   = "would_retry"
	OutcomeDiscarded    = "discarded"
	OutcomeWouldDiscard = "would_discard"
	OutcomeRestored     = "restored"
	OutcomeWouldRestore = "would_restore"
	// OutcomeRefused: the id is in the archive but is not restored (the
	// original of a retry with a corrected payload).
	OutcomeRefused  = "refused"
	OutcomeNotFound = "not_found"
	// OutcomeAlreadyMoved: the id was in its DLQ when the call located it,
	// and another call retried or discarded it before this one could.
	OutcomeAlreadyMoved = "already_moved"
	OutcomeAmbiguous    = "ambiguous"
	OutcomeFailed       = "failed"
)

// IDOutcome is what became of one id of a retry, discard or restore by
// ids. Every front end reports the same outcome for the same id.
type IDOutcome struct {
	ID      int64  `json:"id"`
	Outcome string `json:"outcome" jsonschema:"enum=retried,enum=would_retry,enum=discarded,enum=would_discard,enum=restored,enum=would_restore,enum=refused,enum=not_found,enum=already_moved,enum=ambiguous,enum=failed"`
	// DLQ is the DLQ the message was in (retried, discarded, failed).
	DLQ string `json:"dlq,omitempty"`
	// Queue and NewMsgID are where a retried message went.
	Queue    string `json:"queue,omitempty" jsonschema_description:"Queue a retried message went back to."`
	NewMsgID int64  `json:"new_msg_id,omitempty" jsonschema_description:"Its new id there; absent in a dry run."`
	// DLQs are the DLQs holding an ambiguous id: pass one as queue.
	DLQs  []string `json:"dlqs,omitempty" jsonschema_description:"DLQs holding an ambiguous id: pass one of them as queue."`
	Error string   `json:"error,omitempty" jsonschema_description:"Why the id was not handled."`
	// deadlinePassed: failed because its deadline had passed.
	deadlinePassed bool
	// move is what the audit log says of a not-found id's leaving.
	move *store.DeadMove
}

// idTarget is the ids of one DLQ.
type idTarget struct {
	dlq string
	ids []int64
}

// located is where the ids of a call are: the ids found, grouped by DLQ in
// first-seen order, and the outcome of each id that is in no DLQ or in
// several.
type located struct {
	targets []idTarget
	missed  map[int64]IDOutcome
	dlqOf   map[int64]string // the DLQ of each id found
}

// locate finds the DLQ of every id in one query: within queue's DLQ when
// queue is given, else over every DLQ, where an id in several DLQs is
// ambiguous (ids are per queue). The queue's name is trimmed, as a
// filter's is: the same name works in a list and in a call by ids. redo
// is the call again on another queue: the next step of one refused for
// naming a priority level (levelRedo).
func (s *Service) locate(ctx context.Context, queue string, ids []int64, redo func(queue string) Hint) (located, error) {
	queue = strings.TrimSpace(queue)
	where, err := s.store.LocateDead(ctx, queue, ids)
	if err != nil {
		return located{}, explain(err, append(levelRedo(err, redo), hint(OpQueueStats, "lists the queues there are"))...)
	}
	out := located{missed: map[int64]IDOutcome{}, dlqOf: map[int64]string{}}
	index := map[string]int{}
	for _, id := range ids {
		dlqs := where[id]
		switch {
		case len(dlqs) == 0:
			out.missed[id] = IDOutcome{ID: id, Outcome: OutcomeNotFound, Error: notHeld(queue, id)}
		case len(dlqs) > 1:
			named, more := dlqs[:min(len(dlqs), ambiguousNamed)], ""
			if len(dlqs) > len(named) {
				more = fmt.Sprintf(" and %d more", len(dlqs)-len(named))
			}
			out.missed[id] = IDOutcome{ID: id, Outcome: OutcomeAmbiguous, DLQs: named,
				Error: fmt.Sprintf("id %d is in %d DLQs (%s%s); ids are per queue: give the queue to choose one", id, len(dlqs), strings.Join(named, ", "), more)}
		default:
			out.dlqOf[id] = dlqs[0]
			i, ok := index[dlqs[0]]
			if !ok {
				i = len(out.targets)
				index[dlqs[0]] = i
				out.targets = append(out.targets, idTarget{dlq: dlqs[0]})
			}
			out.targets[i].ids = append(out.targets[i].ids, id)
		}
	}
	s.whereTheyWent(ctx, queue, out, ids)
	return out, nil
}

// movesLookedUp bounds how many of a call's ids not found are looked up
// in the audit log.
const movesLookedUp = 10

// whereTheyWent says, in the outcome of each id not found (the first
// movesLookedUp), what the audit log records of its leaving: the retry or
// discard that took it, when, by whom, and where a retry put it. Someone
// who finds a message gone (a second tab, a second click, a colleague)
// learns what happened rather than what may have. The log is a help here,
// not a need: one that cannot be read leaves the outcome as it was.
func (s *Service) whereTheyWent(ctx context.Context, queue string, out located, ids []int64) {
	var missing []int64
	for _, id := range ids {
		if o, ok := out.missed[id]; ok && o.Outcome == OutcomeNotFound && len(missing) < movesLookedUp {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return
	}
	dlq := ""
	if queue != "" {
		dlq = dlqOf(queue)
	}
	moves, err := s.store.DeadMoves(ctx, dlq, missing, OpDLQRetry, OpDLQDiscard)
	if err != nil {
		if s.opts.Logger != nil {
			s.opts.Logger.Debug("pgbus: could not read the audit log for where dead messages went", "err", err)
		}
		return
	}
	for id, m := range moves {
		o := out.missed[id]
		o.Error, o.move = wentText(queue, id, m), &m
		out.missed[id] = o
	}
}

// wentText says that id is not in queue's DLQ, and where move took it.
func wentText(queue string, id int64, m store.DeadMove) string {
	by := fmt.Sprintf("at %s by %s (audit entry %d)", m.At.UTC().Format("2006-01-02 15:04:05 UTC"), clip(m.Client, 60), m.AuditID)
	switch {
	case m.Tool == OpDLQDiscard:
		return fmt.Sprintf("%s: it was discarded %s, into the archive of %s, from which a restore takes it back", notHeldHead(queue, id), by, m.DLQ)
	case m.MsgID > 0:
		return fmt.Sprintf("%s: it was retried %s, back into queue %s as message %d", notHeldHead(queue, id), by, m.Queue, m.MsgID)
	}
	return fmt.Sprintf("%s: it was retried %s, back into queue %s", notHeldHead(queue, id), by, m.Queue)
}

// ambiguousNamed is how many of the DLQs holding an ambiguous id are
// named, in its outcome and its next steps: an id is in every DLQ that
// has had as many dead messages, which may be hundreds, and a few are
// enough to show that queue is needed.
const ambiguousNamed = 10

// ambiguousByDLQ groups the ambiguous ids of outcomes by the DLQs named as
// holding them, in the order the DLQs first appear: one call per DLQ
// handles every id of the call that it holds.
func ambiguousByDLQ(outcomes []IDOutcome) (dlqs []string, ids map[string][]int64) {
	ids = map[string][]int64{}
	for _, o := range outcomes {
		if o.Outcome != OutcomeAmbiguous {
			continue
		}
		for _, d := range o.DLQs {
			if _, ok := ids[d]; !ok {
				dlqs = append(dlqs, d)
			}
			ids[d] = append(ids[d], o.ID)
		}
	}
	return dlqs[:min(len(dlqs), ambiguousNamed)], ids
}

func notHeld(queue string, id int64) string {
	return notHeldHead(queue, id) + "; it may have been retried or discarded already"
}

func notHeldHead(queue string, id int64) string {
	if queue == "" {
		return fmt.Sprintf("no DLQ holds message %d", id)
	}
	return fmt.Sprintf("queue %q has no DLQ message %d", baseQueue(queue), id)
}

// locateOne returns the DLQ of one message, or an error saying it is in
// none (not found) or in several (invalid: give the queue).
func (s *Service) locateOne(ctx context.Context, queue string, id int64, redo func(queue string) Hint) (string, error) {
	loc, err := s.locate(ctx, queue, []int64{id}, redo)
	if err != nil {
		return "", err
	}
	if len(loc.targets) == 1 {
		return loc.targets[0].dlq, nil
	}
	o := loc.missed[id]
	if o.Outcome == OutcomeAmbiguous {
		e := invalidf("%s", o.Error)
		for _, d := range o.DLQs {
			e.with(hint(OpDLQShow, "show it in "+d, "queue", d, "msg_id", id))
		}
		return "", e
	}
	return "", notFoundOne(o, queue)
}

// notFoundOne is the error of one id, of outcome o, that no DLQ of queue
// holds, with what the audit log says of its leaving as the next step: the
// restore of one discarded, the queue of one retried, else the list of
// what is still dead.
func notFoundOne(o IDOutcome, queue string) *Error {
	switch m := o.move; {
	case m != nil && m.Tool == OpDLQDiscard:
		return notFoundf("%s", o.Error).with(DLQRestoreRequest{Queue: m.DLQ, IDs: []int64{o.ID}, DryRun: true}.Hint("previews taking it back into its DLQ"))
	case m != nil:
		return notFoundf("%s", o.Error).with(hint(OpQueueMessages, "shows what its queue holds, the retried message among them until it runs", "queue", m.Queue))
	}
	return notFoundf("%s", o.Error).with(hint(OpDLQList, "lists what is still dead", "queue", baseQueue(queue)))
}

// dlqOf returns the DLQ name of a queue or DLQ name.
func dlqOf(name string) string {
	if strings.HasSuffix(name, store.DLQSuffix) {
		return name
	}
	return store.DLQName(name)
}

// movedMeanwhile is the outcome of an id that left its DLQ between being
// located and being handled: another call took it first.
func movedMeanwhile(id int64, dlq string) IDOutcome {
	return IDOutcome{ID: id, Outcome: OutcomeAlreadyMoved, DLQ: dlq,
		Error: fmt.Sprintf("message %d left %s while this call ran: another call retried or discarded it first", id, dlq)}
}

// levelRedo is the next step of a call refused for naming a priority
// level of a queue (orders_p1) as its queue, whose dead messages are in
// the DLQ of the queue it is a level of: redo, on that queue. It is none
// for any other error, or without redo.
func levelRedo(err error, redo func(queue string) Hint) []Hint {
	if lvl := (*store.LevelError)(nil); redo != nil && errors.As(err, &lvl) {
		return []Hint{redo(lvl.Queue)}
	}
	return nil
}

// onLevelWhy is the why of levelRedo's step on queue.
func onLevelWhy(queue string) string {
	return "the same call on queue " + queue + ", whose DLQ holds the dead messages of all its levels"
}

// onQueue is r again on queue: levelRedo's step for a retry.
func (r DLQRetryRequest) onQueue(queue string) Hint {
	r.Filter.Queue = queue
	return r.Hint(onLevelWhy(queue))
}

// onQueue is r again on queue: levelRedo's step for a discard.
func (r DLQDiscardRequest) onQueue(queue string) Hint {
	r.Filter.Queue = queue
	return r.Hint(onLevelWhy(queue))
}

// onQueue is r again on queue: levelRedo's step for a restore.
func (r DLQRestoreRequest) onQueue(queue string) Hint {
	r.Queue = queue
	return r.Hint(onLevelWhy(queue))
}
