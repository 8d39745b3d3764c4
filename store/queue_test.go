package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func queueNames(t *testing.T, s *store.Store) []string {
	t.Helper()
	qs, err := s.ListQueues(testContext(t))
	if err != nil {
		t.Fatalf("list queues: %v", err)
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		names[i] = q.Name
	}
	return names
}

func TestCreateQueueMakesQueueAndDLQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	name := newQueue(t, s)
	names := queueNames(t, s)
	for _, want := range []string{name, name + "_dlq"} {
		if !slices.Contains(names, want) {
			t.Fatalf("ListQueues = %v, want it to contain %q", names, want)
		}
	}
	if !slices.IsSorted(names) {
		t.Fatalf("ListQueues not sorted by name: %v", names)
	}
	for _, table := range []string{"q_" + name, "a_" + name, "q_" + name + "_dlq", "a_" + name + "_dlq"} {
		if !tableExists(t, s, table) {
			t.Fatalf("table pgmq.%s missing after CreateQueue", table)
		}
	}
}

func TestCreateQueueIsIdempotentUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("conc")
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), name) })
	if _, err := s.Send(ctx, name, msg(`{"early":true}`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("send before create = %v, want ErrNotFound", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.CreateQueue(ctx, name)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent CreateQueue: %v", err)
		}
	}
	id, err := s.Send(ctx, name, msg(`{"a":1}`))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	// A later create must not touch existing messages.
	if err := s.CreateQueue(ctx, name); err != nil {
		t.Fatalf("create again: %v", err)
	}
	m, err := s.Metrics(ctx, name)
	if err != nil || m.Depth != 1 {
		t.Fatalf("after re-create depth = %d (err %v), want 1 (message %d kept)", m.Depth, err, id)
	}
	var metaRows int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pgmq.meta WHERE queue_name IN ($1, $2)`, name, name+"_dlq").Scan(&metaRows); err != nil {
		t.Fatal(err)
	}
	if metaRows != 2 {
		t.Fatalf("pgmq.meta rows for %s = %d, want 2", name, metaRows)
	}
}

func TestDropQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := uniqueName("drop")
	if err := s.CreateQueue(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, name, msg(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := s.DropQueue(ctx, name); err != nil {
		t.Fatalf("drop: %v", err)
	}
	names := queueNames(t, s)
	if slices.Contains(names, name) || slices.Contains(names, name+"_dlq") {
		t.Fatalf("dropped queue still listed: %v", names)
	}
	for _, table := range []string{"q_" + name, "a_" + name, "q_" + name + "_dlq", "a_" + name + "_dlq"} {
		if tableExists(t, s, table) {
			t.Fatalf("table pgmq.%s survived DropQueue", table)
		}
	}
	err := s.DropQueue(ctx, name)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second drop = %v, want ErrNotFound", err)
	}
	if _, err := s.Send(ctx, name, msg(`1`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("send to dropped queue = %v, want ErrNotFound", err)
	}
	if _, err := s.Read(ctx, name, secondVT, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read from dropped queue = %v, want ErrNotFound", err)
	}
}

func TestPurgeQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	name := newQueue(t, s)
	if _, err := s.SendBatch(ctx, name, msgs(5)); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(ctx, name, secondVT, 1)
	if err != nil || len(read) != 1 {
		t.Fatalf("read: %v %v", read, err)
	}
	if _, err := s.Archive(ctx, name, read[0].ID); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeQueue(ctx, name)
	if err != nil || n != 4 {
		t.Fatalf("purge = %d, %v; want 4", n, err)
	}
	m, err := s.Metrics(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if m.Depth != 0 || m.Archived != 1 {
		t.Fatalf("after purge depth=%d archived=%d; want 0 and 1 (the archive is kept)", m.Depth, m.Archived)
	}
	if _, err := s.PurgeQueue(ctx, uniqueName("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purge unknown queue = %v, want ErrNotFound", err)
	}
}

func TestQueueOperationsRejectBadNamesAndWriteNothing(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	// Only this test's own queue is checked afterwards: the database is
	// shared with other packages' tests, whose queues come and go meanwhile.
	mine := newQueue(t, s)
	if _, err := s.Send(ctx, mine, msg(`1`)); err != nil {
		t.Fatal(err)
	}
	bad := []string{`x"; DROP TABLE pgmq.meta; --`, "Orders", "", "a;b", "ü"}
	for _, name := range bad {
		if err := s.CreateQueue(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateQueue(%q) = %v, want ErrInvalid", name, err)
		}
		if err := s.DropQueue(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("DropQueue(%q) = %v, want ErrInvalid", name, err)
		}
		if _, err := s.PurgeQueue(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PurgeQueue(%q) = %v, want ErrInvalid", name, err)
		}
		if _, err := s.Send(ctx, name, msg(`1`)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Send(%q) = %v, want ErrInvalid", name, err)
		}
		if _, err := s.Read(ctx, name, secondVT, 1); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Read(%q) = %v, want ErrInvalid", name, err)
		}
		if _, err := s.Metrics(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Metrics(%q) = %v, want ErrInvalid", name, err)
		}
	}
	after := queueNames(t, s)
	if !slices.Contains(after, mine) || !slices.Contains(after, mine+"_dlq") {
		t.Fatalf("queue %q or its DLQ vanished after bad-input calls: %v", mine, after)
	}
	for _, name := range bad {
		if slices.Contains(after, name) {
			t.Fatalf("bad name %q became a queue", name)
		}
	}
	if !tableExists(t, s, "meta") {
		t.Fatal("pgmq.meta is gone after an injection attempt")
	}
	if m, err := s.Metrics(ctx, mine); err != nil || m.Depth != 1 {
		t.Fatalf("queue %q after bad-input calls: depth %d, %v; want its one message", mine, m.Depth, err)
	}
}

// QueueExists follows the catalog: a queue dropped outside pgbus (no
// cache of this store saw it go) is gone at once.
func TestQueueExists(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	for _, name := range []string{q, store.DLQName(q)} {
		if ok, err := s.QueueExists(ctx, name); err != nil || !ok {
			t.Fatalf("QueueExists(%s) = %v, %v; want true", name, ok, err)
		}
	}
	if _, err := s.Send(ctx, q, msg(`{}`)); err != nil {
		t.Fatal(err)
	}
	pgtest.DropOutside(t, s, q)
	if ok, err := s.QueueExists(ctx, q); err != nil || ok {
		t.Fatalf("QueueExists after its table was dropped = %v, %v; want false", ok, err)
	}
	if _, err := s.QueueExists(ctx, `x"; --`); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("QueueExists of a bad name = %v, want ErrInvalid", err)
	}
}

func tableExists(t *testing.T, s *store.Store, table string) bool {
	t.Helper()
	var ok bool
	err := s.Pool().QueryRow(testContext(t), `SELECT to_regclass('pgmq.' || quote_ident($1)) IS NOT NULL`, table).Scan(&ok)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// max_retries is how many runs a message gets: 0 would dead-letter every
// message unrun, so it is refused with the range, as are the values past it.
func TestQueueSettingsMaxRetriesRange(t *testing.T) {
	t.Parallel()
	s, ctx := testStore(t), testContext(t)
	q := newQueue(t, s)
	for _, bad := range []int{0, -1, 1001} {
		set := store.DefaultQueueSettings(q)
		set.MaxRetries = bad
		err := s.SetQueueSettings(ctx, set)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "1..1000") {
			t.Errorf("max_retries %d: %v, want ErrInvalid naming the range 1..1000", bad, err)
		}
	}
	set := store.DefaultQueueSettings(q)
	set.MaxRetries = 1
	if err := s.SetQueueSettings(ctx, set); err != nil {
		t.Fatalf("max_retries 1: %v", err)
	}
	got, err := s.QueueSettingsOf(ctx, q)
	if err != nil || got.MaxRetries != 1 {
		t.Errorf("settings after max_retries 1: %+v, %v", got, err)
	}
}

// A queue whose tables were dropped outside pgbus (as PGMQ's drop_queue
// drops them) and created again by pgbus forgets the old messages'
// idempotency keys and failure histories, its DLQ's too, so that none
// attaches to a new message, and hands out ids after the highest they
// held. Creating a queue that exists keeps them.
func TestQueueMadeAgainForgetsItsOldMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	first, err := s.Send(ctx, q, keyed(`{"order":1}`, "order-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: first, Delay: time.Hour,
		Failure: store.Failure{Attempt: 1, ErrorClass: "old.Failure", ErrorMessage: "the old queue's failure"}}}); err != nil {
		t.Fatal(err)
	}
	dead := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "the old DLQ's failure"})[0]

	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Send(ctx, q, keyed(`{"order":1}`, "order-1")); err != nil || again != first {
		t.Fatalf("keyed send after creating the existing queue = %d, %v; want the first message %d", again, err, first)
	}
	if h, err := s.FailureHistory(ctx, q, first); err != nil || len(h) != 1 {
		t.Fatalf("history after creating the existing queue = %+v, %v; want its one failure", h, err)
	}

	pgtest.DropOutside(t, s, q, dlq)
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if h, err := s.FailureHistory(ctx, q, first); err != nil || len(h) != 0 {
		t.Fatalf("history of the old message %d after its queue was made again = %+v, %v; want it forgotten", first, h, err)
	}
	other, err := s.Send(ctx, q, msg(`{"other":1}`))
	if err != nil || other <= first {
		t.Fatalf("first send to the queue made again = %d, %v; want an id after the old %d", other, err, first)
	}
	again, err := s.Send(ctx, q, keyed(`{"order":1}`, "order-1"))
	if err != nil || again == other {
		t.Fatalf("keyed send to the queue made again = %d, %v; want a new message, not %d", again, err, other)
	}
	if n := pgtest.Live(t, s, q); n != 2 {
		t.Fatalf("the queue made again holds %d messages, want 2", n)
	}
	if h, err := s.FailureHistory(ctx, q, other); err != nil || len(h) != 0 {
		t.Fatalf("new message %d has a history before it ever ran: %+v, %v", other, h, err)
	}
	reborn := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k", Message: "the new DLQ's failure"})[0]
	if reborn <= dead {
		t.Fatalf("first dead message of the DLQ made again = %d; want an id after the old %d", reborn, dead)
	}
	h, err := s.FailureHistory(ctx, dlq, reborn)
	if err != nil || len(h) != 1 || h[0].ErrorMessage != "the new DLQ's failure" {
		t.Fatalf("history of the new dead message %d = %+v, %v; want its own one failure", reborn, h, err)
	}
}
