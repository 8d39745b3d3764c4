package runner_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/store"
)

// At the info level, Work with a JobLog logs each dead-letter and each
// discard with its queue, id, kind, class and redacted error (a discard
// with the archive that keeps it), a line per queue while work
// happens and a summary at the end; successes and retries are not logged
// one by one.
func TestJobLogAtInfo(t *testing.T) {
	ctx := pgtest.Context(t)
	st, svc, q := setUp(t)
	pgtest.SetFastSettings(t, st, q.Name, func(s *store.QueueSettings) { s.MaxRetries = 2; s.RetryBackoff = 10 * time.Millisecond })
	var logs pgtest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	jobs := runner.NewJobLog(log)
	client, err := engine.NewClient(st, engine.Config{Queues: []engine.QueueConfig{{Name: q.Name, Concurrency: 4}},
		PollInterval: 20 * time.Millisecond, Logger: log, Observers: []engine.Observer{jobs}})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "sk_live_JOBLOG1234567890abcdef"
	client.Handle("ok", func(context.Context, *engine.Job) error { return nil })
	client.Handle("flaky", func(_ context.Context, job *engine.Job) error {
		if job.Attempt < 2 {
			return errors.New("timeout talking to the bank")
		}
		return nil
	})
	client.Handle("bad", func(context.Context, *engine.Job) error {
		return engine.NonRetryable(fmt.Errorf("card rejected with Authorization: Bearer %s %s", secret, strings.Repeat("and more ", 100)))
	})
	client.Handle("stale", func(context.Context, *engine.Job) error {
		return engine.Discard(fmt.Errorf("order already shipped, token %s", secret))
	})
	for kind, n := range map[string]int{"ok": 5, "flaky": 3, "bad": 2, "stale": 1} {
		for i := range n {
			pgtest.Send(t, client, q.Name, i, engine.SendOptions{Kind: kind})
		}
	}
	err = runner.Work(ctx, client, svc, []config.WorkQueue{q}, runner.WorkOptions{UntilIdle: true, Logger: log, Jobs: jobs, SummaryEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "job dead-lettered"); n != 2 {
		t.Errorf("%d dead-letters logged, want 2:\n%s", n, out)
	}
	if n := strings.Count(out, "job discarded"); n != 1 {
		t.Errorf("%d discards logged, want 1:\n%s", n, out)
	}
	archive := "pgmq.a_" + q.Name
	for _, want := range []string{"queue=" + q.Name, "kind=bad", "reason=non_retryable_error", "error_class=", "[REDACTED]",
		"kind=stale", "archive=" + archive, "discarded=1",
		"in the last interval", "summary of this run", "succeeded=8", "retried=3", "dead_lettered=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	// The discarded message is where its line says, with its mark.
	if n := pgtest.Int(t, st, `SELECT count(*) FROM `+archive+` WHERE headers->>'pgbus_discarded' = 'true'`); n != 1 {
		t.Errorf("%d messages in %s marked discarded; want the one the log names", n, archive)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "job discarded") && (!strings.Contains(line, "msg_id=") || !strings.Contains(line, "error_class=") || !strings.Contains(line, " err=") || strings.Contains(line, " error=")) {
			t.Errorf("a discard's line without its id, class or error: %s", line)
		}
		if strings.Contains(line, "job dead-lettered") && len(line) > 600 {
			t.Errorf("a dead-letter line of %d characters; want its error shortened: %s", len(line), line)
		}
	}
	for _, unwanted := range []string{secret, "job done", "job failed", "level=DEBUG"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("the info log shows %q:\n%s", unwanted, out)
		}
	}
}

// Flush logs nothing for an interval in which nothing was settled.
func TestJobLogSilentWhenIdle(t *testing.T) {
	var logs pgtest.SyncBuffer
	jobs := runner.NewJobLog(slog.New(slog.NewTextHandler(&logs, nil)))
	jobs.Flush()
	jobs.JobFinished(context.Background(), &engine.Job{Queue: "orders", ID: 1}, engine.Finish{Outcome: engine.OutcomeSucceeded})
	jobs.Flush()
	jobs.Flush()
	if n := strings.Count(logs.String(), "in the last interval"); n != 1 {
		t.Fatalf("%d interval lines for one busy interval of three:\n%s", n, logs.String())
	}
}

// The summary has a line for each worked queue, one of zeros for a queue
// that settled nothing, and priority levels under their own names.
func TestJobLogSummaryNamesEveryQueue(t *testing.T) {
	var logs pgtest.SyncBuffer
	jobs := runner.NewJobLog(slog.New(slog.NewTextHandler(&logs, nil)))
	jobs.JobFinished(context.Background(), &engine.Job{Queue: "orders_p1", ID: 1}, engine.Finish{Outcome: engine.OutcomeSucceeded})
	jobs.Summary([]string{"orders", "emails"})
	out := logs.String()
	if n := strings.Count(out, "summary of this run"); n != 2 {
		t.Fatalf("%d summary lines, want 2:\n%s", n, out)
	}
	for _, want := range []string{"queue=orders_p1 succeeded=1", "queue=emails succeeded=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// A dead letter's kind is logged at most MaxKindBytes long: another
// producer may write a kind of any length into a queue, and one of
// 100,000 characters made a log line of as many.
func TestJobLogClipsLongKinds(t *testing.T) {
	t.Parallel()
	var logs pgtest.SyncBuffer
	jobs := runner.NewJobLog(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	long := strings.Repeat("Zé", 50_000)
	jobs.JobFinished(context.Background(), &engine.Job{Queue: "q", ID: 7, Kind: long, Attempt: 1},
		engine.Finish{Outcome: engine.OutcomeDeadLettered, Reason: store.ReasonNonRetryable, Err: errors.New("bad input"), ErrorClass: "E", Ran: true})
	out := logs.String()
	if !strings.Contains(out, "job dead-lettered") || len(out) > engine.MaxKindBytes+400 || !strings.Contains(out, "ZéZé") || !strings.Contains(out, "…") {
		t.Errorf("a dead letter of a 150,000-byte kind logged as %d bytes, want the kind cut to %d, marked: %.300s", len(out), engine.MaxKindBytes, out)
	}
}

// A process of many queues that settled nothing ends with one line that
// counts them, not a line of zeros for each.
func TestJobLogSummaryCountsManyIdleQueues(t *testing.T) {
	var logs pgtest.SyncBuffer
	jobs := runner.NewJobLog(slog.New(slog.NewTextHandler(&logs, nil)))
	jobs.JobFinished(context.Background(), &engine.Job{Queue: "orders", ID: 1}, engine.Finish{Outcome: engine.OutcomeSucceeded})
	queues := []string{"orders"}
	for i := range 700 {
		queues = append(queues, fmt.Sprintf("idle_%03d", i))
	}
	jobs.Summary(queues)
	out := logs.String()
	if n := strings.Count(out, "summary of this run"); n != 2 || !strings.Contains(out, "queue=orders succeeded=1") ||
		!strings.Contains(out, "queues that settled nothing\" queues=700 first=idle_000,idle_001,idle_002") {
		t.Fatalf("the summary of 1 busy and 700 idle queues: %d lines, want the busy one's and one counting the others:\n%s", n, out)
	}
}
