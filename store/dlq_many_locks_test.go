package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// manyLockDLQs is how many DLQs, each holding dead messages, the server
// of lockStarvedStore cannot read in one transaction: each read of a DLQ
// locks its table and its indexes, five relations, and the server's lock
// table holds max_locks_per_transaction (10) a connection, 20 connections
// and the server's own processes, about 600 locks.
const manyLockDLQs = 120

// lockStarvedStore is a store on a server of the test's own whose lock
// table is small (max_locks_per_transaction = 10, max_connections = 20),
// holding manyLockDLQs DLQs of three dead messages each, two of kind a
// and one of kind b, dead-lettered a millisecond apart; it returns their
// queues.
func lockStarvedStore(t *testing.T) (*store.Store, []string) {
	t.Helper()
	ctx := testContext(t)
	dir, c, s := pgtest.PrivateStore(t)
	// fsync off, as the shared test server has it: the queues are made
	// in seconds.
	for _, set := range []string{"ALTER SYSTEM SET max_locks_per_transaction = 10", "ALTER SYSTEM SET max_connections = 10",
		"ALTER SYSTEM SET max_wal_senders = 0", "ALTER SYSTEM SET max_worker_processes = 0", "ALTER SYSTEM SET autovacuum_max_workers = 1",
		"ALTER SYSTEM SET fsync = off", "ALTER SYSTEM SET full_page_writes = off"} {
		if _, err := s.Pool().Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	s.Pool().Reset()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.StartCluster(t, dir)
	var locks int
	if err := s.Pool().QueryRow(ctx, "SELECT current_setting('max_locks_per_transaction')::int").Scan(&locks); err != nil || locks != 10 {
		t.Fatalf("max_locks_per_transaction after the restart: %d, %v; want 10", locks, err)
	}
	queues := make([]string, manyLockDLQs)
	for i := range queues {
		queues[i] = fmt.Sprintf("ml%04d", i)
		if err := s.CreateQueue(ctx, queues[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Three dead messages a DLQ, written by the statement the triggers
	// count, a millisecond apart over every DLQ: no two at one time.
	for i, q := range queues {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+store.DLQName(q)+`" (vt, enqueued_at, message, headers)
			SELECT now(), now() - interval '1 hour' + (($1 * 3 + g) * interval '1 millisecond'),
			       jsonb_build_object('tenant', 't' || g), jsonb_build_object('pgbus_kind', CASE WHEN g < 2 THEN 'a' ELSE 'b' END,
			         '`+store.HeaderDeadLetter+`', jsonb_build_object('reason', 'max_retries_exceeded', 'source_queue', $2::text,
			           'error_class', 'E', 'error_message', 'boom ' || g, 'attempts', 5, 'max_retries', 5))
			FROM generate_series(0, 2) AS g`, i, q); err != nil {
			t.Fatal(err)
		}
	}
	return s, queues
}

// A read of every DLQ of a database of many DLQs, each holding messages,
// holds the locks of a bounded number of them at a time: on a server
// whose lock table cannot hold the locks of all, each read answers as it
// would over few DLQs, rather than failing as out of shared memory.
func TestReadsOfEveryDLQFitASmallLockTable(t *testing.T) {
	t.Parallel()
	s, queues := lockStarvedStore(t)
	ctx := testContext(t)
	dlqs := make([]string, len(queues))
	for i, q := range queues {
		dlqs[i] = store.DLQName(q)
	}
	last := dlqs[len(dlqs)-1]

	t.Run("list", func(t *testing.T) {
		var seen []string
		cursor := ""
		for range 3 {
			page, err := s.ListDead(ctx, store.DeadFilter{}, cursor, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) != 100 || page.NextCursor == "" {
				t.Fatalf("page of %d items, cursor %q; want 100 and a cursor", len(page.Items), page.NextCursor)
			}
			for _, it := range page.Items {
				seen = append(seen, fmt.Sprintf("%s/%d", it.DLQ, it.MsgID))
			}
			cursor = page.NextCursor
		}
		// Newest first: the last DLQ's messages, then the one's before.
		var want []string
		for d := len(dlqs) - 1; len(want) < 300; d-- {
			for id := 3; id >= 1; id-- {
				want = append(want, fmt.Sprintf("%s/%d", dlqs[d], id))
			}
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("three pages listed %v...; want %v...", seen[:6], want[:6])
		}
		page, err := s.ListDead(ctx, store.DeadFilter{Kind: "b"}, "", 5)
		if err != nil || len(page.Items) != 5 || page.Items[0].DLQ != last || page.Items[0].MsgID != 3 {
			t.Fatalf("list of kind b: %+v, %v; want 5 items, the newest %s/3", page.Items, err, last)
		}
	})

	t.Run("summary", func(t *testing.T) {
		sum, err := s.SummarizeDeadReport(ctx, store.DeadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		// Per DLQ three groups (boom 0, boom 1, boom 2 normalized apart
		// or together); every group counted.
		if sum.TotalMessages != int64(3*len(dlqs)) || len(sum.Groups) == 0 {
			t.Fatalf("summary: %d messages in %d groups (%d listed), %v; want %d messages", sum.TotalMessages, sum.TotalGroups, len(sum.Groups), err, 3*len(dlqs))
		}
		scan, err := s.SummarizeDeadReport(store.ForceSummaryScan(ctx), store.DeadFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if scan.TotalMessages != sum.TotalMessages || scan.TotalGroups != sum.TotalGroups || len(scan.Groups) != len(sum.Groups) {
			t.Fatalf("summary read message by message: %d messages, %d groups; counted: %d, %d", scan.TotalMessages, scan.TotalGroups, sum.TotalMessages, sum.TotalGroups)
		}
		for i := range sum.Groups {
			a, b := sum.Groups[i], scan.Groups[i]
			if a.DLQ != b.DLQ || a.Group != b.Group || a.Count != b.Count || !a.LastDeadAt.Equal(b.LastDeadAt) || !slices.Equal(a.SampleMsgIDs, b.SampleMsgIDs) {
				t.Fatalf("group %d: counted %+v, read message by message %+v", i, a, b)
			}
		}
		text, err := s.SummarizeDeadWith(ctx, store.DeadFilter{Text: "boom"}, store.SummaryOptions{ByField: []string{"tenant"}})
		if err != nil || text.TotalMessages != sum.TotalMessages {
			t.Fatalf("summary by text: %d messages, %v; want %d", text.TotalMessages, err, sum.TotalMessages)
		}
		if g := text.Groups[0]; g.ByField == nil || g.ByField.Missing+g.ByField.Other+sumValues(g.ByField) != g.Count {
			t.Fatalf("summary by text, broken down by tenant: first group %+v", g)
		}
		since, err := s.SummarizeDeadReport(ctx, store.DeadFilter{Since: time.Now().Add(-2 * time.Hour)})
		if err != nil || since.TotalMessages != sum.TotalMessages {
			t.Fatalf("summary since: %d messages, %v; want %d", since.TotalMessages, err, sum.TotalMessages)
		}
	})

	t.Run("find and locate", func(t *testing.T) {
		found, err := s.FindDead(ctx, 2)
		if err != nil || !slices.Equal(found, dlqs) {
			t.Fatalf("find id 2: %d DLQs, %v; want every one of %d", len(found), err, len(dlqs))
		}
		at, err := s.LocateDead(ctx, "", []int64{1, 3})
		if err != nil || !slices.Equal(at[1], dlqs) || !slices.Equal(at[3], dlqs) {
			t.Fatalf("locate ids 1 and 3: %d and %d DLQs, %v; want every one of %d", len(at[1]), len(at[3]), err, len(dlqs))
		}
	})

	t.Run("retry dry run", func(t *testing.T) {
		rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Kind: "b"}, store.MaxDeadBulk, store.RetryOptions{DryRun: true})
		if err != nil || rep.Retried != len(dlqs) {
			t.Fatalf("dry run of a retry of kind b: %d, %v; want %d", rep.Retried, err, len(dlqs))
		}
	})

	t.Run("group holders", func(t *testing.T) {
		sum, err := s.SummarizeDeadReport(ctx, store.DeadFilter{Queue: queues[0]})
		if err != nil || len(sum.Groups) == 0 {
			t.Fatalf("summary of %s: %+v, %v", queues[0], sum, err)
		}
		holders, err := s.DeadGroupHolders(ctx, sum.Groups[0].Group)
		if err != nil || len(holders) == 0 {
			t.Fatalf("holders of a group: %v, %v", holders, err)
		}
	})

	t.Run("stats", func(t *testing.T) {
		stats, err := s.QueueStats(ctx, "", store.QueueStatsOptions{Archive: true})
		if err != nil || len(stats) < len(queues) {
			t.Fatalf("stats of every queue: %d, %v; want %d", len(stats), err, len(queues))
		}
		for _, st := range stats {
			if slices.Contains(queues, st.Queue) && st.DLQDepth != 3 {
				t.Fatalf("stats of %s: DLQ depth %d; want 3", st.Queue, st.DLQDepth)
			}
		}
	})
}

func sumValues(b *store.FieldBreakdown) int64 {
	var n int64
	for _, v := range b.Values {
		n += v.Count
	}
	return n
}
