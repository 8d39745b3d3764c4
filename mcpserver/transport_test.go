package mcpserver_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Over Streamable HTTP and over SSE, mcp-go's client lists the tools, reads
// queue stats and retries a dead message back to its queue.
func TestHTTPTransports(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for _, tc := range []struct {
		transport string
		newClient func(base string) (*client.Client, error)
	}{
		{mcpserver.TransportHTTP, func(base string) (*client.Client, error) {
			return client.NewStreamableHttpClient(base + mcpserver.PathMCP)
		}},
		{mcpserver.TransportSSE, func(base string) (*client.Client, error) {
			return client.NewSSEMCPClient(base + mcpserver.PathSSE)
		}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			queue := newQueue(t, s)
			ids := deadLetter(t, s, queue, `{"order":1}`, `{"order":2}`)
			base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: tc.transport})
			c, err := tc.newClient(base)
			if err != nil {
				t.Fatal(err)
			}
			init := connect(t, c)
			if !strings.Contains(init.Instructions, "pgbus_health") || init.ServerInfo.Name != "pgbus" {
				t.Fatalf("initialize: server %+v, instructions %q", init.ServerInfo, init.Instructions)
			}
			names := toolNames(t, c)
			for _, want := range []string{"pgbus_health", "pgbus_queue_stats", "pgbus_dlq_list", "pgbus_dlq_show", "pgbus_dlq_retry"} {
				if _, ok := names[want]; !ok {
					t.Errorf("tool %s not listed (have %v)", want, names)
				}
			}

			var stats struct {
				Queues []store.QueueStats `json:"queues"`
			}
			structured(t, callTool(t, c, "pgbus_queue_stats", map[string]any{"queue": queue}), &stats)
			if len(stats.Queues) != 1 || stats.Queues[0].Queue != queue || stats.Queues[0].DLQDepth != 2 {
				t.Fatalf("queue stats: %+v", stats)
			}

			var report ops.DLQRetry
			structured(t, callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}}), &report)
			if report.Retried != 1 || report.Failed != 0 || len(report.Moved) != 1 || report.Moved[0].Queue != queue ||
				len(report.Outcomes) != 1 || report.Outcomes[0].ID != ids[0] || report.Outcomes[0].Outcome != ops.OutcomeRetried {
				t.Fatalf("retry report: %+v", report)
			}
			// No worker serves the queue here: the first step is to start
			// one, which no tool does; a tool follows it.
			if len(report.Next) < 2 || report.Next[0].Op != "cli" || !strings.Contains(fmt.Sprint(report.Next[0].Args["command"]), "pgbus work --queue "+queue) ||
				!strings.HasPrefix(report.Next[1].Op, "pgbus_") {
				t.Errorf("retry next: want starting a worker, then a tool: %+v", report.Next)
			}
			if inDLQ(t, s, queue, ids[0]) || !inDLQ(t, s, queue, ids[1]) {
				t.Fatalf("after retrying %d: the DLQ does not hold just %d", ids[0], ids[1])
			}
			live, err := s.ListLive(testContext(t), store.LiveFilter{Queue: queue}, "", 10)
			if err != nil || len(live.Items) != 1 || string(live.Items[0].Payload) != `{"order": 1}` {
				t.Fatalf("live messages after retry: %+v %v", live.Items, err)
			}
		})
	}
}

// With --read-only over a real transport, the write tools are not listed,
// calling one by name is refused, and nothing changes.
func TestReadOnlyOverHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	ids := deadLetter(t, s, queue, `{"n":1}`)
	d := deps(t, s, ops.Options{ReadOnly: true})
	base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	init := connect(t, c)
	if !strings.Contains(init.Instructions, "read-only") {
		t.Errorf("instructions do not mention read-only mode: %q", init.Instructions)
	}
	names := toolNames(t, c)
	if len(names) == 0 {
		t.Fatal("no tools listed")
	}
	for name, tool := range names {
		if !mcpserver.IsReadOnlyTool(tool) {
			t.Errorf("read-only server lists write tool %s", name)
		}
	}
	for _, write := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard", "pgbus_dlq_purge", "pgbus_queue_pause", "pgbus_queue_resume"} {
		if _, ok := names[write]; ok {
			t.Errorf("read-only server lists %s", write)
		}
	}
	calls := map[string]map[string]any{
		"pgbus_dlq_retry":   {"queue": queue, "ids": []int64{ids[0]}},
		"pgbus_dlq_discard": {"queue": queue, "ids": []int64{ids[0]}},
		"pgbus_queue_pause": {"queue": queue},
	}
	for name, args := range calls {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(testContext(t), req)
		if err == nil && !res.IsError {
			t.Errorf("read-only server ran %s: %s", name, resultText(res))
		}
	}
	if !inDLQ(t, s, queue, ids[0]) || paused(t, s, queue) {
		t.Fatal("a read-only server changed something")
	}
	// The read tools still work.
	var health map[string]any
	structured(t, callTool(t, c, "pgbus_health", map[string]any{}), &health)
}

// Bad input over a real transport comes back as tool errors that say what
// to do, and the server keeps serving.
func TestBadInputOverHTTP(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	queue := newQueue(t, s)
	deadLetter(t, s, queue, `{"n":1}`)
	base := serveHTTP(t, deps(t, s), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithHTTPTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	huge := strings.Repeat("x", 1<<20)
	bad := []struct {
		label, tool string
		args        any
		want        string
	}{
		{"1 MB argument", "pgbus_dlq_list", map[string]any{"queue": queue, "text": huge}, "bytes"},
		{"1 MB queue name", "pgbus_dlq_show", map[string]any{"queue": huge, "msg_id": 1}, "bytes"},
		{"limit as text", "pgbus_dlq_list", map[string]any{"queue": queue, "limit": "ten"}, "limit"},
		{"msg_id as text", "pgbus_dlq_show", map[string]any{"queue": queue, "msg_id": "one"}, "msg_id"},
		{"ids not a list", "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": 7}, "ids"},
		{"unknown argument", "pgbus_queue_stats", map[string]any{"queue": queue, "colour": "red"}, "colour"},
		{"malformed cursor", "pgbus_dlq_list", map[string]any{"queue": queue, "cursor": "not-a-cursor!"}, "cursor"},
		{"forged cursor", "pgbus_queue_messages", map[string]any{"queue": queue, "cursor": "bTE5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OQ"}, "cursor"},
		{"limit out of range", "pgbus_dlq_list", map[string]any{"limit": 1000}, "limit"},
		{"bad queue name", "pgbus_queue_stats", map[string]any{"queue": "Robert'); DROP TABLE x;--"}, "queue"},
		{"unknown queue", "pgbus_queue_stats", map[string]any{"queue": "no_such_queue_here"}, "no_such_queue_here"},
	}
	for _, b := range bad {
		res := callTool(t, c, b.tool, b.args)
		text := resultText(res)
		if !res.IsError || !strings.Contains(text, b.want) {
			t.Errorf("%s: isError %v, text %q; want a tool error mentioning %q", b.label, res.IsError, shorten(text), b.want)
		}
	}
	// Still serving, on the same session.
	var page struct {
		Items []ops.DeadItem `json:"items"`
	}
	structured(t, callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": queue}), &page)
	if len(page.Items) != 1 {
		t.Fatalf("dlq list after bad calls: %+v", page)
	}
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// A server shuts down promptly while clients hold open event streams (the
// SSE stream, Streamable HTTP's listening GET).
func TestShutdownWithOpenStreams(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for _, tc := range []struct {
		transport string
		newClient func(base string) (*client.Client, error)
	}{
		{mcpserver.TransportHTTP, func(base string) (*client.Client, error) {
			return client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithContinuousListening())
		}},
		{mcpserver.TransportSSE, func(base string) (*client.Client, error) {
			return client.NewSSEMCPClient(base + mcpserver.PathSSE)
		}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			streams := &streamListener{Listener: ln}
			var logs pgtest.SyncBuffer
			cfg := mcpserver.HTTPConfig{Transport: tc.transport, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			base, stop := startHTTPOn(t, deps(t, s), cfg, streams)
			c, err := tc.newClient(base)
			if err != nil {
				t.Fatal(err)
			}
			if tc.transport == mcpserver.TransportHTTP {
				// The listening GET stream exists only on protocol versions
				// with sessions; pin one rather than take the client's
				// default.
				if _, err := startSession(testContext(t), c, "pgbus-test"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
			} else {
				connect(t, c)
			}
			callTool(t, c, "pgbus_health", map[string]any{})
			pgtest.Eventually(t, time.Minute, "the client's event stream to open", func() bool { return streams.open.Load() > 0 })
			stop()
			// Streams still open when the shutdown's grace period ran out
			// would have been cut, and logged so: they were closed first.
			if strings.Contains(logs.String(), "were cut") {
				t.Errorf("the shutdown waited out its timeout for the open stream:\n%s", logs.String())
			}
			pgtest.Eventually(t, time.Minute, "the server to close the event stream", func() bool { return streams.open.Load() == 0 })
		})
	}
}

// streamListener counts the open connections on which a client sent a GET:
// the event streams (SSE's stream, Streamable HTTP's listening GET).
type streamListener struct {
	net.Listener
	open atomic.Int32
}

func (l *streamListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &streamConn{Conn: c, l: l}, nil
}

type streamConn struct {
	net.Conn
	l                *streamListener
	mu               sync.Mutex
	streaming, ended bool
	// tail is the end of what was read before: a request's first bytes
	// may come in a read of their own, as when the server's background
	// read on a kept-alive connection takes the "G" of the next GET.
	tail []byte
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	seen := append(c.tail, p[:n]...)
	if bytes.Contains(seen, []byte("GET /")) && !c.streaming && !c.ended {
		c.streaming = true
		c.l.open.Add(1)
	}
	c.tail = append([]byte(nil), seen[max(0, len(seen)-4):]...)
	c.mu.Unlock()
	return n, err
}

func (c *streamConn) Close() error {
	c.mu.Lock()
	if c.streaming && !c.ended {
		c.l.open.Add(-1)
	}
	c.ended = true
	c.mu.Unlock()
	return c.Conn.Close()
}
