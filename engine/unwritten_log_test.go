package engine_test

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A job whose outcome could not be written, its message taken from the
// read that ran it, may run again or already has: a person watching at
// the warn level learns it, with the messages' ids. Here another client
// deleted one message and archived the other while their jobs ran, well
// within their visibility timeout: the log says so, and does not blame
// the timeout.
func TestUnwrittenOutcomesLoggedAtWarn(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Minute })
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var ran atomic.Int32
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) { c.Logger = log })
	take := func(sql string) engine.HandlerFunc {
		return func(ctx context.Context, j *engine.Job) error {
			// Another client takes the message while its job runs.
			if _, err := s.Pool().Exec(ctx, sql, j.ID); err != nil {
				return err
			}
			ran.Add(1)
			return nil
		}
	}
	c.Handle("deleted", take(`DELETE FROM pgmq.q_`+q+` WHERE msg_id = $1`), engine.HandlerOptions{})
	c.Handle("archived", take(`WITH d AS (DELETE FROM pgmq.q_`+q+` WHERE msg_id = $1 RETURNING *)
		INSERT INTO pgmq.a_`+q+` (msg_id, read_ct, enqueued_at, vt, message, headers) SELECT msg_id, read_ct, enqueued_at, vt, message, headers FROM d`), engine.HandlerOptions{})
	pgtest.Start(t, c)
	deleted := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "deleted"})
	archived := pgtest.Send(t, c, q, 2, engine.SendOptions{Kind: "archived"})
	// The two outcomes may be written in one batch or in two: their ids
	// are looked for in every list of ids logged.
	pgtest.Eventually(t, 30*time.Second, "both unwritten outcomes logged", func() bool {
		logged := map[string]bool{}
		for _, m := range regexp.MustCompile(`ids="?\[([0-9 ]+)\]`).FindAllStringSubmatch(logs.String(), -1) {
			for _, id := range strings.Fields(m[1]) {
				logged[id] = true
			}
		}
		return logged[strconv.FormatInt(deleted, 10)] && logged[strconv.FormatInt(archived, 10)]
	})
	out := logs.String()
	for _, want := range []string{"level=WARN", "outcomes not written", "queue=" + q, "outcome=success", "another client", "before their visibility timeout passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "outlasts") {
		t.Errorf("the log blames the visibility timeout, which had not passed:\n%s", out)
	}
	if ran.Load() != 2 {
		t.Errorf("the jobs ran %d times; want once each", ran.Load())
	}
}

// A job that outlasted its message's visibility timeout, its heartbeat
// held back, finds its message read again: the log names it and says to
// check the visibility timeout.
func TestUnwrittenOutcomeAfterTheTimeoutBlamesIt(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.VisibilityTimeout = time.Second })
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c := pgtest.NewClient(t, s, q, func(c *engine.Config) {
		c.Logger = log
		c.Queues[0].Concurrency = 1 // no read of its own while the job runs
		engine.HoldHeartbeat(c, func() bool { return true })
	})
	c.Handle("slow", func(ctx context.Context, j *engine.Job) error {
		if j.Attempt > 1 {
			return nil
		}
		// Wait out the visibility timeout, then read the message again
		// as another reader does once it passed.
		for {
			var passed bool
			if err := s.Pool().QueryRow(ctx, `SELECT vt <= clock_timestamp() FROM pgmq.q_`+q+` WHERE msg_id = $1`, j.ID).Scan(&passed); err != nil {
				return err
			}
			if passed {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		_, err := s.Pool().Exec(ctx, `UPDATE pgmq.q_`+q+` SET read_ct = read_ct + 1, vt = clock_timestamp() + interval '1 minute'
			WHERE msg_id = $1 AND read_ct = 1`, j.ID)
		return err
	}, engine.HandlerOptions{Timeout: time.Minute}) // past the visibility timeout
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "slow"})
	pgtest.Eventually(t, 30*time.Second, "the unwritten outcome logged", func() bool {
		return strings.Contains(logs.String(), "outcomes not written")
	})
	out := logs.String()
	for _, want := range []string{"level=WARN", "queue=" + q, "outcome=success", "ids=[" + strconv.FormatInt(id, 10) + "]", "outlasts its jobs"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}
