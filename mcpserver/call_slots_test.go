package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/tools"
)

// heldTool is a tool added to pgbus's server whose calls each wait until
// release is closed, counting how many run at once.
type heldTool struct {
	release       chan struct{}
	running, most atomic.Int64
	entered       chan struct{}
}

func newHeldTool() *heldTool {
	return &heldTool{release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (h *heldTool) add(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("held", mcp.WithReadOnlyHintAnnotation(true)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := h.running.Add(1)
		defer h.running.Add(-1)
		for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
		}
		h.entered <- struct{}{}
		select {
		case <-h.release:
			return mcp.NewToolResultText("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// serveHeld serves pgbus's server with opts and the held tool over
// Streamable HTTP, and returns a new connected client of it each time
// connect is called.
func serveHeld(t *testing.T, opts mcpserver.Options, h *heldTool) (connect func() *client.Client) {
	t.Helper()
	s := newServer(t, deps(t, testStore(t)), opts)
	h.add(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(ctx, s, ln, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: ln.Addr().String()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return func() *client.Client {
		c, err := client.NewStreamableHttpClient("http://" + ln.Addr().String() + mcpserver.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		connectClient(t, c)
		return c
	}
}

// connectClient is connect, for a client used from several goroutines.
func connectClient(t *testing.T, c *client.Client) {
	t.Helper()
	connect(t, c)
}

func call(ctx context.Context, c *client.Client, name string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// busyKind is the kind a tool error's _meta gives, "" for none.
func busyKind(res *mcp.CallToolResult) string {
	var meta struct {
		Kind string `json:"kind"`
	}
	if res != nil && res.Meta != nil {
		raw, _ := json.Marshal(res.Meta.AdditionalFields[tools.ErrorMetaKey])
		_ = json.Unmarshal(raw, &meta)
	}
	return meta.Kind
}

// A server runs at most MaxToolCalls tool calls at once, of all its
// sessions together: a call that finds every slot taken for longer than
// ToolCallWait does not run, and is answered a tool error that says the
// server is busy and what to do, of kind unavailable, as an outage of the
// database is; once a slot is free, calls run again.
func TestToolCallsBeyondTheBoundAreAnsweredBusy(t *testing.T) {
	t.Parallel()
	h := newHeldTool()
	connect := serveHeld(t, mcpserver.Options{MaxToolCalls: 3, ToolCallWait: 50 * time.Millisecond}, h)
	var held sync.WaitGroup
	heldErrs := make(chan error, 3)
	for range 3 {
		c := connect()
		held.Go(func() {
			res, err := call(testContext(t), c, "held", map[string]any{})
			if err == nil && res.IsError {
				err = errors.New(resultText(res))
			}
			heldErrs <- err
		})
	}
	for range 3 {
		<-h.entered
	}
	var others sync.WaitGroup
	results := make(chan *mcp.CallToolResult, 7)
	for range 7 {
		c := connect()
		others.Go(func() {
			res, err := call(testContext(t), c, "held", map[string]any{})
			if err != nil {
				t.Errorf("a call beyond the bound: %v; want a tool error", err)
			}
			results <- res
		})
	}
	others.Wait()
	close(results)
	for res := range results {
		if res == nil {
			continue
		}
		text := resultText(res)
		if !res.IsError || busyKind(res) != "unavailable" || !strings.Contains(text, "busy") || !strings.Contains(text, "3 tool calls") || !strings.Contains(text, "call again") {
			t.Fatalf("a call beyond the bound: error %v, kind %q, %q; want a tool error of kind unavailable saying the server is busy and to call again", res.IsError, busyKind(res), text)
		}
	}
	if n, most := len(h.entered), h.most.Load(); n != 0 || most != 3 {
		t.Fatalf("%d more calls ran the tool, %d at most at once; want none beyond the 3 held", n, most)
	}
	close(h.release)
	held.Wait()
	close(heldErrs)
	for err := range heldErrs {
		if err != nil {
			t.Errorf("a held call: %v", err)
		}
	}
	if res, err := call(testContext(t), connect(), "pgbus_health", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("a call once the slots are free: %v %s", err, resultText(res))
	}
}

// A call beyond the bound waits for a slot while its client waits, and
// runs once one is free.
func TestToolCallBeyondTheBoundWaitsItsTurn(t *testing.T) {
	t.Parallel()
	h := newHeldTool()
	connect := serveHeld(t, mcpserver.Options{MaxToolCalls: 1, ToolCallWait: time.Minute}, h)
	first, second := connect(), connect()
	done := make(chan error, 2)
	for _, c := range []*client.Client{first, second} {
		go func() {
			res, err := call(testContext(t), c, "held", map[string]any{})
			if err == nil && (res.IsError || resultText(res) != "released") {
				err = errors.New(resultText(res))
			}
			done <- err
		}()
	}
	<-h.entered
	close(h.release)
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("a call: %v", err)
		}
	}
	if most := h.most.Load(); most != 1 {
		t.Fatalf("%d calls ran at once; want 1, the bound", most)
	}
}

// A call waiting for its person's answer holds no slot: with one slot,
// another client's call runs meanwhile, and the waiting call, answered,
// goes on and does what it asked.
func TestToolCallWaitingForItsPersonHoldsNoSlot(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	ids := deadLetter(t, s, q, `{"n":1}`)
	base := serveHTTPWith(t, deps(t, s), mcpserver.Options{MaxToolCalls: 1, ToolCallWait: 50 * time.Millisecond}, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})

	release := make(chan struct{})
	p := &answeringPerson{asked: make(chan struct{}), release: release}
	tr, err := transport.NewStreamableHTTP(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(p))
	if _, err := startSession(testContext(t), c, "slots-test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := call(testContext(t), c, "pgbus_dlq_discard", map[string]any{"queue": q, "limit": 10})
		if err != nil {
			t.Errorf("the discard: %v", err)
		}
		done <- res
	}()
	select {
	case <-p.asked:
	case res := <-done:
		t.Fatalf("the discard answered without asking its person: %s", resultText(res))
	}
	other, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, other)
	if res, err := call(testContext(t), other, "pgbus_health", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("a call while another waits for its person: %v %s; want it run", err, resultText(res))
	}
	close(release)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("the discard once answered: %s", resultText(res))
	}
	if inDLQ(t, s, q, ids[0]) {
		t.Fatalf("message %d is still in the DLQ after the confirmed discard", ids[0])
	}
}

// answeringPerson is a user who is asked, and confirms once released:
// asked is closed once the question reached them.
type answeringPerson struct {
	asked   chan struct{}
	release <-chan struct{}
}

func (p *answeringPerson) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	close(p.asked)
	select {
	case <-p.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
}
