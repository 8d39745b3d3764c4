package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func sendOne(t *testing.T, ctx context.Context, s *store.Store, queue string) {
	t.Helper()
	if _, err := s.Send(ctx, queue, store.NewMessage{Payload: []byte(`{"keep":true}`)}); err != nil {
		t.Fatal(err)
	}
}

// A priority level (orders_p1 of orders with levels) is part of its queue:
// it cannot be created or dropped alone, which would lose its messages and
// leave its queue broken, and a queue with levels cannot take over a queue
// of its own as a level. Everything refused changes nothing.
func TestPriorityLevelNamesAreNotQueuesOfTheirOwn(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	pq := uniqueName("pq")
	if err := s.CreatePriorityQueue(ctx, pq, 2); err != nil {
		t.Fatal(err)
	}
	level := store.PriorityQueueName(pq, 1)
	sendOne(t, ctx, s, level)
	for what, err := range map[string]error{
		"create":         s.CreateQueue(ctx, level),
		"create, levels": s.CreatePriorityQueue(ctx, level, 2),
		"drop":           s.DropQueue(ctx, level),
	} {
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "priority level 1 of queue "+`"`+pq+`"`) {
			t.Errorf("%s %s: %v; want ErrInvalid naming the queue it is a level of", what, level, err)
		}
	}
	if got := pgtest.Live(t, s, level); got != 1 {
		t.Fatalf("level %s holds %d messages after the refusals; want its 1", level, got)
	}
	if phys, err := s.PhysicalQueues(ctx, pq); err != nil || len(phys) != 2 {
		t.Fatalf("queue %s after the refusals: levels %v, %v", pq, phys, err)
	}

	// Names of that form that are no level stay ordinary queues.
	for _, name := range []string{store.PriorityQueueName(pq, 2), pq + "_p01", store.PriorityQueueName(uniqueName("plain"), 0)} {
		if err := s.CreateQueue(ctx, name); err != nil {
			t.Errorf("create %s, no level of a queue: %v", name, err)
		}
		if _, _, isLevel, err := s.LevelOf(ctx, name); err != nil || isLevel {
			t.Errorf("LevelOf %s = level %v, %v; want no level", name, isLevel, err)
		}
		if err := s.DropQueue(ctx, name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	}

	// The other way round: jobs_p1 first, then jobs with levels.
	jobs := uniqueName("jobs")
	own := store.PriorityQueueName(jobs, 1)
	if err := s.CreateQueue(ctx, own); err != nil {
		t.Fatal(err)
	}
	sendOne(t, ctx, s, own)
	err := s.CreatePriorityQueue(ctx, jobs, 2)
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "take over queue "+`"`+own+`"`) {
		t.Fatalf("create %s with 2 levels over queue %s: %v; want ErrInvalid naming it", jobs, own, err)
	}
	if _, err := s.PhysicalQueues(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	queues, err := s.ListQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		if q.Name == store.PriorityQueueName(jobs, 0) || q.Name == store.DLQName(jobs) {
			t.Errorf("the refused create left queue %s behind", q.Name)
		}
	}
	if got := pgtest.Live(t, s, own); got != 1 {
		t.Fatalf("queue %s holds %d messages after the refused takeover; want its 1", own, got)
	}
	// A level name that is a queue with levels of its own (no table of
	// that name, only its levels') is not taken over either.
	top := uniqueName("top")
	nested := store.PriorityQueueName(top, 1)
	if err := s.CreatePriorityQueue(ctx, nested, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, top, 2); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "take over queue "+`"`+nested+`"`) {
		t.Fatalf("create %s with 2 levels over %s, a queue with levels: %v; want ErrInvalid naming it", top, nested, err)
	}
	if err := s.DropQueue(ctx, nested); err != nil {
		t.Fatalf("drop %s after the refused takeover: %v", nested, err)
	}
}

// GiveBack returns the attempt of the read it names, and only of it: a
// message read again since (read_ct moved on), another message of the id
// (enqueued at another time) or one gone is left alone.
func TestGiveBack(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	q := newQueue(t, s)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Read(ctx, q, time.Minute, 1)
	if err != nil || len(msgs) != 1 || msgs[0].ReadCount != 1 || msgs[0].ID != id {
		t.Fatalf("read: %+v, %v", msgs, err)
	}
	read := msgs[0].Claim()
	later := read
	later.ReadCount = 2
	if ok, err := s.GiveBack(ctx, q, later, 0); err != nil || ok {
		t.Fatalf("give back read 2 of a message read once: %v, %v; want nothing done", ok, err)
	}
	other := read
	other.EnqueuedAt = read.EnqueuedAt.Add(-time.Second)
	if ok, err := s.GiveBack(ctx, q, other, 0); err != nil || ok {
		t.Fatalf("give back the read of another message of id %d: %v, %v; want nothing done", id, ok, err)
	}
	if ok, err := s.GiveBack(ctx, q, read, 0); err != nil || !ok {
		t.Fatalf("give back read 1: %v, %v", ok, err)
	}
	msgs, err = s.Read(ctx, q, time.Minute, 1)
	if err != nil || len(msgs) != 1 || msgs[0].ReadCount != 1 {
		t.Fatalf("read after the give-back: %+v, %v; want it visible, read once", msgs, err)
	}
	gone := read
	gone.MsgID = id + 1000
	if ok, err := s.GiveBack(ctx, q, gone, 0); err != nil || ok {
		t.Fatalf("give back a message that is not there: %v, %v", ok, err)
	}
}

// A queue whose tables were dropped outside pgbus (PGMQ's drop_queue keeps
// pgbus's entry) is not paused or resumed: there is nothing to pause. A
// priority queue is until its last level is gone.
func TestPauseOfADroppedQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	plain, levels := pgtest.Name("pd"), pgtest.Name("pl")
	if err := s.CreateQueue(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `DROP TABLE pgmq.q_`+plain)
	if _, err := s.SetPaused(ctx, plain, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause of a dropped queue: %v; want not found", err)
	}
	exec(t, s, `DROP TABLE pgmq.q_`+levels+`_p0`)
	if changed, err := s.SetPaused(ctx, levels, true); err != nil || !changed {
		t.Fatalf("pause of a priority queue with a level left: %v, %v; want paused", changed, err)
	}
	exec(t, s, `DROP TABLE pgmq.q_`+levels+`_p1`)
	if _, err := s.SetPaused(ctx, levels, false); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("resume of a priority queue with no level left: %v; want not found", err)
	}
}

// A purge of a queue with priority levels deletes the messages of every
// level, whose tables are all the queue has, and counts them all; a level
// dropped outside pgbus leaves the others to purge, as their stats list
// them.
func TestPurgeQueueWithPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	pq := newLevelledQueue(t, s)
	for _, p := range []int{0, 1, 1, 2} {
		sendOne(t, ctx, s, store.PriorityQueueName(pq, p))
	}
	if n, err := s.PurgeQueue(ctx, pq); err != nil || n != 4 {
		t.Fatalf("purge of %s = %d, %v; want its 4 messages over 3 levels", pq, n, err)
	}
	for p := range 3 {
		if got := pgtest.Live(t, s, store.PriorityQueueName(pq, p)); got != 0 {
			t.Errorf("level %d holds %d messages after the purge", p, got)
		}
	}

	sendOne(t, ctx, s, store.PriorityQueueName(pq, 0))
	sendOne(t, ctx, s, store.PriorityQueueName(pq, 2))
	pgtest.DropOutside(t, s, store.PriorityQueueName(pq, 1))
	if n, err := s.PurgeQueue(ctx, pq); err != nil || n != 2 {
		t.Fatalf("purge of %s without level 1 = %d, %v; want the 2 messages of the others", pq, n, err)
	}
	pgtest.DropOutside(t, s, store.PriorityQueueName(pq, 0), store.PriorityQueueName(pq, 2))
	if _, err := s.PurgeQueue(ctx, pq); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purge of %s without any level = %v, want ErrNotFound", pq, err)
	}
}

// The stats of a priority level asked for by name are its own depths with
// the DLQ, settings and pause of its queue, which govern it, where they
// named a DLQ of the level's own, which does not exist, and showed the
// default settings, unpaused.
func TestStatsOfAPriorityLevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	pq := newLevelledQueue(t, s)
	pgtest.SetFastSettings(t, s, pq, func(q *store.QueueSettings) { q.MaxRetries = 2 })
	if _, err := s.SetPaused(ctx, pq, true); err != nil {
		t.Fatal(err)
	}
	p1 := store.PriorityQueueName(pq, 1)
	for range 2 {
		sendOne(t, ctx, s, p1)
	}
	sendOne(t, ctx, s, store.PriorityQueueName(pq, 2))
	ids, err := s.SendBatch(ctx, p1, []store.NewMessage{{Payload: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	items := []store.DeadLetterItem{{MsgID: ids[0], Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorClass: "E"}}}
	if _, err := s.DeadLetterMany(ctx, p1, store.DLQName(pq), store.SourceWorker, items); err != nil {
		t.Fatal(err)
	}
	stats, err := s.QueueStats(ctx, p1, store.QueueStatsOptions{})
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats of %s = %+v, %v", p1, stats, err)
	}
	st := stats[0]
	want := pgtest.FastSettings(pq)
	want.MaxRetries = 2
	if st.Queue != p1 || st.Depth != 2 || st.DLQ != store.DLQName(pq) || st.DLQDepth != 1 || !st.Paused || st.Settings != want.Plain() {
		t.Fatalf("stats of %s = %+v; want depth 2, DLQ %s holding 1, paused, with the settings of %s", p1, st, store.DLQName(pq), pq)
	}
}

// newLevelledQueue creates a queue with three priority levels, dropped
// when the test ends.
func newLevelledQueue(t *testing.T, s *store.Store) string {
	t.Helper()
	pq := uniqueName("pq")
	if err := s.CreatePriorityQueue(pgtest.Context(t), pq, 3); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), pq) })
	return pq
}

// A DLQ operation given a priority level's name is refused as invalid,
// naming the queue whose DLQ holds the level's dead messages, as creating
// or dropping the level is; a name of that form that is no level, of a
// queue there is not, is not found, and not called a level.
func TestDeadOperationsNameTheQueueOfALevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	pq := uniqueName("pq")
	if err := s.CreatePriorityQueue(ctx, pq, 3); err != nil {
		t.Fatal(err)
	}
	calls := func(name string) map[string]error {
		_, list := s.ListDead(ctx, store.DeadFilter{Queue: name}, "", 10)
		_, sum := s.SummarizeDead(ctx, store.DeadFilter{Queue: name})
		_, show := s.ShowDead(ctx, name, 1)
		_, retry := s.RetryDead(ctx, name, []int64{1}, store.RetryOptions{})
		_, discard := s.DiscardDead(ctx, name, []int64{1})
		_, purge := s.PurgeDead(ctx, name, 0)
		_, count := s.CountPurgeable(ctx, name, time.Now())
		return map[string]error{"list": list, "summary": sum, "show": show, "retry": retry, "discard": discard, "purge": purge, "count": count}
	}
	for _, level := range []string{store.PriorityQueueName(pq, 2), store.DLQName(store.PriorityQueueName(pq, 1))} {
		for what, err := range calls(level) {
			wantErr(t, what+" "+level, err, store.ErrInvalid, `of queue "`+pq+`", not a queue of its own: its dead messages are in the DLQ of queue "`+pq+`"`)
		}
	}
	for _, name := range []string{store.PriorityQueueName(pq, 3), store.PriorityQueueName(uniqueName("none"), 1)} {
		for what, err := range calls(name) {
			wantErr(t, what+" "+name, err, store.ErrNotFound, "has no dead-letter queue")
			if err != nil && strings.Contains(err.Error(), "priority level") {
				t.Errorf("%s %s calls it a level: %v", what, name, err)
			}
		}
	}
}

// A new queue whose name ends as the indexes and sequences of queue tables
// are named is refused, made first or after the queue whose object it
// would clash with; one that exists already (another PGMQ client's) is
// left as it is, and made a queue of pgbus's.
func TestQueueNamesThatClashWithTableObjectsAreRefused(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	base := uniqueName("clash")
	if err := s.CreateQueue(ctx, base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), base) })
	for _, name := range []string{base + "_pkey", base + "_msg_id_seq", base + "_vt_idx", base + "_dlq_cause_idx", uniqueName("first") + "_dlq_grp_idx"} {
		err := s.CreateQueue(ctx, name)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "pick a name that does not end in _pkey, _seq, _idx") {
			t.Errorf("create %s: %v; want ErrInvalid saying to pick a name without the ending", name, err)
		}
		if err := s.CreatePriorityQueue(ctx, name, 2); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("create %s with levels: %v; want ErrInvalid", name, err)
		}
	}
	// Made by another client under that name: as pgmq.create makes it, its
	// tables and a row of pgmq.meta, and none of pgbus's.
	made, foreign := uniqueName("theirs"), uniqueName("theirs")+"_idx"
	if err := s.CreateQueue(ctx, made); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), foreign); _ = s.DropQueue(context.Background(), made) })
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE pgmq.q_`+made+` RENAME TO q_`+foreign+`;
		ALTER TABLE pgmq.a_`+made+` RENAME TO a_`+foreign+`;
		UPDATE pgmq.meta SET queue_name = '`+foreign+`' WHERE queue_name = '`+made+`';
		DELETE FROM pgbus.queues WHERE queue_name = '`+made+`'`); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, foreign); err != nil {
		t.Errorf("create %s, made by another PGMQ client: %v; want it taken as it is", foreign, err)
	}
}

// QueueLayouts says of each name, at once, what PhysicalQueues and LevelOf
// say of it one at a time: a queue with levels, one of its levels, a name
// of a level's form beyond its levels, and a plain queue.
func TestQueueLayoutsAgreeWithPhysicalQueuesAndLevelOf(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := pgtest.Context(t)
	pq := uniqueName("pq")
	if err := s.CreatePriorityQueue(ctx, pq, 3); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), pq) })
	names := []string{pq, store.PriorityQueueName(pq, 2), store.PriorityQueueName(pq, 3), newQueue(t, s)}
	layouts, err := s.QueueLayouts(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		physical, err := s.PhysicalQueues(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		base, level, ok, err := s.LevelOf(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			base, level = "", 0
		}
		got := layouts[name]
		if !slices.Equal(got.Physical, physical) || got.LevelOf != base || got.Level != level {
			t.Errorf("layout of %s = %+v; want physical %v, level %d of %q", name, got, physical, level, base)
		}
	}
	if got := layouts[store.PriorityQueueName(pq, 2)]; got.LevelOf != pq || got.Level != 2 {
		t.Errorf("layout of level 2 of %s = %+v", pq, got)
	}
	if _, err := s.QueueLayouts(ctx, []string{"bad name"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("layout of a bad name: %v; want ErrInvalid", err)
	}
}
