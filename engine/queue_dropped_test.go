package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue dropped by another process while its workers run: the worker
// says so once, at warn, waits quietly (no line per read), and works the
// queue again once it is created again, saying so; dropped a second time,
// it says so once more.
func TestWorkerWaitsForItsDroppedQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	other := pgtest.OpenStore(t, pgtest.URL(t)) // the operator's pgbus queue drop and create
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	var runs atomic.Int32
	c.HandleQueue(q, func(context.Context, *engine.Job) error { runs.Add(1); return nil })
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the first message to run", func() bool { return runs.Load() == 1 })

	dropped, back := "the queue was dropped while its workers ran; they wait for it to be created again (create the queue again)", "the dropped queue was created again; working it"
	count := func(s string) int { return strings.Count(logs.String(), s) }
	for round := 1; round <= 2; round++ {
		if err := other.DropQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		pgtest.Eventually(t, 30*time.Second, "the worker to say the queue was dropped", func() bool { return count(dropped) == round })
		// Twenty checks at the 50ms poll interval while the queue stays
		// missing: a line per failed read would have said so four times.
		time.Sleep(time.Second)
		if err := other.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		pgtest.SetFastSettings(t, other, q, nil)
		pgtest.Send(t, c, q, 1, engine.SendOptions{})
		pgtest.Eventually(t, 30*time.Second, "the message sent to the queue made again to run", func() bool { return runs.Load() == int32(1+round) })
		pgtest.Eventually(t, 30*time.Second, "its outcome to be written", func() bool { return pgtest.Archived(t, s, q) == 1 })
		if n, m, f := count(dropped), count(back), count("read failed"); n != round || m != round || f != 0 {
			t.Fatalf("round %d: %d lines say the queue was dropped, %d that it is back, %d that a read failed; want %d, %d and 0; log:\n%s", round, n, m, f, round, round, logs.String())
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("round %d: an error was logged:\n%s", round, logs.String())
		}
	}
}

// A queue dropped and made again with other settings while its workers
// wait for it is worked with its new settings from its first message:
// the workers read them when it is back. They went on with the settings
// read before (or, read while it was gone, the defaults) until their next
// refresh, so a message of a queue made with max_retries 1 was retried.
func TestQueueMadeAgainIsWorkedWithItsNewSettings(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 3 })
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.SettingsRefresh = time.Hour // only the reads at start and when the queue is back
	})
	var ran, runs atomic.Int32
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		if job.Kind != "fails" {
			ran.Add(1)
			return nil
		}
		runs.Add(1)
		return errors.New("upstream 503")
	})
	pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	pgtest.Eventually(t, 30*time.Second, "the worker to work the queue", func() bool { return ran.Load() == 1 })
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the worker to say the queue was dropped", func() bool {
		return strings.Contains(logs.String(), "the queue was dropped while its workers ran")
	})
	// Made again with its settings in one transaction, as pgbus queue
	// create does: no check of the worker finds it without them.
	again := pgtest.FastSettings(q)
	again.MaxRetries = 1
	if err := s.CreateQueueWithSettings(ctx, 0, again); err != nil {
		t.Fatal(err)
	}
	pgtest.Send(t, c, q, 1, engine.SendOptions{Kind: "fails"})
	pgtest.Eventually(t, 30*time.Second, "the message to be dead-lettered", func() bool { return dlqCount(t, s, q) == 1 })
	if n := runs.Load(); n != 1 {
		t.Errorf("the message of the queue made again with max_retries 1 ran %d times, want once:\n%s", n, logs.String())
	}
}

// Of two reads of the queue settings, the one begun first, whose answer
// comes back after the other stored newer settings, stores nothing: the
// periodic refresh, begun before a worker read its queue made again, put
// back the settings it read before (or the defaults, read while the queue
// was gone) over the new ones until its next turn.
func TestSettingsReadBegunFirstDoesNotOverwriteALaterOne(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t) // the answer holds the settings of this test's queue alone
	owner := pgtest.OpenStore(t, url)
	q := newQueue(t, owner, func(qs *store.QueueSettings) { qs.MaxRetries = 3 })
	proxy := pgtest.NewFreezingProxy(t, url)
	c := pgtest.NewClient(t, pgtest.OpenStore(t, proxy.URL()), q, nil)

	held, release := proxy.HoldWhenReceived(q)
	t.Cleanup(release)
	first := make(chan error, 1)
	go func() { first <- engine.RefreshSettings(ctx, c) }()
	select {
	case <-held: // read, with max_retries 3, and its answer on its way
	case err := <-first:
		t.Fatalf("the first read of the settings ended before its answer was held: %v", err)
	}
	pgtest.SetFastSettings(t, owner, q, func(qs *store.QueueSettings) { qs.MaxRetries = 7 })
	if err := engine.RefreshSettings(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := engine.SettingsOf(c, q).MaxRetries; got != 7 {
		t.Fatalf("max_retries after the later read: %d, want 7", got)
	}
	release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := engine.SettingsOf(c, q).MaxRetries; got != 7 {
		t.Errorf("max_retries once the read begun first came back: %d, want the 7 the later read stored, not the 3 it read before", got)
	}
}
