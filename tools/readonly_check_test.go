package tools_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A read-only server checks a write call as a writable server does before
// it refuses it for being read-only: a call no server could make (no
// breaker named, a time out of range, a priority level's name for its
// queue, an expect no dry run gave, a reset that would leave a breaker
// opened by hand open) gets the writable server's invalid error and its
// steps, those to write tools as commands, rather than a command that
// fails. A call that could be made is still relayed, and nothing changes.
func TestReadOnlyChecksCallsAsWritable(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	ctx := testContext(t)
	svc, err := ops.New(st, ops.Options{Handlers: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	q := uniqueName("alerts")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	breaker := uniqueName("http:bank")
	if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: breaker, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CircuitOpen(ctx, ops.CircuitOpenRequest{Name: breaker, For: time.Hour, Reason: "bank maintenance"}); err != nil {
		t.Fatal(err)
	}
	world := func() string {
		b, err := st.ListBreakers(ctx, breaker)
		if err != nil || len(b) != 1 {
			t.Fatalf("breaker %s: %+v, %v", breaker, b, err)
		}
		stats := callOK[ops.QueueStatsResult](t, newEnvOn(t, st, ops.Options{ReadOnly: true}), "pgbus_queue_stats", map[string]any{"queue": q})
		return fmt.Sprintf("breaker %s by %q; paused %v", b[0].State, b[0].OpenedBy, stats.Queues[0].Paused)
	}
	before := world()

	rw := newEnvOn(t, st, ops.Options{})
	ro := newEnvOn(t, st, ops.Options{ReadOnly: true})
	writeTools := map[string]bool{}
	for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard", "pgbus_dlq_restore", "pgbus_dlq_purge", "pgbus_queue_pause",
		"pgbus_queue_resume", "pgbus_queue_run_now", "pgbus_circuit_reset", "pgbus_circuit_open"} {
		writeTools[tool] = true
	}
	for _, c := range []struct {
		tool string
		args any
	}{
		{"pgbus_circuit_open", map[string]any{"for": "10m"}},
		{"pgbus_circuit_open", map[string]any{"name": breaker, "for": "30d"}},
		{"pgbus_queue_pause", map[string]any{"queue": q + "_p0"}},
		{"pgbus_queue_resume", map[string]any{"queue": q + "_p2"}},
		{"pgbus_queue_run_now", map[string]any{"queue": q + "_dlq"}},
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{1}, "queue": q + "_p1"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q + "_p1", "limit": 2}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 2, "expect": "bogus"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 2, "expect": "bogus", "dry_run": true}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "limit": 2, "expect": "bogus", "confirm": true}},
		{"pgbus_dlq_discard", map[string]any{"ids": []int64{1, 2}, "queue": q + "_p1"}},
		{"pgbus_dlq_restore", map[string]any{"ids": []int64{1}, "queue": q + "_p1"}},
		{"pgbus_circuit_reset", map[string]any{"name": breaker}},
		{"pgbus_circuit_reset", nil},
	} {
		want := rw.metaOf(t, c.tool, c.args)
		wantText := resultText(rw.call(t, c.tool, c.args))
		got := ro.metaOf(t, c.tool, c.args)
		gotText := resultText(ro.call(t, c.tool, c.args))
		if want.Kind != ops.KindInvalid {
			t.Fatalf("%s(%v) on a writable server: kind %s, %q; want the call invalid", c.tool, c.args, want.Kind, wantText)
		}
		said := func(text string) string { s, _, _ := strings.Cut(text, ": see "); return s }
		if got.Kind != want.Kind || said(gotText) != said(wantText) || strings.Contains(gotText, "operator can run") {
			t.Errorf("%s(%v) on a read-only server: %s %q; want the writable server's %s %q", c.tool, c.args, got.Kind, gotText, want.Kind, said(wantText))
			continue
		}
		if len(got.Next) != len(want.Next) {
			t.Errorf("%s(%v) on a read-only server: steps %+v; want those of the writable server, %+v", c.tool, c.args, got.Next, want.Next)
			continue
		}
		for i, w := range want.Next {
			g := got.Next[i]
			switch {
			case writeTools[w.Tool] && (g.Command == "" || !strings.HasPrefix(g.Command, "pgbus ")):
				t.Errorf("%s(%v): step %d on a read-only server %+v; want the command of %+v", c.tool, c.args, i, g, w)
			case !writeTools[w.Tool] && (g.Tool != w.Tool || !jsonEqual(g.Arguments, w.Arguments)):
				t.Errorf("%s(%v): step %d on a read-only server %+v; want %+v", c.tool, c.args, i, g, w)
			}
		}
	}
	// The same calls made right are still relayed.
	for tool, args := range map[string]map[string]any{
		"pgbus_circuit_reset": {"name": breaker, "end_opening_by_hand": true},
		"pgbus_queue_pause":   {"queue": q},
		"pgbus_circuit_open":  {"name": breaker, "for": "7d"},
	} {
		if m := ro.metaOf(t, tool, args); m.Kind != ops.KindReadOnly || len(m.Next) != 1 || m.Next[0].Command == "" {
			t.Errorf("%s(%v) on a read-only server: %+v; want it refused as read-only with the command to run", tool, args, m)
		}
	}
	if after := world(); after != before {
		t.Fatalf("the calls changed the database:\nbefore: %s\nafter:  %s", before, after)
	}
}

// A read-only server refuses a write call on what is not there as a
// writable server answers it, rather than relaying a command that fails:
// a queue to pause, resume or run now, a breaker to reset or open, with
// the writable server's error; ids of a retry or discard of which none is
// in one DLQ alone, not found or ambiguous as the writable server's
// outcome says, the call in each DLQ of an ambiguous id as commands to
// run; ids of a restore not in the archive. Ids of which one would move
// are still relayed whole, and nothing changes.
func TestReadOnlyRefusesWhatIsNotThere(t *testing.T) {
	t.Parallel()
	// Its own database: its calls by ids alone read every DLQ.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	first := pgtest.DLQStart()
	a, b := newQueueAt(t, st, first), newQueueAt(t, st, first)
	ida := pgtest.DeadLetterN(t, st, a, 2, pgtest.DeadSpec{Kind: "k"})
	pgtest.DeadLetter(t, st, b, pgtest.DeadSpec{Kind: "k"})
	shared, only := ida[0], ida[1] // shared is in both DLQs
	missing := pgtest.MissingDLQID()
	nosuch := uniqueName("nosuch")
	rw := newEnvOn(t, st, ops.Options{})
	ro := newEnvOn(t, st, ops.Options{ReadOnly: true})
	said := func(text string) string { s, _, _ := strings.Cut(text, ": see "); return s }

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"pgbus_queue_pause", map[string]any{"queue": nosuch}},
		{"pgbus_queue_resume", map[string]any{"queue": nosuch}},
		{"pgbus_queue_run_now", map[string]any{"queue": nosuch}},
		{"pgbus_circuit_reset", map[string]any{"name": nosuch}},
		{"pgbus_circuit_open", map[string]any{"name": nosuch, "for": "1h"}},
	} {
		want, wantText := rw.metaOf(t, c.tool, c.args), resultText(rw.call(t, c.tool, c.args))
		got, gotText := ro.metaOf(t, c.tool, c.args), resultText(ro.call(t, c.tool, c.args))
		if want.Kind != ops.KindNotFound || got.Kind != want.Kind || said(gotText) != said(wantText) || len(got.Next) != len(want.Next) {
			t.Errorf("%s(%v) on a read-only server: %s %q %+v; want the writable server's %s %q %+v", c.tool, c.args, got.Kind, gotText, got.Next, want.Kind, wantText, want.Next)
		}
	}

	// The writable server's outcome of each id, in a dry run.
	outcome := func(tool string, args map[string]any) ops.IDOutcome {
		t.Helper()
		dry := map[string]any{"dry_run": true}
		for k, v := range args {
			dry[k] = v
		}
		r := callOK[ops.DLQRetry](t, rw, tool, dry)
		if len(r.Outcomes) != 1 {
			t.Fatalf("%s(%v): %+v", tool, dry, r)
		}
		return r.Outcomes[0]
	}
	for _, c := range []struct {
		tool     string
		args     map[string]any
		kind     string
		says     string
		commands []string
	}{
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{missing}, "queue": a}, ops.KindNotFound,
			outcome("pgbus_dlq_retry", map[string]any{"ids": []int64{missing}, "queue": a}).Error, nil},
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{shared}}, ops.KindInvalid,
			outcome("pgbus_dlq_retry", map[string]any{"ids": []int64{shared}}).Error,
			[]string{fmt.Sprintf("pgbus dlq retry %d --queue %s_dlq", shared, a), fmt.Sprintf("pgbus dlq retry %d --queue %s_dlq", shared, b)}},
		{"pgbus_dlq_discard", map[string]any{"ids": []int64{shared, missing}}, ops.KindInvalid, "none of the 2 ids given is in one DLQ alone",
			[]string{fmt.Sprintf("pgbus dlq discard %d --queue %s_dlq", shared, a), fmt.Sprintf("pgbus dlq discard %d --queue %s_dlq", shared, b)}},
		{"pgbus_dlq_restore", map[string]any{"ids": []int64{missing}, "queue": a}, ops.KindNotFound, "is not in the archive of " + a + "_dlq", nil},
	} {
		got, text := ro.metaOf(t, c.tool, c.args), resultText(ro.call(t, c.tool, c.args))
		if got.Kind != c.kind || !strings.Contains(text, c.says) || strings.Contains(text, "operator can run") {
			t.Errorf("%s(%v) on a read-only server: %s %q; want %s saying %q", c.tool, c.args, got.Kind, text, c.kind, c.says)
			continue
		}
		var commands []string
		for _, n := range got.Next {
			commands = append(commands, n.Command)
		}
		for _, w := range c.commands {
			if !slices.Contains(commands, w) {
				t.Errorf("%s(%v) on a read-only server: steps %+v; want the command %q among them", c.tool, c.args, got.Next, w)
			}
		}
	}
	// Ids of which one would move: relayed, all of them.
	args := map[string]any{"ids": []int64{only, missing}, "queue": a}
	if m := ro.metaOf(t, "pgbus_dlq_retry", args); m.Kind != ops.KindReadOnly || len(m.Next) != 1 ||
		m.Next[0].Command != fmt.Sprintf("pgbus dlq retry %d %d --queue %s", only, missing, a) {
		t.Errorf("pgbus_dlq_retry(%v) on a read-only server: %+v; want it refused as read-only with the command to run", args, m)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+a+`_dlq" WHERE msg_id = ANY($1)`, []int64{shared, only}); n != 2 {
		t.Error("the calls moved messages")
	}
}
