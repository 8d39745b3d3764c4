package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/tools"
)

// FuzzToolArguments calls every tool, writes included, with arguments as
// any client could send them, on a database of its own: each call answers
// either a tool error whose text says what to fix (never a protocol error,
// a database error or a server-side failure: the database is healthy, so
// any of those means input got through unchecked) or a structured result
// whose text content is the same JSON.
func FuzzToolArguments(f *testing.F) {
	st := pgtest.OpenStore(f, pgtest.NewDatabase(f))
	q := pgtest.NewQueue(f, st, "fz")
	pgtest.DeadLetterN(f, st, q, 5, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	svc, err := ops.New(st, ops.Options{AllowPayloads: true})
	if err != nil {
		f.Fatal(err)
	}
	all := tools.All(tools.Deps{Ops: svc})
	byName := map[string]server.ServerTool{}
	for _, tl := range all {
		byName[tl.Tool.Name] = tl
	}
	for _, s := range []struct{ tool, args string }{
		{"pgbus_health", `{}`},
		{"pgbus_health", `null`},
		{"pgbus_queue_stats", `{"queue":"` + q + `"}`},
		{"pgbus_queue_stats", `{"queue":7}`},
		{"pgbus_dlq_summary", `{"queue":"` + q + `","since":"7d"}`},
		{"pgbus_dlq_list", `{"queue":"` + q + `","limit":2}`},
		{"pgbus_dlq_list", `{"cursor":"eyJ2IjoxfQ~!!"}`},
		{"pgbus_dlq_list", `{"kind":"a\u0000b"}`},
		{"pgbus_dlq_list", `{"text":"\ud800"}`},
		{"pgbus_dlq_list", `[1,2]`},
		{"pgbus_dlq_list", `{"queue":"x"} {}`},
		{"pgbus_dlq_show", `{"msg_id":1e30}`},
		{"pgbus_dlq_show", `{"queue":"` + q + `","msg_id":1,"include_payload":true}`},
		{"pgbus_queue_messages", `{"queue":"` + q + `","state":"retrying"}`},
		{"pgbus_workers", `{}`},
		{"pgbus_circuits", `{"x":1}`},
		{"pgbus_audit", `{"tool":"dlq_retry","limit":1}`},
		{"pgbus_dlq_retry", `{"ids":[1],"payload":{"fixed":true},"dry_run":true}`},
		{"pgbus_dlq_retry", `{"queue":"` + q + `","limit":1}`},
		{"pgbus_dlq_retry", `{"ids":[1],"payload":"\u0000"}`},
		{"pgbus_dlq_discard", `{"ids":[1,2,-3]}`},
		{"pgbus_dlq_purge", `{"older_than":"7d","confirm":true}`},
		{"pgbus_queue_pause", `{"queue":"` + q + `"}`},
		{"pgbus_queue_resume", `{"queue":"` + q + `"}`},
		{"pgbus_queue_run_now", `{"queue":"` + q + `","dry_run":true}`},
		{"pgbus_circuit_reset", `{"name":"http:example.com:443"}`},
	} {
		f.Add(s.tool, []byte(s.args))
	}
	ctx := pgtest.Context(f)
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		tl, ok := byName[name]
		if !ok {
			// Any name reaches some tool, so mutated names still test one.
			tl = all[len(name)%len(all)]
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = tl.Tool.Name
		req.Params.Arguments = json.RawMessage(args)
		res, err := tl.Handler(ctx, req)
		if err != nil || res == nil {
			t.Fatalf("%s %q: protocol error %v", tl.Tool.Name, args, err)
		}
		checkToolResult(t, tl.Tool.Name, args, res)
	})
}

func checkToolResult(t *testing.T, tool string, args []byte, res *mcp.CallToolResult) {
	t.Helper()
	text := resultText(res)
	if res.IsError {
		if text == "" || strings.Contains(text, "SQLSTATE") || strings.HasPrefix(text, "pgbus could not complete the call") {
			t.Fatalf("%s %q: error %q is not one the caller can act on", tool, args, text)
		}
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		t.Fatalf("%s %q: structured content %v: %v", tool, args, res.StructuredContent, err)
	}
	var fromText, fromStructured any
	if json.Unmarshal([]byte(text), &fromText) != nil || json.Unmarshal(b, &fromStructured) != nil || !jsonEqual(fromText, fromStructured) {
		t.Fatalf("%s %q: text content %s differs from structured content %s", tool, args, text, b)
	}
}
