package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A job whose outcome could not be written, its message no longer at the
// read that ran it (its claim lapsed and it was read again, or it was
// deleted), may run again or already has: a person watching at the warn
// level learns it, with how many and what to check, since the job's side
// effects may happen twice.
func TestUnwrittenOutcomesLoggedAtWarn(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, nil)
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var ran atomic.Int32
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = log })
	c.Handle("gone", func(ctx context.Context, j *engine.Job) error {
		// The message leaves the queue while its job runs, as one read
		// again by another worker leaves this read behind.
		if _, err := s.Pool().Exec(ctx, `DELETE FROM pgmq.q_`+q+` WHERE msg_id = $1`, j.ID); err != nil {
			return err
		}
		ran.Add(1)
		return nil
	}, engine.HandlerOptions{})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "gone"})
	pgtest.Eventually(t, 30*time.Second, "the unwritten outcome logged", func() bool {
		return strings.Contains(logs.String(), "outcomes not written")
	})
	out := logs.String()
	for _, want := range []string{"level=WARN", "queue=" + q, "outcome=success", "count=1", "visibility"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if ran.Load() != 1 {
		t.Errorf("the job ran %d times; want once", ran.Load())
	}
}
