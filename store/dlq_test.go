package store_test

import (
	"context"
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

func TestDeadOperationsRejectBadInput(t *testing.T) {
	t.Parallel()
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
		{"long error class", store.DeadFilter{ErrorClass: strings.Repeat("E", 256)}, "at most 255"},
		{"long kind", store.DeadFilter{Kind: strings.Repeat("k", 256)}, "at most 255"},
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
	wantErr(t, "list unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.SummarizeDead(ctx, store.DeadFilter{Queue: missing})
	wantErr(t, "summary unknown queue", err, store.ErrNotFound, "has no dead-letter queue")

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
			_, err = s.CountPurgeable(ctx, name, time.Now())
			wantErr(t, "count purgeable of queue "+name, err, store.ErrInvalid, "queue name")
		}
	}
	_, err = s.RetryDead(ctx, missing, ids, store.RetryOptions{})
	wantErr(t, "retry unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.DiscardDead(ctx, missing, ids)
	wantErr(t, "discard unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.PurgeDead(ctx, missing, 0)
	wantErr(t, "purge unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.CountPurgeable(ctx, missing, time.Now())
	wantErr(t, "count purgeable of unknown queue", err, store.ErrNotFound, "has no dead-letter queue")
	_, err = s.PurgeCutoff(ctx, -time.Second)
	wantErr(t, "cutoff of a negative age", err, store.ErrInvalid, "negative")
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
	t.Parallel()
	// A database of its own: the reads of every DLQ of the shared one
	// meet other tests' DLQs dropped, locked or made by hand meanwhile.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
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
