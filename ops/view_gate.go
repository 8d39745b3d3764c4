package ops

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/pgbus/pgbus/store"
)

// DefaultViewBytes is the most payload bytes a Service's views work on at
// once by default (Options.ViewBytes): one payload of the largest size a
// message may have, or many small ones. Redacting and previewing a payload
// takes memory several times its size, so views of large payloads called
// at once would otherwise each take that much.
const DefaultViewBytes = store.MaxPayloadBytes

// viewGate bounds the payload bytes the views of all calls work on at
// once: a call takes a share of its payload's size before it redacts it,
// waiting while other calls hold the rest, and gives it back once its
// view is made. A payload larger than the bound takes all of it.
type viewGate struct {
	sem  *semaphore.Weighted
	size int64
	// held is what calls hold now, peak the most they held at once,
	// waiting how many calls wait for their share.
	held, peak, waiting atomic.Int64
	// read counts the payload bytes views read from the store.
	read atomic.Int64
	// whileHeld, when set (tests), runs while a call holds its share.
	whileHeld func()
}

func newViewGate(size int64) *viewGate {
	return &viewGate{sem: semaphore.NewWeighted(size), size: size}
}

// viewWaitError is the error of a call whose context ended while it
// waited for its share of the gate: it stopped, and the database is
// not at fault.
type viewWaitError struct{ err error }

func (e viewWaitError) Error() string { return e.err.Error() }
func (e viewWaitError) Unwrap() error { return e.err }

// viewShare waits, on the context the caller gave (not the call's bound
// on its database work, which a wait does not use), for the share of a
// view of n payload bytes, and returns what gives it back. what names the
// view in the error of a call that could not wait long enough, again is
// its next step, and shown says whether the view showed payloads, which
// a view without them does not wait for.
func (s *Service) viewShare(ctx context.Context, n int, what string, shown bool, again ...Hint) (release func(), err error) {
	g := s.views
	w := min(int64(n), g.size)
	if w <= 0 {
		return func() {}, nil
	}
	if b, ok := ctx.Value(callBoundKey{}).(*callBound); ok {
		ctx = b.outer
	}
	if !g.sem.TryAcquire(w) {
		g.waiting.Add(1)
		err := g.sem.Acquire(ctx, w)
		g.waiting.Add(-1)
		if err != nil {
			next := "try again once they are done"
			if shown {
				next += ", or without payloads, which do not wait for them"
			}
			return nil, &Error{
				Msg: fmt.Sprintf("%s waited for its share of the %d payload bytes that views may work on at once, as other calls were viewing large payloads, and the call's context ended first (%v): %s",
					what, g.size, err, next),
				Hints: again, Err: viewWaitError{err: err},
			}
		}
	}
	held := g.held.Add(w)
	for p := g.peak.Load(); held > p && !g.peak.CompareAndSwap(p, held); p = g.peak.Load() {
	}
	if g.whileHeld != nil {
		g.whileHeld()
	}
	return func() {
		g.held.Add(-w)
		g.sem.Release(w)
	}, nil
}

// isViewWait reports whether err is a call stopped while it waited for its
// share of the view gate.
func isViewWait(err error) bool { return errors.As(err, new(viewWaitError)) }
