package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/mcpnotify"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// sseEvent is one event of a Streamable HTTP stream: its id and message.
type sseEvent struct {
	id  int64
	msg map[string]any
}

// readEvents reads the events of an SSE stream, handing each to got, until
// the stream ends.
func readEvents(r *bufio.Reader, got func(sseEvent)) {
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.msg)
		case line == "":
			if ev.msg != nil {
				got(ev)
			}
			ev = sseEvent{}
		}
	}
}

// progressToken is the token of a progress notification, or "".
func progressToken(m map[string]any) string {
	if m["method"] != "notifications/progress" {
		return ""
	}
	p, _ := m["params"].(map[string]any)
	return fmt.Sprint(p["progressToken"])
}

// With a GET stream open, the server sends every notification of a call
// before the call's result, on whichever stream carries it (mcp-go before
// v1.6 sent some on the GET stream, which recorded them later than the
// call's own stream recorded the result), so that a client does not see a
// progress notification after the result it belongs to (the TypeScript
// SDK drops those).
func TestNotificationsBeforeResultWithGETStream(t *testing.T) {
	t.Parallel()
	const calls, notes = 6, 10
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	s.AddTool(mcp.NewTool("burst", mcp.WithDescription("sends progress notes, then returns at once")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := range notes {
				if err := mcpnotify.Progress(ctx, map[string]any{
					"progressToken": req.Params.Meta.ProgressToken, "progress": i + 1, "total": notes,
				}); err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- mcpserver.Serve(ctx, s, ln, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Addr: ln.Addr().String()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	url := "http://" + ln.Addr().String() + mcpserver.PathMCP

	var session string
	post := func(body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(pgtest.Context(t), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %v %v", body, res, err)
		}
		t.Cleanup(func() { _ = res.Body.Close() })
		return res
	}
	session = post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header.Get("Mcp-Session-Id")
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// The GET stream: once its headers are in, mcp-go sends on it.
	getReq, _ := http.NewRequestWithContext(pgtest.Context(t), http.MethodGet, url, nil)
	getReq.Header.Set("Accept", "text/event-stream")
	getReq.Header.Set("Mcp-Session-Id", session)
	getReq.Header.Set("MCP-Protocol-Version", "2025-06-18")
	getRes, err := http.DefaultClient.Do(getReq)
	if err != nil || getRes.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", getRes, err)
	}
	t.Cleanup(func() { _ = getRes.Body.Close() })
	var mu sync.Mutex
	onGET := map[string][]int64{} // progress token -> event ids
	go readEvents(bufio.NewReader(getRes.Body), func(ev sseEvent) {
		mu.Lock()
		defer mu.Unlock()
		if tok := progressToken(ev.msg); tok != "" {
			onGET[tok] = append(onGET[tok], ev.id)
		}
	})

	results := map[string]int64{} // progress token -> event id of the result
	onPOST := map[string]int{}
	for i := range calls {
		tok := fmt.Sprintf("call-%d", i)
		res := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"burst","arguments":{},"_meta":{"progressToken":%q}}}`, i+2, tok))
		readEvents(bufio.NewReader(res.Body), func(ev sseEvent) {
			if progressToken(ev.msg) == tok {
				onPOST[tok]++
				if results[tok] != 0 {
					t.Errorf("%s: a progress notification on the call's stream comes after its result", tok)
				}
			}
			if ev.msg["result"] != nil {
				results[tok] = ev.id
			}
		})
		if results[tok] == 0 {
			t.Fatalf("%s: no result event on the call's stream", tok)
		}
	}
	pgtest.Eventually(t, time.Minute, "every progress notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range calls {
			tok := fmt.Sprintf("call-%d", i)
			if onPOST[tok]+len(onGET[tok]) < notes {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for i := range calls {
		tok := fmt.Sprintf("call-%d", i)
		for _, id := range onGET[tok] {
			if id > results[tok] {
				t.Errorf("%s: progress notification %d on the GET stream comes after the result, event %d", tok, id, results[tok])
			}
		}
	}
}
