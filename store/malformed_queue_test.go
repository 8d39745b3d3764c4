package store_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A table of another shape than PGMQ's under a listed queue's name (made
// by hand) leaves the other queues' stats and depths readable: one such
// table failed the read of every queue, and with it pgbus queues and
// health.
func TestMalformedQueueTableLeavesTheOthersReadable(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	s := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	if err := s.CreateQueue(ctx, "good"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "good", store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `CREATE TABLE pgmq.q_odd (id int); INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ('odd', false, false)`)
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatalf("depths beside a malformed queue table: %v", err)
	}
	found := false
	for _, d := range depths {
		if d.Queue == "good" {
			found = d.Visible == 1
		}
	}
	if !found {
		t.Errorf("depths %+v; want good's one visible message", depths)
	}
	stats, err := s.QueueStats(ctx, "", store.QueueStatsOptions{})
	if err != nil {
		t.Fatalf("stats beside a malformed queue table: %v", err)
	}
	found = false
	for _, q := range stats {
		if q.Queue == "good" {
			found = q.Visible == 1
		}
	}
	if !found {
		t.Errorf("stats %+v; want good's one visible message", stats)
	}
}
