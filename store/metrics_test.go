package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/store"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	empty, err := s.Metrics(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if empty != (store.QueueMetrics{Queue: q, ScrapedAt: empty.ScrapedAt}) {
		t.Fatalf("metrics of an empty queue = %+v, want zeros", empty)
	}
	ids, err := s.SendBatch(ctx, q, msgs(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`5`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Archive(ctx, q, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, q, time.Hour, 1); err != nil { // ids[1] in flight
		t.Fatal(err)
	}
	m, err := s.Metrics(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := store.QueueMetrics{Queue: q, Depth: 4, Visible: 2, Invisible: 2, TotalSent: 5, Archived: 1}
	got := m
	got.OldestAge, got.NewestAge, got.OldestVisibleAge, got.ScrapedAt = 0, 0, 0, time.Time{}
	if got != want {
		t.Fatalf("metrics = %+v, want %+v", got, want)
	}
	if m.OldestAge <= 0 || m.OldestAge < m.NewestAge || m.OldestAge < m.OldestVisibleAge || m.OldestVisibleAge <= 0 {
		t.Fatalf("ages oldest=%v newest=%v oldest visible=%v are inconsistent", m.OldestAge, m.NewestAge, m.OldestVisibleAge)
	}
	if m.OldestAge > time.Minute {
		t.Fatalf("oldest age %v for a message sent moments ago", m.OldestAge)
	}
}
