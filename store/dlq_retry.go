package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/grace"
)

func validateRetryPayload(p json.RawMessage, n int) error {
	switch {
	case len(p) == 0:
		return nil
	case n != 1:
		return invalidf("retry with a corrected payload: pass exactly one message id, not %d", n)
	case len(p) > MaxPayloadBytes:
		return invalidf("retry with a corrected payload: payload is %d bytes; at most %d are allowed", len(p), MaxPayloadBytes)
	case !json.Valid(p):
		return invalidf("retry with a corrected payload: payload is not valid JSON")
	case CheckJSONText(p) != "":
		return invalidf("retry with a corrected payload: payload cannot be stored: %s", CheckJSONText(p))
	}
	return nil
}

// correctedUnstorable is err, that of a statement writing corrected
// payload, as the caller's to change when PostgreSQL cannot store the
// payload (cannotStore); nil for any other error.
func correctedUnstorable(err error) error {
	if why, ok := cannotStore(err); ok {
		return invalidf("retry with a corrected payload: PostgreSQL cannot store the corrected payload: %s; make the number or value smaller, or give it as a string", why)
	}
	return nil
}

// CheckCorrectedPayload refuses, in RetryDead's words and without
// writing anything, a corrected payload for one message that RetryDead
// would refuse: one over MaxPayloadBytes, invalid JSON, text PostgreSQL
// cannot take, or a value it cannot store as jsonb (a number past what
// its numeric holds), which it asks the database. Nil for a payload it
// would take, or none.
func (s *Store) CheckCorrectedPayload(ctx context.Context, p json.RawMessage) error {
	if len(p) == 0 {
		return nil
	}
	if err := validateRetryPayload(p, 1); err != nil {
		return err
	}
	_, err := s.reads.Exec(ctx, `SELECT $1::text::jsonb IS NULL`, jsonbText(p))
	if e := correctedUnstorable(err); e != nil {
		return e
	}
	if err != nil {
		return fmt.Errorf("store: check the corrected payload: %w", err)
	}
	return nil
}

func newRetryReport(opts RetryOptions) RetryReport {
	return RetryReport{DryRun: opts.DryRun, Moved: []RetriedMessage{}}
}

// MaxRetryPace is the longest gap RetryOptions.Pace may ask for between
// two messages: with the most messages one call moves (MaxDeadBulk), the
// last one's time stays within what a time.Duration holds.
const MaxRetryPace = 24 * time.Hour

// checkPace refuses a negative pace, and one longer than MaxRetryPace.
func checkPace(opts RetryOptions) error {
	if opts.Pace < 0 || opts.Pace > MaxRetryPace {
		return invalidf("retry pace %s is out of range; give a gap between messages of at most %s, or 0 for all at once", opts.Pace, MaxRetryPace)
	}
	return nil
}

// pace gives each ref that is to move (its outcome without an error) its
// visibility time, Pace after the one before, counting on from the
// messages the call paced before; it does nothing without a pace or in a
// dry run. The first time is opts.PaceFrom, or the database's time.
func (s *Store) pace(ctx context.Context, refs []deadRef, moves func(i int) bool, opts RetryOptions, rep *RetryReport) error {
	if opts.Pace <= 0 || opts.DryRun {
		return nil
	}
	if rep.paced == 0 {
		rep.paceFrom = opts.PaceFrom
		if rep.paceFrom.IsZero() {
			if err := s.db.QueryRow(ctx, `SELECT now()`).Scan(&rep.paceFrom); err != nil {
				return fmt.Errorf("store: read the time to pace a retry from: %w", err)
			}
		}
	}
	for i := range refs {
		if moves(i) {
			refs[i].visibleAt = rep.paceFrom.Add(time.Duration(rep.paced) * opts.Pace)
			rep.paced++
		}
	}
	return nil
}

// RetryDead moves dead messages of dlq (a DLQ name, or its queue's) back to
// the queue they died in, or to the DLQ's base queue when that one is gone,
// in batches, each batch in one transaction (retryParallel): one message
// failing does not stop the rest, since it is then moved on its own and
// the others of its batch again, but for a move given up at its statement
// bound (WithStatementTimeout),
// which would be the fate of every message left: the call stops there and
// returns that error, the messages moved before staying moved.
// A retried message loses its dead-letter block and carries
// pgbus_dlq_retries, the number of its trips out of a DLQ; its failure
// history goes with it. With one id, a failure is also returned as the error
// (ErrNotFound when the message is gone).
func (s *Store) RetryDead(ctx context.Context, dlq string, ids []int64, opts RetryOptions) (RetryReport, error) {
	rep := newRetryReport(opts)
	if err := checkPace(opts); err != nil {
		return rep, err
	}
	name, err := s.resolveDLQ(ctx, dlq)
	if err != nil {
		return rep, err
	}
	if err := validateIDs("retry from", name, ids); err != nil {
		return rep, err
	}
	ids = deadUniqueIDs(ids)
	if err := validateRetryPayload(opts.Payload, len(ids)); err != nil {
		return rep, err
	}
	if opts.DryRun && !opts.PayloadChecked {
		// The retry's statement would refuse a value the database cannot
		// store; a dry run says so without it.
		if err := s.CheckCorrectedPayload(ctx, opts.Payload); err != nil {
			return rep, err
		}
	}
	for start := 0; start < len(ids); start += deadBatch {
		chunk := ids[start:min(start+deadBatch, len(ids))]
		if err := s.retryChunk(ctx, name, chunk, opts, &rep); err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			opts.Progress(start+len(chunk), len(ids))
		}
	}
	if len(ids) == 1 {
		return rep, cmp.Or(rep.firstErr, rep.goneErr)
	}
	return rep, nil
}

func (s *Store) retryChunk(ctx context.Context, dlq string, ids []int64, opts RetryOptions, rep *RetryReport) error {
	refs, err := s.deadRefsByID(ctx, dlq, ids)
	if err != nil {
		return err
	}
	found := make(map[int64]bool, len(refs))
	for _, r := range refs {
		found[r.id] = true
	}
	for _, id := range ids {
		if !found[id] {
			rep.missing(dlq, id)
		}
	}
	return s.retryRefs(ctx, refs, opts, rep)
}

// RetryDeadMatching retries, as RetryDead does, up to limit dead messages
// that f selects, oldest first, in batches. limit is 1 to MaxDeadBulk.
// Messages that die again while it runs are not retried a second time.
func (s *Store) RetryDeadMatching(ctx context.Context, f DeadFilter, limit int, opts RetryOptions) (RetryReport, error) {
	rep := newRetryReport(opts)
	if err := validateDeadBulk("retry", f, limit); err != nil {
		return rep, err
	}
	if err := checkPace(opts); err != nil {
		return rep, err
	}
	if len(opts.Payload) > 0 {
		return rep, invalidf("retry matching: a corrected payload applies to one message; pass its id instead of a filter")
	}
	f, err := s.deadFrozen(ctx, f)
	if err != nil {
		return rep, err
	}
	rep.SelectedUntil = f.Until
	if opts.Began != nil {
		opts.Began()
	}
	if opts.Expect != "" && !opts.DryRun {
		return rep, s.retryGuarded(ctx, f, limit, opts, &rep)
	}
	total, err := s.countDead(ctx, f, limit)
	if err != nil {
		return rep, err
	}
	var selected []DeadID // for a dry run's token
	rep.More, err = s.eachDeadPage(ctx, f, limit, func(refs []deadRef, done int) (int, error) {
		goneBefore := rep.Gone
		if err := s.retryRefs(ctx, refs, opts, &rep); err != nil {
			return 0, err
		}
		if refusesEvery(rep.firstErr) {
			return 0, rep.firstErr // every other message would be refused alike
		}
		if opts.DryRun {
			selected = append(selected, deadIDsOf(refs)...)
		}
		gone := rep.Gone - goneBefore
		if opts.Progress != nil {
			opts.Progress(done-gone, max(total, done-gone))
		}
		return gone, nil
	})
	if err == nil && opts.DryRun {
		rep.Token, err = s.deadSetToken(ctx, DeadSetRetry, selected)
	}
	return rep, err
}

// retryGuarded retries the messages f selects only if they are the set
// opts.Expect names, all in one transaction: every one moves, or none.
func (s *Store) retryGuarded(ctx context.Context, f DeadFilter, limit int, opts RetryOptions, rep *RetryReport) error {
	refs, more, err := s.selectDead(ctx, f, limit)
	if err != nil {
		return err
	}
	places, err := s.retryCandidates(ctx, refs)
	if err != nil {
		return err
	}
	moved := make([]RetriedMessage, len(refs))
	for i, r := range refs {
		if moved[i].Queue = deadRetryTarget(r, places); moved[i].Queue == "" {
			return fmt.Errorf("message %d in %s: %w; nothing was moved", r.id, r.dlq, noRetryTargetErr(r, places))
		}
		if err := s.deadlineCheck(r, opts); err != nil {
			return fmt.Errorf("message %d in %s: %w; nothing was moved", r.id, r.dlq, err)
		}
	}
	if err := s.pace(ctx, refs, func(int) bool { return true }, opts, rep); err != nil {
		return err
	}
	dones := make([]func(string, int64, error), 0, len(refs))
	targets := make([]string, len(refs))
	for i := range refs {
		targets[i] = moved[i].Queue
	}
	err = s.guarded(ctx, DeadSetRetry, refs, opts.Expect, func(ctx context.Context, tx pgx.Tx) error {
		// Every key's lock at once, in the order a batch of moves or of
		// keyed sends takes them, so that none of them deadlocks with it.
		if sql, args := lockDeadKeysSQL(refs, targets); sql != "" {
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				return fmt.Errorf("store: lock the idempotency keys of the dead messages to retry: %w", err)
			}
		}
		for i, r := range refs {
			tc, done, err := deadRetryTrace(ctx, tx, r, opts)
			if err != nil {
				return err
			}
			if done != nil {
				dones = append(dones, done)
			}
			newID, err := deadRetryOne(ctx, tx, r, moved[i].Queue, nil, tc, opts.ClearDeadline, true)
			if err != nil {
				return err
			}
			moved[i] = RetriedMessage{DLQ: r.dlq, DLQMsgID: r.id, Queue: moved[i].Queue, MsgID: newID}
		}
		return paceFromCommit(ctx, tx, refs, moved, opts)
	})
	for i, done := range dones { // after the commit, or the rollback
		done(moved[i].Queue, moved[i].MsgID, err)
	}
	if err != nil {
		return err
	}
	for i, m := range moved {
		rep.movedRef(refs[i], m)
	}
	rep.More = more
	if opts.Progress != nil {
		opts.Progress(len(refs), len(refs))
	}
	return nil
}

// paceFromCommit starts the pace of a guarded retry no earlier than the
// end of its moves. Its messages, moved in one transaction, are visible
// to none before it commits: paced from a time that passed while it
// moved them (a large set, a lock waited for), every message whose turn
// came meanwhile would become visible at once at the commit, the burst
// the pace is there to spare a downstream that just came back. It shifts
// them all, still Pace apart, so that the first turn is now, just before
// the commit, and refs' visibility times with them, which the report
// gives.
func paceFromCommit(ctx context.Context, tx pgx.Tx, refs []deadRef, moved []RetriedMessage, opts RetryOptions) error {
	if opts.Pace <= 0 || opts.DryRun || len(refs) == 0 || refs[0].visibleAt.IsZero() {
		return nil
	}
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return fmt.Errorf("store: read the time to pace a retry from: %w", err)
	}
	shift := now.Sub(refs[0].visibleAt).Truncate(time.Microsecond)
	if shift <= 0 {
		return nil
	}
	byQueue := map[string][]int64{}
	for _, m := range moved {
		byQueue[m.Queue] = append(byQueue[m.Queue], m.MsgID)
	}
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		if _, err := tx.Exec(ctx, `UPDATE `+queueTable(q)+` SET vt = vt + $1::bigint * interval '1 microsecond' WHERE msg_id = ANY($2::bigint[])`, shift.Microseconds(), byQueue[q]); err != nil {
			return fmt.Errorf("store: pace the retried messages of %s from the retry's commit: %w", q, err)
		}
	}
	for i := range refs {
		refs[i].visibleAt = refs[i].visibleAt.Add(shift)
	}
	return nil
}

// deadlineCheck refuses to move a message whose deadline has passed, unless
// opts clears it: a worker would dead-letter it again at once. It judges
// the deadline on the database server's clock (Now), as workers do, not
// on this host's.
func (s *Store) deadlineCheck(r deadRef, opts RetryOptions) error {
	if opts.ClearDeadline {
		return nil
	}
	now := s.Now()
	if at, passed := r.deadlinePassed(now); passed {
		return deadlinePassed{invalidf("its deadline (%s %s) passed %s ago, so a worker would dead-letter it again without running it: retry it with its deadline cleared to run it anyway, or discard it",
			HeaderDeadline, r.deadline, sinceWords(now.Sub(at)))}
	}
	return nil
}

// sinceWords writes how long ago something passed as a person reads it:
// to the second within two days (1h5m30s), beyond in days and hours
// (2532d4h), not in thousands of hours.
func sinceWords(d time.Duration) string {
	const day = 24 * time.Hour
	if d < 2*day {
		s := d.Round(time.Second).String()
		if t, ok := strings.CutSuffix(s, "m0s"); ok {
			s = t + "m"
		}
		if t, ok := strings.CutSuffix(s, "h0m"); ok {
			s = t + "h"
		}
		return s
	}
	days, hours := d/day, (d%day)/time.Hour
	if hours == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, hours)
}

func noRetryTargetErr(r deadRef, p retryPlaces) error {
	base, home := deadBaseOf(r.dlq), p.home(r.dlq)
	gone := fmt.Sprintf("queue %q no longer exists", base)
	again := "create the queue again"
	if home != base {
		gone = fmt.Sprintf("priority level %q of queue %q, which takes the messages that name no level of it, no longer exists", home, base)
		again = fmt.Sprintf("create queue %s again with its %d priority levels, which makes the missing ones", base, p.levels[base])
	}
	if r.source != "" && r.source != base && r.source != home {
		gone += fmt.Sprintf(", nor does the queue it died in (%q)", r.source)
	}
	return queueGone{notFoundf("%s; %s, then retry", gone, again), base}
}

// queueGone is the error of a dead message whose queue, to go back to, no
// longer exists.
type queueGone struct {
	err   error
	queue string
}

func (e queueGone) Error() string { return e.err.Error() }
func (e queueGone) Unwrap() error { return e.err }

// goneQueue returns the queue whose absence err says kept a dead message
// from going back, or "".
func goneQueue(err error) string { return QueueGoneOf(err) }

// QueueGoneOf returns the queue that no longer exists for a dead message
// to go back to, when that is why err refused a retry (as a guarded one,
// which then moved nothing); "" otherwise.
func QueueGoneOf(err error) string {
	var g queueGone
	if errors.As(err, &g) {
		return g.queue
	}
	return ""
}

// deadRetryOutcome is what became of one message of a batch.
type deadRetryOutcome struct {
	target string
	newID  int64
	err    error
	// unsure: the move was sent, and whether it committed is not known
	// (OutcomeUnknown).
	unsure bool
}

// retryRefs retries messages known to have been in their DLQ a moment ago
// and adds the outcomes to rep in the order of refs. It stops early only
// when ctx ends.
func (s *Store) retryRefs(ctx context.Context, refs []deadRef, opts RetryOptions, rep *RetryReport) error {
	places, err := s.retryCandidates(ctx, refs)
	if err != nil {
		return err
	}
	out := make([]deadRetryOutcome, len(refs))
	for i, r := range refs {
		if out[i].target = deadRetryTarget(r, places); out[i].target == "" {
			out[i].err = noRetryTargetErr(r, places)
		} else {
			out[i].err = s.deadlineCheck(r, opts)
		}
	}
	if err := s.pace(ctx, refs, func(i int) bool { return out[i].err == nil }, opts, rep); err != nil {
		return err
	}
	if !opts.DryRun {
		gaveUp := s.retryParallel(ctx, refs, out, places, opts)
		s.notifyMoved(ctx, out)
		err := ctx.Err()
		if err == nil {
			err = gaveUp
		}
		if err != nil && (gaveUp != nil || slices.ContainsFunc(out, untried)) {
			// Stopped partway: the messages that moved before stay moved,
			// and the report counts them; the rest were not tried, but for
			// a move the cancellation, the bound or the lost database cut
			// off, whose commit is not known: the report lists those as
			// unsure. A cancellation that came as the last moves
			// finished stopped nothing: every outcome is known, and
			// reported as usual.
			for i, r := range refs {
				switch {
				case out[i].err == nil && out[i].newID != 0:
					rep.movedRef(r, RetriedMessage{DLQ: r.dlq, DLQMsgID: r.id, Queue: out[i].target, MsgID: out[i].newID})
				case out[i].unsure:
					rep.Unsure = append(rep.Unsure, DeadID{DLQ: r.dlq, MsgID: r.id})
				}
			}
			return err
		}
	}
	for i, r := range refs {
		if out[i].err != nil {
			rep.fail(r.dlq, r.id, out[i].err)
			continue
		}
		rep.movedRef(r, RetriedMessage{DLQ: r.dlq, DLQMsgID: r.id, Queue: out[i].target, MsgID: out[i].newID})
	}
	return nil
}

// notifyMoved wakes the workers of each queue a message of out moved to,
// once per queue, after the moves committed (see deadRetrySQL). It goes on
// from a cancelled ctx, for a moment, since the moves stay; a notification
// that fails costs its workers only the wait to their next poll.
func (s *Store) notifyMoved(ctx context.Context, out []deadRetryOutcome) {
	var queues []string
	for _, o := range out {
		if o.err == nil && o.newID != 0 && !slices.Contains(queues, o.target) {
			queues = append(queues, o.target)
		}
	}
	if len(queues) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveGrace)
	defer cancel()
	_, _ = s.db.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', q) FROM unnest($1::text[]) AS q`, queues)
}

// untried tells whether retryParallel left a message alone: no error kept
// it back, and it has no new id.
func untried(o deadRetryOutcome) bool { return o.err == nil && o.newID == 0 }

// retryParallel moves messages over a few connections at once (lanes).
// Messages of one PGMQ FIFO group stay on one lane, in order, so the
// group's order survives the trip. Each lane moves its messages a batch
// to a transaction (retryRun.lane): a commit waits for its WAL to reach the
// disk, which one to a message made a large retry take minutes.
//
// A cancelled ctx stops the lanes between batches, not within one: a
// move cut off by the cancellation could commit without its caller
// knowing, and go uncounted in the report. A batch under way finishes,
// unless it is still going moveGrace after the cancellation.
//
// A move given up at its statement bound (WithStatementTimeout) stops the
// lanes too, and is returned: the database, or another session's lock on
// a table the moves write, held it that long, and would hold each message
// left alike, a bound each. So does a move that found the database
// unreachable (IsUnreachable: a restart, a pooler killed): each message
// left would fail alike and be counted failed, though never tried, and
// the move cut off may have committed.
func (s *Store) retryParallel(ctx context.Context, refs []deadRef, out []deadRetryOutcome, places retryPlaces, opts RetryOptions) error {
	if s.pool == nil {
		return errNoPool()
	}
	lanes := max(1, min(retryLanes, int(s.pool.Config().MaxConns)/2, len(refs)))
	moves, stop := grace.After(ctx, moveGrace)
	defer stop()
	run := &retryRun{s: s, ctx: ctx, moves: moves, refs: refs, out: out, places: places, opts: opts,
		traces: make([]*TraceContext, len(refs)), dones: make([]func(string, int64, error), len(refs)), traced: make([]bool, len(refs))}
	var wg sync.WaitGroup
	for lane := range lanes {
		var mine []int
		for i, r := range refs {
			if deadRetryLane(r, i, lanes) == lane && out[i].err == nil {
				mine = append(mine, i)
			}
		}
		wg.Go(func() { run.lane(mine) })
	}
	wg.Wait()
	return run.gaveUp
}

func deadRetryLane(r deadRef, i, lanes int) int {
	if r.group == "" {
		return i % lanes
	}
	h := fnv.New32a()
	h.Write([]byte(r.group))
	return int(h.Sum32() % uint32(lanes))
}

// moveWithFallback moves r to target in a transaction of its own, running
// the move again while it waits out lock_timeout (lockWaitedOut), and into
// its DLQ's own queue when target was dropped since the caller looked.
func (s *Store) moveWithFallback(ctx context.Context, r deadRef, target string, places retryPlaces, opts RetryOptions, tc *TraceContext) deadRetryOutcome {
	move := func(target string) (int64, error) {
		newID, err := s.retryOne(ctx, r, target, opts, tc)
		for try := 1; lockWaitedOut(ctx, err, try); try++ {
			newID, err = s.retryOne(ctx, r, target, opts, tc)
		}
		return newID, err
	}
	newID, err := move(target)
	if base := places.home(r.dlq); isUndefinedTable(err) && target != base && places.existing[base] {
		// The source queue was dropped since we looked: fall back as if we
		// had seen it gone.
		target = base
		newID, err = move(target)
	}
	return deadRetryOutcome{target: target, newID: newID, err: err, unsure: err != nil && OutcomeUnknown(err)}
}

// lockTries is how many times one message's move is run while it waits
// longer than lock_timeout for a lock. Such a lock is often held a moment
// only: another move's row, or an idempotency key's.
const lockTries = 5

// lockWaitedOut reports whether err, the failure of the try-th run of a
// move, is a lock wait past lock_timeout worth running it again for,
// after a pause that grows with each try. The move's transaction was
// rolled back, so running it again moves the message once.
func lockWaitedOut(ctx context.Context, err error, try int) bool {
	if try >= lockTries || ctx.Err() != nil || !isLockTimeout(err) {
		return false
	}
	t := time.NewTimer(time.Duration(try) * (20*time.Millisecond + rand.N(20*time.Millisecond)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deadRetryTrace reads the trace context a dead message carries and asks
// opts.Trace for the one to move it with; with no opts.Trace it reads
// nothing and returns nil.
func deadRetryTrace(ctx context.Context, q rowQuerier, r deadRef, opts RetryOptions) (*TraceContext, func(string, int64, error), error) {
	if opts.Trace == nil {
		return nil, nil, nil
	}
	var carried TraceContext
	err := q.QueryRow(ctx, `SELECT coalesce(headers->>'`+HeaderTraceparent+`', ''), coalesce(headers->>'`+HeaderTracestate+`', '')
		FROM `+queueTable(r.dlq)+` WHERE msg_id = $1`, r.id).Scan(&carried.Traceparent, &carried.Tracestate)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil, deadGoneErr(r.dlq, r.id)
	case err != nil:
		return nil, nil, fmt.Errorf("store: read the trace context of message %d in %q: %w", r.id, r.dlq, err)
	}
	tc, done := opts.Trace(ctx, r.dlq, r.id, carried)
	return &tc, done, nil
}

// retryPlaces is where the messages of a retry may go back to: which
// physical queues exist, and the priority levels of the queues among them
// made with levels.
type retryPlaces struct {
	existing map[string]bool
	levels   map[string]int
}

// physical is the physical queue that messages sent to queue q without a
// priority go to: q itself, or for a queue with priority levels, which has
// no table of its own name, its level 0, as for a send.
func (p retryPlaces) physical(q string) string {
	if p.levels[q] > 0 {
		return PriorityQueueName(q, 0)
	}
	return q
}

// home is the physical queue of dlq's own queue.
func (p retryPlaces) home(dlq string) string { return p.physical(deadBaseOf(dlq)) }

// retryCandidates finds which of the queues the messages could go back to
// exist: their source queues and their DLQs' own queues, each resolved to
// a physical queue.
func (s *Store) retryCandidates(ctx context.Context, refs []deadRef) (retryPlaces, error) {
	var names []string
	for _, r := range refs {
		names = append(names, deadBaseOf(r.dlq))
		if deadValidSource(r.source) {
			names = append(names, r.source)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	rows, err := s.reads.Query(ctx, `SELECT queue_name, priorities FROM pgbus.queues WHERE queue_name = ANY($1) AND priorities > 0`, names)
	if err != nil {
		return retryPlaces{}, fmt.Errorf("store: read the priority levels of the queues to retry into: %w", err)
	}
	p := retryPlaces{levels: map[string]int{}}
	var name string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		p.levels[name] = n
		names = append(names, p.physical(name))
		return nil
	}); err != nil {
		return retryPlaces{}, fmt.Errorf("store: read the priority levels of the queues to retry into: %w", err)
	}
	p.existing, err = s.deadExistingQueues(ctx, names)
	return p, err
}

// deadValidSource tells whether a block's source_queue may be used as a
// table name: the block is data, and may have been edited.
func deadValidSource(q string) bool {
	return q != "" && ValidatePhysicalName(q) == nil && !strings.HasSuffix(q, DLQSuffix)
}

// deadRetryTarget is the physical queue r goes back to: the queue it died
// in while it exists, else its DLQ's own queue; "" when neither exists. A
// level of a queue with priority levels that was dropped outside pgbus,
// the others left, sends its messages to the level a send without a
// priority takes, as any queue gone sends them to the DLQ's own: they run
// again, if sooner than their level would have had them.
func deadRetryTarget(r deadRef, p retryPlaces) string {
	if deadValidSource(r.source) {
		if src := p.physical(r.source); p.existing[src] {
			return src
		}
	}
	if home := p.home(r.dlq); p.existing[home] {
		return home
	}
	return ""
}

// retryOne is deadRetryOne on its own. A message with an idempotency key
// first takes the key's lock (lockDeadKeySQL), in the same transaction:
// one batch, one round trip, whose retry statement has a snapshot of its
// own, taken once the lock is held. The batch begins READ COMMITTED,
// whatever the role's default_transaction_isolation, since that snapshot
// is what keeps the key with a send that came first.
func (s *Store) retryOne(ctx context.Context, r deadRef, target string, opts RetryOptions, tc *TraceContext) (int64, error) {
	if !r.keyed {
		return deadRetryOne(ctx, s.db, r, target, opts.Payload, tc, opts.ClearDeadline, false)
	}
	sql, args := deadRetrySQL(r, target, opts.Payload, tc, opts.ClearDeadline, false)
	run := func(ctx context.Context) (int64, error) {
		b := &pgx.Batch{}
		b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
		b.Queue(lockDeadKeySQL(r), target, r.id)
		b.Queue(sql, args...)
		b.Queue("COMMIT")
		// A connection left in a failed transaction is closed by the pool
		// on release, which rolls it back.
		br := s.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		if err == nil {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return 0, fmt.Errorf("store: lock the idempotency key of message %d in %q: %w", r.id, r.dlq, err)
		}
		var id int64
		err = br.QueryRow().Scan(&id)
		// An error at the commit (a deferred trigger, a full notification
		// queue) means nothing moved.
		if err == nil {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return id, retriedOrWhy(err, r, target, opts.Payload)
	}
	// As s.db does for one statement: once more on a checked connection
	// when the first was dead and nothing was sent, and again when it
	// conflicted with another transaction.
	id, err := run(ctx)
	if s.db.retry(ctx, err) {
		id, err = run(withForcedPing(ctx))
	}
	for try := 1; conflicted(ctx, err, try); try++ {
		id, err = run(ctx)
	}
	return id, poolerHint(err, s.closing)
}

// lockDeadKeySQL takes the lock that a send of dead message r's
// idempotency key to target ($1) takes (sendOneKeyed); $2 is r's id. A
// send of the key that comes during the retry then waits for it and finds
// its message; the retry's statement, which comes after the lock with a
// snapshot of its own, sees a send that came first, and leaves the key
// with that send's message.
func lockDeadKeySQL(r deadRef) string {
	return `SELECT pg_advisory_xact_lock(` + keyLockSQL("$1", "(headers->>'"+HeaderIdempotencyKey+"')") + `)
		FROM ` + queueTable(r.dlq) + ` WHERE msg_id = $2 AND ` + sqlDeadKeyed
}

// deadRetryOne moves one message out of its DLQ in one statement, so it is
// either back in target or still in the DLQ, never both: the delete finds
// nothing when another retry took the message first. q is the pool, or
// the transaction of a guarded retry. With notify, the statement wakes
// target's workers itself (see deadRetrySQL).
func deadRetryOne(ctx context.Context, q rowQuerier, r deadRef, target string, payload json.RawMessage, tc *TraceContext, clearDeadline, notify bool) (int64, error) {
	sql, args := deadRetrySQL(r, target, payload, tc, clearDeadline, notify)
	var id int64
	return id, retriedOrWhy(q.QueryRow(ctx, sql, args...).Scan(&id), r, target, payload)
}

// retriedOrWhy is the error of a retry's statement, err, in words: the
// message gone when it returned no row; with a corrected payload, one
// PostgreSQL cannot store refused as the caller's to change.
func retriedOrWhy(err error, r deadRef, target string, payload json.RawMessage) error {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return deadGoneErr(r.dlq, r.id)
	case len(payload) > 0 && correctedUnstorable(err) != nil:
		return correctedUnstorable(err)
	case err != nil:
		return fmt.Errorf("store: retry message %d from %q into %q: %w", r.id, r.dlq, target, err)
	}
	return nil
}

// rowQuerier runs a statement that returns one row.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// sqlDeadRetryHeaders computes the headers of a message going back from the
// DLQ row d: without the block and the snooze count (the job starts over),
// with the trip counted, and with the job's idempotency key kept
// (sqlDeadKeepKey); headers that were not a JSON object come back as they
// were (they cannot hold a count). Those are the ones a dead letter kept
// under HeaderOriginalHeaders beside the block and nothing else
// (deadLetterSQL, as the Ruby gem does): a producer's header of that name
// among others, or holding an object, is one of its headers, kept as any.
const sqlDeadRetryHeaders = `CASE
	WHEN ` + sqlDeadWrapped + `
		THEN d.headers->'` + HeaderOriginalHeaders + `'
	WHEN jsonb_typeof(d.headers) = 'object'
		THEN (d.headers - '` + HeaderDeadLetter + `' - '` + HeaderSnoozes + `') || jsonb_build_object('` + HeaderDLQRetries + `', 1 + CASE
			WHEN jsonb_typeof(d.headers->'` + HeaderDLQRetries + `') = 'number'
			THEN least(greatest(trunc((d.headers->>'` + HeaderDLQRetries + `')::numeric), 0), 1000000000)::int
			ELSE 0 END) || ` + sqlDeadKeepKey + `
	WHEN d.headers IS NULL OR jsonb_typeof(d.headers) = 'null'
		THEN jsonb_build_object('` + HeaderDLQRetries + `', 1)
	ELSE d.headers END`

// sqlDeadWrapped holds when the headers of the DLQ row d are those a
// dead letter wraps: headers that were no JSON object, under
// HeaderOriginalHeaders, beside the block and nothing else.
const sqlDeadWrapped = `jsonb_typeof(d.headers) = 'object' AND d.headers ? '` + HeaderDeadLetter + `'
		AND jsonb_typeof(d.headers->'` + HeaderOriginalHeaders + `') <> 'object'
		AND d.headers - '` + HeaderDeadLetter + `' - '` + HeaderOriginalHeaders + `' = '{}'::jsonb`

// sqlDeadKeepKey is the headers a message going back from the DLQ row d
// adds so that its job keeps its idempotency key. A worker hands a job the
// pgbus_idempotency_key header, or "<queue>:<msg_id>" without one; a retry
// brings the message back with a new id, so without the header its key
// would change, and a downstream that saw a call time out could not tell
// the retried job for the same one. The header is set to the default key
// it had, from the block's source queue (the physical one, a priority
// level's X_p2, as workers read it) and id; a second trip keeps the header
// the first set. HeaderIdempotencyKeyKept says no send wrote it.
const sqlDeadKeepKey = `CASE
	WHEN coalesce(jsonb_typeof(d.headers->'` + HeaderIdempotencyKey + `') = 'string' AND d.headers->>'` + HeaderIdempotencyKey + `' <> '', false)
		THEN '{}'::jsonb
	WHEN jsonb_typeof(d.headers->'` + HeaderDeadLetter + `'->'source_queue') = 'string'
		AND d.headers->'` + HeaderDeadLetter + `'->>'source_queue' <> ''
		AND jsonb_typeof(d.headers->'` + HeaderDeadLetter + `'->'source_msg_id') = 'number'
		THEN jsonb_build_object('` + HeaderIdempotencyKey + `', (d.headers->'` + HeaderDeadLetter + `'->>'source_queue') || ':' || (d.headers->'` + HeaderDeadLetter + `'->>'source_msg_id'),
			'` + HeaderIdempotencyKeyKept + `', true)
	ELSE '{}'::jsonb END`

// sqlDeadRetryKey points the idempotency key of a message going back to
// target (its pgbus_idempotency_key header) at its new id, so that a send
// with the key while it is live, or archived within retention, returns it
// instead of a duplicate, as for the message first sent. A key already
// held by another message of target (sent with it after this one died)
// stays with that one while a send would return it: live, or archived
// within retention (keyInForceSQL). The key's created_at is the new
// message's enqueued_at, as a send's is. A header a send could not have written (over
// MaxIdempotencyKeyBytes) is left alone, and so is a key a retry set
// (HeaderIdempotencyKeyKept): no send wrote it.
func sqlDeadRetryKey(target string) string {
	key := `ins.headers->>'` + HeaderIdempotencyKey + `'`
	return fmt.Sprintf(`rekeyed AS (
		INSERT INTO pgbus.idempotency_keys AS k (queue_name, key, msg_id, created_at)
		SELECT $3::text, %[1]s, ins.msg_id, ins.enqueued_at FROM ins
		WHERE jsonb_typeof(ins.headers) = 'object' AND octet_length(%[1]s) BETWEEN 1 AND %[2]d
			AND NOT ins.headers ? '`+HeaderIdempotencyKeyKept+`'
		ON CONFLICT (queue_name, key) DO UPDATE SET msg_id = excluded.msg_id, created_at = excluded.created_at
		WHERE NOT %[3]s
	`, key, MaxIdempotencyKeyBytes, keyInForceSQL(target))
}

// deadRetrySQL builds the statement of deadRetryOne. With a corrected payload, the
// original row also goes to the DLQ's archive, whole, and the history notes
// where. With a trace context, it replaces the one the headers carry (when
// they are an object). Parameters: $1 id, $2 payload, $3 target, $4 dlq,
// [$5 note], [traceparent, tracestate]. With notify, it also wakes
// target's workers: for a guarded retry, whose one transaction folds the
// notifications of its moves into one per queue. The moves of an
// unguarded retry, a batch of them to a transaction, leave that to
// notifyMoved, once for the page of messages they belong to: a
// notification at each commit would take, for each, the lock every
// notifying transaction of the cluster takes at its commit, in turn.
func deadRetrySQL(r deadRef, target string, payload json.RawMessage, tc *TraceContext, clearDeadline, notify bool) (string, []any) {
	var p any
	if len(payload) > 0 {
		p = jsonbText(payload)
	}
	args := []any{r.id, p, target, r.dlq}
	headers, from := sqlDeadRetryHeaders, "d"
	vt := "clock_timestamp()"
	if !r.visibleAt.IsZero() {
		// The last parameter: after the note and the trace context.
		n := len(args) + 1
		if p != nil {
			n++
		}
		if tc != nil {
			n += 2
		}
		vt = fmt.Sprintf("$%d::timestamptz", n)
	}
	sql := `WITH d AS (
		DELETE FROM ` + queueTable(r.dlq) + ` WHERE msg_id = $1
		RETURNING msg_id, read_ct, enqueued_at, vt, message, headers
	)`
	if tc != nil {
		parent, state := len(args)+1, len(args)+2
		if p != nil {
			parent, state = parent+1, state+1 // after the note
		}
		sql += `, h AS (SELECT ` + sqlDeadRetryHeaders + ` AS headers FROM d)`
		headers = fmt.Sprintf(`CASE WHEN jsonb_typeof(h.headers) = 'object'
			THEN (h.headers - '%[1]s' - '%[2]s') || jsonb_strip_nulls(jsonb_build_object('%[1]s', nullif($%[3]d::text, ''), '%[2]s', nullif($%[4]d::text, '')))
			ELSE h.headers END`, HeaderTraceparent, HeaderTracestate, parent, state)
		from = "d, h"
	}
	if clearDeadline {
		headers = `CASE WHEN jsonb_typeof(` + headers + `) = 'object' THEN (` + headers + `) - '` + HeaderDeadline + `' ELSE ` + headers + ` END`
	}
	sql += `, ins AS (
		INSERT INTO ` + queueTable(target) + ` (vt, message, headers)
		SELECT ` + vt + `, coalesce($2::jsonb, d.message), ` + headers + ` FROM ` + from + `
		RETURNING msg_id, enqueued_at, headers
	), rekey AS (
		UPDATE pgbus.failures f SET queue_name = $3::text, msg_id = ins.msg_id
		FROM ins WHERE f.queue_name = $4::text AND f.msg_id = $1
	), ` + sqlDeadRetryKey(target) + `)`
	if p != nil {
		note := fmt.Sprintf("payload replaced on retry; the original message is kept in the archive of %s (pgmq.a_%s, msg_id %d) until purged or the queue's dead retention deletes it. Original payload: ", r.dlq, r.dlq, r.id)
		args = append(args, note)
		sql += `, arch AS (
		INSERT INTO ` + archiveTable(r.dlq) + ` (msg_id, read_ct, enqueued_at, vt, message, headers)
		SELECT msg_id, read_ct, enqueued_at, vt, message, headers FROM d
	), note AS (
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message)
		SELECT $3::text, ins.msg_id, 0, coalesce(d.headers->>'` + HeaderKind + `', d.message->>'job_class', ''),
			'` + PayloadReplacedClass + `', $5::text || ` + sqlDeadTruncate("coalesce(d.message::text, 'null')", HistoryErrorMessageMax-len(note)) + `
		FROM d, ins
	), mark AS (
		-- The original's own mark, kept and purged with it: a restore of
		-- the archive refuses it, since the corrected message ran instead.
		-- The rekey above does not see it (one snapshot for the statement).
		INSERT INTO pgbus.failures (queue_name, msg_id, attempt, kind, error_class, error_message)
		SELECT $4::text, d.msg_id, 0, coalesce(d.headers->>'` + HeaderKind + `', d.message->>'job_class', ''),
			'` + PayloadReplacedClass + `', '` + retryMarkPrefix + `' || ins.msg_id || ' of ' || $3::text || '; this original is kept to be read, not restored'
		FROM d, ins
	)`
	}
	if tc != nil {
		args = append(args, tc.Traceparent, tc.Tracestate)
	}
	if !r.visibleAt.IsZero() {
		args = append(args, r.visibleAt)
	}
	sql += ` SELECT ins.msg_id FROM ins`
	if notify {
		sql += `, (SELECT pg_notify('` + notifyChannel + `', $3::text)) AS n`
	}
	return sql, args
}

// refusesEvery reports whether err, one message's failed move, would be
// every other one's too: a server that takes no writes, or lacks a
// resource (disk space, memory, connections; SQLSTATE class 53), where
// trying the rest of a large DLQ one by one would only fail as often.
func refusesEvery(err error) bool {
	code, _ := SQLState(err)
	return LimitOf(err) == LimitReadOnly || strings.HasPrefix(code, "53")
}
