package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// transportStdio names, beside mcpserver's HTTP transports, the stdio one
// in the tests of modern clients.
const transportStdio = mcpserver.TransportStdio

// serveStdio serves s over ServeStdio on pipes and returns mcp-go's
// transport on the other ends; the server stops when the test ends.
func serveStdio(t *testing.T, s *server.MCPServer) transport.Interface {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.ServeStdio(ctx, s, inR, outW, nil) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-done; err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	})
	return transport.NewIO(outR, inW, nil)
}

// modernClient serves s over tr (stdio or Streamable HTTP) and returns
// mcp-go's client of it, started on protocol version 2026-07-28 as client
// name, version 1: no initialize, no session, the client's name,
// capabilities and log level in each request's _meta. opts are the
// client's options; it is closed when the test ends.
func modernClient(t *testing.T, s *server.MCPServer, tr, name string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	var c *client.Client
	switch tr {
	case transportStdio:
		c = client.NewClient(serveStdio(t, s), opts...)
	case mcpserver.TransportHTTP:
		tp, err := transport.NewStreamableHTTP(serveServer(t, s, tr) + mcpserver.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		c = client.NewClient(tp, opts...)
	default:
		t.Fatalf("no modern client over %s", tr)
	}
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("connect on %s: %v", mcp.ProtocolVersion20260728, err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("the client settled on protocol version %q, want %s", v, mcp.ProtocolVersion20260728)
	}
	return c
}

// modernTransports are the transports a client of protocol version
// 2026-07-28 connects over (SSE predates it).
var modernTransports = []string{transportStdio, mcpserver.TransportHTTP}

// A client of protocol version 2026-07-28 that names pgbus://queues and a
// queue's stats among the resource subscriptions of subscriptions/listen
// is told on that stream when a message is dead-lettered there, over
// stdio and Streamable HTTP; another queue's stats, not named, send
// nothing.
func TestModernResourceSubscriptions(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the watcher reads every queue
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue, other := newQueue(t, st), newQueue(t, st)
			s := newServer(t, deps(t, st), mcpserver.Options{ResourcePoll: 20 * time.Millisecond})
			c := modernClient(t, s, tr, "modern-agent")
			got := collect(c)
			stats := "pgbus://queues/" + queue + "/stats"
			otherStats := "pgbus://queues/" + other + "/stats"
			listening := listen(t, c, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues", stats}})

			deadLetter(t, st, other, `{"n":1}`)
			deadLetter(t, st, queue, `{"n":1}`)
			pgtest.Eventually(t, time.Minute, "updates of pgbus://queues and "+stats, func() bool {
				u := updatedURIs(got)
				return u["pgbus://queues"] && u[stats]
			})
			if u := updatedURIs(got); u[otherStats] {
				t.Fatalf("updates %v include %s, not subscribed to", u, otherStats)
			}
			listening()
		})
	}
}

// listen opens a subscriptions/listen stream of c for filter, once the
// server acknowledged it; the returned function closes it, as does the end
// of the test.
func listen(t *testing.T, c *client.Client, filter mcp.SubscriptionFilter) (stop func()) {
	t.Helper()
	acked := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationSubscriptionsAcknowledged {
			once.Do(func() { close(acked) })
		}
	})
	stop, err := c.ListenAsync(testContext(t), filter, func(err error) { t.Errorf("subscriptions/listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case <-acked:
	case <-testContext(t).Done():
		t.Fatal("subscriptions/listen was not acknowledged")
	}
	return stop
}

// A client of protocol version 2026-07-28 sets its log level in each
// request's _meta, over stdio and Streamable HTTP: a write call that
// carries info receives the call's log record (its counts, at info) in
// its answer, and nothing below info; a subscriptions/listen stream that
// carries debug receives the records logged beside the server, such as
// those of its workers, redacted as the log is.
func TestModernLogNotifications(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue := newQueue(t, st)
			ids := deadLetter(t, st, queue, `{"n":1}`)
			cl := mcpserver.NewClientLog()
			c := modernClient(t, newServer(t, deps(t, st), mcpserver.Options{ClientLog: cl}), tr, "modern-agent")
			got := collect(c)

			setLevel(t, c, mcp.LoggingLevelInfo)
			callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}})
			pgtest.Eventually(t, time.Minute, "the retry's log notification", func() bool {
				return len(got.logsSaying("pgbus_dlq_retry done")) > 0
			})
			logs := got.logsSaying("pgbus_dlq_retry done")
			data, _ := logs[0]["data"].(map[string]any)
			if len(logs) != 1 || logs[0]["level"] != "info" || logs[0]["logger"] != "pgbus" || data["tool"] != "pgbus_dlq_retry" || fmt.Sprint(data["retried"]) != "1" {
				t.Fatalf("retry log notifications: %v", logs)
			}
			for _, p := range got.of("notifications/message") {
				if p["level"] == "debug" {
					t.Errorf("a debug record reached a client at info: %v", p)
				}
			}

			setLevel(t, c, mcp.LoggingLevelDebug)
			listen(t, c, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues"}})
			cl.Tee(nil).WithGroup("job").Debug("pgbus: job failed", "queue", "orders", "err", fmt.Errorf("POST https://user:hunter2@example.com: 500"))
			pgtest.Eventually(t, time.Minute, "the worker's log notification on the listen stream", func() bool {
				return len(got.logsSaying("job failed")) > 0
			})
			p := got.logsSaying("job failed")[0]
			job, _ := p["data"].(map[string]any)["job"].(map[string]any)
			if p["level"] != "debug" || job["queue"] != "orders" || strings.Contains(fmt.Sprint(p), "hunter2") {
				t.Fatalf("forwarded worker record: %v", p)
			}
		})
	}
}

// modernHeaders are the headers of a tools/list of protocol 2026-07-28.
var modernHeaders = map[string]string{
	"Content-Type":         "application/json",
	"Accept":               "application/json, text/event-stream",
	"Mcp-Protocol-Version": mcp.ProtocolVersion20260728,
	"Mcp-Method":           "tools/list",
}

// rawModernListTools is a tools/list of protocol 2026-07-28.
const rawModernListTools = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// postModern posts body to url with modernHeaders, then header's, and
// returns the answer.
func postModern(t *testing.T, url, body string, header map[string]string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range modernHeaders {
		req.Header.Set(k, v)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// A request of protocol 2026-07-28 passes the same checks as any other:
// the bearer token, the Origin and the Host; and declaring that protocol
// opens no session past MaxSessions, whatever the body: an initialize
// with the modern header is refused without a session.
func TestModernRequestsSecurity(t *testing.T) {
	t.Parallel()
	const token = "modern-security-token-0123456789abcdef"
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: token, MaxSessions: 1})
	url := base + mcpserver.PathMCP
	auth := "Bearer " + token
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"with the token", map[string]string{"Authorization": auth}, http.StatusOK},
		{"without a token", nil, http.StatusUnauthorized},
		{"with a wrong token", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(token))}, http.StatusUnauthorized},
		{"from another origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"to another host", map[string]string{"Authorization": auth, "Host": "evil.example"}, http.StatusForbidden},
	} {
		r := postModern(t, url, rawModernListTools, tc.header)
		if r.status != tc.want || (tc.want == http.StatusOK) != strings.Contains(r.body, "pgbus_health") {
			t.Errorf("modern tools/list %s: %d %.200s; want %d", tc.name, r.status, r.body, tc.want)
		}
		// The refusal names the token of either server that serves this
		// endpoint, pgbus serve's and pgbus dashboard's.
		if tc.want == http.StatusUnauthorized && (!strings.Contains(r.body, "pgbus serve or pgbus dashboard") || strings.Contains(r.body, "<token>")) {
			t.Errorf("modern tools/list %s: %q; want the token of pgbus serve or pgbus dashboard named, with no placeholder a log's redaction mangles", tc.name, r.body)
		}
	}

	withToken := map[string]string{"Authorization": auth}
	legacy := func(session ...string) rawResponse {
		req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, strings.NewReader(rawInitialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", auth)
		if len(session) > 0 {
			req.Header.Set("Mcp-Session-Id", session[0])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return rawResponse{status: resp.StatusCode, header: resp.Header}
	}
	first := legacy()
	if first.status != http.StatusOK || first.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("the one session allowed: %d %v", first.status, first.header)
	}
	// In use, its event stream open, it is not ended for a new one.
	openGETStream(t, base, first.header.Get("Mcp-Session-Id"), token)
	// An initialize on the open session would start another: refused
	// as a second one is.
	if r := legacy(first.header.Get("Mcp-Session-Id")); r.status != http.StatusServiceUnavailable || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize again on the open session past MaxSessions 1: %d, session %q; want 503 and no session", r.status, r.header.Get("Mcp-Session-Id"))
	}
	modernInit := strings.Replace(rawInitialize, `"params":{`, `"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`, 1)
	for _, body := range []string{rawInitialize, modernInit} {
		if r := postModern(t, url, body, withToken); r.status == http.StatusOK || r.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("initialize declaring protocol 2026-07-28 past MaxSessions: %d, session %q; want refused", r.status, r.header.Get("Mcp-Session-Id"))
		}
	}
	if r := legacy(); r.status != http.StatusServiceUnavailable {
		t.Errorf("a second session past MaxSessions 1: %d; want 503", r.status)
	}
	if r := postModern(t, url, rawModernListTools, withToken); r.status != http.StatusOK {
		t.Errorf("modern tools/list with every session taken: %d %.200s; want 200, as it needs none", r.status, r.body)
	}
	// A session id a modern request carries, open or not, is no session
	// of its: mcp-go ignores it, and so does the guard.
	if r := postModern(t, url, rawModernListTools, map[string]string{"Authorization": auth, "Mcp-Session-Id": "mcp-session-never-issued"}); r.status != http.StatusOK || !strings.Contains(r.body, "pgbus_health") {
		t.Errorf("modern tools/list with a stale session id: %d %.200s; want 200", r.status, r.body)
	}
	// A modern request without the version header is refused as a legacy
	// one without a session, saying which header a modern client sends.
	if r := postModern(t, url, rawModernListTools, map[string]string{"Authorization": auth, "Mcp-Protocol-Version": ""}); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Mcp-Protocol-Version header") {
		t.Errorf("modern tools/list without its version header: %d %.300s; want 400 naming the header", r.status, r.body)
	}
}

// A client of protocol 2026-07-28 that declares no elicitation cannot
// ask its user, so it is sent no question: a discard by filter or a purge
// without confirm is refused, saying to pass confirm: true, and nothing
// moves; with it, the call is done. (One that declares elicitation is
// asked: TestModernDiscardAsksThroughInputRequests.)
func TestModernClientConfirms(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			q := newQueue(t, st)
			ids := deadLetter(t, st, q, `{"n":1}`)
			c := modernClient(t, newServer(t, deps(t, st), mcpserver.Options{}), tr, "modern-agent")
			wantToolError(t, "modern discard without confirm", callTool(t, c, "pgbus_dlq_discard", discardArgs(q)), `"confirm":true`)
			if !inDLQ(t, st, q, ids[0]) {
				t.Fatal("a modern discard without confirm moved the message")
			}
			var d ops.DLQDiscard
			structured(t, callTool(t, c, "pgbus_dlq_discard", discardArgs(q, "confirm", true)), &d)
			if d.Discarded != 1 || inDLQ(t, st, q, ids[0]) {
				t.Fatalf("modern discard with confirm = %+v; want the message discarded", d)
			}
			wantToolError(t, "modern purge without confirm", callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s"}), "confirm")
			var pr ops.DLQPurge
			structured(t, callTool(t, c, "pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "0s", "confirm": true}), &pr)
			if pr.Purged != 1 {
				t.Fatalf("modern purge with confirm = %+v; want the message purged", pr)
			}
		})
	}
}

// A client of protocol version 2026-07-28 lists the tools and calls them,
// write tools included, over stdio and Streamable HTTP; its writes are
// audited under the name and version it declares in each request's
// _meta. With --read-only the write tools are not listed, a call of one
// is refused, and nothing changes.
func TestModernClientTools(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue := newQueue(t, st)
			ids := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
			c := modernClient(t, newServer(t, deps(t, st), mcpserver.Options{}), tr, "modern-agent")
			names := toolNames(t, c)
			for _, want := range []string{"pgbus_health", "pgbus_dlq_retry", "pgbus_queue_pause"} {
				if _, ok := names[want]; !ok {
					t.Errorf("tool %s not listed to a modern client (have %d tools)", want, len(names))
				}
			}
			var report ops.DLQRetry
			structured(t, callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": queue, "ids": []int64{ids[0]}}), &report)
			if report.Retried != 1 || inDLQ(t, st, queue, ids[0]) {
				t.Fatalf("retry by a modern client: %+v", report)
			}
			page, err := st.ListAudit(testContext(t), store.AuditFilter{Tool: "dlq_retry"}, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			var entry *store.AuditEntry
			for i, e := range page.Items {
				if strings.Contains(string(e.Arguments), queue) {
					entry = &page.Items[i]
				}
			}
			if entry == nil || entry.Client != "mcp:modern-agent/1" || entry.Transport != tr {
				t.Fatalf("audit entry of a modern client's retry: %+v; want client mcp:modern-agent/1 over %s", entry, tr)
			}

			ro := modernClient(t, newServer(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.Options{}), tr, "modern-reader")
			names = toolNames(t, ro)
			if _, ok := names["pgbus_health"]; !ok {
				t.Fatal("a read-only server lists no pgbus_health to a modern client")
			}
			for name, tool := range names {
				if !mcpserver.IsReadOnlyTool(tool) {
					t.Errorf("read-only server lists write tool %s to a modern client", name)
				}
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "pgbus_dlq_retry"
			req.Params.Arguments = map[string]any{"queue": queue, "ids": []int64{ids[1]}}
			if res, err := ro.CallTool(testContext(t), req); err == nil && !res.IsError {
				t.Fatalf("read-only server ran pgbus_dlq_retry for a modern client: %s", resultText(res))
			}
			if !inDLQ(t, st, queue, ids[1]) {
				t.Fatal("read-only server retried a message for a modern client")
			}
		})
	}
}

// A bulk retry by filter and a purge called with a progress token by a
// client of protocol version 2026-07-28 send it progress notifications
// before their results, over stdio and Streamable HTTP (in the answer to
// the call), the last at the total.
func TestModernProgressNotifications(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	st := testStore(t)
	for _, tr := range modernTransports {
		t.Run(tr, func(t *testing.T) {
			queue := newQueue(t, st)
			pgtest.DeadLetterN(t, st, queue, 4, pgtest.DeadSpec{Kind: "webhook", Class: "HTTPError", Message: "http 503"})
			discard := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`, `{"n":3}`)
			if _, err := st.DiscardDead(testContext(t), queue, discard); err != nil {
				t.Fatal(err)
			}
			c := modernClient(t, newServer(t, deps(t, st), mcpserver.Options{}), tr, "modern-agent")
			got := collect(c)
			callWithProgress(t, c, "retry", "pgbus_dlq_retry", map[string]any{"queue": queue, "error_class": "HTTPError", "limit": 10})
			if tr == mcpserver.TransportHTTP {
				// The notifications come in the answer, before the result.
				wantProgress(t, got, "retry", 4)
			}
			callWithProgress(t, c, "purge", "pgbus_dlq_purge", map[string]any{"queue": store.DLQName(queue), "older_than": "0s", "confirm": true})
			pgtest.Eventually(t, time.Minute, "the progress notifications", func() bool {
				r, _ := progressOf(got, "retry")
				p, _ := progressOf(got, "purge")
				return len(r) > 0 && len(p) > 0 && r[len(r)-1] == 4 && p[len(p)-1] == 3
			})
			wantProgress(t, got, "retry", 4)
			wantProgress(t, got, "purge", 3)
		})
	}
}
