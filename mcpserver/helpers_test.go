package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore is a migrated store on the shared test database; tests use
// queue names of their own.
func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	return pgtest.NewQueue(t, s, "mq")
}

// deadLetter sends payloads to queue and dead-letters them with a failure;
// it returns their ids in the DLQ, in order.
func deadLetter(t testing.TB, s *store.Store, queue string, payloads ...string) []int64 {
	t.Helper()
	specs := make([]pgtest.DeadSpec, len(payloads))
	for i, p := range payloads {
		specs[i] = pgtest.DeadSpec{
			Kind: "charge", Class: "Timeout", Message: fmt.Sprintf("downstream timed out on message %d", i), Trace: "main.charge\n\tcharge.go:10",
			Payload: p, Headers: `{"pgbus_kind":"charge","authorization":"Bearer abc"}`,
		}
	}
	return pgtest.DeadLetter(t, s, queue, specs...)
}

// deps returns the server's dependencies: an operations layer over s with
// the given options (none: payloads hidden, writes allowed), knowing the
// handlers of no queue, as pgbus serve without any in its configuration.
func deps(t testing.TB, s *store.Store, o ...ops.Options) tools.Deps {
	t.Helper()
	var opts ops.Options
	if len(o) > 0 {
		opts = o[0]
	}
	if opts.Handlers == nil {
		opts.Handlers = map[string]string{}
	}
	svc, err := ops.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Deps{Ops: svc}
}

// serveHTTP runs the MCP server of d on a real listener on 127.0.0.1:0 and
// returns its base URL (http://127.0.0.1:port). The server is shut down
// when the test ends, and must stop in time.
func serveHTTP(t testing.TB, d tools.Deps, cfg mcpserver.HTTPConfig) string {
	t.Helper()
	base, stop := startHTTP(t, d, cfg)
	t.Cleanup(func() { stop() })
	return base
}

// startHTTP is serveHTTP with the stop left to the caller: stop ends the
// server and waits for Serve to return, at most a minute.
func startHTTP(t testing.TB, d tools.Deps, cfg mcpserver.HTTPConfig) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startHTTPOn(t, d, cfg, ln)
}

// startHTTPOn is startHTTP on a listener the test opened.
func startHTTPOn(t testing.TB, d tools.Deps, cfg mcpserver.HTTPConfig, ln net.Listener) (base string, stop func()) {
	t.Helper()
	return startHTTPWith(t, d, mcpserver.Options{}, cfg, ln)
}

// serveHTTPWith is serveHTTP of a server with opts.
func serveHTTPWith(t testing.TB, d tools.Deps, opts mcpserver.Options, cfg mcpserver.HTTPConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base, stop := startHTTPWith(t, d, opts, cfg, ln)
	t.Cleanup(stop)
	return base
}

// startHTTPWith is startHTTPOn of a server with opts.
func startHTTPWith(t testing.TB, d tools.Deps, opts mcpserver.Options, cfg mcpserver.HTTPConfig, ln net.Listener) (base string, stop func()) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = ln.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := newServer(t, d, opts)
	go func() { done <- mcpserver.Serve(ctx, s, ln, cfg) }()
	var once sync.Once
	return "http://" + ln.Addr().String(), func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(time.Minute):
				t.Errorf("the HTTP server did not shut down within a minute")
			}
		})
	}
}

// connect starts and initializes c, closing it when the test ends.
func connect(t testing.TB, c *client.Client) *mcp.InitializeResult {
	t.Helper()
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "pgbus-test", Version: "1"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return res
}

func callTool(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(testContext(t), req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// structured decodes a successful tool result's structured content, and
// checks the text copy is the same JSON.
func structured(t testing.TB, res *mcp.CallToolResult, into any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	var fromText any
	if err := json.Unmarshal([]byte(resultText(res)), &fromText); err != nil {
		t.Fatalf("text content is not JSON: %v", err)
	}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolNames(t testing.TB, c *client.Client) map[string]mcp.Tool {
	t.Helper()
	res, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	out := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func paused(t testing.TB, s *store.Store, queue string) bool {
	t.Helper()
	st, err := s.QueueSettingsOf(testContext(t), queue)
	if err != nil {
		t.Fatal(err)
	}
	return st.Paused
}

// inDLQ reports whether message id is still in queue's DLQ.
func inDLQ(t testing.TB, s *store.Store, queue string, id int64) bool {
	t.Helper()
	_, err := s.ShowDead(testContext(t), queue, id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// gateStatus is the status the security gate of a server configured by cfg
// and listening on listen gives req, with cfg's bearer token when it has
// one: 204 when the request passes.
func gateStatus(t testing.TB, cfg mcpserver.HTTPConfig, listen string, req *http.Request) int {
	t.Helper()
	addr, err := net.ResolveTCPAddr("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := mcpserver.NewSecurity(cfg, addr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.AuthToken)
	}
	rec := httptest.NewRecorder()
	sec.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })).ServeHTTP(rec, req)
	return rec.Code
}

// newServer is mcpserver.New, failing the test when it refuses d.
func newServer(t testing.TB, d tools.Deps, opts mcpserver.Options) *server.MCPServer {
	t.Helper()
	s, err := mcpserver.New(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
