package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A queue table beyond the exact-count limit is read from the statistics
// system's count of its rows, and says so; what stands behind the
// visibility timeout is still counted exactly, and a queue drained since
// the statistics were taken shows nothing ready.
func TestDepthsOfLargeTablesAreEstimated(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(30))
	if err != nil {
		t.Fatal(err)
	}
	// Two in flight, one of them failed and waiting to retry; one
	// scheduled; 28 ready; 20 more archived.
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read = %v, %v", got, err)
	}
	if _, err := s.RetryMany(ctx, q, []store.RetryItem{{MsgID: ids[1], Delay: time.Hour, Failure: store.Failure{Attempt: 1, ErrorClass: "E", ErrorMessage: "boom"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	archived, err := s.SendBatch(ctx, q, msgs(20))
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := s.ArchiveMany(ctx, q, archived); err != nil || len(moved) != 20 {
		t.Fatalf("archive = %v, %v", moved, err)
	}
	pgtest.SettleRowStats(t, s, "pgmq.q_"+q, "pgmq.a_"+q)
	stats := func() store.QueueStats {
		t.Helper()
		st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{Archive: true})
		if err != nil || len(st) != 1 {
			t.Fatalf("stats = %+v, %v", st, err)
		}
		return st[0]
	}
	exact := stats()
	if exact.Estimated || exact.ArchivedEstimated || exact.Depth != 31 || exact.Visible != 28 || exact.InFlight != 1 || exact.WaitingRetry != 1 || exact.Scheduled != 1 || exact.Archived != 20 {
		t.Fatalf("stats within the limit = %+v; want exact counts 31 = 28 + 1 + 1 + 1, 20 archived", exact)
	}

	s.SetExactCountLimit(10)
	est := stats()
	if !est.Estimated || !est.ArchivedEstimated || est.Depth != 31 || est.Visible != 28 || est.InFlight != 1 || est.WaitingRetry != 1 || est.Scheduled != 1 || est.Archived != 20 {
		t.Fatalf("stats beyond the limit = %+v; want the same counts, estimated", est)
	}
	if est.OldestVisibleAgeSeconds <= 0 || est.OldestAgeSeconds <= 0 || est.OldestVisibleAgeSeconds > exact.OldestVisibleAgeSeconds+60 {
		t.Fatalf("ages beyond the limit = %v, %v; want those of the exact read (%v, %v)", est.OldestVisibleAgeSeconds, est.OldestAgeSeconds,
			exact.OldestVisibleAgeSeconds, exact.OldestAgeSeconds)
	}
	depths, err := s.QueueDepths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range depths {
		if d.Queue == q && (!d.Estimated || d.Visible != 28 || d.InFlight != 1) {
			t.Fatalf("depth beyond the limit = %+v", d)
		}
	}

	// Drained since the statistics were taken: nothing is ready, whatever
	// they still say.
	if gone, err := s.DeleteMany(ctx, q, ids[2:]); err != nil || len(gone) != 28 {
		t.Fatalf("delete the ready messages = %v, %v", gone, err)
	}
	if drained := stats(); drained.Visible != 0 || drained.Depth != 3 || drained.InFlight != 1 || drained.WaitingRetry != 1 || drained.Scheduled != 1 {
		t.Fatalf("stats of a drained queue beyond the limit = %+v; want 3 = 0 ready + 1 + 1 + 1", drained)
	}

	s.SetExactCountLimit(0)
	if back := stats(); back.Estimated || back.Depth != 3 {
		t.Fatalf("stats with the limit restored = %+v; want 3, exact", back)
	}
}
