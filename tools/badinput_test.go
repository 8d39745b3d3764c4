package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// TestBadInput feeds each tool arguments a confused or hostile caller
// might send: every one answers a tool error (never a protocol error) that
// names the problem and says what to pass, and the server keeps serving.
func TestBadInput(t *testing.T) {
	t.Parallel()
	// Its own database: corrected payloads are checked once their ids are
	// found, and ids alone are looked for in every DLQ.
	e := newIsolatedEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	huge := strings.Repeat("a", 1<<20)

	cases := []struct {
		tool string
		args any
		want []string
	}{
		{"pgbus_dlq_show", map[string]any{"msg_id": "abc"}, []string{"msg_id must be an integer, not a string"}},
		{"pgbus_dlq_show", map[string]any{"msg_id": 1.5}, []string{"msg_id", "pass an integer"}},
		{"pgbus_dlq_show", map[string]any{"msg_id": 1e30}, []string{"msg_id", "pass an integer"}},
		{"pgbus_dlq_show", map[string]any{}, []string{"msg_id is missing or 0"}},
		{"pgbus_dlq_show", map[string]any{"msg_id": -5}, []string{"msg_id -5 is not an id", "positive"}},
		{"pgbus_dlq_show", map[string]any{"msg_id": ids[0], "include_payload": "yes"}, []string{"include_payload must be true or false"}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": ids[1] + 1000}, []string{"retried or discarded already", "pgbus_dlq_list"}},
		{"pgbus_dlq_show", map[string]any{"queue": "nope_" + q, "msg_id": ids[0]}, []string{"nope_" + q, "pgbus_queue_stats"}},
		{"pgbus_dlq_list", map[string]any{"limit": "ten"}, []string{"limit must be an integer, not a string"}},
		{"pgbus_dlq_list", map[string]any{"limit": -1}, []string{"limit -1 is out of range", "1 to 100"}},
		{"pgbus_dlq_list", map[string]any{"limit": 0}, []string{"limit 0 is out of range"}},
		{"pgbus_dlq_list", map[string]any{"limit": 1000000}, []string{"out of range"}},
		{"pgbus_dlq_list", map[string]any{"cursor": "garbage"}, []string{"cursor is not valid here", "without cursor"}},
		{"pgbus_dlq_list", map[string]any{"cursor": "eyJ2IjoxfQ~!!"}, []string{"cursor is not valid here"}},
		{"pgbus_dlq_list", map[string]any{"queue": "orders; DROP TABLE pgmq.meta; --"}, []string{"queue name", "lowercase"}},
		{"pgbus_dlq_list", map[string]any{"queue": "no_such_queue_x"}, []string{"no_such_queue_x"}},
		{"pgbus_dlq_list", map[string]any{"reason": "bogus"}, []string{"reason \"bogus\" is unknown", "non_retryable_error"}},
		{"pgbus_dlq_list", map[string]any{"since": "yesterday"}, []string{"since", "RFC 3339", "7d"}},
		{"pgbus_dlq_list", map[string]any{"text": strings.Repeat("x", 20<<10)}, []string{"argument text is 20480 bytes", "10240"}},
		{"pgbus_dlq_list", map[string]any{"text": huge}, []string{"arguments are", "bytes; at most"}},
		{"pgbus_dlq_list", map[string]any{"foo": 1}, []string{`unknown argument "foo"`, "this tool takes: queue, kind"}},
		{"pgbus_dlq_list", []any{1, 2}, []string{"arguments must be a JSON object"}},
		{"pgbus_dlq_summary", map[string]any{"kind": map[string]any{"a": 1}}, []string{"kind must be a string, not an object"}},
		{"pgbus_queue_messages", map[string]any{}, []string{"queue is required"}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "state": "dead"}, []string{"state \"dead\" is unknown"}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "cursor": "zzz"}, []string{"cursor is not valid here"}},
		{"pgbus_queue_stats", map[string]any{"queue": 7}, []string{"queue must be a string, not a number"}},
		{"pgbus_health", map[string]any{"verbose": true}, []string{`unknown argument "verbose"`, "this tool takes: code, cursor"}},
		{"pgbus_audit", map[string]any{"limit": 101}, []string{"out of range"}},
		{"pgbus_dlq_retry", map[string]any{"ids": 5}, []string{"ids must be an array of integers, not a number"}},
		{"pgbus_dlq_retry", map[string]any{"ids": []any{"a"}}, []string{"ids", "integer"}},
		{"pgbus_dlq_retry", map[string]any{"ids": []int64{-3}}, []string{"-3 is not a message id"}},
		{"pgbus_dlq_retry", map[string]any{"ids": manyIDs(101)}, []string{"at most 100"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "payload": huge}, []string{"payload is", "too large for a tool call", "--payload @payload.json"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "payload": strings.Repeat("p", 300<<10)}, []string{"payload is", "at most"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "kind": "k"}, []string{"not both"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids, "payload": map[string]any{"n": 1}}, []string{"exactly one message", "2 ids"}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "payload": map[string]any{"n": "a\x00b"}}, []string{"corrected payload cannot be stored", `\u0000`}},
		{"pgbus_dlq_retry", map[string]any{"ids": ids[:1], "payload": json.RawMessage(`["\ud800"]`)}, []string{"corrected payload cannot be stored", "surrogate"}},
		{"pgbus_dlq_discard", map[string]any{"ids": "1,2"}, []string{"ids must be an array of integers, not a string"}},
		{"pgbus_dlq_purge", map[string]any{"older_than": "-5h", "confirm": true}, []string{"not an age"}},
		{"pgbus_dlq_purge", map[string]any{"older_than": "1h", "confirm": "yes"}, []string{"confirm must be true or false"}},
		{"pgbus_queue_pause", map[string]any{"queue": "Robert'); DROP TABLE students;--"}, []string{"queue name"}},
		{"pgbus_queue_resume", map[string]any{"queue": "Robert'); DROP TABLE students;--"}, []string{"queue name"}},
		{"pgbus_queue_resume", map[string]any{}, []string{"queue is required"}},
		{"pgbus_workers", map[string]any{"verbose": true}, []string{`unknown argument "verbose"`, "takes no arguments"}},
		{"pgbus_dlq_discarded", map[string]any{}, []string{"queue is required", "pgbus_queue_stats"}},
		{"pgbus_dlq_discarded", map[string]any{"queue": q, "limit": 1000000}, []string{"out of range", "narrow the filters"}},
		{"pgbus_dlq_discarded", map[string]any{"queue": q, "limit": "all"}, []string{"limit must be an integer, not a string"}},
		{"pgbus_dlq_discarded", map[string]any{"queue": q, "since": "yesterday"}, []string{"since", "RFC 3339"}},
		{"pgbus_dlq_discarded", map[string]any{"queue": "orders'; DELETE FROM pgmq.meta; --"}, []string{"queue name"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q}, []string{"no ids given", "pgbus_dlq_discarded"}},
		{"pgbus_dlq_restore", map[string]any{"ids": ids[:1]}, []string{"queue is required"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": "1,2"}, []string{"ids must be an array of integers, not a string"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": []int64{-3}}, []string{"-3 is not a message id"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": manyIDs(101)}, []string{"at most 100"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": []any{1e30}}, []string{"ids", "integer"}},
		{"pgbus_dlq_restore", map[string]any{"queue": q, "ids": ids[:1], "dry_run": "yes"}, []string{"dry_run must be true or false"}},
		{"pgbus_dlq_restore", map[string]any{"queue": "Robert'); DROP TABLE students;--", "ids": ids[:1]}, []string{"queue name"}},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, c.tool), func(t *testing.T) {
			text := e.callErr(t, c.tool, c.args, c.want...)
			t.Logf("%s: %s", c.tool, text)
			if len(text) > 1000 {
				t.Errorf("error is %d bytes long", len(text))
			}
		})
	}

	// SQL-looking text is only text: no match, no harm.
	out := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "text": "'; DROP TABLE pgmq.meta; --"})
	if len(out.Items) != 0 {
		t.Errorf("SQL-looking text matched %+v", out.Items)
	}
	// Null for optional arguments is the same as leaving them out.
	callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q, "kind": nil, "cursor": nil})

	// And the server still serves.
	after := callOK[ops.DLQList](t, e, "pgbus_dlq_list", map[string]any{"queue": q})
	if len(after.Items) != 2 {
		t.Fatalf("after bad input: %+v", after)
	}
	// Calls rejected as invalid changed nothing and leave no audit entry.
	if rows := auditRows(t, e.st, "dlq_retry", fmt.Sprint(ids[0])); len(rows) != 0 {
		t.Errorf("invalid retries of %d were audited: %+v", ids[0], rows)
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 2 {
		t.Errorf("the DLQ holds %d after bad input, want 2", n)
	}
}

// TestAmbiguousID: an id held by several DLQs needs queue. Showing it is an
// error listing the DLQs; a retry or discard moves nothing and reports the
// id as ambiguous with its DLQs, and next steps to pick one.
func TestAmbiguousID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	first := pgtest.DLQStart()
	var queues, dlqs []string
	for range 3 {
		q := newQueueAt(t, e.st, first)
		queues = append(queues, q)
		dlqs = append(dlqs, q+"_dlq")
		pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	}
	slices.Sort(dlqs)
	want := []string{fmt.Sprintf("id %d is in 3 DLQs", first), "give the queue", "pgbus_dlq_show"}
	want = append(want, dlqs...)
	e.callErr(t, "pgbus_dlq_show", map[string]any{"msg_id": first}, want...)

	other := pgtest.DeadLetterN(t, e.st, newQueue(t, e.st), 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})[0]
	// The dry run first: the discard then really moves the other id.
	for _, step := range []struct{ tool, done string }{{"pgbus_dlq_retry", ops.OutcomeWouldRetry}, {"pgbus_dlq_discard", ops.OutcomeDiscarded}} {
		tool, done := step.tool, step.done
		args := map[string]any{"ids": []int64{first, other}}
		if tool == "pgbus_dlq_retry" {
			args["dry_run"] = true
		}
		res := e.call(t, tool, args)
		if res.IsError {
			t.Fatalf("%s: %s", tool, resultText(res))
		}
		var out struct {
			Ambiguous int             `json:"ambiguous"`
			Outcomes  []ops.IDOutcome `json:"outcomes"`
			Next      []ops.Hint      `json:"next"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		o := outcomeOf(t, out.Outcomes, first)
		got := slices.Sorted(slices.Values(o.DLQs))
		if out.Ambiguous != 1 || o.Outcome != ops.OutcomeAmbiguous || !slices.Equal(got, dlqs) || !strings.Contains(o.Error, "give the queue") {
			t.Errorf("%s: outcome of the ambiguous id: %+v (ambiguous %d)", tool, o, out.Ambiguous)
		}
		if o := outcomeOf(t, out.Outcomes, other); o.Outcome != done {
			t.Errorf("%s: the other id: %+v, want %s", tool, o, done)
		}
		var picks []string
		for _, h := range out.Next {
			if h.Op == tool && hintArg(h, "ids") == fmt.Sprintf("[%d]", first) {
				picks = append(picks, strings.Trim(hintArg(h, "queue"), `"`))
			}
		}
		slices.Sort(picks)
		if !slices.Equal(picks, dlqs) {
			t.Errorf("%s: next %+v: want one %s per DLQ holding %d", tool, out.Next, tool, first)
		}
	}
	for _, q := range queues {
		if pgtest.Live(t, e.st, q+"_dlq") != 1 || pgtest.Live(t, e.st, q) != 0 {
			t.Fatalf("an ambiguous id was moved out of %s_dlq", q)
		}
	}
	show := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": first, "queue": queues[1]})
	if show.DLQ != queues[1]+"_dlq" {
		t.Errorf("show with queue: %+v", show)
	}
	rep := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"ids": []int64{first}, "queue": queues[2]})
	if rep.Retried != 1 || rep.Ambiguous != 0 || pgtest.Live(t, e.st, queues[2]) != 1 || pgtest.Live(t, e.st, queues[0]+"_dlq") != 1 {
		t.Errorf("retry with queue: %+v", rep)
	}
	e.callErr(t, "pgbus_dlq_show", map[string]any{"msg_id": pgtest.MissingDLQID()}, "no DLQ holds message", "retried or discarded already", "pgbus_dlq_list")
}

// TestStdioLargePayload: over stdio a result with a payload over 64 KB comes
// back as one valid JSON-RPC line, the payload truncated.
func TestStdioLargePayload(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	q := newQueue(t, st)
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m", Payload: `{"blob": "` + strings.Repeat("y", 100<<10) + `"}`})

	srv := server.NewMCPServer("pgbus", "test")
	tools.Register(srv, newDeps(t, st, ops.Options{AllowPayloads: true}), nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.NewStdioServer(srv).Listen(ctx, inR, outW) }()
	defer func() {
		cancel()
		_ = inW.Close()
		<-done
	}()
	lines := bufio.NewReaderSize(outR, 1<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]any {
		line, err := lines.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not a JSON-RPC message (%d bytes): %v", len(line), err)
		}
		if len(line) > 64<<10 {
			t.Errorf("response line is %d bytes", len(line))
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stdio-test","version":"0"}}}`)
	read()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pgbus_dlq_show","arguments":{"msg_id":%d,"include_payload":true}}}`, ids[0]))
	m := read()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(2) || res["isError"] == true || sc["payload_shown"] != true || sc["payload"] != nil {
		t.Fatalf("stdio result: %.500v", m)
	}
	if p, _ := sc["payload_preview"].(string); len(p) == 0 || len(p) > ops.DefaultBounds.Payload {
		t.Errorf("preview is %d bytes, want 1 to %d", len(p), ops.DefaultBounds.Payload)
	}
}

func manyIDs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}
