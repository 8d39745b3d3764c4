package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// BenchmarkSendBatch measures sending batches of 100 messages; msgs/s is the
// figure the README reports.
func BenchmarkSendBatch(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	batch := msgs(100)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := s.SendBatch(ctx, q, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkReadArchive measures claiming 100 messages and archiving them in
// one statement each, for the reads that claimed them, the worker's hot
// path.
func BenchmarkReadArchive(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	batch := msgs(100)
	claims := make([]store.Claim, 0, 100)
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		if _, err := s.SendBatch(ctx, q, batch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		got, err := s.Read(ctx, q, time.Minute, 100)
		if err != nil || len(got) != 100 {
			b.Fatalf("read %d: %v", len(got), err)
		}
		claims = claims[:0]
		for _, m := range got {
			claims = append(claims, m.Claim())
		}
		if moved, err := s.ArchiveClaimed(ctx, q, claims); err != nil || len(moved) != len(claims) {
			b.Fatalf("archived %d of %d: %v", len(moved), len(claims), err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(b.N*100)/elapsed.Seconds(), "msgs/s")
}

// BenchmarkExtendVisibility measures a worker's heartbeat: extending the
// visibility timeout of the 100 claims it holds in one statement, in a
// queue with a backlog.
func BenchmarkExtendVisibility(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	for range 10 {
		if _, err := s.SendBatch(ctx, q, msgs(1000)); err != nil {
			b.Fatal(err)
		}
	}
	got, err := s.Read(ctx, q, time.Hour, 100)
	if err != nil || len(got) != 100 {
		b.Fatalf("read %d: %v", len(got), err)
	}
	claims := make([]store.Claim, 0, 100)
	for _, m := range got {
		claims = append(claims, m.Claim())
	}
	for b.Loop() {
		if done, err := s.SetVisibilityClaimed(ctx, q, claims, time.Hour); err != nil || len(done) != len(claims) {
			b.Fatalf("extended %d of %d: %v", len(done), len(claims), err)
		}
	}
}

// BenchmarkDeadLetterHotGroup measures dead-lettering batches of 10 into
// one group of one DLQ from 4 goroutines per core at once, as worker
// processes do in an outage: the group's count is what they share. It
// reports the mean time of one DeadLetterMany call (the sends that feed it
// are not timed).
func BenchmarkDeadLetterHotGroup(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	dlq := store.DLQName(q)
	var spent atomic.Int64
	var calls atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		items := make([]store.DeadLetterItem, 10)
		for pb.Next() {
			ids, err := s.SendBatch(ctx, q, msgs(len(items)))
			if err != nil {
				b.Error(err)
				return
			}
			for i, id := range ids {
				items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3,
					Failure: &store.Failure{Attempt: 4, ErrorClass: "Unavailable", ErrorMessage: "upstream unavailable"}}
			}
			start := time.Now()
			if _, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items); err != nil {
				b.Error(err)
				return
			}
			spent.Add(int64(time.Since(start)))
			calls.Add(1)
		}
	})
	if n := calls.Load(); n > 0 {
		b.ReportMetric(float64(spent.Load())/float64(n)/float64(time.Millisecond), "ms/deadletter")
	}
}

// BenchmarkRetryDead measures retrying batches of 100 dead messages out of
// their DLQ by id, each keyed as the engine sends it (the key header that
// a retry hands to the message it brings back) or not. The sends and
// dead-letterings that feed it are not timed.
func BenchmarkRetryDead(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "keyed"}[keyed]
		b.Run(name, func(b *testing.B) {
			s := testStore(b)
			ctx := testContext(b)
			q := newQueue(b, s)
			dlq := store.DLQName(q)
			var elapsed time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				batch := msgs(100)
				if keyed {
					for i := range batch {
						batch[i] = keyedWithHeader(`{"n":1}`, fmt.Sprintf("key-%d-%d", n, i))
					}
				}
				ids, err := s.SendBatch(ctx, q, batch)
				if err != nil {
					b.Fatal(err)
				}
				dead := deadIDs(b, s, q, dlq, ids, "Boom", store.ReasonNonRetryable)
				n++
				b.StartTimer()
				start := time.Now()
				rep, err := s.RetryDead(ctx, dlq, dead, store.RetryOptions{})
				if err != nil || rep.Retried != len(dead) {
					b.Fatalf("retry = %+v, %v", rep, err)
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(n*100)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkBulkDryRunAcrossDLQs measures a dry run by filter over every
// DLQ when one DLQ holds all the messages selected (5,000, ten pages) and
// four others hold 40,000 messages each of other kinds, all dead-lettered
// over the same hour: each page used to scan those four from its cursor
// to their end again.
func BenchmarkBulkDryRunAcrossDLQs(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	for range 4 {
		q := newQueue(b, s)
		if err := s.BulkLoadDead(ctx, q, 40_000, 10); err != nil {
			b.Fatal(err)
		}
		// Backtraces as real failures have them: the headers are read
		// from TOAST to be filtered.
		// Dead-lettered over the last hour, as the messages selected are.
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+store.DLQName(q)+`" SET enqueued_at = now() - (msg_id % 3600) * interval '1 second',
			headers = jsonb_set(headers, '{`+store.HeaderDeadLetter+`,backtrace}', to_jsonb(repeat(md5(msg_id::text), 80)))`); err != nil {
			b.Fatal(err)
		}
	}
	rare := newQueue(b, s)
	for range 5 {
		pgtest.DeadLetterN(b, s, rare, 1000, pgtest.DeadSpec{Kind: "rare", Message: "boom"})
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+store.DLQName(rare)+`" SET enqueued_at = now() - (msg_id % 3600) * interval '1 second'`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Kind: "rare"}, 10_000, store.RetryOptions{DryRun: true})
		if err != nil || rep.Retried != 5000 {
			b.Fatalf("dry run = %d, %v; want 5000", rep.Retried, err)
		}
	}
}

// BenchmarkSummaryByReason measures a summary filtered by reason of a DLQ
// of 100,000 dead messages: it used to read them all; it reads the
// groups' counts now, as an unfiltered summary does.
func BenchmarkSummaryByReason(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	if err := s.BulkLoadDead(ctx, q, 100_000, 20); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		sum, err := s.SummarizeDeadReport(ctx, store.DeadFilter{Queue: q, Reason: store.ReasonNonRetryable})
		if err != nil || len(sum.Groups) == 0 {
			b.Fatalf("summary = %d groups, %v", len(sum.Groups), err)
		}
	}
}

// BenchmarkQueueDepths measures the read of every queue's depth that a
// metrics scrape makes, over 500 queues of 20 messages each, a tenth of
// them with dead messages, and 10 with a backlog of 5,000: enough for the
// planner to compile a statement over one of them with JIT.
func BenchmarkQueueDepths(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	for i := range 500 {
		q := newQueue(b, s)
		n := 20
		if i%50 == 0 {
			n = 5000
		}
		for sent := 0; sent < n; sent += 1000 {
			if _, err := s.SendBatch(ctx, q, msgs(min(n-sent, 1000))); err != nil {
				b.Fatal(err)
			}
		}
		if i%10 == 0 {
			pgtest.DeadLetterN(b, s, q, 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})
		}
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ds, err := s.QueueDepths(ctx)
		if err != nil || len(ds) != 500 {
			b.Fatalf("depths of %d queues, %v; want 500", len(ds), err)
		}
	}
}

// BenchmarkListLiveByState measures a page of the few in-flight messages
// of a queue whose backlog of 200,000 waits, as pgbus queue messages
// --state in_flight reads it in a backlog: the messages on the far side of
// the visibility timeout are found through the queue's vt index.
func BenchmarkListLiveByState(b *testing.B) {
	s := testStore(b)
	ctx := testContext(b)
	q := newQueue(b, s)
	if _, err := s.SendBatch(ctx, q, msgs(3)); err != nil {
		b.Fatal(err)
	}
	if got, err := s.Read(ctx, q, time.Hour, 3); err != nil || len(got) != 3 {
		b.Fatalf("read %d: %v", len(got), err)
	}
	for sent := 0; sent < 200_000; sent += 1000 {
		if _, err := s.SendBatch(ctx, q, msgs(1000)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgmq.q_`+q); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		page, err := s.ListLive(ctx, store.LiveFilter{Queue: q, State: store.StateInFlight}, "", 25)
		if err != nil || len(page.Items) != 3 {
			b.Fatalf("in flight: %d, %v; want 3", len(page.Items), err)
		}
	}
}

// BenchmarkDepthOfLargeQueue measures the depth read of a queue of
// 2,000,000 ready messages, as health checks, probes and scrapes make it:
// counted row by row (exact, the limit raised past the queue) and from
// the statistics system's count (estimated, past ExactCountLimit).
func BenchmarkDepthOfLargeQueue(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq.q_`+q+` (vt, message) SELECT now(), '{}'::jsonb FROM generate_series(1, 2000000)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgmq.q_`+q); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		limit int64
	}{{"exact", 10_000_000}, {"estimated", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s.SetExactCountLimit(c.limit)
			s.SetExactCountPages(c.limit)
			for b.Loop() {
				st, err := s.QueueStats(ctx, q, store.QueueStatsOptions{})
				if err != nil || len(st) != 1 || st[0].Visible < 1_900_000 || st[0].Estimated != (c.limit == 0) {
					b.Fatalf("stats = %+v, %v", st, err)
				}
			}
		})
	}
}

// BenchmarkRunNow measures a run-now of 100,000 retrying messages (two
// batches), each iteration putting them back to wait for their retry
// first, outside the timer.
func BenchmarkRunNow(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	table := `pgmq."q_` + q + `"`
	if _, err := s.Pool().Exec(ctx, `INSERT INTO `+table+` (read_ct, enqueued_at, vt, message, headers)
		SELECT 1, now() - interval '1 minute', now() + interval '1 hour', '{}', '{}' FROM generate_series(1, 100000)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		SELECT $1, msg_id, 1, 'E', 'boom' FROM `+table, q); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		if _, err := s.Pool().Exec(ctx, `UPDATE `+table+` SET vt = now() + interval '1 hour'`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := s.RunNow(ctx, q, store.RunNowOptions{}); err != nil || n != 100_000 {
			b.Fatalf("run now = %d, %v; want 100,000", n, err)
		}
	}
}

// BenchmarkHeldByBreaker measures the count of the jobs a breaker holds
// (pgbus circuits, and the health check of a breaker that is not closed)
// in a queue of 1,000,000 messages sent with a day's delay and 10 the
// breaker holds: the delayed ones are not yet visible either, so the
// count must not read them one by one.
func BenchmarkHeldByBreaker(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	const breaker = "http:bench"
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: 5 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.OpenBreaker(ctx, breaker, store.BreakerOpening{For: 5 * time.Minute, By: "bench"}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers)
		SELECT now() + interval '1 day', '{}', '{}' FROM generate_series(1, 1000000)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (read_ct, vt, message, headers)
		SELECT 1, now() + interval '4 minutes', '{}', jsonb_build_object($1::text, jsonb_build_object('breaker', $2::text, 'read_ct', 1))
		FROM generate_series(1, 10)`, store.HeaderBreakerHold, breaker); err != nil {
		b.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, breaker, []store.BreakerUser{{Queue: q}}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgmq."q_`+q+`"`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if held, err := s.HeldByBreaker(ctx, breaker); err != nil || held[breaker] != 10 {
			b.Fatalf("held = %v, %v; want 10", held, err)
		}
	}
}

// BenchmarkWakeProbeHolds is the end of a failed probe (store.WakeProbeHolds)
// in a queue of 1,000,000 messages delayed a day and 10,000 jobs held
// while the probe ran: each is moved once, to the new open period's end,
// read through the vt index.
func BenchmarkWakeProbeHolds(b *testing.B) {
	s, q := benchBreakerQueue(b)
	ctx := testContext(b)
	const breaker = benchBreaker
	var probe time.Time
	if err := s.Pool().QueryRow(ctx, `UPDATE pgbus.circuit_breakers SET state = 'open', open_until = now() + interval '5 minutes',
		probe_until = NULL WHERE name = $1 RETURNING now() + interval '10 minutes'`, breaker).Scan(&probe); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers)
		SELECT now() + interval '1 day', '{}', '{}' FROM generate_series(1, 1000000)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (read_ct, vt, message, headers)
		SELECT 1, $3, '{}', jsonb_build_object($1::text, jsonb_build_object('breaker', $2::text, 'read_ct', 1))
		FROM generate_series(1, 10000)`, store.HeaderBreakerHold, breaker, probe); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgmq."q_`+q+`"`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET vt = $1 WHERE headers ? $2`, probe, store.HeaderBreakerHold); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := s.WakeProbeHolds(ctx, breaker, probe, time.Time{}); err != nil || n != 10000 {
			b.Fatalf("WakeProbeHolds = %d, %v; want 10000", n, err)
		}
	}
}

// BenchmarkReleaseHeld is the end of a probe that closed its breaker
// (store.WakeProbeHolds) in a queue of 1,000,000 messages delayed a day
// and 10,000 jobs held: 5,000 while the probe ran, 5,000 until the open
// period's end, visible since and not read yet. Each is released once,
// read through the vt index: counted, then spread in batches.
func BenchmarkReleaseHeld(b *testing.B) {
	s, q := benchBreakerQueue(b)
	ctx := testContext(b)
	const breaker = benchBreaker
	var probe, from time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT now() + interval '10 minutes', now() - interval '1 second'`).Scan(&probe, &from); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (vt, message, headers)
		SELECT now() + interval '1 day', '{}', '{}' FROM generate_series(1, 1000000)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq."q_`+q+`" (read_ct, vt, message, headers)
		SELECT 1, CASE WHEN i % 2 = 0 THEN $3::timestamptz ELSE $4::timestamptz END, '{}', jsonb_build_object($1::text, jsonb_build_object('breaker', $2::text, 'read_ct', 1))
		FROM generate_series(1, 10000) AS i`, store.HeaderBreakerHold, breaker, probe, from); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE pgmq."q_`+q+`"`); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."q_`+q+`" SET vt = CASE WHEN msg_id % 2 = 0 THEN $1::timestamptz ELSE $2::timestamptz END,
			headers = jsonb_build_object($3::text, jsonb_build_object('breaker', $4::text, 'read_ct', 1)) WHERE read_ct = 1`,
			probe, from, store.HeaderBreakerHold, breaker); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := s.WakeProbeHolds(ctx, breaker, probe, from); err != nil || n != 10000 {
			b.Fatalf("WakeProbeHolds = %d, %v; want 10000", n, err)
		}
	}
}

// BenchmarkRunHeldNowManyQueues is a reset's search for holds outside its
// breaker's users' queues (store.RunHeldNow) in a database of 500 queues
// and their DLQs, none holding any.
func BenchmarkRunHeldNowManyQueues(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	for range 500 {
		newQueue(b, s)
	}
	until := time.Now().Add(time.Hour)
	for b.Loop() {
		if n, err := s.RunHeldNow(ctx, "http:bench", &until); err != nil || n != 0 {
			b.Fatalf("RunHeldNow = %d, %v; want none", n, err)
		}
	}
}

// BenchmarkLockBoundedRead measures what the bound on lock waits of the
// reads of people and agents (WithLockWait) costs a small read: its own
// transaction, begun with the setting, and committed.
func BenchmarkLockBoundedRead(b *testing.B) {
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	q := newQueue(b, s)
	pgtest.DeadLetterN(b, s, q, 20, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{{"unbounded", testContext(b)}, {"bounded", store.WithLockWait(testContext(b), 3*time.Second)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.ListDead(bc.ctx, store.DeadFilter{Queue: q}, "", 10)
				if err != nil || len(page.Items) != 10 {
					b.Fatalf("a page of %d dead messages, %v; want 10", len(page.Items), err)
				}
				if _, err := s.Metrics(bc.ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQueueStatsManyQueues measures the stats of every queue, their
// archives counted, as pgbus queues and the stats tool read them, over
// 1,500 queues of 5 messages each, 3 of them archived, a tenth of them
// with 2 dead messages: a database of a queue per tenant. It reports the
// median of the reads besides their mean.
func BenchmarkQueueStatsManyQueues(b *testing.B) {
	const n = 1500
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	// Longer than a test's: the queues take minutes to make.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	names := make(chan string)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for q := range names {
				if err := s.CreateQueue(ctx, q); err != nil {
					errs <- err
					return
				}
				ids, err := s.SendBatch(ctx, q, msgs(5))
				if err == nil {
					_, err = s.ArchiveMany(ctx, q, ids[:3])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	prefix := uniqueName("st")
	queues := make([]string, n)
	for i := range queues {
		queues[i] = fmt.Sprintf("%s_%04d", prefix, i)
		names <- queues[i]
	}
	close(names)
	for range 4 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i += 10 {
		pgtest.DeadLetterN(b, s, queues[i], 2, pgtest.DeadSpec{Kind: "k", Message: "boom"})
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		stats, err := s.QueueStats(ctx, "", store.QueueStatsOptions{Archive: true})
		took = append(took, time.Since(start))
		if err != nil || len(stats) < n {
			b.Fatalf("stats of %d queues, %v; want %d", len(stats), err, n)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}

// BenchmarkRetryDeadMatching measures a retry by filter of 2,000 dead
// messages of one queue, plain or each keyed as the engine sends it, on the
// shared test server (fsync off) and on a server of its own that syncs
// each commit to disk as a production server does ("durable"). The sends
// and dead-letterings that feed it are not timed.
func BenchmarkRetryDeadMatching(b *testing.B) {
	const n = 2000
	for _, durable := range []bool{false, true} {
		for _, keyed := range []bool{false, true} {
			name := map[bool]string{false: "shared", true: "durable"}[durable] + "/" + map[bool]string{false: "plain", true: "keyed"}[keyed]
			b.Run(name, func(b *testing.B) {
				var s *store.Store
				if durable {
					_, _, s = pgtest.PrivateStore(b)
				} else {
					s = testStore(b)
				}
				ctx := testContext(b)
				q := newQueue(b, s)
				dlq := store.DLQName(q)
				var elapsed time.Duration
				runs := 0
				for b.Loop() {
					b.StopTimer()
					batch := msgs(n)
					if keyed {
						for i := range batch {
							batch[i] = keyedWithHeader(`{"n":1}`, fmt.Sprintf("key-%d-%d", runs, i))
						}
					}
					for c := 0; c < n; c += 1000 { // a batch holds at most 1,000 keys
						ids, err := s.SendBatch(ctx, q, batch[c:c+1000])
						if err != nil {
							b.Fatal(err)
						}
						deadIDs(b, s, q, dlq, ids, "Boom", store.ReasonNonRetryable)
					}
					runs++
					b.StartTimer()
					start := time.Now()
					rep, err := s.RetryDeadMatching(ctx, store.DeadFilter{Queue: q}, n, store.RetryOptions{})
					if err != nil || rep.Retried != n {
						b.Fatalf("retry = %d retried, %d failed, %v", rep.Retried, rep.Failed, err)
					}
					elapsed += time.Since(start)
					b.StopTimer()
					// Empty the queue, so that each run starts alike.
					if _, err := s.Pool().Exec(ctx, `DELETE FROM pgmq."q_`+q+`"`); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(runs*n)/elapsed.Seconds(), "msgs/s")
			})
		}
	}
}

// benchBreaker names the breaker of benchBreakerQueue.
const benchBreaker = "http:bench"

// benchBreakerQueue is a store on a database of the benchmark's own and a
// new queue of it that breaker benchBreaker's user names.
func benchBreakerQueue(b *testing.B) (*store.Store, string) {
	b.Helper()
	s := pgtest.OpenStore(b, pgtest.NewDatabase(b))
	ctx := testContext(b)
	q := newQueue(b, s)
	if err := s.EnsureBreaker(ctx, store.BreakerConfig{Name: benchBreaker, FailureThreshold: 1, CoolOff: time.Minute, MaxCoolOff: 5 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	if err := s.RecordBreakerUsers(ctx, benchBreaker, []store.BreakerUser{{Queue: q}}); err != nil {
		b.Fatal(err)
	}
	return s, q
}
