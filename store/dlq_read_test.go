package store_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

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
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it reads every DLQ, which other tests drop
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
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	kind := uniqueName("kind")
	deadN(t, s, q, 3, kind, "Timeout", store.ReasonMaxRetriesExceeded)
	mid := clockPast(t, s, store.DLQName(q))
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
	t.Parallel()
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
	t.Parallel()
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
	wantErr(t, "missing queue", err, store.ErrNotFound, "has no dead-letter queue")
	// q has no priority levels: q_p2 is no level of it (see
	// TestDeadOperationsNameTheQueueOfALevel for one that is).
	_, err = s.ShowDead(ctx, q+"_p2", 1)
	wantErr(t, "name of a level q has not", err, store.ErrNotFound, "has no dead-letter queue")
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
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it reads every DLQ, which other tests drop
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

// Paging on after the DLQ of the cursor's last message was dropped goes on
// over the other DLQs, instead of failing with a parameter PostgreSQL
// cannot type.
func TestListDeadCursorAfterItsDLQIsDropped(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // it reads every DLQ, which other tests drop
	ctx := testContext(t)
	kind := pgtest.Name("k")
	older, newer := pgtest.NewQueue(t, s, "lo"), pgtest.NewQueue(t, s, "ln")
	pgtest.DeadLetterN(t, s, older, 3, pgtest.DeadSpec{Kind: kind})
	pgtest.DeadLetterN(t, s, newer, 3, pgtest.DeadSpec{Kind: kind})
	f := store.DeadFilter{Kind: kind}
	page, err := s.ListDead(ctx, f, "", 2)
	if err != nil || len(page.Items) != 2 || page.Items[1].DLQ != store.DLQName(newer) || page.NextCursor == "" {
		t.Fatalf("first page = %+v, %v; want the two newest, of %s, and a cursor", page, err, newer)
	}
	if err := s.DropQueue(ctx, newer); err != nil {
		t.Fatal(err)
	}
	page, err = s.ListDead(ctx, f, page.NextCursor, 10)
	if err != nil {
		t.Fatalf("next page after the cursor's DLQ was dropped: %v", err)
	}
	if len(page.Items) != 3 || page.Items[0].DLQ != store.DLQName(older) || page.NextCursor != "" {
		t.Fatalf("next page = %+v; want the 3 messages of %s", page.Items, older)
	}
}

// clockPast waits until the database's clock is past the enqueued_at of
// every message in queue and returns that time: messages the queue gets
// later are enqueued at it or after, those it holds before it.
func clockPast(t *testing.T, s *store.Store, queue string) time.Time {
	t.Helper()
	var at time.Time
	pgtest.Eventually(t, time.Minute, "the database clock to pass the last message of "+queue, func() bool {
		var past bool
		err := s.Pool().QueryRow(testContext(t), `SELECT c, c > m FROM (SELECT clock_timestamp() AS c,
			(SELECT max(enqueued_at) FROM pgmq."q_`+queue+`") AS m) AS x`).Scan(&at, &past)
		if err != nil {
			t.Fatal(err)
		}
		return past
	})
	return at
}
