package store_test

import (
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A retention pass over a fleet whose archives hold nothing past their
// retention runs as many statements for many queues as for few: it pruned
// each archive in a transaction of its own, so a fleet of 660 queues ran
// about 1,450 of them every pass with nothing to delete.
func TestRetentionStatementsDoNotGrowWithEmptyQueues(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	admin := pgtest.OpenStore(t, url)
	ctx := testContext(t)
	pass := func() int64 {
		t.Helper()
		s, n := pgtest.CountingStore(t, url, "")
		rep, err := s.RunRetention(ctx, 100, 0)
		if err != nil || !rep.Ran || len(rep.StepsFailed) != 0 {
			t.Fatalf("retention = %+v, %v", rep, err)
		}
		return n.Load()
	}
	for range 2 {
		newQueue(t, admin)
	}
	few := pass()
	for range 10 {
		newQueue(t, admin)
	}
	if many := pass(); many != few {
		t.Errorf("a retention pass ran %d statements over 12 queues with empty archives, %d over 2; want as many", many, few)
	}
}

// The pass that looks for old rows before it prunes still prunes, of every
// queue, the rows past its retention and only those, the archive of a DLQ
// after its dead retention, and a queue whose archive holds only recent
// rows keeps them, whichever statement looked into its archive.
func TestRetentionPrunesOnlyRowsPastRetention(t *testing.T) {
	store.SetArchiveFindBatch(t, 3) // 4 archives: statements of 3 and 1
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	archive := func(q string, n int, ago string) {
		t.Helper()
		ids, err := s.SendBatch(ctx, q, msgs(n))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ArchiveMany(ctx, q, ids); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`" SET archived_at = now() - $2::interval WHERE msg_id >= $1`, ids[0], ago); err != nil {
			t.Fatal(err)
		}
	}
	old, recent := newQueue(t, s), newQueue(t, s)
	for _, q := range []string{old, recent} {
		set := store.DefaultQueueSettings(q)
		set.ArchiveRetention, set.DeadRetention = time.Hour, 48*time.Hour
		if err := s.SetQueueSettings(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	archive(old, 4, "2 hours")
	archive(old, 3, "30 minutes")
	archive(recent, 2, "30 minutes")
	archive(old+"_dlq", 2, "3 hours")   // within the dead retention
	archive(recent+"_dlq", 1, "3 days") // past it
	rep, err := s.RunRetention(ctx, 2, 0)
	if err != nil || len(rep.StepsFailed) != 0 || len(rep.QueuesKept) != 0 {
		t.Fatalf("retention = %+v, %v", rep, err)
	}
	want := map[string]int64{old: 4, recent + "_dlq": 1}
	if len(rep.ArchivedDeleted) != len(want) || rep.ArchivedDeleted[old] != 4 || rep.ArchivedDeleted[recent+"_dlq"] != 1 {
		t.Errorf("archived deleted %v, want %v", rep.ArchivedDeleted, want)
	}
	for q, n := range map[string]int{old: 3, recent: 2, old + "_dlq": 2, recent + "_dlq": 0} {
		if got := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."a_`+q+`"`); got != n {
			t.Errorf("archive of %s holds %d rows, want %d", q, got, n)
		}
	}
}
