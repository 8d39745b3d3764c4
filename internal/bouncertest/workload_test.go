package bouncertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// jobs is how many messages each workload sends: enough that many
// transactions of several processes share few server connections.
const jobs = 3000

// processes is how many engine clients, each with a pool of its own, work
// the queue through the pooler at once.
const processes = 2

var errPlanned = errors.New("planned failure")

// TestWorkloadsThroughBouncer runs the drain, retry and dead workloads
// through PgBouncer in transaction mode and accounts for every message:
// each one exactly once in the archive (drain, retry) or the DLQ (dead),
// none left in the queue. The clients find that notifications do not reach
// them and say so once each.
func TestWorkloadsThroughBouncer(t *testing.T) {
	t.Parallel()
	direct := pgtest.Store(t)
	b := bouncertest.Start(t, pgtest.URL(t))
	for _, w := range []string{"drain", "retry", "dead"} {
		t.Run(w, func(t *testing.T) { runWorkload(t, direct, b, w) })
	}
}

func runWorkload(t *testing.T, direct *store.Store, b *bouncertest.Bouncer, workload string) {
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, direct, "bw", func(s *store.QueueSettings) {
		s.MaxRetries = 2
		s.RetryBackoff = 20 * time.Millisecond
		s.RetryBackoffMax = 100 * time.Millisecond
	})
	sender := openStore(t, b.URL())
	batch := make([]store.NewMessage, 0, 500)
	for i := range jobs {
		batch = append(batch, store.NewMessage{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		if len(batch) == cap(batch) {
			if _, err := sender.SendBatch(ctx, q, batch); err != nil {
				t.Fatalf("send through pgbouncer: %v", err)
			}
			batch = batch[:0]
		}
	}

	var calls atomic.Int64
	handler := func(_ context.Context, job *engine.Job) error {
		calls.Add(1)
		switch {
		case workload == "retry" && job.Attempt == 1, workload == "dead":
			return errPlanned
		}
		return nil
	}
	logs := make([]*pgtest.SyncBuffer, processes)
	for i := range processes {
		logs[i] = &pgtest.SyncBuffer{}
		log := slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo}))
		c := pgtest.NewClient(t, openStore(t, b.URL()), q, func(cfg *engine.Config) {
			cfg.Queues[0].Concurrency = 16
			cfg.Logger = log
		})
		c.HandleQueue(q, handler)
		pgtest.Start(t, c)
	}
	pgtest.Eventually(t, 3*time.Minute, "the queue to empty through pgbouncer", func() bool {
		empty, err := direct.IsEmpty(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return empty
	})

	// Each n once, in the archive or the DLQ, as the workload says.
	where, other := `pgmq."a_`+q+`"`, `pgmq."q_`+q+`_dlq"`
	if workload == "dead" {
		where, other = other, where
	}
	if n := pgtest.Int(t, direct, `SELECT count(*) FROM `+other); n != 0 {
		t.Errorf("%s holds %d messages, want none", other, n)
	}
	var total, distinct, lo, hi int
	err := direct.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT (message->>'n')::int),
		coalesce(min((message->>'n')::int), -1), coalesce(max((message->>'n')::int), -1) FROM `+where).Scan(&total, &distinct, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if total != jobs || distinct != jobs || lo != 0 || hi != jobs-1 {
		t.Fatalf("%s holds %d messages, %d distinct, n from %d to %d; want each of the %d messages exactly once",
			where, total, distinct, lo, hi, jobs)
	}
	// A dead message ran at least twice (max_retries 2): once more than a
	// drained one, like a retried one.
	want := map[string]int64{"drain": jobs, "retry": 2 * jobs, "dead": 2 * jobs}[workload]
	if got := calls.Load(); got < want {
		t.Errorf("the handler ran %d times, want at least %d", got, want)
	}
	for i, l := range logs {
		pgtest.Eventually(t, time.Minute, fmt.Sprintf("client %d to log that it polls", i), func() bool {
			return strings.Contains(l.String(), "notifications do not reach this process")
		})
		if n := strings.Count(l.String(), "notifications do not reach this process"); n != 1 {
			t.Errorf("client %d logged the fall-back to polling %d times, want once; its log:\n%s", i, n, l.String())
		}
	}
}
