package store

import (
	"context"
	"time"

	"github.com/pgbus/pgbus/internal/grace"
)

// moveGrace is how long a move under way may go on once its call is
// cancelled: a move takes milliseconds, unless it waits for a lock.
const moveGrace = 10 * time.Second

// finishStatement runs fn, one statement whose effect its caller counts,
// unless ctx has already ended. A statement the cancellation of ctx cut
// off could still commit, its outcome never read, and go uncounted; so fn
// gets a context that lets it finish, unless it is still going moveGrace
// after the cancellation.
func finishStatement(ctx context.Context, fn func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, stop := grace.After(ctx, moveGrace)
	defer stop()
	return fn(c)
}
