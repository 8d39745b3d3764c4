package runner

import (
	"context"
	"sync"

	"github.com/pgbus/pgbus/internal/dbopen"
	"github.com/pgbus/pgbus/ops"
)

// WhenReady readies db in the background, for a server that serves before
// its database answers (dbopen.Dial): while it connects and migrates or
// checks the schema, as migrate says (dbopen.DB.ReadyWhenReachable, with
// its growing delay), gate holds the calls of the services that share it,
// saying why; once the schema is ready it calls then, its calls let
// through (ops.Gate.Through), which starts what needs the database
// (workers, alerts) and returns what stops it, and then opens gate. A
// failure of then, as it would have at start, is passed to fail, which
// ends the server; so is a failure to ready the schema that no wait can
// mend (dbopen.Permanent: only another pgbus reads the schema). The
// function WhenReady returns ends the wait, or stops what then started,
// and returns once it has.
func WhenReady(ctx context.Context, db *dbopen.DB, migrate bool, gate *ops.Gate, then func(context.Context) (stop func(), err error), fail func(error)) (stop func()) {
	waitCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var mu sync.Mutex
	var stopThen func()
	go func() {
		defer close(done)
		if err := db.ReadyWhenReachable(waitCtx, migrate, gate.Hold); err != nil {
			if waitCtx.Err() == nil {
				fail(err) // only another pgbus can use this database
			}
			return // else stopped while waiting
		}
		// The workers' queues are made before any other call runs.
		s, err := then(gate.Through(ctx))
		if err != nil {
			fail(err)
			return
		}
		mu.Lock()
		stopThen = s
		mu.Unlock()
		gate.Open()
	}()
	return func() {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if stopThen != nil {
			stopThen()
		}
	}
}
