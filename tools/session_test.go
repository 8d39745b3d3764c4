package tools_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

type upstreamError struct{ status int }

func (e *upstreamError) Error() string      { return "http 503: upstream unavailable" }
func (e *upstreamError) ErrorClass() string { return "HTTPError" }

type validationError struct{}

func (validationError) Error() string      { return "bad input: amount is missing" }
func (validationError) ErrorClass() string { return "ValidationError" }

// TestAgentSession plays an agent's investigation with tool calls only,
// over failures made by real workers: transient 503s that used up their
// retries, bad input, and a kind nobody handles. The agent reads the
// summary, shows a sample of each group, retries the transient group and
// discards the bad input; the database must end as it decided.
func TestAgentSession(t *testing.T) {
	t.Parallel()
	// A database of its own: health lists every queue's problems.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := newQueue(t, st)
	ctx := testContext(t)
	set := store.DefaultQueueSettings(q)
	set.MaxRetries, set.RetryBackoff, set.RetryBackoffMax = 2, 20*time.Millisecond, 50*time.Millisecond
	if err := st.SetQueueSettings(ctx, set); err != nil {
		t.Fatal(err)
	}

	// Workers make the failures.
	const transient, bad, unknown = 6, 3, 2
	c, err := engine.NewClient(st, engine.Config{
		Queues:          []engine.QueueConfig{{Name: q, Concurrency: 4}},
		PollInterval:    20 * time.Millisecond,
		SettingsRefresh: 50 * time.Millisecond,
		StatsFlush:      50 * time.Millisecond,
		Rand:            func() float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Handle("webhook", func(context.Context, *engine.Job) error { return &upstreamError{503} })
	c.Handle("charge", func(context.Context, *engine.Job) error { return engine.NonRetryable(validationError{}) })
	send := func(kind string, n int) {
		for i := range n {
			if _, err := c.Send(ctx, q, map[string]any{"i": i, "kind": kind}, engine.SendOptions{Kind: kind}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send("webhook", transient)
	send("charge", bad)
	send("mystery", unknown)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(stop)
	pgtest.Eventually(t, time.Minute, "every message to be dead-lettered", func() bool {
		return pgtest.Live(t, st, q+"_dlq") >= transient+bad+unknown
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The agent, with tool calls only.
	e := newEnvOn(t, st, ops.Options{})
	health := healthOK(t, e, nil)
	if counted(health.DeadMessages) < transient+bad+unknown {
		t.Errorf("health: %+v", health)
	}
	// The new dead letters are a reason, whose next step is the summary of
	// the queue.
	i := slices.IndexFunc(health.Reasons, func(r ops.HealthReason) bool { return r.Queue == q && r.Code == "dead_letters_growing" })
	if i < 0 {
		t.Errorf("health does not report %s's new dead letters: %+v", q, health.Reasons)
	} else if h, ok := findHint(health.Reasons[i].Next, "pgbus_dlq_summary"); !ok || hintArg(h, "queue") != `"`+q+`"` {
		t.Errorf("next of the dead letters: %+v", health.Reasons[i].Next)
	}
	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q})
	if len(sum.Groups) != 3 || sum.Total != transient+bad+unknown {
		t.Fatalf("summary: %+v", sum)
	}
	var retryGroup, discardGroup *ops.DeadGroup
	for i, g := range sum.Groups {
		show := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"queue": g.DLQ, "msg_id": g.SampleMsgIDs[0]})
		if show.DeadLetter == nil || show.Kind != g.Kind || show.DeadLetter.ErrorClass != g.ErrorClass {
			t.Fatalf("show of group %+v: %+v", g, show)
		}
		b := show.DeadLetter
		switch {
		case b.Reason == store.ReasonMaxRetriesExceeded && strings.Contains(b.ErrorMessage, "503"):
			retryGroup = &sum.Groups[i]
			// Its two identical failures are one entry, repeated twice.
			if b.Attempts == nil || *b.Attempts != 2 || len(show.History) != 1 || show.History[0].Repeated != 2 || show.History[0].FirstAttempt != 1 || show.FailureCount != 2 {
				t.Errorf("transient failure: %+v, history %+v", b, show.History)
			}
		case b.Reason == store.ReasonNonRetryable && strings.Contains(b.ErrorMessage, "bad input"):
			discardGroup = &sum.Groups[i]
		case b.Reason == store.ReasonNonRetryable && b.ErrorClass == engine.ClassUnknownKind:
			// Left for a person: a handler must be deployed first.
		default:
			t.Fatalf("unexpected group %+v: %+v", g, b)
		}
	}
	if retryGroup == nil || discardGroup == nil || retryGroup.Count != transient || discardGroup.Count != bad {
		t.Fatalf("groups: retry %+v, discard %+v", retryGroup, discardGroup)
	}

	filter := func(g *ops.DeadGroup, limit int) map[string]any {
		return map[string]any{"queue": g.DLQ, "kind": g.Kind, "error_class": g.ErrorClass, "limit": limit}
	}
	dry := filter(retryGroup, 100)
	dry["dry_run"] = true
	if rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", dry); rep.Retried != transient || !rep.DryRun {
		t.Fatalf("dry run: %+v", rep)
	}
	if rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", filter(retryGroup, 100)); rep.Retried != transient || rep.Failed != 0 {
		t.Fatalf("retry: %+v", rep)
	}
	look := filter(discardGroup, 100)
	look["dry_run"] = true
	seen := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", look)
	if seen.Discarded != bad || seen.Expect == "" {
		t.Fatalf("discard dry run: %+v", seen)
	}
	discard := filter(discardGroup, 100)
	discard["expect"], discard["confirm"] = seen.Expect, true
	if d := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", discard); d.Discarded != bad {
		t.Fatalf("discard: %+v", d)
	}
	left := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q})
	if len(left.Groups) != 1 || left.Groups[0].ErrorClass != engine.ClassUnknownKind || left.Total != unknown {
		t.Errorf("left after triage: %+v", left)
	}

	// The end state, in the database.
	if n := pgtest.Live(t, st, q); n != transient {
		t.Errorf("queue holds %d messages, want the %d retried", n, transient)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE headers->>'pgbus_kind' = 'webhook' AND (headers->>'pgbus_dlq_retries')::int = 1 AND NOT headers ? 'pgbus_dead_letter'`); n != transient {
		t.Errorf("%d retried messages carry pgbus_dlq_retries=1 and no block, want %d", n, transient)
	}
	if n := pgtest.Archived(t, st, q+"_dlq"); n != bad {
		t.Errorf("DLQ archive holds %d, want the %d discarded", n, bad)
	}
	if n := pgtest.Live(t, st, q+"_dlq"); n != unknown {
		t.Errorf("DLQ holds %d, want the %d of unknown kind", n, unknown)
	}
	for _, tool := range []string{"dlq_retry", "dlq_discard"} {
		rows := auditRows(t, st, tool, q)
		if len(rows) == 0 || rows[0].IsError || rows[0].Client != "mcp:tools-test/1.0" {
			t.Errorf("audit of %s: %+v", tool, rows)
		}
	}
	if n := len(auditRows(t, st, "dlq_retry", q)); n != 2 {
		t.Errorf("%d audit rows of retries, want 2 (dry run and retry)", n)
	}
	audit := callOK[ops.AuditPage](t, e, "pgbus_audit", map[string]any{"limit": 10})
	if len(audit.Items) < 3 {
		t.Errorf("pgbus_audit: %+v", audit)
	}
}
