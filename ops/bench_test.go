package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkOverview measures the read behind /readyz, the health verdict
// and the dashboard's overview over four queues: whose archives hold
// 1,000,000 messages each (a week of archive at under two messages a
// second), and whose backlogs hold 200,000 messages each (an outage).
func BenchmarkOverview(b *testing.B) {
	for _, c := range []struct{ name, table string }{{"archive", "a_"}, {"backlog", "q_"}} {
		b.Run(c.name, func(b *testing.B) {
			s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
			svc := newService(b, s, ops.Options{})
			ctx := pgtest.Context(b)
			n := map[string]string{"a_": "1000000", "q_": "200000"}[c.table]
			for range 4 {
				q := newQueue(b, s, nil)
				cols, vals := "read_ct, enqueued_at, vt, message", "0, now(), now(), '{}'"
				if c.table == "a_" {
					cols, vals = "msg_id, archived_at, "+cols, "g, now(), "+vals
				}
				if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."`+c.table+q+`" (`+cols+`) SELECT `+vals+` FROM generate_series(1, `+n+`) g`); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				o, err := svc.Overview(ctx, ops.OverviewRequest{})
				if err != nil || len(o.Queues) != 4 {
					b.Fatalf("overview of %d queues, %v; want 4", len(o.Queues), err)
				}
			}
		})
	}
}

// BenchmarkOverviewManyQueues measures the same read over 500 queues of
// 20 messages each, and the read of their stats with the archives (pgbus
// queues, pgbus_queue_stats).
func BenchmarkOverviewManyQueues(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	svc := newService(b, s, ops.Options{})
	ctx := pgtest.Context(b)
	msgs := make([]store.NewMessage, 20)
	for i := range msgs {
		msgs[i] = store.NewMessage{Payload: json.RawMessage(`1`)}
	}
	for range 500 {
		if _, err := s.SendBatch(ctx, newQueue(b, s, nil), msgs); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Run("overview", func(b *testing.B) {
		for b.Loop() {
			o, err := svc.Overview(ctx, ops.OverviewRequest{})
			if err != nil || len(o.Queues) != 500 {
				b.Fatalf("overview of %d queues, %v; want 500", len(o.Queues), err)
			}
		}
	})
	b.Run("queue_stats", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{All: true})
			if err != nil || len(res.Queues) != 500 || res.Queues[0].TotalSent != 20 {
				b.Fatalf("stats of %d queues, %v; want 500 of 20 sent each", len(res.Queues), err)
			}
		}
	})
}

// BenchmarkOverviewSkewedGroups measures the overview and the stats of 300
// queues after ANALYZE saw one DLQ hold 100,000 of the 100,032 rows of the
// dead-letter group counts (100,000 error classes), another the rest: the
// depths must read the group counts once, not once per queue.
func BenchmarkOverviewSkewedGroups(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	svc := newService(b, s, ops.Options{})
	ctx := pgtest.Context(b)
	var queues []string
	for range 300 {
		queues = append(queues, pgtest.NewQueue(b, s, "skew"))
	}
	for i, n := range []int{100_000, 32} {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO `+pgx.Identifier{"pgmq", "q_" + store.DLQName(queues[i])}.Sanitize()+` (vt, message, headers)
			SELECT now(), '{}', jsonb_build_object('pgbus_kind', 'k', 'pgbus_dead_letter',
			       jsonb_build_object('source_queue', 'src', 'error_class', 'E' || g, 'reason', 'max_retries_exceeded'))
			FROM generate_series(1, $1::int) g`, n); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.FoldDeadCounts(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Run("overview", func(b *testing.B) {
		for b.Loop() {
			o, err := svc.Overview(ctx, ops.OverviewRequest{})
			if err != nil || len(o.Queues) != 300 {
				b.Fatalf("overview of %d queues, %v; want 300", len(o.Queues), err)
			}
		}
	})
	b.Run("queue_stats", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{All: true})
			if err != nil || len(res.Queues) != 300 {
				b.Fatalf("stats of %d queues, %v; want 300", len(res.Queues), err)
			}
		}
	})
}

// BenchmarkShowLargeMessage measures pgbus dlq show of a dead message
// whose payload holds a string of a megabyte and whose error 64 KB (the
// most a failure keeps), each ending in a secret: every string is
// searched for secrets before it is shown.
func BenchmarkShowLargeMessage(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	svc := newService(b, s, ops.Options{AllowPayloads: true})
	ctx := pgtest.Context(b)
	q := newQueue(b, s, nil)
	line := "upstream answered 503 Service Unavailable after 30s; "
	note := strings.Repeat(line, (1<<20)/len(line)) + "password=hunter2"
	payload, err := json.Marshal(map[string]string{"note": note})
	if err != nil {
		b.Fatal(err)
	}
	msg := strings.Repeat(line, (60<<10)/len(line)) + "token=abcdef123456"
	id := pgtest.DeadLetter(b, s, q, pgtest.DeadSpec{Kind: "k", Message: msg, Payload: string(payload)})[0]
	for b.Loop() {
		m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: id, IncludePayload: true})
		if err != nil {
			b.Fatal(err)
		}
		if shown := string(m.Payload) + m.DeadLetter.ErrorMessage; strings.Contains(shown, "hunter2") || strings.Contains(shown, "abcdef123456") {
			b.Fatal("a secret is shown")
		}
	}
}

// BenchmarkManyQueueReads measures the reads of pgbus queues, pgbus health,
// pgbus dlq list --since 1h and pgbus dlq summary --since 1h over 500
// queues and their DLQs, a few of which hold messages: the cost is the
// number of tables, not of rows.
func BenchmarkManyQueueReads(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	svc := newService(b, s, ops.Options{})
	ctx := pgtest.Context(b)
	msgs := []store.NewMessage{{Payload: json.RawMessage(`1`)}, {Payload: json.RawMessage(`2`)}}
	var queues []string
	for range 500 {
		queues = append(queues, newQueue(b, s, nil))
	}
	for _, q := range queues[:5] {
		if _, err := s.SendBatch(ctx, q, msgs); err != nil {
			b.Fatal(err)
		}
		pgtest.DeadLetter(b, s, q, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Run("queues", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{All: true})
			if err != nil || len(res.Queues) != 500 {
				b.Fatalf("stats of %d queues, %v; want 500", len(res.Queues), err)
			}
		}
	})
	b.Run("health", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.Health(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dlq_list_since", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Since: "1h"}})
			if err != nil || len(res.Items) != 5 {
				b.Fatalf("list of %d dead messages, %v; want 5", len(res.Items), err)
			}
		}
	})
	b.Run("dlq_summary_since", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Since: "1h"}})
			if err != nil || res.Total != 5 {
				b.Fatalf("summary of %d dead messages, %v; want 5", res.Total, err)
			}
		}
	})
}

// BenchmarkGroupScope measures the check that a group's key given with a
// queue is one of that queue's DLQ, over 100 DLQs of 500 dead messages
// each: in a retry's dry run by the group and its queue, which checks it
// every time, and in a list by the group with another queue, refused. It
// is read from the group counts, where every DLQ was summarized by the
// group.
func BenchmarkGroupScope(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	svc := newService(b, s, ops.Options{})
	ctx := pgtest.Context(b)
	var queues []string
	for range 100 {
		q := newQueue(b, s, nil)
		if err := s.BulkLoadDead(ctx, q, 500, 20); err != nil {
			b.Fatal(err)
		}
		queues = append(queues, q)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: queues[0]}})
	if err != nil || len(sum.Groups) == 0 {
		b.Fatalf("summary of %s: %+v, %v", queues[0], sum, err)
	}
	key := sum.Groups[0].Group
	b.Run("retry_dry_run", func(b *testing.B) {
		for b.Loop() {
			res, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: queues[0], Group: key}, DryRun: true})
			if err != nil || res.Retried == 0 {
				b.Fatalf("dry run of the group's retry: %+v, %v", res, err)
			}
		}
	})
	b.Run("list_other_queue", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: queues[1], Group: key}, Limit: 10}); !errors.Is(err, ops.ErrInvalid) {
				b.Fatalf("list of the group with another queue: %v; want it refused", err)
			}
		}
	})
}
