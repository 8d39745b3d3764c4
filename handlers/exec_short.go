package handlers

import (
	"fmt"
	"sync"
	"time"

	"github.com/pgbus/pgbus/engine"
)

// shortSnooze is how long a job waits, the first time the worker lacked
// what it takes to start the command (workerShort); each further failure
// doubles it, up to shortSnoozeMax.
const shortSnooze = 5 * time.Second

// shortSnoozeMax bounds the wait of shortSnooze, doubled.
const shortSnoozeMax = 5 * time.Minute

// shortBackoff is an exec handler's back-off while its worker lacks what
// it takes to start a command (file descriptors, processes, memory): the
// first job that fails so goes back for shortSnooze, and the jobs that
// come meanwhile go back until then without trying, as they would fail
// the same way; a failure once it passed doubles the wait, up to
// shortSnoozeMax, and a command that starts ends it. Without it every job
// of the queue tried, failed and went back every shortSnooze, the whole
// queue read again and again. Only the first failure of each spell gives
// the engine its reason, which the worker's log says once; the jobs held
// after it go back without one.
type shortBackoff struct {
	mu    sync.Mutex
	wait  time.Duration // the wait after the last failure; 0 when none
	until time.Time     // the jobs go back until then, untried
}

// held is the snooze of a job that comes while the back-off lasts at now,
// nil when it may try to start its command.
func (b *shortBackoff) held(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wait == 0 || !now.Before(b.until) {
		return nil
	}
	return engine.Snooze(b.until.Sub(now))
}

// failed is the snooze of a job whose command could not start, at now, for
// e, a lack of the worker's: the back-off starts, or grows when its wait
// had passed.
func (b *shortBackoff) failed(e *StartError, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wait > 0 && now.Before(b.until) {
		// Another job of this spell, started before it began.
		return engine.Snooze(b.until.Sub(now))
	}
	first := b.wait == 0
	b.wait = min(max(2*b.wait, shortSnooze), shortSnoozeMax)
	b.until = now.Add(b.wait)
	if !first {
		return engine.Snooze(b.wait) // said at the spell's start
	}
	e.Problem += fmt.Sprintf("; the queue's jobs go back untried for %s, then for twice as long after each failure, up to %s, until a command starts (said once)", shortSnooze, shortSnoozeMax)
	return engine.SnoozeBecause(b.wait, e)
}

// started ends the back-off: a command started.
func (b *shortBackoff) started() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wait, b.until = 0, time.Time{}
}
