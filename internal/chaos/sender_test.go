package chaos_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// payload is what every soak message carries: an id no other message has,
// and the queue it was sent to.
type payload struct {
	UID   string `json:"uid"`
	Queue string `json:"queue"`
}

// sender sends n messages, spread over the queues, at rate per second (it
// catches up after an outage), and retries each until it is known to be
// stored exactly once.
type sender struct {
	st     *store.Store
	queues []string
	n      int
	rate   float64
	sent   []payload // in order, once stored
}

// run sends until all n are stored or ctx ends.
func (s *sender) run(ctx context.Context) error {
	start := time.Now()
	for i := range s.n {
		due := start.Add(time.Duration(float64(i) / s.rate * float64(time.Second)))
		if err := sleepUntil(ctx, due); err != nil {
			return err
		}
		p := payload{UID: fmt.Sprintf("m%06d", i), Queue: s.queues[i%len(s.queues)]}
		if err := s.sendOne(ctx, p); err != nil {
			return err
		}
		s.sent = append(s.sent, p)
	}
	return nil
}

// sendOne sends p until a send succeeds. A failed send may have been
// stored all the same (the server went away after the commit, before its
// answer): before sending again, it looks for p, which the idempotency key
// alone would not find once p has been dead-lettered.
func (s *sender) sendOne(ctx context.Context, p payload) error {
	msg, err := engine.NewMessage(p, engine.SendOptions{Kind: "chaos", IdempotencyKey: p.UID})
	if err != nil {
		return err
	}
	for {
		if _, err := s.st.Send(ctx, p.Queue, msg); err == nil {
			return nil
		}
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return err
		}
		if stored, err := isStored(ctx, s.st, p); err == nil && stored {
			return nil
		}
	}
}

// isStored tells whether a message with p's uid is anywhere in p's queue's
// tables.
func isStored(ctx context.Context, st *store.Store, p payload) (bool, error) {
	var found bool
	err := st.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM (`+unionOf(p.Queue, "message")+
		`) AS m WHERE message->>'uid' = $1)`, p.UID).Scan(&found)
	return found, err
}

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
