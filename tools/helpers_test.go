package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore returns a migrated store shared by the tests of this package;
// tests keep apart by using queues of their own.
func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

func uniqueName(prefix string) string { return pgtest.Name(prefix) }

// newQueue creates a queue (and its DLQ) dropped after the test. Its DLQ's
// ids start at a random large number, so that an id is found in this DLQ
// only, even though other tests and packages share the database.
func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	return newQueueAt(t, s, pgtest.DLQStart())
}

// newQueueAt is newQueue with the DLQ's ids starting at first.
func newQueueAt(t testing.TB, s *store.Store, first int64) string {
	t.Helper()
	name := pgtest.NewQueue(t, s, "tq")
	pgtest.RestartDLQ(t, s, name, first)
	return name
}

// env is an MCP server with pgbus's tools and a client connected to it in
// process.
type env struct {
	st *store.Store
	c  *client.Client
}

// newDeps returns the tools' dependencies: an operations layer over st
// with the given options, knowing the handlers of no queue unless they
// say, as pgbus serve without any in its configuration.
func newDeps(t testing.TB, st *store.Store, o ops.Options) tools.Deps {
	t.Helper()
	if o.Handlers == nil {
		o.Handlers = map[string]string{}
	}
	svc, err := ops.New(st, o)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Deps{Ops: svc}
}

func newEnv(t testing.TB, o ops.Options) *env {
	t.Helper()
	return newEnvOn(t, testStore(t), o)
}

// newIsolatedEnv is newEnv on a database of its own, for tests that read a
// view of every queue (health, the stats of all), which the queues of
// other tests would crowd past the response bound.
func newIsolatedEnv(t testing.TB, o ops.Options) *env {
	t.Helper()
	return newEnvOn(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)), o)
}

// newEnvOn is newEnv on the database of st.
func newEnvOn(t testing.TB, st *store.Store, o ops.Options) *env {
	t.Helper()
	return newEnvOfDeps(t, st, newDeps(t, st, o))
}

// newEnvOfDeps is newEnvOn with the tools' dependencies d, over st.
func newEnvOfDeps(t testing.TB, st *store.Store, d tools.Deps) *env {
	t.Helper()
	// Output validation makes the server check every structured result
	// against the tool's output schema, as strict clients do.
	hooks := &server.Hooks{}
	srv := server.NewMCPServer("pgbus", "test", server.WithToolCapabilities(false), server.WithOutputSchemaValidation(), server.WithHooks(hooks))
	tools.Register(srv, d, hooks)
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "tools-test", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &env{st: st, c: c}
}

// call calls a tool; a protocol error fails the test.
func (e *env) call(t testing.TB, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := e.c.CallTool(testContext(t), mcpCall(name, args))
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// callOK calls a tool that must succeed and decodes its structured content
// into out. It also checks that the text content is the same JSON.
func callOK[Out any](t testing.TB, e *env, name string, args any) Out {
	t.Helper()
	return decodeOK[Out](t, name, args, e.call(t, name, args))
}

// decodeOK is callOK of res, the result of a call of tool name with args.
func decodeOK[Out any](t testing.TB, name string, args any, res *mcp.CallToolResult) Out {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, resultText(res))
	}
	var out Out
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(resultText(res)), &fromText); err != nil {
		t.Fatalf("%s: text content is not JSON: %v\n%s", name, err, resultText(res))
	}
	_ = json.Unmarshal(b, &fromStructured)
	if !jsonEqual(fromText, fromStructured) {
		t.Fatalf("%s: text content differs from structured content:\ntext: %s\nstructured: %s", name, resultText(res), b)
	}
	return out
}

// healthOK calls pgbus_health with args, as callOK does, until its check
// reads the tables within its bound (ops.HealthCheckTimeout): on a busy
// machine a check over many queues may not, and then says only that, as
// the reason health_check_slow.
//
// A test that looks for a reason, a count or the status of a health check
// calls it so, not with callOK.
func healthOK(t testing.TB, e *env, args any) ops.Health {
	t.Helper()
	h, _ := healthOKText(t, e, args)
	return h
}

// healthOKText is healthOK that also returns the text of the call it
// returns the health of.
func healthOKText(t testing.TB, e *env, args any) (ops.Health, string) {
	t.Helper()
	var h ops.Health
	var text string
	pgtest.Eventually(t, 2*time.Minute, "a health check that reads the tables in time", func() bool {
		res := e.call(t, "pgbus_health", args)
		h, text = decodeOK[ops.Health](t, "pgbus_health", args, res), resultText(res)
		return !slices.ContainsFunc(h.Reasons, func(r ops.HealthReason) bool { return r.Code == "health_check_slow" })
	})
	return h, text
}

// callErr calls a tool that must answer a tool error containing want.
func (e *env) callErr(t testing.TB, name string, args any, want ...string) string {
	t.Helper()
	res := e.call(t, name, args)
	text := resultText(res)
	if !res.IsError {
		t.Fatalf("%s(%v): want a tool error, got %s", name, args, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Fatalf("%s(%v): error %q does not contain %q", name, args, text, w)
		}
	}
	return text
}

func resultText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func mcpCall(name string, args any) mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}

func mcpListTools() mcp.ListToolsRequest { return mcp.ListToolsRequest{} }

// findHint returns the first hint that calls tool, and whether there is one.
func findHint(hints []ops.Hint, tool string) (ops.Hint, bool) {
	for _, h := range hints {
		if h.Op == tool {
			return h, true
		}
	}
	return ops.Hint{}, false
}

// hintArg returns a hint's argument as JSON text, as a client reads it
// (numbers and id lists included), or "" when absent.
func hintArg(h ops.Hint, name string) string {
	v, ok := h.Args[name]
	if !ok {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// outcomeOf returns the outcome of id in a retry or discard by ids.
func outcomeOf(t testing.TB, outcomes []ops.IDOutcome, id int64) ops.IDOutcome {
	t.Helper()
	for _, o := range outcomes {
		if o.ID == id {
			return o
		}
	}
	t.Fatalf("no outcome for id %d in %+v", id, outcomes)
	return ops.IDOutcome{}
}

// counted is a count of a health verdict, or -1 where the check could not
// read it (absent): a test comparing it fails rather than panics.
func counted[T int | int64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}
