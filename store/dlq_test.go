package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

// deadN sends n messages of kind to queue and dead-letters them in one call,
// each with a failure of class; it returns their DLQ ids in send order.
func deadN(t testing.TB, s *store.Store, queue string, n int, kind, class, reason string) []int64 {
	t.Helper()
	ctx := testContext(t)
	batch := make([]store.NewMessage, n)
	for i := range batch {
		batch[i] = store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Headers: json.RawMessage(fmt.Sprintf(`{"pgbus_kind":%q}`, kind))}
	}
	ids, err := s.SendBatch(ctx, queue, batch)
	if err != nil {
		t.Fatal(err)
	}
	return deadIDs(t, s, queue, store.DLQName(queue), ids, class, reason)
}

// deadIDs dead-letters messages of queue into dlq with a failure of class
// (none when class is "") and returns their DLQ ids in the order given.
func deadIDs(t testing.TB, s *store.Store, queue, dlq string, ids []int64, class, reason string) []int64 {
	t.Helper()
	items := make([]store.DeadLetterItem, len(ids))
	for i, id := range ids {
		items[i] = store.DeadLetterItem{MsgID: id, Reason: reason, MaxRetries: 5}
		if class != "" {
			items[i].Failure = &store.Failure{Attempt: 5, ErrorClass: class, ErrorMessage: fmt.Sprintf("%s happened to message %d", class, i)}
		}
	}
	moved, err := s.DeadLetterMany(testContext(t), queue, dlq, store.SourceWorker, items)
	if err != nil || len(moved) != len(ids) {
		t.Fatalf("dead-letter = %v, %v", moved, err)
	}
	byID := map[int64]int64{}
	for _, m := range moved {
		byID[m.SourceMsgID] = m.DLQMsgID
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out
}

func wantErr(t testing.TB, what string, err, kind error, substr string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(err.Error(), substr) {
		t.Errorf("%s: err = %v, want %v mentioning %q", what, err, kind, substr)
	}
}

type deadKey struct {
	dlq string
	id  int64
}

// listAll pages through ListDead and fails on a repeated message or a page
// out of order.
func listAll(t testing.TB, s *store.Store, f store.DeadFilter, limit int) ([]store.DeadItem, int) {
	t.Helper()
	ctx := testContext(t)
	var all []store.DeadItem
	cursor, pages := "", 0
	for {
		page, err := s.ListDead(ctx, f, cursor, limit)
		if err != nil {
			t.Fatalf("list page %d: %v", pages+1, err)
		}
		pages++
		if len(page.Items) > limit {
			t.Fatalf("page of %d items, limit %d", len(page.Items), limit)
		}
		all = append(all, page.Items...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
		if pages > 1000 {
			t.Fatal("pagination does not end")
		}
	}
	seen := map[deadKey]bool{}
	for i, it := range all {
		k := deadKey{it.DLQ, it.MsgID}
		if seen[k] {
			t.Fatalf("message %s/%d listed twice", it.DLQ, it.MsgID)
		}
		seen[k] = true
		if i > 0 && !deadBefore(it, all[i-1]) {
			t.Fatalf("item %d (%v %s %d) is not older than item %d (%v %s %d)", i, it.DeadLetteredAt, it.DLQ, it.MsgID, i-1, all[i-1].DeadLetteredAt, all[i-1].DLQ, all[i-1].MsgID)
		}
	}
	return all, pages
}

// deadBefore tells whether a comes after b in newest-first order.
func deadBefore(a, b store.DeadItem) bool {
	if !a.DeadLetteredAt.Equal(b.DeadLetteredAt) {
		return a.DeadLetteredAt.Before(b.DeadLetteredAt)
	}
	if a.DLQ != b.DLQ {
		return a.DLQ < b.DLQ
	}
	return a.MsgID < b.MsgID
}

func TestListDeadPagesThroughTwoDLQs(t *testing.T) {
	s := testStore(t)
	qa, qb := newQueue(t, s), newQueue(t, s)
	kind := uniqueName("kind")
	// Six rounds of 5 per queue: within a round the 5 share one time, so
	// ties are broken by queue and id.
	for range 6 {
		deadN(t, s, qa, 5, kind, "Boom", store.ReasonMaxRetriesExceeded)
		deadN(t, s, qb, 5, kind, "Boom", store.ReasonMaxRetriesExceeded)
	}
	all, pages := listAll(t, s, store.DeadFilter{Kind: kind}, 25)
	if len(all) != 60 || pages != 3 {
		t.Fatalf("listed %d messages in %d pages, want 60 in 3", len(all), pages)
	}
	byQueue := map[string]int{}
	for _, it := range all {
		byQueue[it.DLQ]++
		if it.Kind != kind || it.Reason != store.ReasonMaxRetriesExceeded || it.ErrorClass != "Boom" || it.Attempts != 0 ||
			it.MaxRetries != 5 || it.SourceMsgID <= 0 || it.PayloadBytes < 8 || !strings.HasPrefix(it.ErrorMessage, "Boom happened") {
			t.Fatalf("item = %+v", it)
		}
	}
	if byQueue[store.DLQName(qa)] != 30 || byQueue[store.DLQName(qb)] != 30 {
		t.Fatalf("per DLQ = %v", byQueue)
	}
	// Ties across DLQs: the same three times in both, so that pages end
	// inside a group of equal times spread over two DLQs.
	for _, q := range []string{qa, qb} {
		_, err := s.Pool().Exec(testContext(t), `UPDATE pgmq."q_`+store.DLQName(q)+`" SET enqueued_at = timestamptz '2024-01-01 00:00:00Z' + (msg_id % 3) * interval '1 second'`)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{7, 25, 100} {
		if all, _ := listAll(t, s, store.DeadFilter{Kind: kind}, limit); len(all) != 60 {
			t.Fatalf("with ties, limit %d: listed %d messages, want 60", limit, len(all))
		}
	}
	for _, name := range []string{qa, store.DLQName(qa)} {
		one, pages := listAll(t, s, store.DeadFilter{Queue: name}, 7)
		if len(one) != 30 || pages != 5 || one[0].SourceQueue != qa {
			t.Fatalf("queue %s: %d items in %d pages", name, len(one), pages)
		}
	}
}

func TestListDeadFilters(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	kind := uniqueName("kind")
	deadN(t, s, q, 3, kind, "Timeout", store.ReasonMaxRetriesExceeded)
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	deadN(t, s, q, 2, kind, "BadInput", store.ReasonNonRetryable)
	// A Ruby pgbus job: no pgbus_kind header, its class in the payload.
	ruby := dlSendRaw(t, s, q, `{"job_class":"RubyMailerJob","arguments":[]}`, "")
	deadIDs(t, s, q, store.DLQName(q), []int64{ruby}, "", store.ReasonDeadlineExceeded)
	// Error messages with LIKE wildcards in them.
	wild, err := s.SendBatch(ctx, q, []store.NewMessage{msg(`1`), msg(`2`)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, []store.DeadLetterItem{
		{MsgID: wild[0], Reason: store.ReasonNonRetryable, Failure: &store.Failure{ErrorClass: "Pct", ErrorMessage: "disk 100%_FULL now"}},
		{MsgID: wild[1], Reason: store.ReasonNonRetryable, Failure: &store.Failure{ErrorClass: "Pct", ErrorMessage: "disk 100 and FULL now"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    store.DeadFilter
		want int
	}{
		{"queue", store.DeadFilter{}, 8},
		{"kind", store.DeadFilter{Kind: kind}, 5},
		{"ruby job_class", store.DeadFilter{Kind: "RubyMailerJob"}, 1},
		{"error class", store.DeadFilter{ErrorClass: "Timeout"}, 3},
		{"reason", store.DeadFilter{Reason: store.ReasonNonRetryable}, 4},
		{"reason deadline", store.DeadFilter{Reason: store.ReasonDeadlineExceeded}, 1},
		{"since", store.DeadFilter{Since: mid}, 5},
		{"until", store.DeadFilter{Until: mid}, 3},
		{"since and until", store.DeadFilter{Since: mid.Add(-time.Hour), Until: mid}, 3},
		{"text, any case", store.DeadFilter{Text: "badinput HAPPENED"}, 2},
		{"text with wildcards matches itself", store.DeadFilter{Text: "0%_f"}, 1},
		{"percent alone", store.DeadFilter{Text: "%"}, 1},
		{"underscore alone", store.DeadFilter{Text: "_"}, 1},
		{"injection is data", store.DeadFilter{Text: `%'; DROP TABLE pgbus.failures; --`}, 0},
		{"kind injection is data", store.DeadFilter{Kind: `x' OR '1'='1`}, 0},
		{"no match", store.DeadFilter{ErrorClass: "Timeout", Reason: store.ReasonNonRetryable}, 0},
	}
	for _, c := range cases {
		c.f.Queue = q
		page, err := s.ListDead(ctx, c.f, "", 100)
		if err != nil || len(page.Items) != c.want {
			t.Errorf("%s: %d items (%v), want %d", c.name, len(page.Items), err, c.want)
		}
	}
	page, err := s.ListDead(ctx, store.DeadFilter{Queue: q, Kind: "RubyMailerJob"}, "", 10)
	if err != nil || len(page.Items) != 1 || page.Items[0].Kind != "RubyMailerJob" || page.Items[0].ErrorClass != "" || page.Items[0].MsgID <= 0 {
		t.Fatalf("ruby item = %+v, %v", page.Items, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pg_tables WHERE schemaname = 'pgbus' AND tablename = 'failures'`); n != 1 {
		t.Fatal("pgbus.failures is gone")
	}
}

func TestListDeadCursorAndLimits(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	deadN(t, s, q, 5, "k", "E", store.ReasonMaxRetriesExceeded)
	f := store.DeadFilter{Queue: q}
	page, err := s.ListDead(ctx, f, "", 2)
	if err != nil || len(page.Items) != 2 || page.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(page.NextCursor)
	if err != nil {
		t.Fatalf("cursor is not base64url: %v", err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	c["i"] = c["i"].(float64) + 1
	forged, _ := json.Marshal(c)
	for _, bad := range []string{"garbage!", "bm90IGpzb24", base64.RawURLEncoding.EncodeToString(forged), page.NextCursor + "x", strings.Repeat("A", 5000)} {
		_, err := s.ListDead(ctx, f, bad, 2)
		wantErr(t, "cursor "+bad[:min(len(bad), 20)], err, store.ErrInvalid, "start again without cursor")
	}
	_, err = s.ListDead(ctx, store.DeadFilter{Queue: q, Kind: "other"}, page.NextCursor, 2)
	wantErr(t, "cursor with other filters", err, store.ErrInvalid, "other filters")
	next, err := s.ListDead(ctx, f, page.NextCursor, 2)
	if err != nil || len(next.Items) != 2 || next.Items[0].MsgID >= page.Items[1].MsgID {
		t.Fatalf("second page = %+v, %v", next, err)
	}
	for _, limit := range []int{0, -1, 101, 1 << 40} {
		_, err := s.ListDead(ctx, f, "", limit)
		wantErr(t, fmt.Sprint("limit ", limit), err, store.ErrInvalid, "limit")
	}
}

func TestShowDead(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"order":42}`), Headers: json.RawMessage(`{"pgbus_kind":"charge"}`)})
	if err != nil {
		t.Fatal(err)
	}
	dlAddFailure(t, s, q, id, 1, "Declined", "card declined", "frame 1\nframe 2")
	dlqID := deadIDs(t, s, q, store.DLQName(q), []int64{id}, "Declined", store.ReasonMaxRetriesExceeded)[0]
	for _, name := range []string{q, store.DLQName(q)} {
		m, err := s.ShowDead(ctx, name, dlqID)
		if err != nil {
			t.Fatal(err)
		}
		if m.DLQ != store.DLQName(q) || m.MsgID != dlqID || m.Kind != "charge" || string(m.Payload) != `{"order": 42}` || m.Block == nil {
			t.Fatalf("show = %+v", m)
		}
		b := m.Block
		if b.Version != 1 || b.Reason != store.ReasonMaxRetriesExceeded || b.SourceQueue != q || b.SourceMsgID != id || b.ErrorClass != "Declined" ||
			b.ErrorAttempt != 5 || b.DeadLetteredAt.IsZero() || b.SourceEnqueuedAt.IsZero() || b.RetriesFromDLQ != 0 {
			t.Fatalf("block = %+v", b)
		}
		if len(m.History) != 2 || m.History[0].Backtrace != "frame 1\nframe 2" || m.History[1].Attempt != 5 || m.History[1].MsgID != dlqID {
			t.Fatalf("history = %+v", m.History)
		}
		var h map[string]any
		if err := json.Unmarshal(m.Headers, &h); err != nil || h["pgbus_kind"] != "charge" || h[store.HeaderDeadLetter] == nil {
			t.Fatalf("headers = %s", m.Headers)
		}
	}
	_, err = s.ShowDead(ctx, q, dlqID+1000)
	wantErr(t, "missing id", err, store.ErrNotFound, "may have been retried or discarded")
	_, err = s.ShowDead(ctx, uniqueName("nope"), 1)
	wantErr(t, "missing queue", err, store.ErrNotFound, "see pgbus queues")
	_, err = s.ShowDead(ctx, q+"_p2", 1)
	wantErr(t, "sub-queue", err, store.ErrNotFound, "pass queue \""+q+"\"")
	// A block edited into a wrong type is read as far as it goes.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+store.DLQName(q)+`" SET headers = jsonb_set(headers, '{pgbus_dead_letter,attempts}', '"many"') WHERE msg_id = $1`, dlqID); err != nil {
		t.Fatal(err)
	}
	m, err := s.ShowDead(ctx, q, dlqID)
	if err != nil || m.Block == nil || m.Block.Attempts != 0 || m.Block.ErrorClass != "Declined" {
		t.Fatalf("show with an edited block = %+v, %v", m.Block, err)
	}
}

func TestSummarizeAndFindDead(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q, other := newQueue(t, s), newQueue(t, s)
	charge := deadN(t, s, q, 6, "charge", "Declined", store.ReasonMaxRetriesExceeded)
	deadN(t, s, q, 3, "charge", "Timeout", store.ReasonMaxRetriesExceeded)
	deadN(t, s, q, 1, "charge", "Timeout", store.ReasonNonRetryable)
	deadN(t, s, q, 2, "email", "Declined", store.ReasonNonRetryable)
	groups, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: q})
	if err != nil || len(groups) != 3 {
		t.Fatalf("summary = %+v, %v; want 3 groups", groups, err)
	}
	want := []struct {
		kind, class string
		count       int64
		reasons     []string
	}{
		{"charge", "Declined", 6, []string{store.ReasonMaxRetriesExceeded}},
		{"charge", "Timeout", 4, []string{store.ReasonMaxRetriesExceeded, store.ReasonNonRetryable}},
		{"email", "Declined", 2, []string{store.ReasonNonRetryable}},
	}
	for i, w := range want {
		g := groups[i]
		if g.Kind != w.kind || g.ErrorClass != w.class || g.Count != w.count || !slices.Equal(g.Reasons, w.reasons) ||
			g.DLQ != store.DLQName(q) || g.SourceQueue != q || g.LastDeadAt.Before(g.FirstDeadAt) || len(g.SampleMsgIDs) != min(5, int(w.count)) {
			t.Fatalf("group %d = %+v, want %+v", i, g, w)
		}
	}
	newest := slices.Clone(charge)
	slices.Sort(newest)
	slices.Reverse(newest)
	if wantIDs := newest[:5]; !slices.Equal(groups[0].SampleMsgIDs, wantIDs) {
		t.Fatalf("samples = %v, want the newest %v", groups[0].SampleMsgIDs, wantIDs)
	}
	if g, err := s.SummarizeDead(ctx, store.DeadFilter{Queue: q, Reason: store.ReasonNonRetryable}); err != nil || len(g) != 2 || g[0].Count != 2 {
		t.Fatalf("filtered summary = %+v, %v", g, err)
	}

	// Ids are per queue: both fresh DLQs hold a message 1.
	deadN(t, s, other, 1, "x", "E", store.ReasonNonRetryable)
	dlqs, err := s.FindDead(ctx, 1)
	if err != nil || !slices.Contains(dlqs, store.DLQName(q)) || !slices.Contains(dlqs, store.DLQName(other)) {
		t.Fatalf("find 1 = %v, %v; want both DLQs", dlqs, err)
	}
	dlqs, err = s.FindDead(ctx, newest[0])
	if err != nil || !slices.Contains(dlqs, store.DLQName(q)) || slices.Contains(dlqs, store.DLQName(other)) {
		t.Fatalf("find %d = %v, %v", newest[0], dlqs, err)
	}
	if _, err := s.FindDead(ctx, 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("find 0: %v", err)
	}
}

// onlyMessage reads the only message of queue.
func onlyMessage(t testing.TB, s *store.Store, queue string) (int64, string, map[string]any) {
	t.Helper()
	var id int64
	var payload string
	var raw []byte
	err := s.Pool().QueryRow(testContext(t), `SELECT msg_id, message::text, headers FROM pgmq."q_`+queue+`"`).Scan(&id, &payload, &raw)
	if err != nil {
		t.Fatalf("the only message of %s: %v", queue, err)
	}
	var h map[string]any
	_ = json.Unmarshal(raw, &h)
	return id, payload, h
}

func TestRetryDeadRoundTrip(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	id, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"a":1}`), Headers: json.RawMessage(`{"pgbus_kind":"k","x-pgmq-group":"g"}`)})
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, q, dlq, []int64{id}, "Boom", store.ReasonNonRetryable)[0]

	dry, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{DryRun: true})
	if err != nil || !dry.DryRun || dry.Retried != 1 || len(dry.Moved) != 1 || dry.Moved[0].Queue != q || dry.Moved[0].MsgID != 0 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatal("dry run moved the message")
	}

	rep, err := s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Retried != 1 || rep.Failed != 0 || len(rep.Moved) != 1 {
		t.Fatalf("retry = %+v, %v", rep, err)
	}
	back, payload, h := onlyMessage(t, s, q)
	if rep.Moved[0] != (store.RetriedMessage{DLQ: dlq, DLQMsgID: dead, Queue: q, MsgID: back}) {
		t.Fatalf("moved = %+v, want message %d in %s", rep.Moved[0], back, q)
	}
	if payload != `{"a": 1}` || h["pgbus_kind"] != "k" || h["x-pgmq-group"] != "g" || h[store.HeaderDLQRetries] != float64(1) || h[store.HeaderDeadLetter] != nil {
		t.Fatalf("retried message = %s %v", payload, h)
	}
	if hist, err := s.FailureHistory(ctx, q, back); err != nil || len(hist) != 1 || hist[0].ErrorClass != "Boom" {
		t.Fatalf("history after retry = %+v, %v", hist, err)
	}
	// Retrying the same id again: a clear error, and still one live message.
	_, err = s.RetryDead(ctx, dlq, []int64{dead}, store.RetryOptions{})
	wantErr(t, "second retry", err, store.ErrNotFound, "may have been retried")
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 1 {
		t.Fatalf("%d live messages after a second retry, want 1", n)
	}
	// Dying again records the trip; retrying again counts it.
	dead2 := deadIDs(t, s, q, dlq, []int64{back}, "Boom", store.ReasonNonRetryable)[0]
	_, b := dlBlock(t, s, dlq, dead2)
	if dlNumber(t, b, "retries_from_dlq") != 1 {
		t.Fatalf("block after a second death = %v", b)
	}
	if _, err := s.RetryDead(ctx, q, []int64{dead2}, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, h := onlyMessage(t, s, q); h[store.HeaderDLQRetries] != float64(2) {
		t.Fatalf("headers after the second retry = %v", h)
	}
}

func TestRetryDeadManyIsolatesFailures(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 3, "k", "E", store.ReasonNonRetryable)
	rep, err := s.RetryDead(ctx, q, []int64{ids[0], 999_999, ids[2], ids[0]}, store.RetryOptions{})
	if err != nil || rep.Retried != 2 || rep.Failed != 1 || !strings.Contains(rep.FirstError, "999999") {
		t.Fatalf("retry = %+v, %v; want 2 retried, the unknown id failed", rep, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 2 {
		t.Fatalf("%d messages back, want 2", n)
	}
}

func TestRetryDeadHeadersKeptAside(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	id := dlSendRaw(t, s, q, `{"x":1}`, `["a","b"]`)
	dead := deadIDs(t, s, q, store.DLQName(q), []int64{id}, "", store.ReasonMaxRetriesExceeded)[0]
	if _, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	var headers string
	if err := s.Pool().QueryRow(ctx, `SELECT headers::text FROM pgmq."q_`+q+`"`).Scan(&headers); err != nil || headers != `["a", "b"]` {
		t.Fatalf("headers after retry = %s, %v; want the original array", headers, err)
	}
}

// createSubQueue makes the PGMQ tables of physical queue name with the
// layout of an existing queue, as a priority sub-queue.
func createSubQueue(t testing.TB, s *store.Store, like, name string) {
	t.Helper()
	ctx := testContext(t)
	_, err := s.Pool().Exec(ctx, `
		CREATE TABLE pgmq."q_`+name+`" (LIKE pgmq."q_`+like+`" INCLUDING ALL);
		CREATE TABLE pgmq."a_`+name+`" (LIKE pgmq."a_`+like+`" INCLUDING ALL);
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('`+name+`', false, false)`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropSubQueue(t, s, name) })
}

func dropSubQueue(t testing.TB, s *store.Store, name string) {
	_, err := s.Pool().Exec(context.Background(), `
		DROP TABLE IF EXISTS pgmq."q_`+name+`"; DROP TABLE IF EXISTS pgmq."a_`+name+`";
		DELETE FROM pgmq.meta WHERE queue_name = '`+name+`'`)
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}

func TestRetryDeadToSubQueueAndFallBack(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	sub := q + "_p2"
	createSubQueue(t, s, q, sub)
	id, err := s.Send(ctx, sub, msg(`{"p":2}`))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadIDs(t, s, sub, store.DLQName(q), []int64{id}, "E", store.ReasonNonRetryable)[0]
	_, b := dlBlock(t, s, store.DLQName(q), dead)
	if dlString(t, b, "source_queue") != sub {
		t.Fatalf("source_queue = %v, want %s", b["source_queue"], sub)
	}
	rep, err := s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Moved[0].Queue != sub {
		t.Fatalf("retry = %+v, %v; want back in %s", rep, err, sub)
	}
	back, _, _ := onlyMessage(t, s, sub)
	dead = deadIDs(t, s, sub, store.DLQName(q), []int64{back}, "E", store.ReasonNonRetryable)[0]
	dropSubQueue(t, s, sub)
	rep, err = s.RetryDead(ctx, q, []int64{dead}, store.RetryOptions{})
	if err != nil || rep.Moved[0].Queue != q {
		t.Fatalf("retry with the sub-queue gone = %+v, %v; want the base queue", rep, err)
	}
	if _, payload, h := onlyMessage(t, s, q); payload != `{"p": 2}` || h[store.HeaderDLQRetries] != float64(2) {
		t.Fatalf("message in the base queue = %s %v", payload, h)
	}
}

func TestRetryDeadWithCorrectedPayload(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	_, err := s.RetryDead(ctx, q, ids, store.RetryOptions{Payload: json.RawMessage(`{}`)})
	wantErr(t, "payload with two ids", err, store.ErrInvalid, "exactly one")
	_, err = s.RetryDead(ctx, q, ids[:1], store.RetryOptions{Payload: json.RawMessage(`{bad`)})
	wantErr(t, "payload not JSON", err, store.ErrInvalid, "not valid JSON")
	_, err = s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, 10, store.RetryOptions{Payload: json.RawMessage(`{}`)})
	wantErr(t, "payload with a filter", err, store.ErrInvalid, "one message")

	rep, err := s.RetryDead(ctx, q, ids[:1], store.RetryOptions{Payload: json.RawMessage(`{"n":0,"fixed":true}`)})
	if err != nil || rep.Retried != 1 {
		t.Fatalf("retry with payload = %+v, %v", rep, err)
	}
	back, payload, _ := onlyMessage(t, s, q)
	if payload != `{"n": 0, "fixed": true}` {
		t.Fatalf("payload = %s", payload)
	}
	hist, err := s.FailureHistory(ctx, q, back)
	if err != nil || len(hist) != 2 {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	note := hist[1]
	if note.ErrorClass != store.PayloadReplacedClass || note.Attempt != 0 || note.Kind != "k" ||
		!strings.HasSuffix(note.ErrorMessage, `{"n": 0}`) || !strings.Contains(note.ErrorMessage, fmt.Sprintf("msg_id %d", ids[0])) {
		t.Fatalf("payload note = %+v", note)
	}
	var archived string
	if err := s.Pool().QueryRow(ctx, `SELECT message::text FROM pgmq."a_`+dlq+`" WHERE msg_id = $1 AND headers ? 'pgbus_dead_letter'`, ids[0]).Scan(&archived); err != nil || archived != `{"n": 0}` {
		t.Fatalf("archived original = %s, %v", archived, err)
	}
}

// Ten thousand dead messages retried by filter, while the target refuses
// about 1%: every message ends in exactly one place.
func TestRetryDeadMatchingTenThousand(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	const total = 10_000
	start := time.Now()
	for off := 0; off < total; off += 5000 {
		batch := make([]store.NewMessage, 5000)
		for i := range batch {
			batch[i] = msg(fmt.Sprintf(`{"n":%d}`, off+i))
		}
		ids, err := s.SendBatch(ctx, q, batch)
		if err != nil {
			t.Fatal(err)
		}
		for c := 0; c < len(ids); c += 2500 {
			deadIDs(t, s, q, dlq, ids[c:c+2500], "E", store.ReasonMaxRetriesExceeded)
		}
	}
	t.Logf("loaded %d dead messages in %v", total, time.Since(start))
	fn := "pgbus." + uniqueName("refuse")
	_, err := s.Pool().Exec(ctx, `
		CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF (NEW.message->>'n')::int % 97 = 0 THEN RAISE EXCEPTION 'refused %', NEW.message->>'n'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON pgmq."q_`+q+`" FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Pool().Exec(context.Background(), `DROP FUNCTION IF EXISTS `+fn+` CASCADE`) })

	var progress [][2]int
	start = time.Now()
	rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, store.MaxDeadBulk, store.RetryOptions{
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) },
	})
	t.Logf("retried %d messages in %v", total, time.Since(start))
	const refused = total/97 + 1 // n = 0, 97, ..., 9991
	if err != nil || rep.Retried != total-refused || rep.Failed != refused || !strings.Contains(rep.FirstError, "refused ") {
		t.Fatalf("report retried=%d failed=%d first=%q (%v); want %d and %d", rep.Retried, rep.Failed, rep.FirstError, err, total-refused, refused)
	}
	if len(rep.Moved) != store.MaxRetryMoved || rep.MovedOmitted != rep.Retried-store.MaxRetryMoved {
		t.Fatalf("moved list %d, omitted %d", len(rep.Moved), rep.MovedOmitted)
	}
	if len(progress) != total/500 || progress[len(progress)-1] != [2]int{total, total} {
		t.Fatalf("progress calls = %d, last %v", len(progress), progress[len(progress)-1])
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`" WHERE (message->>'n')::int % 97 = 0 AND headers ? 'pgbus_dead_letter'`); n != refused {
		t.Fatalf("%d refused messages still in the DLQ with their block, want %d", n, refused)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != refused {
		t.Fatalf("DLQ holds %d, want %d", n, refused)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" q JOIN pgmq."q_`+dlq+`" d ON d.message->'n' = q.message->'n'`); n != 0 {
		t.Fatalf("%d messages in both places", n)
	}
	if n := dlCount(t, s, `SELECT count(DISTINCT n) FROM (SELECT message->'n' AS n FROM pgmq."q_`+q+`" UNION ALL SELECT message->'n' FROM pgmq."q_`+dlq+`") u`); n != total {
		t.Fatalf("%d distinct messages in queue and DLQ, want %d", n, total)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures f JOIN pgmq."q_`+q+`" m ON f.queue_name = $1 AND f.msg_id = m.msg_id`, q); n != total-refused {
		t.Fatalf("%d failure rows followed their message, want %d", n, total-refused)
	}
}

func TestDiscardAndPurgeDead(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	timeouts := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	bad := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	if n, err := s.DiscardDead(ctx, q, timeouts[:1]); err != nil || n != 1 {
		t.Fatalf("discard one = %d, %v", n, err)
	}
	_, err := s.DiscardDead(ctx, q, timeouts[:1])
	wantErr(t, "discard again", err, store.ErrNotFound, "may have been retried or discarded")
	if n, err := s.DiscardDead(ctx, dlq, []int64{timeouts[1], 999_999}); err != nil || n != 1 {
		t.Fatalf("discard two, one unknown = %d, %v", n, err)
	}
	var lastDone, lastTotal int
	progress := func(done, total int) { lastDone, lastTotal = done, total }
	if n, err := s.DiscardDeadMatching(ctx, store.DeadFilter{Queue: q, ErrorClass: "BadInput"}, 100, progress); err != nil || n != 2 {
		t.Fatalf("discard matching = %d, %v", n, err)
	}
	if lastDone != 2 || lastTotal != 2 {
		t.Fatalf("progress ended at %d of %d, want 2 of 2", lastDone, lastTotal)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."a_`+dlq+`" WHERE headers ? 'pgbus_dead_letter'`); n != 4 {
		t.Fatalf("archive holds %d, want 4", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatalf("DLQ holds %d, want the one left", n)
	}
	// Only the row archived two hours ago is older than an hour.
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+dlq+`" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, bad[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeDead(ctx, q, time.Hour); err != nil || n != 1 {
		t.Fatalf("purge older than 1h = %d, %v", n, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[0]); n != 0 {
		t.Fatalf("%d failure rows of the purged message left", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, dlq, bad[1]); n != 1 {
		t.Fatal("failure rows of a message not purged were deleted")
	}
	if n, err := s.PurgeDead(ctx, dlq, 0); err != nil || n != 3 {
		t.Fatalf("purge all = %d, %v", n, err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 1 {
		t.Fatal("purge touched a live DLQ message")
	}
	// Other tests share the database: over every DLQ, purge only what no
	// test can have made.
	if n, err := s.PurgeDead(ctx, "", 100*365*24*time.Hour); err != nil || n != 0 {
		t.Fatalf("purge every DLQ of century-old messages = %d, %v", n, err)
	}
}

func TestDeadOperationsRejectBadInput(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 1, "k", "E", store.ReasonNonRetryable)
	missing := uniqueName("missing")
	badFilters := []struct {
		name string
		f    store.DeadFilter
		msg  string
	}{
		{"injection in queue", store.DeadFilter{Queue: `x"; DROP TABLE pgbus.failures; --`}, "queue name"},
		{"upper case queue", store.DeadFilter{Queue: "Orders"}, "queue name"},
		{"unknown reason", store.DeadFilter{Reason: "bored"}, "reason"},
		{"1 MB text", store.DeadFilter{Text: strings.Repeat("a", 1<<20)}, "at most 1000"},
		{"NUL in text", store.DeadFilter{Text: "a\x00b"}, "UTF-8"},
		{"bad UTF-8 kind", store.DeadFilter{Kind: "\xff"}, "UTF-8"},
		{"long error class", store.DeadFilter{ErrorClass: strings.Repeat("E", 201)}, "at most 200"},
		{"until before since", store.DeadFilter{Since: time.Now(), Until: time.Now().Add(-time.Hour)}, "after since"},
	}
	for _, c := range badFilters {
		_, err := s.ListDead(ctx, c.f, "", 10)
		wantErr(t, "list: "+c.name, err, store.ErrInvalid, c.msg)
		_, err = s.SummarizeDead(ctx, c.f)
		wantErr(t, "summary: "+c.name, err, store.ErrInvalid, c.msg)
		_, err = s.RetryDeadMatching(ctx, c.f, 10, store.RetryOptions{})
		wantErr(t, "retry matching: "+c.name, err, store.ErrInvalid, c.msg)
		_, err = s.DiscardDeadMatching(ctx, c.f, 10)
		wantErr(t, "discard matching: "+c.name, err, store.ErrInvalid, c.msg)
	}
	_, err := s.ListDead(ctx, store.DeadFilter{Queue: missing}, "", 10)
	wantErr(t, "list unknown queue", err, store.ErrNotFound, "see pgbus queues")
	_, err = s.SummarizeDead(ctx, store.DeadFilter{Queue: missing})
	wantErr(t, "summary unknown queue", err, store.ErrNotFound, "see pgbus queues")

	for _, bad := range [][]int64{nil, {}, {0}, {ids[0], -5}, make([]int64, store.MaxBatch+1)} {
		_, err := s.RetryDead(ctx, q, bad, store.RetryOptions{})
		wantErr(t, fmt.Sprint("retry ids ", len(bad)), err, store.ErrInvalid, "id")
		_, err = s.DiscardDead(ctx, q, bad)
		wantErr(t, fmt.Sprint("discard ids ", len(bad)), err, store.ErrInvalid, "id")
	}
	for _, name := range []string{"", "Bad-Name", `q"; DROP TABLE x; --`, strings.Repeat("a", 48)} {
		_, err := s.RetryDead(ctx, name, ids, store.RetryOptions{})
		wantErr(t, "retry queue "+name, err, store.ErrInvalid, "queue name")
		_, err = s.DiscardDead(ctx, name, ids)
		wantErr(t, "discard queue "+name, err, store.ErrInvalid, "queue name")
		_, err = s.ShowDead(ctx, name, 1)
		wantErr(t, "show queue "+name, err, store.ErrInvalid, "queue name")
		if name != "" {
			_, err = s.PurgeDead(ctx, name, 0)
			wantErr(t, "purge queue "+name, err, store.ErrInvalid, "queue name")
		}
	}
	_, err = s.RetryDead(ctx, missing, ids, store.RetryOptions{})
	wantErr(t, "retry unknown queue", err, store.ErrNotFound, "see pgbus queues")
	_, err = s.DiscardDead(ctx, missing, ids)
	wantErr(t, "discard unknown queue", err, store.ErrNotFound, "see pgbus queues")
	_, err = s.PurgeDead(ctx, missing, 0)
	wantErr(t, "purge unknown queue", err, store.ErrNotFound, "see pgbus queues")
	_, err = s.ShowDead(ctx, q, 0)
	wantErr(t, "show id 0", err, store.ErrInvalid, "not valid")
	_, err = s.PurgeDead(ctx, q, -time.Second)
	wantErr(t, "purge negative age", err, store.ErrInvalid, "negative")
	for _, limit := range []int{0, -1, store.MaxDeadBulk + 1} {
		_, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, limit, store.RetryOptions{})
		wantErr(t, fmt.Sprint("retry matching limit ", limit), err, store.ErrInvalid, "limit")
		_, err = s.DiscardDeadMatching(ctx, store.DeadFilter{Queue: q}, limit)
		wantErr(t, fmt.Sprint("discard matching limit ", limit), err, store.ErrInvalid, "limit")
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+store.DLQName(q)+`"`); n != 1 {
		t.Fatal("a refused call changed the DLQ")
	}
}

// A DLQ table of an old PGMQ layout (no headers column) is left out of the
// operations over every DLQ instead of failing them.
func TestAllDLQsSkipOldLayout(t *testing.T) {
	s := testStore(t)
	ctx := testContext(t)
	old := uniqueName("old") + "_dlq"
	_, err := s.Pool().Exec(ctx, `
		CREATE TABLE pgmq."q_`+old+`" (
			msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct int NOT NULL DEFAULT 0,
			enqueued_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb);
		INSERT INTO pgmq."q_`+old+`" (vt, message) VALUES (now(), '{}');
		INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('`+old+`', false, false)`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), `DROP TABLE pgmq."q_`+old+`"; DELETE FROM pgmq.meta WHERE queue_name = '`+old+`'`)
	})
	q := newQueue(t, s)
	kind := uniqueName("kind")
	deadN(t, s, q, 1, kind, "E", store.ReasonNonRetryable)
	if dlqs, err := s.FindDead(ctx, 1); err != nil || slices.Contains(dlqs, old) || !slices.Contains(dlqs, store.DLQName(q)) {
		t.Fatalf("find = %v, %v", dlqs, err)
	}
	if page, err := s.ListDead(ctx, store.DeadFilter{Kind: kind}, "", 10); err != nil || len(page.Items) != 1 {
		t.Fatalf("list every DLQ = %+v, %v", page, err)
	}
	if _, err := s.SummarizeDead(ctx, store.DeadFilter{}); err != nil {
		t.Fatalf("summary of every DLQ: %v", err)
	}
}
