package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgbus/pgbus/internal/grace"
	"github.com/pgbus/pgbus/store"
)

// maxFetch bounds one read; larger batches gain little and hold rows longer.
const maxFetch = 100

// fetchLinger is how long a read of a backlogged queue waits for slots
// that running jobs are about to free.
const fetchLinger = time.Millisecond

// queueWorker works one logical queue: a fetch loop over its physical
// queues (one, or one per priority level, highest first), one goroutine per
// running job bounded by the queue's concurrency, and a writer of outcomes.
type queueWorker struct {
	c    *Client
	name string
	// snoozeLogged is when (Unix nanoseconds) the log was last told why
	// jobs are snoozed for a reason of the worker's (logSnoozeReason).
	snoozeLogged atomic.Int64
	// layout is the queue's physical queues (tables), which the fetch loop
	// replaces when the queue was dropped and made again with other
	// priority levels (relayout); the other loops read it as it is now.
	layout atomic.Pointer[[]string]
	// layoutStale is set when the registry's levels of the queue differ
	// from layout, for the fetch loop to read them again.
	layoutStale atomic.Bool
	dlq         string
	slots       chan struct{}
	// reading is how many of slots the read under way holds.
	reading atomic.Int64
	wake    chan struct{}
	jobBase context.Context
	// writeBase ends a while after jobBase at a stop, cutting short the
	// writes of outcomes still under way then.
	writeBase context.Context
	jobs      sync.WaitGroup
	runnable  chan delivery // to the queue's runners, one per slot
	outcomes  chan result
	// unwritten counts the outcomes handed to the writer and not yet
	// written or given up: a stop waits for them too.
	unwritten atomic.Int64
	settled   settledCounts // per table, for its vacuums
	// gone are the physical queues found dropped by the writer of
	// outcomes, which says so once per queue.
	gone map[string]bool
	// deadLetterRefused is set while the database refuses the queue's dead
	// letters for want of a privilege, so that it is logged once.
	deadLetterRefused atomic.Bool
	// outcomesRefused is set while the database refuses the writes of the
	// queue's outcomes for want of a privilege, so that it is logged once.
	outcomesRefused atomic.Bool
	// When a write of outcomes, a read and an extension of the held
	// messages' visibility timeout that waited for another session's lock
	// were last logged at warn.
	writeLockSaid, readLockSaid, heartbeatLockSaid lastSaid

	mu   sync.Mutex
	held map[msgKey]store.Claim // read and not yet settled: kept invisible by heartbeat
	// heldOne is told when a message is held, for a heartbeat that holds
	// none to wake (it has room for one: a hold never waits for it).
	heldOne chan struct{}

	// settling is held for reading while retries and snoozes are written
	// (until their claims are let go) and for writing while the heartbeat
	// extends visibility, so a heartbeat never overwrites the vt a retry
	// just set (that would delay the retry by a whole visibility timeout).
	settling sync.RWMutex
}

// msgKey names a message: ids are unique only within a physical queue.
type msgKey struct {
	queue string
	id    int64
}

func newQueueWorker(c *Client, qc QueueConfig, physical []string, jobBase, writeBase context.Context) *queueWorker {
	w := &queueWorker{
		c:         c,
		name:      qc.Name,
		dlq:       store.DLQName(qc.Name),
		slots:     make(chan struct{}, qc.Concurrency),
		runnable:  make(chan delivery, qc.Concurrency),
		wake:      make(chan struct{}, 1),
		jobBase:   jobBase,
		writeBase: writeBase,
		outcomes:  make(chan result, qc.Concurrency),
		held:      map[msgKey]store.Claim{},
		heldOne:   make(chan struct{}, 1),
		gone:      map[string]bool{},
	}
	w.layout.Store(&physical)
	return w
}

// tables is the queue's physical queues as the worker reads them now,
// level 0 first.
func (w *queueWorker) tables() []string { return *w.layout.Load() }

func (w *queueWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run fetches until ctx ends, then waits for its jobs and their outcomes.
// Jobs run on long-lived runners, one per slot, rather than a goroutine
// each: a fresh goroutine grows its stack anew for every job, which cost a
// busy worker more CPU than the jobs' own bookkeeping.
func (w *queueWorker) run(ctx context.Context) {
	writerDone := make(chan struct{})
	go func() { w.writeOutcomes(); close(writerDone) }()
	hbCtx, stopHB := context.WithCancel(w.jobBase)
	go w.heartbeat(hbCtx)
	go w.vacuumLoop(hbCtx)
	for range cap(w.slots) {
		go func() {
			for d := range w.runnable {
				w.process(d)
			}
		}()
	}
	w.fetchLoop(ctx)
	close(w.runnable)
	w.jobs.Wait()
	close(w.outcomes)
	<-writerDone
	stopHB()
}

// logReadFailure says why a read failed: a lack of privilege is no passing
// trouble, and says what to grant.
func (w *queueWorker) logReadFailure(err error, retryIn time.Duration) {
	if store.IsPermissionDenied(err) {
		w.c.log.Error("pgbus: this database role may not use the queue's tables: grant it SELECT, INSERT, UPDATE and DELETE on them "+
			"(ALTER DEFAULT PRIVILEGES, run as the role that creates queues, covers the queues created later); retrying",
			"queue", w.name, "err", err, "in", retryIn.String())
		return
	}
	if w.readLockedOut(err, retryIn) || w.c.outage.failed(err) {
		return
	}
	w.c.log.Warn(w.c.advised("pgbus: read failed; retrying", err), "queue", w.name, "err", err, "in", retryIn.String())
}

func (w *queueWorker) fetchLoop(ctx context.Context) {
	errDelay := 100 * time.Millisecond
	backlog := false // the last read found as many messages as it asked for
	reclaim := false // a read failed: extend the held claims before the next
	for ctx.Err() == nil {
		if w.layoutStale.Swap(false) {
			w.relayout(ctx)
		}
		if w.c.settingsFor(w.name).Paused {
			w.idle(ctx)
			continue
		}
		// After an outage longer than the visibility timeout, the messages
		// of jobs that ran through it (their outcomes waiting to be
		// written) are visible again: this worker's next read would take
		// them and run them again. Their claims are extended first, as the
		// heartbeat would; while that fails, so would the read.
		if reclaim {
			if !w.extendHeld(ctx, w.c.settingsFor(w.name).VisibilityTimeout) {
				sleep(ctx, errDelay)
				errDelay = min(errDelay*2, 5*time.Second)
				continue
			}
			reclaim = false
		}
		n := w.acquire(ctx, backlog)
		if n == 0 {
			return
		}
		w.reading.Store(int64(n))
		start := time.Now()
		got, err := w.fetch(ctx, n)
		backlog = err == nil && got == n
		w.release(n - got)
		w.reading.Store(0)
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case w.queueDropped(ctx, err):
				if !w.relayout(ctx) {
					w.waitForQueue(ctx)
				}
				errDelay = 100 * time.Millisecond
			default:
				w.logReadFailure(err, errDelay)
				sleep(ctx, errDelay)
				errDelay = min(errDelay*2, 5*time.Second)
				reclaim = true
			}
			continue
		}
		w.c.outage.answered(start)
		errDelay = 100 * time.Millisecond
		if got < n {
			w.waitForWork(ctx)
		}
	}
}

// fetch reads up to n messages, highest priority first, and dispatches them.
// It returns how many it read, which is how many slots they hold.
func (w *queueWorker) fetch(ctx context.Context, n int) (int, error) {
	vt := w.c.settingsFor(w.name).VisibilityTimeout
	got := 0
	for _, queue := range w.tables() {
		if got == n || ctx.Err() != nil {
			break
		}
		read, err := w.readQueue(ctx, queue, vt, n-got)
		if err != nil {
			return got, err
		}
		got += read
	}
	return got, nil
}

// readQueue reads one physical queue. Messages that must not run (past
// their retries or deadline, or of a kind nobody handles) are dead-lettered
// in the read's own transaction, so a crash cannot count a read without
// routing it; the others start as jobs.
//
// When the queue's DLQ was dropped meanwhile, it is made again; when it
// cannot be, or the role may not write it, the messages to dead-letter are
// read but neither run nor held, so that they come back after the
// visibility timeout, while the queue's other messages run.
func (w *queueWorker) readQueue(ctx context.Context, queue string, vt time.Duration, n int) (int, error) {
	var routed []result
	var routedFrom, runnable []delivery
	aside, keepAside := 0, false
	route := func(msgs []store.Message) []store.DeadLetterItem {
		now := w.c.store.Now() // the clock EnqueuedAt was written by
		routed, routedFrom, runnable, aside = routed[:0], routedFrom[:0], runnable[:0], 0
		var items []store.DeadLetterItem
		for _, m := range msgs {
			d := w.prepare(queue, m, now)
			res, ok := w.routeWithoutRunning(d)
			switch {
			case !ok:
				runnable = append(runnable, d)
			case keepAside:
				aside++
			default:
				routed, routedFrom = append(routed, res), append(routedFrom, d)
				items = append(items, res.deadLetterItem())
			}
		}
		return items
	}
	// A stop must not cut off a read in flight: the server may have
	// committed its claims before the cancel reached it, and a read that
	// failed names none of them to give back, so each would wait out its
	// visibility timeout and come back an attempt down. The read goes on
	// for readGrace after a stop: one the stop finds before its commit is
	// rolled back by the store (grace.GivenUp), claiming nothing; what one
	// committed first claimed for jobs is given back.
	readCtx, endRead := grace.After(ctx, readGrace)
	defer endRead()
	read := func() (msgs []store.Message, err error) {
		err = w.c.bounded(readCtx, func(ctx context.Context) (err error) {
			msgs, err = w.c.store.ReadRouting(ctx, queue, vt, n, w.dlq, route)
			return err
		})
		return msgs, err
	}
	msgs, err := read()
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped: neither make the DLQ again nor read again.
	case err == nil:
	case w.dlqGone(ctx, queue, err):
		keepAside = !w.restoreDLQ(ctx, len(routed))
		msgs, err = read()
	case len(routed) > 0 && w.deadLetterDenied(ctx, queue, len(routed), err):
		// routed is only set once the read itself succeeded: the
		// refusal was the dead letter's.
		keepAside = true
		msgs, err = read()
	}
	if err != nil {
		return 0, err
	}
	if len(routed) > 0 {
		w.deadLetterWorks()
	}
	for i, res := range routed {
		w.c.observers.finished(w.jobBase, w.jobOf(routedFrom[i]), res, attempt{})
	}
	w.record(routed)
	unstarted := 0
	if ctx.Err() != nil {
		w.giveBackUnstarted(runnable)
		runnable, unstarted = nil, len(runnable)
	}
	w.release(len(routed) + aside + unstarted)
	w.start(queue, runnable)
	return len(msgs), nil
}

// readGrace is how long a read in flight goes on after a stop: a read
// answers in milliseconds, unless the database does not answer at all.
const readGrace = 5 * time.Second

// giveBackUnstarted returns the attempts of messages a read claimed as
// the workers stopped, none of them run: visible again at once, all
// within readGrace, so that a database that does not answer holds the
// stop no longer than that. Those it cannot give back count their read.
func (w *queueWorker) giveBackUnstarted(ds []delivery) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.jobBase), readGrace)
	defer cancel()
	for i, d := range ds {
		if _, err := w.c.store.GiveBack(ctx, d.queue, d.m.Claim(), 0); err != nil {
			w.c.log.Warn("pgbus: could not give back the messages read as the workers stopped, before any of them ran; each counts its read as an attempt",
				"queue", d.queue, "messages", len(ds)-i, "err", err)
			return
		}
	}
}

func (w *queueWorker) start(queue string, runnable []delivery) {
	for _, d := range runnable {
		w.hold(queue, d.m.Claim())
		w.jobs.Add(1)
		w.runnable <- d // never blocks: each delivery holds one of the slots
	}
}

// acquire takes at least one slot (waiting for it) and then every free one,
// up to a full read of maxFetch or the queue's concurrency. With linger,
// when the queue has a backlog, it waits up to fetchLinger for the rest:
// without the wait, the loop would read again while the jobs it just
// started still hold their slots, and a busy queue would settle into reads
// of half its concurrency, twice the statements per job. A queue keeping
// up reads at once, adding no latency. It returns 0 when ctx ends first.
func (w *queueWorker) acquire(ctx context.Context, linger bool) int {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n, want := 1, min(maxFetch, cap(w.slots))
	for n < want {
		select {
		case w.slots <- struct{}{}:
			n++
			continue
		default:
		}
		if !linger {
			return n
		}
		return n + w.lingerFor(ctx, want-n)
	}
	return n
}

// lingerFor takes up to limit more slots as they free, for at most
// fetchLinger, and returns how many it took.
func (w *queueWorker) lingerFor(ctx context.Context, limit int) int {
	t := time.NewTimer(fetchLinger)
	defer t.Stop()
	n := 0
	for n < limit {
		select {
		case w.slots <- struct{}{}:
			n++
		case <-t.C:
			return n
		case <-ctx.Done():
			return n
		}
	}
	return n
}

// running counts the jobs holding a slot: once the fetch loop has ended,
// those whose handlers have not returned. The slots a read under way
// holds are no jobs yet: counted, a stop of workers on many queues said
// hundreds of jobs ran when none did.
func (w *queueWorker) running() int { return max(0, len(w.slots)-int(w.reading.Load())) }

func (w *queueWorker) release(n int) {
	for range n {
		<-w.slots
	}
}

// idle waits for a notification or the poll interval: a paused queue's
// wait, which reads nothing.
func (w *queueWorker) idle(ctx context.Context) {
	t := time.NewTimer(w.c.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.wake:
	case <-t.C:
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (w *queueWorker) hold(queue string, c store.Claim) {
	w.mu.Lock()
	w.held[msgKey{queue, c.MsgID}] = c
	w.mu.Unlock()
	select {
	case w.heldOne <- struct{}{}:
	default: // told already
	}
}

// holdsNone reports whether no message is held.
func (w *queueWorker) holdsNone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held) == 0
}

// unhold forgets the claims settled. A later read of the same id, which
// this worker may hold too once an earlier claim lapsed (or a queue made
// again hands the id out anew), stays held.
func (w *queueWorker) unhold(queue string, claims []store.Claim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range claims {
		k := msgKey{queue, c.MsgID}
		if w.held[k] == c {
			delete(w.held, k)
		}
	}
}

// heartbeatStep bounds each sleep of the heartbeat: a visibility timeout
// shortened meanwhile (fetch claims with it at the next settings refresh)
// must shorten the wait for the next extension too, or a running job's
// message reappears and runs again beside it.
const heartbeatStep = 100 * time.Millisecond

// heartbeat keeps held messages invisible while their handlers run and
// their outcomes wait to be written, so only a dead process lets them
// reappear.
//
// The next extension is due by the shorter of the current timeout and the
// one the held claims were last made with: a timeout made longer only
// lengthens claims once they are extended with it.
//
// Holding no message, it waits for one to be held rather than turn every
// heartbeatStep: an idle worker's process would otherwise wake ten times
// a second for each queue it works, to find nothing to extend. The first
// extension of a message held then is due a heartbeat's interval after
// it was, well within the visibility timeout its read claimed it for.
func (w *queueWorker) heartbeat(ctx context.Context) {
	last, claimed := time.Now(), w.c.settingsFor(w.name).VisibilityTimeout
	turn := w.c.cfg.heartbeatTurn
	for {
		if turn != nil {
			turn(false)
		}
		if w.holdsNone() {
			if turn != nil {
				turn(true)
			}
			select {
			case <-ctx.Done():
				return
			case <-w.heldOne:
			}
			last, claimed = time.Now(), w.c.settingsFor(w.name).VisibilityTimeout
			continue
		}
		vt := w.c.settingsFor(w.name).VisibilityTimeout
		if wait := time.Until(last.Add(w.heartbeatEvery(min(vt, claimed)))); wait > 0 {
			sleep(ctx, min(wait, heartbeatStep))
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if held := w.c.cfg.heartbeatHeld; held != nil && held() {
			if sleep(ctx, heartbeatStep); ctx.Err() != nil {
				return
			}
			continue
		}
		last, claimed = time.Now(), vt
		w.extendHeld(ctx, vt)
	}
}

// heartbeatEvery is how often held messages are extended under visibility
// timeout vt: a third of it, so that a slow or failed extension still
// leaves time for the next; a configured interval only makes it shorter,
// since one at or past vt would let claims expire between extensions.
func (w *queueWorker) heartbeatEvery(vt time.Duration) time.Duration {
	every := vt / 3
	if hb := w.c.cfg.VisibilityHeartbeat; hb > 0 {
		every = min(every, hb)
	}
	return every
}

// extendHeld pushes back the vt of every message still held, in one
// statement per physical queue, and reports whether every statement ran.
func (w *queueWorker) extendHeld(ctx context.Context, vt time.Duration) bool {
	ok := true
	w.settling.Lock()
	defer w.settling.Unlock()
	w.mu.Lock()
	claims := map[string][]store.Claim{}
	for k, c := range w.held {
		claims[k.queue] = append(claims[k.queue], c)
	}
	w.mu.Unlock()
	for queue, list := range claims {
		for len(list) > 0 {
			chunk := list[:min(len(list), store.MaxBatch)]
			list = list[len(chunk):]
			var got []int64
			err := w.c.bounded(ctx, func(ctx context.Context) (err error) {
				got, err = w.c.store.SetVisibilityClaimed(ctx, queue, chunk, vt)
				return err
			})
			if err != nil {
				ok = false
				if ctx.Err() == nil && !w.heartbeatLockedOut(queue, len(chunk), err) && !w.c.quiet(err) {
					w.c.log.Warn(w.c.advised("pgbus: visibility heartbeat failed", err), "queue", queue, "err", err)
				}
				continue
			}
			if len(got) < len(chunk) {
				// Their claims lapsed and other reads hold them now, or
				// they are gone: those reads' workers keep them invisible.
				w.c.log.Debug("pgbus: visibility heartbeat: messages no longer at the reads held", "queue", queue, "count", len(chunk)-len(got))
			}
		}
	}
	return ok
}

// delivery is a message read for this worker, with what the lifecycle
// needs to know about it.
type delivery struct {
	queue    string
	m        store.Message
	headers  map[string]json.RawMessage
	kind     string
	h        handler
	found    bool
	policy   RetryPolicy
	deadline time.Time
	latency  time.Duration
}

func (w *queueWorker) prepare(queue string, m store.Message, now time.Time) delivery {
	d := delivery{queue: queue, m: m, headers: parseHeaders(m.Headers), latency: now.Sub(latest(m.EnqueuedAt, m.VisibleSince))}
	d.kind = store.KindOf(d.headers, m.Payload)
	d.h, d.found = w.c.handlerFor(w.name, d.kind)
	settings := w.c.settingsFor(w.name)
	d.policy = policyOf(settings)
	if d.found && d.h.opts.Retry != nil {
		d.policy = *d.h.opts.Retry
	}
	d.deadline = w.deadlineOf(queue, m.ID, d.headers)
	if d.deadline.IsZero() && settings.Deadline > 0 {
		d.deadline = m.EnqueuedAt.Add(settings.Deadline)
	}
	return d
}

// readCap is the most reads a message may have had and still run: the
// retry policy's attempts, or more when an error policy of the handler
// retries its errors longer. Past it a message is dead-lettered unrun (its
// workers crashed on every attempt); the policy that matches a failure
// decides the rest once the handler ran.
func (d delivery) readCap() int {
	n := d.policy.MaxRetries
	if d.found {
		for _, pol := range d.h.opts.Policies {
			n = max(n, pol.maxRetries())
		}
	}
	return n
}

func (w *queueWorker) routeWithoutRunning(d delivery) (result, bool) {
	res := result{queue: d.queue, claim: d.m.Claim(), visibleAt: d.m.VisibleAt, table: d.m.Table, kind: d.kind, maxRetries: d.policy.MaxRetries, latency: d.latency}
	switch {
	case d.m.ReadCount > d.readCap():
		res.maxRetries = d.readCap()
		return res.deadLetter(store.ReasonMaxRetriesExceeded, nil), true
	case !d.deadline.IsZero() && w.c.store.Now().After(d.deadline): // on the database's clock, as other hosts judge it
		return res.deadLetter(store.ReasonDeadlineExceeded, nil), true
	case !d.found:
		err := &classedError{class: ClassUnknownKind, msg: fmt.Sprintf(
			"no handler for kind %q on queue %q; register one with Client.Handle (or HandleQueue for the queue's default), or fix the sender's pgbus_kind", d.kind, w.name)}
		return res.deadLetter(store.ReasonNonRetryable, w.failure(d.m, d.kind, err, "")), true
	}
	return res, false
}

// process runs one message's handler and hands its outcome to the writer.
func (w *queueWorker) process(d delivery) {
	defer w.jobs.Done()
	res := w.runDelivery(d)
	if running := res.stillRunning; running != nil {
		// Concurrency bounds the handlers running, abandoned ones too:
		// freed at once, the slot would start more of them while the
		// stuck ones pile up.
		go func() { <-running; <-w.slots }()
	} else {
		<-w.slots
	}
	if res.abandon {
		w.giveBack(d, res.stillRunning != nil)
		w.unhold(d.queue, []store.Claim{d.m.Claim()})
		if res.seen != nil {
			w.c.observers.abandoned(res.seen.ctx, res.seen.job)
		}
		return
	}
	if res.stillRunning != nil {
		res = w.awaitGivenUp(res)
	}
	w.unwritten.Add(1)
	w.outcomes <- res // the writer tells the observers once it is written
}

// awaitGivenUp holds the outcome of a handler given up on for ignoring its
// context until the handler returns: until then it may still be acting on
// the message, which stays held, and so hidden by the heartbeat, as a
// running job's is, so that its retry, or a retry out of the DLQ, never
// runs beside it. One that returns success did the job, late: its message
// is done, neither run again nor dead-lettered. A hard stop waits no
// longer (the process is about to end, and the handler with it): a retry
// then waits the visibility timeout at least, as a job the stop gives back
// while its handler runs does.
func (w *queueWorker) awaitGivenUp(res result) result {
	select {
	case <-res.stillRunning:
		select {
		case a := <-res.late:
			if a.err == nil {
				res.action, res.failure, res.delay, res.reason, res.downstreamFailure = actionSucceed, nil, 0, "", false
				if res.seen != nil {
					seen := *res.seen
					seen.a.err = nil
					res.seen = &seen
				}
			}
		default:
		}
	case <-w.jobBase.Done():
		if res.action == actionRetry {
			res.delay = max(res.delay, w.c.settingsFor(w.name).VisibilityTimeout)
		}
	}
	return res
}

// giveBack returns the attempt of a job a stop cut off: it did not fail,
// so it must not count towards its retries (each deploy would otherwise
// use one). It is visible again at once when its handler returned, so
// that the workers that replace these take it without waiting; after the
// visibility timeout when the handler ignored the stop, so that it has
// ended with its process first. A read that cannot be given back (the
// database is gone too) is left as it was, counted.
func (w *queueWorker) giveBack(d delivery, stillRunning bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.jobBase), 5*time.Second)
	defer cancel()
	// A handler still running may still act on the message: only its
	// visibility timeout lets another worker have it.
	var delay time.Duration
	if stillRunning {
		delay = w.c.settingsFor(w.name).VisibilityTimeout
	}
	if _, err := w.c.store.GiveBack(ctx, d.queue, d.m.Claim(), delay); err != nil {
		w.c.log.Warn("pgbus: could not give back the attempt of a job the stop cut off; it counts as one", "queue", d.queue, "msg_id", d.m.ID, "err", err)
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (w *queueWorker) jobOf(d delivery) *Job {
	m := d.m
	return &Job{
		Queue: d.queue, WorkQueue: w.name, ID: m.ID, Kind: d.kind, Attempt: m.ReadCount, Snoozes: snoozesOf(d.headers), MaxRetries: d.policy.MaxRetries,
		EnqueuedAt: m.EnqueuedAt, Payload: m.Payload, Headers: d.headers,
		IdempotencyKey: idempotencyKey(d.headers, d.queue, m.ID), Deadline: d.deadline,
	}
}

// snoozesOf reads the snooze count of a message's headers: 0 when it has
// none, or another client wrote something else there.
func snoozesOf(h map[string]json.RawMessage) int {
	var n float64
	if err := json.Unmarshal(h[store.HeaderSnoozes], &n); err != nil || n < 0 || n > 1e9 {
		return 0
	}
	return int(n)
}

// runDelivery calls the handler and turns what it returned into an outcome.
func (w *queueWorker) runDelivery(d delivery) (res result) {
	res = result{queue: d.queue, claim: d.m.Claim(), visibleAt: d.m.VisibleAt, table: d.m.Table, kind: d.kind, maxRetries: d.policy.MaxRetries, latency: d.latency}
	job := w.jobOf(d)
	ctx := w.c.observers.started(w.jobBase, job)
	var a attempt
	if len(w.c.observers.list) > 0 {
		defer func() { res.seen = &observed{ctx: ctx, job: job, a: a} }()
	}
	breaker := d.h.opts.Breaker
	var probe time.Time // the probe's ProbeUntil, when the job is its breaker's probe
	if breaker != nil {
		var wait time.Duration
		var open bool
		var heldFrom time.Time
		if wait, open, probe, heldFrom = w.breakerOpen(breaker.Name, w.handlerTimeout(d.h)); open {
			res.action, res.delay, res.heldBy, res.heldFor = actionSnooze, wait, breaker.Name, probe
			return res
		}
		// The probe's end, whatever it was, moves the jobs held while it
		// ran, which wait until it is taken for lost.
		if !probe.IsZero() {
			defer w.wakeProbeHolds(breaker.Name, probe, heldFrom)
		}
	}
	a = w.runHandler(ctx, d.h, job)
	res.stillRunning, res.late = a.stillRunning, a.late
	err := a.err
	if err == nil {
		if breaker != nil {
			w.breakerRecord(breaker.Name, job, nil, !probe.IsZero())
		}
		return res
	}
	if w.jobBase.Err() != nil {
		res.abandon = true // hard stop: given back, see giveBack
	} else {
		res, a = w.settle(res, d, a)
		err = a.err
	}
	switch {
	case breaker == nil:
	case res.downstreamFailure:
		w.breakerRecord(breaker.Name, job, err, !probe.IsZero())
	case !probe.IsZero():
		w.releaseProbe(breaker.Name, probe)
	}
	return res
}

// settle turns a failed attempt into its outcome. The error's methods
// (Error, Unwrap, ErrorClass, RetryAfter...) and the error policies'
// matchers are the program's code, run here outside the handler's
// recover: one that panics, as the Error method of a nil pointer returned
// as an error does, would take the whole process down, with the jobs of
// every queue, at each read of the message. Such a panic fails the attempt
// as a panic of the handler does; the attempt returned carries the error
// the outcome was made of, which observers and the breaker are told.
func (w *queueWorker) settle(res result, d delivery, a attempt) (out result, settled attempt) {
	defer func() {
		if r := recover(); r != nil {
			a.err = &classedError{class: ClassPanic, msg: fmt.Sprintf(
				"panic: reading the error the handler returned (%T), its methods or an error policy's matcher panicked: %v; make them safe to call (a nil pointer returned as an error is no nil error: return nil for success)", a.err, r)}
			a.stack = panicStack(string(debug.Stack()))
			out, settled = w.onError(res, d, a), a
		}
	}()
	return w.onError(res, d, a), a
}

func (w *queueWorker) onError(res result, d delivery, a attempt) result {
	m, p, err := d.m, d.policy, a.err
	ce, _ := asControl(err)
	if ce != nil && ce.outcome == outcomeSnooze {
		res.action, res.delay = actionSnooze, ce.delay
		if ce.err != nil {
			w.logSnoozeReason(ce.err)
		}
		return res
	}
	f := w.failure(m, res.kind, err, a.stack)
	f.Detail = a.detail()
	action, useHint := ActionRetry, true
	policies, panicked := d.h.opts.Policies, ErrorClass(err) == ClassPanic
	if panicked {
		policies = panicPolicies(policies)
	}
	switch {
	case ce != nil && ce.outcome == outcomeDiscard:
		action = ActionDiscard
	case ce != nil && ce.outcome == outcomeDeadLetter:
		action = ActionDeadLetter // bad input
	case panicked && len(policies) == 0:
		action = ActionDeadLetter // a programming error
	default:
		if pol, ok := policyFor(policies, err); ok {
			action, useHint = pol.Action, pol.Action == ActionRetryAfterHint
			switch {
			case pol.Retry != nil:
				p = *pol.Retry
				res.maxRetries = p.MaxRetries
			case pol.MaxRetries > 0:
				p.MaxRetries = pol.MaxRetries
				res.maxRetries = p.MaxRetries
			}
		}
	}
	switch {
	case action == ActionDiscard:
		res.action, res.failure = actionDiscard, f
		return res
	case action == ActionDeadLetter:
		return res.deadLetter(store.ReasonNonRetryable, f)
	case m.ReadCount >= p.MaxRetries:
		res = res.deadLetter(store.ReasonMaxRetriesExceeded, f)
		res.downstreamFailure = true
		return res
	}
	res.action, res.failure, res.downstreamFailure = actionRetry, f, true
	res.delay = p.NextDelay(m.ReadCount, w.c.cfg.Rand())
	if hint, ok := retryHint(err); ok && useHint {
		res.delay = hint
	}
	if !d.deadline.IsZero() && w.c.store.Now().Add(res.delay).After(d.deadline) {
		// Its retry would come past its deadline, to be dead-lettered
		// unrun: dead-lettered now, with this failure, rather than after
		// a wait for nothing.
		res = res.deadLetter(store.ReasonDeadlineExceeded, f)
		res.downstreamFailure = true
	}
	return res
}

// breakerCallTimeout bounds each call to a circuit breaker's row.
const breakerCallTimeout = 10 * time.Second

// breakerOpen asks a kind's circuit breaker whether the job may run; when
// not, it returns how long to snooze. A probe that is not zero says, when
// the job may run, that it is a half-open breaker's one trial call, and
// is when that call is taken for lost; when it may not, that it waits out
// that call; heldFrom is, for a probe, the end of the open period it
// follows (store.BreakerVerdict.HeldFrom). A breaker that cannot be asked
// lets the job run: an outage of the breaker table must not stop all
// work.
//
// The probe is taken for lost only once its handler, given timeout, could
// no longer be running (its grace included) nor recording its outcome: the
// heartbeat keeps a job running past the visibility timeout, and a probe
// taken for lost sooner let more probes run beside it.
func (w *queueWorker) breakerOpen(name string, timeout time.Duration) (wait time.Duration, open bool, probe, heldFrom time.Time) {
	ctx, cancel := context.WithTimeout(w.jobBase, breakerCallTimeout)
	defer cancel()
	probeTimeout := addCapped(addCapped(timeout, w.c.cfg.HandlerGrace), breakerCallTimeout)
	v, err := w.c.store.AcquireBreaker(ctx, name, probeTimeout)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted while this process ran (by hand, or by retention had
		// its users gone unseen): made anew, closed, as at start.
		if err = w.c.ensureBreaker(ctx, name); err == nil {
			v, err = w.c.store.AcquireBreaker(ctx, name, probeTimeout)
		}
	}
	if err != nil {
		if !w.c.quiet(err) {
			w.c.log.Warn("pgbus: circuit breaker unavailable; running the job", "breaker", name, "err", err)
		}
		return 0, false, time.Time{}, time.Time{}
	}
	if v.Probe {
		w.c.observers.breakerChanged(name, store.BreakerOpen, store.BreakerHalfOpen)
	}
	if v.Allowed {
		return 0, false, v.ProbeUntil, v.HeldFrom
	}
	return v.RetryIn, true, v.ProbeUntil, time.Time{}
}

// wakeProbeHoldsTimeout bounds the wake of the jobs a breaker held while
// its probe ran, and wakeProbeHoldsStopping that of a worker stopping, so
// that a stop is not held up long: the holds left wake when the probe is
// taken for lost.
const (
	wakeProbeHoldsTimeout  = time.Minute
	wakeProbeHoldsStopping = 5 * time.Second
)

// wakeProbeHolds moves, once the probe probeUntil of breaker name ended
// (recorded or given back), the jobs the breaker held while it ran, and
// those held until heldFrom that no worker read yet, to when the breaker
// now lets them go on: released over its release window when it closed
// (store.WakeProbeHolds), at once when it was given back, at the end of
// its new open period when the probe failed. Held jobs
// wait out a probe rather than being read again every second of it, and
// are run by this rather than when the probe is taken for lost, which may
// be the handler's whole timeout later. A stop has cancelled jobBase by
// then, so the wake outlives it, for a shorter time.
func (w *queueWorker) wakeProbeHolds(name string, probeUntil, heldFrom time.Time) {
	bound := wakeProbeHoldsTimeout
	if w.jobBase.Err() != nil {
		bound = wakeProbeHoldsStopping
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.jobBase), bound)
	defer cancel()
	n, err := w.c.store.WakeProbeHolds(ctx, name, probeUntil, heldFrom)
	if err != nil {
		if !w.c.quiet(err) {
			w.c.log.Warn("pgbus: could not wake the jobs a circuit breaker held while its probe ran; they wait until the probe would have been taken for lost, or run them now with a reset of the breaker",
				"breaker", name, "woken", n, "held_until", probeUntil, "err", err)
		}
		return
	}
	if n > 0 {
		w.c.log.Debug("pgbus: woke the jobs a circuit breaker held while its probe ran", "breaker", name, "count", n)
	}
}

// releaseProbe gives back the probe of a job whose ending says nothing of
// the downstream (bad input, a discard, a snooze, a panic, a stop), so
// that the next job probes at once instead of every job of the breaker
// being snoozed until the probe is taken for lost. A stop has cancelled
// jobBase by then, so the release outlives it.
func (w *queueWorker) releaseProbe(name string, probeUntil time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.jobBase), 5*time.Second)
	defer cancel()
	change, err := w.c.store.ReleaseBreakerProbe(ctx, name, probeUntil)
	if err != nil {
		if w.c.quiet(err) {
			return
		}
		w.c.log.Warn("pgbus: could not give back the probe of a circuit breaker; the next probe waits until this one is taken for lost", "breaker", name, "err", err)
		return
	}
	w.c.observers.breakerChanged(name, change.From, change.To)
}

// breakerRecord counts a job's success or failure on its breaker, and logs
// the opening (a warning: a log kept at warnings sees a downstream cut
// off) and the closing (at info) it causes: a person watching the workers
// sees when a downstream is given a rest and when it is back.
func (w *queueWorker) breakerRecord(name string, job *Job, jobErr error, probe bool) {
	ctx, cancel := context.WithTimeout(w.jobBase, breakerCallTimeout)
	defer cancel()
	var change store.BreakerChange
	var err error
	if jobErr == nil {
		change, err = w.c.store.BreakerSucceeded(ctx, name)
		if err == nil && probe && change.To == store.BreakerClosed && change.Changed() {
			w.c.log.Info("pgbus: circuit breaker closed: its probe succeeded", "breaker", name, "queue", job.Queue, "kind", job.Kind)
		}
	} else {
		// Its class and the wait it asked for tell a downstream that
		// limits its rate (http.429) from one that is down.
		f := store.FailedCall{Error: jobErr.Error(), Class: ErrorClass(jobErr)}
		if d, ok := retryHint(jobErr); ok && f.Class != ClassNack {
			f.RetryAfter = d
		}
		change, err = w.c.store.BreakerFailedWith(ctx, name, f)
		if err == nil && change.Opened() {
			what := "pgbus: circuit breaker opened; its jobs are snoozed until it lets a probe through"
			if probe {
				what = "pgbus: circuit breaker reopened: its probe failed; its jobs are snoozed until the next probe"
			}
			w.c.log.Warn(what, "breaker", name, "queue", job.Queue, "kind", job.Kind, "failures", change.Failures,
				"probe_in", change.ProbeIn,
				"error_class", ErrorClass(jobErr))
		}
	}
	if err != nil {
		if !w.c.quiet(err) {
			w.c.log.Warn("pgbus: could not update circuit breaker", "breaker", name, "err", err)
		}
		return
	}
	w.c.observers.breakerChanged(name, change.From, change.To)
}

func (w *queueWorker) failure(m store.Message, kind string, err error, stack string) *store.Failure {
	return &store.Failure{
		Attempt: m.ReadCount, Kind: kind, ErrorClass: ErrorClass(err),
		ErrorMessage: err.Error(), Backtrace: stack,
	}
}

// attempt is one run of a handler: what it returned and how long it ran.
type attempt struct {
	err   error
	stack string
	// limit is the handler's timeout; timedOut says its context's
	// deadline passed before it returned.
	limit    time.Duration
	timedOut bool
	elapsed  time.Duration
	ran      bool
	// stillRunning is closed when the goroutine of a handler given up on
	// after its grace returns; nil for one that returned. late then holds
	// what it returned.
	stillRunning <-chan struct{}
	late         <-chan attempt
}

// addCapped adds two non-negative durations, capped at the longest
// Duration: a timeout as long as a Duration goes (as "no timeout" is
// written) plus the grace wrapped to a negative sum, whose timer fired at
// once, failing every attempt as a handler that ignored its context.
func addCapped(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// handlerTimeout bounds one attempt of h: its own timeout, else the
// queue's visibility timeout.
func (w *queueWorker) handlerTimeout(h handler) time.Duration {
	if h.opts.Timeout > 0 {
		return h.opts.Timeout
	}
	return w.c.settingsFor(w.name).VisibilityTimeout
}

// hardStopWait is how long a hard stop (the drain timeout passed) waits
// for a handler, its context cancelled, to return.
const hardStopWait = time.Second

// runHandler runs the handler with its timeout, recovering panics. A handler
// that ignores its context is given up on after the grace period, which is
// logged: its attempt is failed, and its goroutine, left to run, keeps its
// slot until it returns (attempt.stillRunning).
func (w *queueWorker) runHandler(base context.Context, h handler, job *Job) attempt {
	timeout := w.handlerTimeout(h)
	start := time.Now()
	ctx, cancel := context.WithTimeout(base, timeout)
	defer cancel()
	done := make(chan attempt, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		returned := false
		defer func() {
			if r := recover(); r != nil {
				done <- attempt{err: &classedError{class: ClassPanic, msg: fmt.Sprintf("panic: %v", r)}, stack: panicStack(string(debug.Stack()))}
			} else if !returned {
				// runtime.Goexit (t.FailNow in a test, for one) ends the
				// goroutine with nothing to recover: without this, the
				// attempt would wait out its timeout and grace, and be
				// failed as a handler that ignored its context.
				done <- attempt{err: &classedError{class: ClassPanic, msg: "panic: the handler called runtime.Goexit (as testing's FailNow and SkipNow do) instead of returning; return an error to fail the attempt"}}
			}
		}()
		err := h.fn(ctx, job)
		returned = true
		done <- attempt{err: err}
	}()
	grace := time.NewTimer(addCapped(timeout, w.c.cfg.HandlerGrace))
	defer grace.Stop()
	var a attempt
	select {
	case a = <-done:
	case <-grace.C:
		w.c.log.Error("pgbus: handler ignored its context past the grace period; its slot stays taken, and its message hidden, until it returns: a success it then returns is kept, anything else fails the attempt; make it honour ctx", "queue", job.Queue, "msg_id", job.ID, "kind", job.Kind)
		a.stillRunning, a.late = exited, done
		w.c.stuck.add(store.StuckHandler{Queue: job.Queue, MsgID: job.ID, Kind: job.Kind, GivenUpAt: w.c.store.Now()}, exited)
		a.err = &classedError{class: ClassHandlerTimeout, msg: fmt.Sprintf(
			"handler for kind %q did not return within its timeout %s plus %s grace; make it honour ctx", job.Kind, timeout, w.c.cfg.HandlerGrace)}
	case <-w.jobBase.Done():
		// The hard stop cancelled the handler's context too: one that
		// honours it returns at once (an exec handler's command is
		// killed), and its message can be given back visible now rather
		// than after its visibility timeout; a success it returns is kept.
		select {
		case a = <-done:
			if a.err != nil {
				a.err = errors.Join(w.jobBase.Err(), a.err)
			}
		case <-time.After(hardStopWait):
			a.err, a.stillRunning = w.jobBase.Err(), exited
		}
	}
	a.limit, a.elapsed, a.ran = timeout, time.Since(start), true
	a.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded) && w.jobBase.Err() == nil
	return a
}

// panicStack is the stack of a recovered panic from the frame that
// panicked on: the frames of debug.Stack, of the deferred recover and of
// the runtime's panic machinery go, so that the first lines, the ones the
// dead-letter block keeps, show where the handler went wrong.
func panicStack(stack string) string {
	lines := strings.Split(stack, "\n")
	// "goroutine N [running]:", then two lines a frame: its function, then
	// its file and line.
	for i := 1; i+1 < len(lines); i += 2 {
		if !strings.HasPrefix(lines[i], "panic(") {
			continue
		}
		from := i + 2
		for from+1 < len(lines) && strings.HasPrefix(lines[from], "runtime.") {
			from += 2
		}
		return strings.Join(append([]string{lines[0]}, lines[from:]...), "\n")
	}
	return stack
}

func parseHeaders(raw json.RawMessage) map[string]json.RawMessage {
	var h map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &h) == nil && h != nil {
		return h
	}
	return map[string]json.RawMessage{}
}

func headerString(h map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := h[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// deadlineOf is the time of message id's pgbus_deadline header, zero when
// it has none. A header that holds something else than a time (a number,
// "tomorrow", a date without its time) cannot be kept: the message runs
// without it, and the log says so at each attempt, for its sender to be
// fixed, where it said nothing and the job ran past the deadline meant.
func (w *queueWorker) deadlineOf(queue string, id int64, h map[string]json.RawMessage) time.Time {
	raw, ok := h[store.HeaderDeadline]
	if !ok || string(raw) == "null" || string(raw) == `""` {
		return time.Time{}
	}
	t, ok := store.ParseDeadline(headerString(h, store.HeaderDeadline))
	if !ok {
		shown := string(raw)
		if len(shown) > 100 {
			shown = strings.ToValidUTF8(shown[:100], "") + "…"
		}
		w.c.log.Warn(`pgbus: the message's pgbus_deadline header is no RFC 3339 time (such as "2026-12-05T18:00:00Z"): it runs without that deadline (the queue's own deadline, when it has one, applies); fix what sent it`,
			"queue", queue, "msg_id", id, "pgbus_deadline", shown)
	}
	return t
}

func idempotencyKey(h map[string]json.RawMessage, queue string, id int64) string {
	if k := headerString(h, store.HeaderIdempotencyKey); k != "" {
		return k
	}
	return fmt.Sprintf("%s:%d", queue, id)
}

// snoozeLogEvery bounds how often a queue's worker logs why it snoozes
// jobs for a reason of its own (SnoozeBecause): every job meets it.
const snoozeLogEvery = time.Minute

// logSnoozeReason tells the log why jobs go back unrun, at most once per
// snoozeLogEvery.
func (w *queueWorker) logSnoozeReason(reason error) {
	now := time.Now().UnixNano()
	last := w.snoozeLogged.Load()
	if last != 0 && now-last < int64(snoozeLogEvery) || !w.snoozeLogged.CompareAndSwap(last, now) {
		return
	}
	w.c.log.Warn("pgbus: jobs go back to their queue unrun, without using an attempt, for a reason of this worker's (said at most once a minute)",
		"queue", w.name, "reason", reason.Error())
}
