package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestQueueStatsSplitsDepthByState(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // the stats of all queues are read too
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 7 })
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{
		{Payload: json.RawMessage(`1`)}, {Payload: json.RawMessage(`2`)}, {Payload: json.RawMessage(`3`)},
		{Payload: json.RawMessage(`4`), Delay: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	// ids[0] in flight, ids[1] failed and waiting to retry, ids[2] ready.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read: %v %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "x", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || len(res.Queues) != 1 {
		t.Fatalf("stats = %+v, %v", res, err)
	}
	st := res.Queues[0]
	if st.Queue != q || st.Depth != 4 || st.Visible != 1 || st.InFlight != 1 || st.WaitingRetry != 1 || st.Scheduled != 1 || st.TotalSent != 4 {
		t.Fatalf("stats = %+v; want depth 4 = 1 visible + 1 in flight + 1 retrying + 1 scheduled", st)
	}
	if st.DLQ != q+"_dlq" || st.Settings.MaxRetries != 7 || st.Settings.RetryBackoffSeconds != 0.1 || st.LatencyP50MS != nil {
		t.Fatalf("stats = %+v", st)
	}
	all, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range all.Queues {
		found = found || (x.Queue == q && x.Depth == 4)
	}
	if !found {
		t.Fatalf("stats of every queue lack %s", q)
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: uniqueName("nope")}); !errors.Is(err, ops.ErrNotFound) || len(ops.HintsOf(err)) == 0 {
		t.Fatalf("stats of a missing queue = %v, want ErrNotFound with a hint", err)
	}
	if _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: `x"; DROP TABLE pgmq.meta; --`}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("stats of a bad name = %v, want ErrInvalid", err)
	}
}

func TestQueueStatsCountsLastHour(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s, func(qs *store.QueueSettings) { qs.MaxRetries = 1 })
	c := pgtest.NewClient(t, s, q, nil)
	c.Handle("ok", func(context.Context, *engine.Job) error { return nil })
	c.Handle("bad", func(context.Context, *engine.Job) error { return errors.New("no") })
	stop := pgtest.Start(t, c)
	ctx := testContext(t)
	for i := range 5 {
		if _, err := c.Send(ctx, q, i, engine.SendOptions{Kind: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Send(ctx, q, 0, engine.SendOptions{Kind: "bad"}); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 20*time.Second, "all settled", func() bool { return pgtest.Archived(t, s, q) == 5 && pgtest.Live(t, s, q+"_dlq") == 1 })
	stop()
	res, err := newService(t, s, ops.Options{}).QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Queues[0]
	want := ops.Counters{Succeeded: 5, Failed: 1, DeadLettered: 1}
	if st.LastHour != want || st.DLQDepth != 1 || st.Archived != 5 {
		t.Fatalf("last hour = %+v dlq=%d archived=%d; want %+v, 1, 5", st.LastHour, st.DLQDepth, st.Archived, want)
	}
	if st.LatencyP50MS == nil || st.LatencyP95MS == nil || *st.LatencyP95MS < *st.LatencyP50MS || st.ThroughputPerMinute != 6.0/5 {
		t.Fatalf("latency p50=%v p95=%v throughput=%v", st.LatencyP50MS, st.LatencyP95MS, st.ThroughputPerMinute)
	}
}

// A priority queue's stats sum its levels, under the queue's name, and a
// send reaches the level asked for.
func TestPriorityQueueStatsSumLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("opq")
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	created, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3})
	if err != nil || !created.Created || created.DLQ != q+"_dlq" || created.Priorities != 3 {
		t.Fatalf("create = %+v, %v", created, err)
	}
	// Made again with settings only, it keeps its levels, and says so.
	seven := 7
	again, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{MaxRetries: &seven}})
	if err != nil || again.Created || !again.Changed || again.Priorities != 3 {
		t.Fatalf("create again with settings = %+v, %v; want its 3 levels", again, err)
	}
	for _, p := range []int{0, 1, 1, 2} {
		sent, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Priority: p})
		if err != nil || sent.Priority != p || sent.MsgID == 0 {
			t.Fatalf("send at %d = %+v, %v", p, sent, err)
		}
	}
	if n := pgtest.Live(t, s, store.PriorityQueueName(q, 1)); n != 2 {
		t.Fatalf("level 1 holds %d messages, want 2", n)
	}
	res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || len(res.Queues) != 1 || res.Queues[0].Depth != 4 || res.Queues[0].DLQ != q+"_dlq" {
		t.Fatalf("stats = %+v, %v; want depth 4 over the levels", res, err)
	}
	if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Priority: 3}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("send at level 3 of 3 = %v, want ErrInvalid", err)
	}
}

// A purge of a queue with priority levels deletes what its preview counted,
// the messages of every level.
func TestQueuePurgeWithPriorityLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("opq")
	t.Cleanup(func() { _ = s.DropQueue(context.Background(), q) })
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 2}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 1, 0} {
		if _, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: json.RawMessage(`{}`), Priority: p}); err != nil {
			t.Fatalf("send at %d: %v", p, err)
		}
	}
	if _, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: q}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "deletes 3 live messages") {
		t.Fatalf("purge without confirming = %v, want a refusal counting 3 messages", err)
	}
	purged, err := svc.QueuePurge(ctx, ops.QueuePurgeRequest{Queue: q, Confirm: true})
	if err != nil || purged != (ops.QueuePurged{Queue: q, Deleted: 3}) {
		t.Fatalf("purge = %+v, %v; want 3 deleted", purged, err)
	}
	for p := range 2 {
		if n := pgtest.Live(t, s, store.PriorityQueueName(q, p)); n != 0 {
			t.Errorf("level %d holds %d messages after the purge", p, n)
		}
	}
}

func TestQueueMessagesWithHistoryAndPages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	var ids []int64
	for i := range 5 {
		id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n":1}`), Headers: json.RawMessage(`{"pgbus_kind":"k"}`), Delay: time.Duration(i/4) * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if got, err := s.Read(ctx, q, time.Hour, 1); err != nil || len(got) != 1 {
		t.Fatal(err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[0], Delay: time.Hour, Failure: store.Failure{Attempt: 1, Kind: "k", ErrorClass: "E", ErrorMessage: "first failure"}}}); err != nil {
		t.Fatal(err)
	}
	page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	first := page.Items[0]
	if first.MsgID != ids[0] || first.State != store.StateRetrying || first.Kind != "k" || first.FailureCount != 1 ||
		len(first.History) != 1 || first.History[0].ErrorMessage != "first failure" || first.History[0].ErrorClass != "E" {
		t.Fatalf("first item = %+v", first)
	}
	// Payloads are shown only when asked for.
	if first.PayloadShown || first.Payload != nil || len(page.Notes) == 0 {
		t.Fatalf("payload shown without being asked: %+v, notes %v", first, page.Notes)
	}
	seen := map[int64]bool{}
	for _, it := range page.Items {
		seen[it.MsgID] = true
	}
	for page.NextCursor != "" {
		if page, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, Cursor: page.NextCursor, Limit: 2, IncludePayload: true}); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			seen[it.MsgID] = true
			if !it.PayloadShown || string(it.Payload) != `{"n":1}` {
				t.Fatalf("payload asked for and allowed: %+v", it)
			}
		}
	}
	if len(seen) != 5 {
		t.Fatalf("pages held %d distinct messages, want 5", len(seen))
	}
	sched, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: store.StateScheduled, Limit: 10})
	if err != nil || len(sched.Items) != 1 || sched.Items[0].MsgID != ids[4] {
		t.Fatalf("scheduled = %+v, %v", sched, err)
	}
	for label, req := range map[string]ops.QueueMessagesRequest{
		"no queue":   {},
		"bad state":  {Queue: q, State: "dead"},
		"bad cursor": {Queue: q, Cursor: "'; DROP TABLE x; --"},
		"limit":      {Queue: q, Limit: ops.MaxPageSize + 1},
		"neg limit":  {Queue: q, Limit: -1},
		"bad queue":  {Queue: "Q;"},
	} {
		if _, err := svc.QueueMessages(ctx, req); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", label, err)
		}
	}
	// A cursor that is not one of this listing's starts it again.
	_, err = svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q, State: store.StateScheduled, Cursor: "bm90IGEgY3Vyc29y", Limit: 10})
	if steps := ops.NextSteps(err); len(steps) != 1 || steps[0].Op != ops.OpQueueMessages || steps[0].Args["cursor"] != nil ||
		steps[0].Args["queue"] != q || steps[0].Args["state"] != store.StateScheduled {
		t.Errorf("bad cursor: %v, next %+v; want the first page of the same listing", err, steps)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{})
	paused := func() bool {
		res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		return res.Queues[0].Paused
	}
	if r, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil || !r.Changed || !r.Paused || !paused() {
		t.Fatalf("pause = %+v, %v", r, err)
	}
	if r, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil || r.Changed || !paused() {
		t.Fatalf("second pause = %+v, %v; want no change", r, err)
	}
	if r, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q}); err != nil || !r.Changed || r.Paused || paused() {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: uniqueName("nope")}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("pause of a missing queue = %v, want ErrNotFound", err)
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{}); !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("pause without a queue = %v, want ErrInvalid", err)
	}
	ro := newService(t, s, ops.Options{ReadOnly: true})
	if _, err := ro.QueuePause(ctx, ops.QueueRequest{Queue: q}); !errors.Is(err, ops.ErrReadOnly) || paused() {
		t.Fatalf("pause on a read-only service = %v (paused %v), want ErrReadOnly and nothing paused", err, paused())
	}
}

// A DLQ is not a work queue: its stats are asked of its queue, and the
// error says so instead of reporting the DLQ's own DLQ.
func TestQueueStatsOfADLQ(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	_, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q + "_dlq"})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "dead-letter queue of "+q) {
		t.Fatalf("stats of %s_dlq: %v; want an invalid-request error naming its queue", q, err)
	}
	if !hasHint(ops.HintsOf(err), ops.OpQueueStats, map[string]any{"queue": q}) {
		t.Fatalf("hints %+v lack the stats of %s", ops.HintsOf(err), q)
	}
	res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || len(res.Queues) != 1 || res.Queues[0].DLQ != q+"_dlq" {
		t.Fatalf("stats of %s = %+v, %v", q, res, err)
	}
}

// Queues another PGMQ client made under names pgbus does not read are
// noted as not listed, by name, where they were left out without a word.
func TestQueueStatsNotesQueuesItCannotList(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	newQueue(t, s, nil)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('UPPER', false, false)`); err != nil {
		t.Fatal(err)
	}
	res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{})
	if err != nil || len(res.Queues) != 1 || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], `1 PGMQ queue is not listed: "UPPER", whose name is outside the rule pgbus reads`) {
		t.Fatalf("stats = %+v, %v; want the one queue and a note naming UPPER as not listed", res, err)
	}
}
