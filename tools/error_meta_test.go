package tools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// errorMeta is a tool error's _meta "pgbus/error" as a client reads it.
type errorMeta struct {
	Kind       string     `json:"kind"`
	Next       []nextCall `json:"next"`
	PartlyDone *struct {
		Done  int64 `json:"done"`
		Limit int64 `json:"limit"`
	} `json:"partly_done"`
}

type nextCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Command   string         `json:"command"`
	Why       string         `json:"why"`
}

// metaOf calls a tool that must answer a tool error and returns the data
// of its _meta under "pgbus/error", its kind one of
// ops.Kinds, every next step either a tool with its arguments or a
// command, each saying why; the error has no structured content, which
// clients would check against the tool's output schema.
func (e *env) metaOf(t *testing.T, name string, args any) errorMeta {
	t.Helper()
	res := e.call(t, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v): want a tool error, got %s", name, args, resultText(res))
	}
	return metaOfResult(t, name, res)
}

// metaOfResult is metaOf for res, the tool error of a call of tool name
// already made.
func metaOfResult(t *testing.T, name string, res *mcp.CallToolResult) errorMeta {
	t.Helper()
	if res.StructuredContent != nil || len(res.RawStructuredContent) > 0 {
		t.Errorf("%s: the error has structured content %v", name, res.StructuredContent)
	}
	if res.Meta == nil || res.Meta.AdditionalFields["pgbus/error"] == nil {
		t.Fatalf("%s: _meta %+v, want pgbus/error\n%s", name, res.Meta, resultText(res))
	}
	raw, err := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"next":[`)) {
		t.Errorf("%s: next is not a list: %s", name, raw)
	}
	var m errorMeta
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: pgbus/error %s: %v", name, raw, err)
	}
	if !slices.Contains(ops.Kinds(), m.Kind) {
		t.Errorf("%s: kind %q is none of %v", name, m.Kind, ops.Kinds())
	}
	for _, n := range m.Next {
		if (n.Tool == "") == (n.Command == "") || (n.Tool != "" && n.Arguments == nil) || (n.Command != "" && n.Arguments != nil) || n.Why == "" {
			t.Errorf("%s: next step %+v, want a tool with its arguments or a command, and why", name, n)
		}
	}
	return m
}

// hasCall reports whether next holds a call of tool with these arguments,
// compared as JSON.
func hasCall(next []nextCall, tool string, args map[string]any) bool {
	return slices.ContainsFunc(next, func(n nextCall) bool { return n.Tool == tool && jsonEqual(n.Arguments, args) })
}

// A tool error carries its kind and next steps as data in its _meta, the
// next steps those its text names, as tool calls: bad arguments, an
// unknown message, an id in several DLQs, a guarded retry whose selection
// changed.
func TestErrorMeta(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	missing := pgtest.MissingDLQID()

	for _, args := range []map[string]any{{"limit": "abc"}, {"bogus": 1}} {
		if m := e.metaOf(t, "pgbus_dlq_list", args); m.Kind != ops.KindUsage || len(m.Next) != 0 {
			t.Errorf("pgbus_dlq_list %v: %+v, want kind usage and no next step", args, m)
		}
	}
	if m := e.metaOf(t, "pgbus_dlq_list", map[string]any{"since": "last tuesday"}); m.Kind != ops.KindInvalid {
		t.Errorf("a time that is none: %+v, want kind invalid", m)
	}
	// The calls a refusal of the arguments names are its next steps.
	if m := e.metaOf(t, "pgbus_dlq_retry", map[string]any{}); m.Kind != ops.KindUsage || !hasCall(m.Next, "pgbus_dlq_summary", map[string]any{}) {
		t.Errorf("pgbus_dlq_retry without ids or filters: %+v, want kind usage and pgbus_dlq_summary next", m)
	}
	if m := e.metaOf(t, "pgbus_dlq_discard", map[string]any{"queue": q, "kind": "charge"}); !hasCall(m.Next, "pgbus_dlq_list", map[string]any{"queue": q, "kind": "charge"}) {
		t.Errorf("pgbus_dlq_discard by filters without a limit: %+v, want pgbus_dlq_list with the same filters next", m)
	}
	m := e.metaOf(t, "pgbus_dlq_show", map[string]any{"queue": q, "msg_id": missing})
	if m.Kind != ops.KindNotFound || !hasCall(m.Next, "pgbus_dlq_list", map[string]any{"queue": q}) {
		t.Errorf("a message that is not there: %+v, want kind not_found and pgbus_dlq_list {queue: %s}", m, q)
	}
	unknown := uniqueName("nosuchqueue")
	if m := e.metaOf(t, "pgbus_queue_stats", map[string]any{"queue": unknown}); m.Kind != ops.KindNotFound || len(m.Next) == 0 {
		t.Errorf("a queue that is not there: %+v, want kind not_found and a next step", m)
	}

	first := pgtest.DLQStart()
	var dlqs []string
	for range 2 {
		aq := newQueueAt(t, e.st, first)
		dlqs = append(dlqs, aq+"_dlq")
		pgtest.DeadLetterN(t, e.st, aq, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	}
	m = e.metaOf(t, "pgbus_dlq_show", map[string]any{"msg_id": first})
	if m.Kind != ops.KindInvalid {
		t.Errorf("an id in 2 DLQs: kind %q, want invalid", m.Kind)
	}
	for _, d := range dlqs {
		if !hasCall(m.Next, "pgbus_dlq_show", map[string]any{"queue": d, "msg_id": first}) {
			t.Errorf("an id in 2 DLQs: next %+v, want pgbus_dlq_show of it in %s", m.Next, d)
		}
	}

	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "charge", Class: "E", Message: "m"})
	filter := map[string]any{"queue": q, "kind": "charge", "limit": 10}
	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", with(filter, "dry_run", true))
	pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "charge", Class: "E", Message: "m"})
	m = e.metaOf(t, "pgbus_dlq_retry", with(filter, "expect", dry.Expect))
	if m.Kind != ops.KindChanged || !hasCall(m.Next, "pgbus_dlq_retry", with(filter, "dry_run", true)) {
		t.Errorf("a retry whose selection changed: %+v, want kind changed and its dry run again", m)
	}
}

// A read-only server's refusal of a write tool is of kind read_only, its
// next step the command an operator can run, with the call's arguments.
func TestErrorMetaReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{ReadOnly: true})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 1, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	m := e.metaOf(t, "pgbus_dlq_retry", map[string]any{"ids": ids, "queue": q})
	want := fmt.Sprintf("pgbus dlq retry %d --queue %s", ids[0], q)
	if m.Kind != ops.KindReadOnly || len(m.Next) != 1 || m.Next[0].Command != want {
		t.Errorf("a refused retry: %+v, want kind read_only and the command %q", m, want)
	}
	// Arguments that cannot be read are a usage error, as on a writable
	// server: the bare command they left was another call.
	if m := e.metaOf(t, "pgbus_queue_pause", map[string]any{"queue": 7}); m.Kind != ops.KindUsage || len(m.Next) != 0 {
		t.Errorf("a refused pause of unreadable arguments: %+v, want kind usage", m)
	}
}

// with returns a copy of args with k set to v.
func with(args map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range args {
		if key != k {
			out[key] = val
		}
	}
	return out
}
