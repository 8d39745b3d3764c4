package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A read-only server relays a restore's dry run as it relays every write
// call, dry runs included, but answers the question the dry run asks,
// which it can read: its refusal says what a restore would do now, id by
// id (in its text, and in its _meta as the dry run's result), and names
// the restore of the ids that would be restored as the command to run.
// Nothing changes, and no audit entry is written.
func TestReadOnlyAnswersRestoreDryRun(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	queue := newQueue(t, st)
	discarded := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
	if n, err := st.DiscardDead(ctx, store.DLQName(queue), discarded); err != nil || n != 2 {
		t.Fatalf("discard = %d, %v; want 2", n, err)
	}
	dead := deadLetter(t, st, queue, `{"n":3}`) // in the DLQ, not in its archive
	ids := []int64{discarded[0], dead[0], discarded[1]}

	c, err := client.NewStreamableHttpClient(serveHTTP(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	res, ok := callForError(ctx, t, c, "pgbus_dlq_restore", map[string]any{"queue": queue, "ids": ids, "dry_run": true})
	if !ok {
		return
	}
	text := resultText(res)
	command := fmt.Sprintf("pgbus dlq restore %d %d --queue %s", discarded[0], discarded[1], queue)
	for _, want := range []string{"pgbus_dlq_restore is not available", "read-only", "nothing was changed",
		"2 of the 3 ids given would be restored to " + store.DLQName(queue),
		fmt.Sprintf("message %d is in %s already", dead[0], store.DLQName(queue)),
		"an operator can run: " + command} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run of a restore on a read-only server: %q; want it to say %q", text, want)
		}
	}
	if !res.IsError || strings.Contains(text, "--dry-run") {
		t.Errorf("the dry run of a restore on a read-only server: %q; want a refusal naming the restore itself", text)
	}
	checkRefusalMeta(t, res, "pgbus_dlq_restore", command)
	raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	var m struct {
		DryRun *ops.DLQRestore `json:"dry_run"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.DryRun == nil {
		t.Fatalf("_meta pgbus/error %s (%v); want the dry run's result", raw, err)
	}
	if p := m.DryRun; !p.DryRun || p.Restored != 2 || p.NotFound != 1 || len(p.Outcomes) != 3 ||
		p.Outcomes[0].Outcome != ops.OutcomeWouldRestore || p.Outcomes[1].Outcome != ops.OutcomeNotFound || p.Outcomes[2].Outcome != ops.OutcomeWouldRestore {
		t.Errorf("_meta's dry run: %+v; want ids 1 and 3 would be restored, 2 not found", p)
	}
	for _, id := range discarded {
		if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."a_`+store.DLQName(queue)+`" WHERE msg_id = $1`, id); n != 1 {
			t.Errorf("message %d left the archive", id)
		}
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`); n != 0 {
		t.Errorf("%d audit entries; a read-only server writes none", n)
	}
}

// A read-only server answers the dry run of a retry, a discard and a
// run-now it relays as it answers a restore's: its refusal says what the
// call would do now (in its text, and in its _meta as the dry run's
// result) and names the call itself, not its dry run, as the command:
// by ids, the ids that would move; by filter, with the expect token that
// guards the set the dry run saw (confirmed as the call it relays is: a
// discard by filter the call did not confirm is the command that asks).
// Nothing changes, and no audit entry is written.
func TestReadOnlyAnswersMoveDryRuns(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	queue, busy := newQueue(t, st), newQueue(t, st)
	ids := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
	pgtest.Retrying(t, st, busy)
	missing := ids[1] + 1000

	c, err := client.NewStreamableHttpClient(serveHTTP(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		said    []string
		command string // the command named, up to the expect token when there is one
		count   string // the dry run's count in _meta
		yes     bool   // the command confirms
	}{
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{ids[0], missing, ids[1]}, "queue": queue, "dry_run": true},
			[]string{"Its dry run, read here: 2 of the 3 ids given would be retried", fmt.Sprintf("message %d", missing)},
			fmt.Sprintf("pgbus dlq retry %d %d --queue %s", ids[0], ids[1], queue), "retried", false},
		// Guarded by the dry run's expect, which checked the set: confirmed.
		{"pgbus_dlq_retry", map[string]any{"queue": queue, "error_class": "Timeout", "limit": 5, "dry_run": true},
			[]string{"Its dry run, read here: 2 dead messages would be retried"},
			"pgbus dlq retry-all --error-class Timeout --expect ", "retried", true},
		// Each id named, chosen: confirmed.
		{"pgbus_dlq_discard", map[string]any{"ids": ids, "queue": queue, "dry_run": true},
			[]string{"Its dry run, read here: all 2 ids given would be discarded"},
			fmt.Sprintf("pgbus dlq discard %d %d --queue %s", ids[0], ids[1], queue), "discarded", true},
		{"pgbus_dlq_discard", map[string]any{"queue": queue, "limit": 10, "dry_run": true},
			[]string{"Its dry run, read here: 2 dead messages would be discarded"},
			"pgbus dlq discard --expect ", "discarded", false},
		{"pgbus_queue_run_now", map[string]any{"queue": busy, "dry_run": true},
			[]string{"Its dry run, read here: 1 message of queue " + busy + " would be made visible now"},
			"pgbus queue run-now " + busy, "visible", false},
	} {
		res, ok := callForError(ctx, t, c, tc.tool, tc.args)
		if !ok {
			continue
		}
		text := resultText(res)
		for _, want := range append([]string{tc.tool + " is not available", "read-only", "nothing was changed", "an operator can run: " + tc.command}, tc.said...) {
			if !strings.Contains(text, want) {
				t.Errorf("%s(%v) on a read-only server: %q; want it to say %q", tc.tool, tc.args, text, want)
			}
		}
		if !res.IsError || strings.Contains(text, "--dry-run") || strings.HasSuffix(text, " --yes") != tc.yes {
			t.Errorf("%s(%v) on a read-only server: %q; want a refusal naming the call itself, confirmed: %v", tc.tool, tc.args, text, tc.yes)
		}
		raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
		var m struct {
			Kind   string                     `json:"kind"`
			DryRun map[string]json.RawMessage `json:"dry_run"`
			Next   []struct {
				Command string `json:"command"`
			} `json:"next"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Kind != ops.KindReadOnly || m.DryRun == nil || len(m.Next) != 1 || !strings.HasPrefix(m.Next[0].Command, tc.command) {
			t.Errorf("%s(%v): _meta pgbus/error %s (%v); want kind read_only, the dry run's result and the command", tc.tool, tc.args, raw, err)
			continue
		}
		if string(m.DryRun["dry_run"]) != "true" || string(m.DryRun[tc.count]) == "0" || m.DryRun[tc.count] == nil || string(m.DryRun["next"]) != "[]" {
			t.Errorf("%s(%v): _meta's dry run %s; want a dry run's result with its count, without next steps", tc.tool, tc.args, raw)
		}
		if expect := string(m.DryRun["expect"]); strings.HasSuffix(tc.command, "--expect ") && (len(expect) < 3 || !strings.Contains(m.Next[0].Command, tc.command+strings.Trim(expect, `"`))) {
			t.Errorf("%s(%v): command %q; want it guarded by the dry run's expect %s", tc.tool, tc.args, m.Next[0].Command, expect)
		}
	}
	for _, id := range ids {
		if !inDLQ(t, st, queue, id) {
			t.Errorf("message %d left the DLQ", id)
		}
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`); n != 0 {
		t.Errorf("%d audit entries; a read-only server writes none", n)
	}
}

// A read-only server answers as well the dry run of a retry or discard
// that would change nothing, rather than relaying it as a command: what it
// read, with no command to run and the dry run's own next steps. A retry
// whose messages are all past their deadline is answered with what the
// retry clearing them would do, and names that retry as the command.
func TestReadOnlyAnswersDryRunsThatMoveNothing(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	queue, late := newQueue(t, st), newQueue(t, st)
	deadLetter(t, st, queue, `{"n":1}`)
	lateIDs := pgtest.DeadLetterN(t, st, late, 2, pgtest.DeadSpec{Kind: "k", Headers: `{"pgbus_kind":"k","pgbus_deadline":"2020-01-01T00:00:00Z"}`})

	c, err := client.NewStreamableHttpClient(serveHTTP(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		said    string
		count   string // the dry run's count in _meta, 0
		command string // the command named, up to the expect token; "" for none
	}{
		{"pgbus_dlq_retry", map[string]any{"queue": queue, "error_class": "Nope", "limit": 5, "dry_run": true},
			"Its dry run, read here: no dead message matches the filters: none would be retried", "retried", ""},
		{"pgbus_dlq_discard", map[string]any{"queue": queue, "error_class": "Nope", "limit": 5, "dry_run": true},
			"Its dry run, read here: no dead message matches the filters: none would be discarded", "discarded", ""},
		{"pgbus_dlq_retry", map[string]any{"ids": lateIDs, "queue": late, "dry_run": true},
			"Its dry run, read here: none of the 2 ids given would be retried: its deadline", "retried",
			fmt.Sprintf("pgbus dlq retry %d %d --clear-deadline --queue %s", lateIDs[0], lateIDs[1], late)},
		{"pgbus_dlq_retry", map[string]any{"queue": late, "limit": 5, "dry_run": true},
			"with their deadlines cleared, 2 dead messages would be retried", "retried",
			"pgbus dlq retry-all --clear-deadline --expect "},
	} {
		res, ok := callForError(ctx, t, c, tc.tool, tc.args)
		if !ok {
			continue
		}
		text := resultText(res)
		relays := strings.Contains(text, "an operator can run: ")
		if !res.IsError || !strings.Contains(text, tc.said) || strings.Contains(text, "--dry-run") || relays != (tc.command != "") ||
			tc.command != "" && !strings.Contains(text, "an operator can run: "+tc.command) {
			t.Errorf("%s(%v) on a read-only server: %q; want it to say %q, relaying %q", tc.tool, tc.args, text, tc.said, tc.command)
		}
		raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
		var m struct {
			Kind   string                     `json:"kind"`
			DryRun map[string]json.RawMessage `json:"dry_run"`
			Next   []struct {
				Tool    string `json:"tool"`
				Command string `json:"command"`
			} `json:"next"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Kind != ops.KindReadOnly || m.DryRun == nil || string(m.DryRun[tc.count]) != "0" {
			t.Errorf("%s(%v): _meta pgbus/error %s (%v); want kind read_only and the dry run's result, %s 0", tc.tool, tc.args, raw, err, tc.count)
			continue
		}
		for _, n := range m.Next {
			if strings.Contains(n.Command, "--dry-run") || tc.command == "" && n.Command != "" {
				t.Errorf("%s(%v): next step %+v; want no dry run relayed, and no command where nothing would change", tc.tool, tc.args, n)
			}
		}
	}
	for _, id := range lateIDs {
		if !inDLQ(t, st, late, id) {
			t.Errorf("message %d left the DLQ", id)
		}
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`); n != 0 {
		t.Errorf("%d audit entries; a read-only server writes none", n)
	}
}
