package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/tools"
)

// notes collects the notifications a client receives.
type notes struct {
	mu  sync.Mutex
	all []mcp.JSONRPCNotification
}

func collect(c *client.Client) *notes {
	n := &notes{}
	c.OnNotification(func(m mcp.JSONRPCNotification) {
		n.mu.Lock()
		n.all = append(n.all, m)
		n.mu.Unlock()
	})
	return n
}

// of returns the parameters of the notifications of method received so far.
func (n *notes) of(method string) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, m := range n.all {
		if m.Method == method {
			out = append(out, m.Params.AdditionalFields)
		}
	}
	return out
}

// logsSaying returns the log notifications whose message contains text.
func (n *notes) logsSaying(text string) []map[string]any {
	var out []map[string]any
	for _, p := range n.of("notifications/message") {
		if data, ok := p["data"].(map[string]any); ok && strings.Contains(fmt.Sprint(data["message"]), text) {
			out = append(out, p)
		}
	}
	return out
}

func setLevel(t *testing.T, c *client.Client, level mcp.LoggingLevel) {
	t.Helper()
	req := mcp.SetLevelRequest{}
	req.Params.Level = level
	if err := c.SetLevel(testContext(t), req); err != nil {
		t.Fatalf("logging/setLevel %s: %v", level, err)
	}
}

// newSSEClient returns mcp-go's SSE client of the server at base, started
// and initialized on protocol version 2025-11-25, the last one with
// logging/setLevel; it is closed when the test ends.
func newSSEClient(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.NewSSEMCPClient(base + mcpserver.PathSSE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := startLegacy(testContext(t), c, "pgbus-test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// serveForNotifications serves d over transport (http or sse) and returns
// a client of it on protocol version 2025-11-25, the last one on which a
// server sends notifications outside the answer to a request.
func serveForNotifications(t *testing.T, d tools.Deps, transport string) *client.Client {
	t.Helper()
	base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: transport})
	if transport == mcpserver.TransportSSE {
		return newSSEClient(t, base)
	}
	c, _ := newSessionClient(t, base)
	return c
}

// The server offers logging; a client that sets its level receives the
// result of a retry as a log notification, and nothing below its level,
// over Streamable HTTP (in the answer to the call) and SSE (on its
// stream). Notifications of one session arrive in order, so a retry
// logged while the level was warning would come before the one logged at
// info.
func TestLogNotifications(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	for _, transport := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			queue := newQueue(t, st)
			ids := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
			c := serveForNotifications(t, deps(t, st), transport)
			got := collect(c)

			setLevel(t, c, mcp.LoggingLevelWarning)
			callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}})
			setLevel(t, c, mcp.LoggingLevelInfo)
			callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[1]}})

			pgtest.Eventually(t, time.Minute, "the retry's log notification", func() bool {
				return len(got.logsSaying("pgbus_dlq_retry done")) > 0
			})
			logs := got.logsSaying("pgbus_dlq_retry done")
			if len(logs) != 1 {
				t.Fatalf("%d retry log notifications, want only the one at info: %v", len(logs), logs)
			}
			data := logs[0]["data"].(map[string]any)
			if logs[0]["level"] != "info" || logs[0]["logger"] != "pgbus" || data["tool"] != "pgbus_dlq_retry" || fmt.Sprint(data["retried"]) != "1" {
				t.Fatalf("retry log notification: %v", logs[0])
			}
			for _, p := range got.of("notifications/message") {
				if p["level"] == "debug" {
					t.Errorf("a debug record reached a client at info: %v", p)
				}
			}

			bad := mcp.SetLevelRequest{}
			bad.Params.Level = "loud"
			if err := c.SetLevel(testContext(t), bad); err == nil || !strings.Contains(err.Error(), "loud") {
				t.Fatalf("logging/setLevel loud: %v; want an error naming the level", err)
			}
		})
	}
}

// serveServer serves s over transport (http or sse) on 127.0.0.1 until the
// test ends, and returns its base URL.
func serveServer(t *testing.T, s *server.MCPServer, transport string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(ctx, s, ln, mcpserver.HTTPConfig{Transport: transport, Addr: ln.Addr().String()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// A record forwarded to clients is redacted as the log is.
func TestClientLogRedacts(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	cl := mcpserver.NewClientLog()
	base := serveServer(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl}), mcpserver.TransportHTTP)
	c, _ := newSessionClient(t, base)
	got := collect(c)
	setLevel(t, c, mcp.LoggingLevelDebug)

	log := cl.Tee(nil)
	// The record is forwarded while being logged; a call after it makes
	// the transport deliver what the session has pending. A record logged
	// while the client's listening stream is still opening can be missed
	// (the transport keeps no backlog), so the wait logs it again and
	// calls again until one arrives.
	pgtest.Eventually(t, time.Minute, "the worker's log notification", func() bool {
		log.WithGroup("job").Debug("pgbus: job failed", "queue", "orders", "err", fmt.Errorf("POST https://user:hunter2@example.com: 500"), "password", "swordfish")
		callTool(t, c, "pgbus_health", map[string]any{})
		return len(got.logsSaying("job failed")) > 0
	})
	p := got.logsSaying("job failed")[0]
	text := fmt.Sprint(p)
	job, _ := p["data"].(map[string]any)["job"].(map[string]any)
	if p["level"] != "debug" || job["queue"] != "orders" || strings.Contains(text, "hunter2") || strings.Contains(text, "swordfish") {
		t.Fatalf("forwarded record: %v", p)
	}
}
