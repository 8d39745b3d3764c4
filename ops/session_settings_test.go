package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// foreignSettings are settings a DBA may give every session, each far
// from PostgreSQL's default: a zone 13:45 ahead of UTC that keeps summer
// time, dates written day first in words, intervals in ISO 8601, floats
// rounded, bytea escaped.
var foreignSettings = []string{
	"TimeZone", "Pacific/Chatham", "DateStyle", "SQL, DMY", "IntervalStyle", "iso_8601",
	"extra_float_digits", "0", "bytea_output", "escape",
}

// shadowTables are names of pgbus's and PGMQ's tables, made in the schema
// the role's search_path finds first: a statement that named one without
// its schema would use it.
var shadowTables = []string{"meta", "queues", "workers", "failures", "audit_log", "stats_minute", "circuit_breakers", "cursor_key"}

// foreignDatabase is the URL, with default_query_exec_mode mode, of a
// database with foreignSettings for every session, as a role of its own
// whose search_path is only "$user": a schema of the role's name holding
// shadowTables and a queue's and DLQ's tables named as queue's.
func foreignDatabase(t *testing.T, mode, queue string) string {
	t.Helper()
	dbURL := pgtest.NewDatabaseSet(t, foreignSettings...)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	role, roleURL := pgtest.NewRole(t, dbURL)
	pgtest.Exec(t, dbURL, "GRANT CREATE ON DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()+" TO "+role)
	pgtest.Exec(t, dbURL, "ALTER ROLE "+role+` SET search_path = "$user"`)
	pgtest.Exec(t, roleURL, "CREATE SCHEMA "+role)
	for _, name := range append(shadowTables, "q_"+queue, "q_"+store.DLQName(queue)) {
		pgtest.Exec(t, roleURL, "CREATE TABLE "+pgx.Identifier{role, name}.Sanitize()+" (shadow int)")
	}
	return pgtest.WithParam(t, roleURL, "default_query_exec_mode", mode)
}

// near fails the test unless got is within a minute of want: generous for
// two clocks, and far below the hours a zone would shift a time by.
func near(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -time.Minute || d > time.Minute {
		t.Errorf("%s = %s, want about %s (off by %s)", what, got.UTC(), want.UTC(), d)
	}
}

// Under foreign session settings and a search_path of neither public nor
// pgbus, read in binary and as text, a message sent with a delay becomes
// visible that delay later, fails into the DLQ, and every view of it, of
// its queue and of the workers says the times and ages Go expects.
func TestTimesUnderForeignSessionSettings(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"cache_statement", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			q := uniqueName("fq")
			s := pgtest.OpenStore(t, foreignDatabase(t, mode, q))
			var zone, path string
			err := s.Pool().QueryRow(testContext(t), `SELECT current_setting('TimeZone'), current_setting('search_path')`).Scan(&zone, &path)
			if err != nil || zone != "Pacific/Chatham" || path != `"$user"` {
				t.Fatalf("the sessions' zone and search_path are %q and %q (%v): the test proves nothing", zone, path, err)
			}
			pgtest.CreateQueue(t, s, q)
			pgtest.SetFastSettings(t, s, q, func(qs *store.QueueSettings) { qs.MaxRetries = 2 })
			svc, ctx := newService(t, s, ops.Options{}), testContext(t)
			c := pgtest.NewClient(t, s, q, nil)
			c.HandleQueue(q, func(context.Context, *engine.Job) error { return errors.New("boom") })
			sent := time.Now()
			pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{Delay: time.Second})
			later := pgtest.Send(t, c, q, map[string]int{"n": 2}, engine.SendOptions{Delay: time.Hour})
			pgtest.Start(t, c)
			pgtest.Eventually(t, time.Minute, "the message dead-lettered", func() bool { return pgtest.Live(t, s, store.DLQName(q)) == 1 })

			live, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
			if err != nil || len(live.Items) != 1 || live.Items[0].MsgID != later {
				t.Fatalf("messages of %s: %+v, %v; want the one delayed an hour", q, live.Items, err)
			}
			near(t, "enqueued_at", live.Items[0].EnqueuedAt, sent)
			near(t, "visible_at of a message delayed an hour", live.Items[0].VisibleAt, sent.Add(time.Hour))

			list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q, Since: "1h"}})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("DLQ of %s since an hour ago: %+v, %v; want the dead message", q, list.Items, err)
			}
			near(t, "listed dead_lettered_at", list.Items[0].DeadLetteredAt, time.Now())
			dead, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: list.Items[0].MsgID})
			if err != nil || dead.DeadLetter == nil || len(dead.History) == 0 {
				t.Fatalf("show dead message %d: %+v, %v; want its block and history", list.Items[0].MsgID, dead, err)
			}
			near(t, "the block's source_enqueued_at", dead.DeadLetter.SourceEnqueuedAt, sent)
			near(t, "the block's dead_lettered_at", dead.DeadLetter.DeadLetteredAt, time.Now())
			near(t, "the last failure's failed_at", dead.History[len(dead.History)-1].FailedAt, time.Now())
			sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
			if err != nil || len(sum.Groups) != 1 {
				t.Fatalf("DLQ summary of %s: %+v, %v; want one group", q, sum.Groups, err)
			}
			near(t, "the group's last_dead_lettered_at", sum.Groups[0].LastDeadAt, time.Now())

			stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
			if err != nil || len(stats.Queues) != 1 || stats.Queues[0].Scheduled != 1 {
				t.Fatalf("stats of %s: %+v, %v; want the one scheduled message", q, stats.Queues, err)
			}
			if age := stats.Queues[0].OldestAgeSeconds; age < 0 || age > 60 {
				t.Errorf("oldest_age_seconds = %v, want the seconds since %s", age, sent.UTC())
			}
			workers, err := svc.Workers(ctx, ops.WorkersRequest{All: true})
			if err != nil || workers.Running != 1 {
				t.Fatalf("workers: %+v, %v; want the one running", workers, err)
			}
			near(t, "the worker's started_at", workers.Workers[0].StartedAt, sent)
			if age := workers.Workers[0].HeartbeatAgeSeconds; age < 0 || age > 60 {
				t.Errorf("heartbeat_age_seconds = %v, want the seconds since its last heartbeat", age)
			}
			if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
				t.Fatal(err)
			}
			audit, err := svc.Audit(ctx, ops.AuditRequest{Since: "1h"})
			if err != nil || len(audit.Items) == 0 {
				t.Fatalf("audit log since an hour ago: %+v, %v; want the pause", audit.Items, err)
			}
			near(t, "the pause's audit entry", audit.Items[0].At, time.Now())
			// The worker counts the dead letter by its own clock, just after
			// the write the block's time is from: a minute may turn between
			// the two, and since then too, so the bucket of that time or the
			// next holds it, whichever the last one is now.
			deadAt := dead.DeadLetter.DeadLetteredAt
			pgtest.Eventually(t, time.Minute, "the dead letter counted in its minute's throughput", func() bool {
				tp, err := svc.Throughput(ctx, ops.ThroughputRequest{Queue: q, Window: "1h"})
				if err != nil {
					t.Fatalf("throughput of %s: %v", q, err)
				}
				if len(tp.Queues) != 1 || len(tp.Queues[0].Buckets) < 2 {
					return false
				}
				b := tp.Queues[0].Buckets
				width, n := b[1].Start.Sub(b[0].Start), int64(0)
				for _, bucket := range b {
					if !bucket.Start.After(deadAt) && deadAt.Sub(bucket.Start) < width || bucket.Start.After(deadAt) && bucket.Start.Sub(deadAt) <= width {
						n += bucket.DeadLettered
					}
				}
				return n == 1 && tp.Queues[0].Total.DeadLettered == 1
			})
		})
	}
}
