package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func newPriorityQueue(t *testing.T, s *store.Store, levels int) string {
	t.Helper()
	ctx := testContext(t)
	name := uniqueName("pq")
	if err := s.CreatePriorityQueue(ctx, name, levels); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), name) })
	pgtest.SetFastSettings(t, s, name, nil)
	return name
}

// With one worker, everything waiting at level 0 runs before level 1, and
// level 1 before level 2, whatever the order of sending.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newPriorityQueue(t, s, 3)
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Queues[0].Concurrency = 1 })
	var mu sync.Mutex
	var order []int
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		var in struct{ P int }
		if err := job.Decode(&in); err != nil {
			return err
		}
		mu.Lock()
		order = append(order, in.P)
		mu.Unlock()
		return nil
	})
	for _, p := range []int{2, 1, 2, 0, 1, 0, 2} {
		pgtest.Send(t, c, q, map[string]int{"P": p}, engine.SendOptions{Priority: p})
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, 20*time.Second, "all 7 handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 7 })
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("handled in priority order %v; level 0 must come first", order)
		}
	}
	pgtest.Eventually(t, 20*time.Second, "2 + 2 + 3 archived in the levels", func() bool {
		return pgtest.Archived(t, s, store.PriorityQueueName(q, 0)) == 2 && pgtest.Archived(t, s, store.PriorityQueueName(q, 1)) == 2 &&
			pgtest.Archived(t, s, store.PriorityQueueName(q, 2)) == 3
	})
}

// A sub-queue's dead message names the sub-queue, and DLQ retry returns it
// there.
func TestPriorityDeadLetterAndRetryToSubQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	c := pgtest.NewClient(t, s, q, nil)
	fail := true
	var mu sync.Mutex
	c.HandleQueue(q, func(context.Context, *engine.Job) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return engine.NonRetryable(errors.New("bad input"))
		}
		return nil
	})
	stop := pgtest.Start(t, c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{Priority: 2})
	pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
	d := deadMessages(t, s, q)[0]
	sub := store.PriorityQueueName(q, 2)
	if d.Block["source_queue"] != sub {
		t.Fatalf("source_queue = %v, want %s", d.Block["source_queue"], sub)
	}
	stop()
	mu.Lock()
	fail = false
	mu.Unlock()
	rep, err := s.RetryDead(ctx, store.DLQName(q), []int64{d.ID}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	if n := pgtest.Live(t, s, sub); n != 1 {
		t.Fatalf("%s holds %d messages after retry, want 1", sub, n)
	}
}

func TestPrioritySendAndCreateBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 2)
	c := pgtest.NewClient(t, s, q, nil)
	for _, p := range []int{-1, 2, 1 << 30} {
		if _, err := c.Send(ctx, q, 1, engine.SendOptions{Priority: p}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("priority %d: %v, want ErrInvalid", p, err)
		}
	}
	plain := newQueue(t, s, nil)
	if _, err := c.Send(ctx, plain, 1, engine.SendOptions{Priority: 1}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("priority on a plain queue: %v, want ErrInvalid", err)
	}
	for _, levels := range []int{-1, 0, 1, 11, 1 << 20} {
		if err := s.CreatePriorityQueue(ctx, uniqueName("pq"), levels); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("levels %d: %v, want ErrInvalid", levels, err)
		}
	}
	if err := s.CreatePriorityQueue(ctx, q, 3); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("re-create with other levels: %v, want ErrInvalid", err)
	}
	if err := s.CreatePriorityQueue(ctx, q, 2); err != nil {
		t.Errorf("re-create with the same levels: %v, want nil (idempotent)", err)
	}
	if err := s.CreateQueue(ctx, q); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("CreateQueue on a priority queue: %v, want ErrInvalid", err)
	}
	if pgtest.Live(t, s, store.PriorityQueueName(q, 0)) != 0 {
		t.Error("bad sends wrote messages")
	}
}

// A priority queue is worked as one queue: WorkQueues lists it once, by its
// name, and not its levels. (Its stats over the levels are tested in package
// ops.)
func TestPriorityWorkQueuesListTheQueueOnce(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	all, err := s.WorkQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range all {
		for p := range 3 {
			if name == store.PriorityQueueName(q, p) {
				t.Fatalf("WorkQueues lists the sub-queue %s; it should list %s once", name, q)
			}
		}
		if name == q {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("WorkQueues lists %s %d times, want once: %v", q, found, all)
	}
}

// An idempotency key is per level of a priority queue: a resend at the
// first message's level returns it, one at another level is a message of
// that level.
func TestIdempotencyKeyIsPerPriorityLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newPriorityQueue(t, s, 2)
	c := pgtest.NewClient(t, s, q, nil)
	first := pgtest.Send(t, c, q, 1, engine.SendOptions{IdempotencyKey: "page-7"})
	if again := pgtest.Send(t, c, q, 1, engine.SendOptions{IdempotencyKey: "page-7"}); again != first {
		t.Fatalf("a resend at the same level = message %d, want the first, %d", again, first)
	}
	pgtest.Send(t, c, q, 1, engine.SendOptions{IdempotencyKey: "page-7", Priority: 1})
	for level, want := range []int{1, 1} {
		if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+store.PriorityQueueName(q, level)+`"`); n != want {
			t.Errorf("level %d holds %d messages, want %d", level, n, want)
		}
	}
}

// SendOrFind reports a send whose idempotency key matched a message sent
// before, at its level, whose id it returns: nothing new is sent. A send
// without a key, or with a key new at its level, is no such send.
func TestSendOrFindReportsAKeyAlreadySent(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newPriorityQueue(t, s, 2)
	c := pgtest.NewClient(t, s, q, nil)
	ctx := testContext(t)
	for _, step := range []struct {
		opts  engine.SendOptions
		found bool
	}{
		{engine.SendOptions{IdempotencyKey: "page-8"}, false},
		{engine.SendOptions{IdempotencyKey: "page-8"}, true},
		{engine.SendOptions{IdempotencyKey: "page-8", Priority: 1}, false},
		{engine.SendOptions{IdempotencyKey: "page-8", Priority: 1}, true},
		{engine.SendOptions{}, false},
	} {
		if _, found, err := c.SendOrFind(ctx, q, 1, step.opts); err != nil || found != step.found {
			t.Fatalf("SendOrFind %+v: found %v, %v; want found %v", step.opts, found, err, step.found)
		}
	}
	for level, want := range []int{2, 1} {
		if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+store.PriorityQueueName(q, level)+`"`); n != want {
			t.Errorf("level %d holds %d messages, want %d", level, n, want)
		}
	}
}

// A priority level is no queue to work alone: Run refuses it, naming the
// queue to work, and makes no DLQ for it, where it worked the level with
// the default settings and dead-lettered into a DLQ of the level's own.
func TestRunRefusesAPriorityLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	p1 := store.PriorityQueueName(q, 1)
	c := pgtest.NewClient(t, s, p1, nil)
	c.HandleQueue(p1, func(context.Context, *engine.Job) error { return nil })
	err := c.Run(ctx)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `work queue "`+q+`"`) {
		t.Fatalf("Run on level %s = %v, want ErrInvalid saying to work %s", p1, err, q)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.meta WHERE queue_name = $1`, store.DLQName(p1)); n != 0 {
		t.Fatalf("Run made a DLQ %s for the level", store.DLQName(p1))
	}
}

// A job keeps its idempotency key across trips out of the DLQ: a message
// sent without a key has the default one, "<queue>:<msg_id>" of the
// physical queue it was read from, and a retry brings it back with a new
// id, so the retry sets the key header to the key it had. Handlers pass
// the key downstream, which must recognise the retried job for the one
// that may have acted already. The key set so is no send's: a send with
// it is a new message, as it was while the first one was live.
func TestDLQRetryKeepsTheDefaultIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 3)
	sub := store.PriorityQueueName(q, 2)
	c := pgtest.NewClient(t, s, q, nil)
	keys := make(chan string, 8)
	var calls atomic.Int32
	c.HandleQueue(q, func(_ context.Context, job *engine.Job) error {
		keys <- job.IdempotencyKey
		if calls.Add(1) <= 2 {
			return engine.NonRetryable(errors.New("downstream timed out"))
		}
		return nil
	})
	pgtest.Start(t, c)
	first := pgtest.Send(t, c, q, 1, engine.SendOptions{Priority: 2})
	want := sub + ":" + itoa(first)
	var lastID int64
	for trip := range 3 {
		select {
		case k := <-keys:
			if k != want {
				t.Fatalf("run %d saw idempotency key %q, want %q, the key the job was first run with", trip+1, k, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("run %d did not happen", trip+1)
		}
		if trip == 2 {
			break
		}
		pgtest.Eventually(t, 20*time.Second, "the message in the DLQ", func() bool { return len(deadMessages(t, s, q)) == 1 })
		d := deadMessages(t, s, q)[0]
		rep, err := s.RetryDead(ctx, store.DLQName(q), []int64{d.ID}, store.RetryOptions{})
		if err != nil || rep.Retried != 1 || rep.Moved[0].Queue != sub {
			t.Fatalf("retry %d = %+v, %v; want the message back in %s", trip+1, rep, err, sub)
		}
		lastID = rep.Moved[0].MsgID
	}
	again, err := c.Send(ctx, q, 2, engine.SendOptions{Priority: 2, IdempotencyKey: want})
	if err != nil || again == lastID || again == first {
		t.Fatalf("send with the kept key = %d, %v; want a new message, not the retried one (%d): no send wrote that key", again, err, lastID)
	}
}

// A queue dropped and made again with more priority levels between two
// reads of its idle workers: no read fails, the levels the workers know
// being there again, so the check of settings tells them, and they work
// the new levels, saying so once; a send to a new level wakes them. Their
// messages waited unrun until the process restarted.
func TestQueueMadeAgainWithMoreLevelsIsWorked(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 2)
	var logs lockedBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) {
		// Idle workers that read nothing unless a notification wakes
		// them: the check of settings alone can tell.
		cfg.PollInterval = time.Hour
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error { return nil })
	if _, err := c.Send(ctx, q, 1, engine.SendOptions{Priority: 1}); err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	pgtest.Eventually(t, 20*time.Second, "the first message run", func() bool { return pgtest.Archived(t, s, store.PriorityQueueName(q, 1)) == 1 })
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, q, 3); err != nil {
		t.Fatal(err)
	}
	want := "the queue was made again with 3 priority levels, where this worker read 2 priority levels: it works the new layout"
	pgtest.Eventually(t, 20*time.Second, "the new layout logged", func() bool { return strings.Contains(logs.String(), want) })
	if _, err := c.Send(ctx, q, 2, engine.SendOptions{Priority: 2}); err != nil {
		t.Fatalf("a send to the new level 2: %v", err)
	}
	pgtest.Eventually(t, 30*time.Second, "the message of the new level 2 run", func() bool { return pgtest.Archived(t, s, store.PriorityQueueName(q, 2)) == 1 })
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Fatalf("the new layout logged %d times, want once:\n%s", n, logs.String())
	}
}

// A client that only sends reads a queue's layout again once it is a few
// seconds old: dropped and made again without levels while a plain queue
// took the name of one of its old levels, the queue got nothing and the
// sends went to that other queue, without an error, for as long as the
// client lived.
func TestSendReadsAStaleLayoutAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newPriorityQueue(t, s, 2)
	c := pgtest.NewClient(t, s, q, nil)
	pgtest.Send(t, c, q, 0, engine.SendOptions{Priority: 0}) // the client reads the two levels

	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{q, store.PriorityQueueName(q, 0)} {
		if err := s.CreateQueue(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), store.PriorityQueueName(q, 0)) })
	engine.AgeSendLayouts(c)
	pgtest.Send(t, c, q, 1, engine.SendOptions{})
	if in, astray := pgtest.Live(t, s, q), pgtest.Live(t, s, store.PriorityQueueName(q, 0)); in != 1 || astray != 0 {
		t.Errorf("after the layout aged: %d messages in %s, %d in the plain queue %s; want 1 and 0", in, q, astray, store.PriorityQueueName(q, 0))
	}
}
