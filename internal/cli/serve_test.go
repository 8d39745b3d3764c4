package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// syncBuffer is a buffer safe for a writer and a reader goroutine.
type syncBuffer = pgtest.SyncBuffer

// seedDLQ migrates the database at url, creates queue and dead-letters one
// message per payload; it returns their ids in the DLQ.
func seedDLQ(t *testing.T, url, queue string, payloads ...string) []int64 {
	t.Helper()
	s := pgtest.OpenStore(t, url)
	pgtest.CreateQueue(t, s, queue)
	specs := make([]pgtest.DeadSpec, len(payloads))
	for i, p := range payloads {
		specs[i] = pgtest.DeadSpec{Kind: "send_email", Reason: store.ReasonNonRetryable, Class: "InvalidAddress", Message: "no such mailbox",
			Payload: p, Headers: `{"pgbus_kind":"send_email"}`, Attempt: 1}
	}
	return pgtest.DeadLetter(t, s, queue, specs...)
}

// connectHTTP starts an MCP client of the Streamable HTTP endpoint,
// with token as its bearer token when not empty, and initializes its
// session; logs, the server's, are shown if that fails. The client is
// closed when the test ends.
func connectHTTP(t *testing.T, ctx context.Context, endpoint, token string, logs *syncBuffer) *client.Client {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "cli-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize at %s: %v\n%s", endpoint, err, logs.String())
	}
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res := callToolRaw(t, c, name, args)
	if res.IsError {
		t.Fatalf("call %s: tool error %v", name, res.Content)
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// serveStdio starts pgbus serve with args, JSON logs and no DATABASE_URL
// from the environment, and initializes an MCP client over its stdio. The
// client is closed when the test ends; the server's stderr is returned.
func serveStdio(t *testing.T, args ...string) (*client.Client, *mcp.InitializeResult, *syncBuffer) {
	t.Helper()
	return serveStdioAs(t, "cli-test", args...)
}

// serveStdioAs is serveStdio with a client that introduces itself as name.
func serveStdioAs(t *testing.T, name string, args ...string) (*client.Client, *mcp.InitializeResult, *syncBuffer) {
	t.Helper()
	return serveStdioEnv(t, name, []string{"DATABASE_URL="}, args...)
}

// serveStdioEnv is serveStdioAs with env added to the test's environment
// instead of an empty DATABASE_URL.
func serveStdioEnv(t *testing.T, name string, env []string, args ...string) (*client.Client, *mcp.InitializeResult, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	c, err := client.NewStdioMCPClientWithOptions(binary, append(env, "PGBUS_LOG_FORMAT=json"),
		append([]string{"serve"}, args...), transport.WithCommandStderrWriter(stderr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	init, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize pgbus serve %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return c, init, stderr
}

// mcp-go's client drives the built binary over stdio: initialize with
// instructions, list tools, pgbus_health, pgbus_dlq_list, and a dead
// message with a payload over 64 KB that comes back truncated and as
// well-formed JSON. Logs go to stderr.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	big := `{"to":"a@example.com","password":"hunter2","blob":"` + strings.Repeat("x", 80<<10) + `"}`
	ids := seedDLQ(t, url, "mail", `{"to":"b@example.com"}`, big)

	c, init, stderr := serveStdio(t, "--database-url", url, "--allow-payloads")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if init.ServerInfo.Name != "pgbus" || !strings.Contains(init.Instructions, "pgbus_health") || !strings.Contains(init.Instructions, "pgbus_dlq_show") {
		t.Fatalf("initialize: %+v", init)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("list tools: %v %v", tools, err)
	}

	var health struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_health", map[string]any{}))), &health); err != nil || health.Status == "" {
		t.Fatalf("health: %+v %v", health, err)
	}

	var page struct {
		Items []ops.DeadItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(toolText(callTool(t, c, "pgbus_dlq_list", map[string]any{"queue": "mail"}))), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].MsgID != ids[1] || page.Items[0].ErrorClass != "InvalidAddress" {
		t.Fatalf("dlq list: %+v", page.Items)
	}

	res := callTool(t, c, "pgbus_dlq_show", map[string]any{"queue": "mail", "msg_id": ids[1], "include_payload": true})
	text := toolText(res)
	var shown struct {
		PayloadBytes   int             `json:"payload_bytes"`
		PayloadShown   bool            `json:"payload_shown"`
		Payload        json.RawMessage `json:"payload"`
		PayloadPreview string          `json:"payload_preview"`
		Notes          []string        `json:"notes"`
	}
	if err := json.Unmarshal([]byte(text), &shown); err != nil {
		t.Fatalf("dlq show text is not well-formed JSON: %v", err)
	}
	if !shown.PayloadShown || shown.Payload != nil || shown.PayloadPreview == "" || shown.PayloadBytes < 64<<10 ||
		len(text) > 64<<10 || !strings.Contains(strings.Join(shown.Notes, " "), "truncated") {
		t.Fatalf("a %d-byte payload over stdio: %d bytes of text, shown %v, preview %d bytes, notes %q",
			shown.PayloadBytes, len(text), shown.PayloadShown, len(shown.PayloadPreview), shown.Notes)
	}
	if strings.Contains(text, "hunter2") {
		t.Fatal("the password in the payload was not redacted")
	}
	if b, _ := json.Marshal(res.StructuredContent); len(b) > 64<<10 || !json.Valid(b) {
		t.Fatalf("structured content: %d bytes", len(b))
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "pgbus MCP server on stdio") {
		t.Errorf("no start-up log on stderr: %s", stderr.String())
	}
}

// On stdout the server writes only JSON-RPC messages, even when given the
// deprecated --work flag (the warning goes to the log), and it exits 0 when
// the client closes stdin.
func TestServeStdioProtocolOnlyAndEOF(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	if r := pgbus(t, nil, "queue", "create", "proto", "--database-url", url); r.code != 0 {
		t.Fatalf("queue create: %d %s", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--database-url", url, "--log-level", "debug", "--log-format", "text",
		"--work", "proto", "--handler", "demo")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout := bufio.NewReader(stdoutPipe)
	var lines []string
	roundTrip := func(id int, method, params string) map[string]any {
		t.Helper()
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		line, err := stdout.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: read stdout: %v\nstderr: %s", method, err, stderr.String())
		}
		lines = append(lines, line)
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg["jsonrpc"] != "2.0" || msg["id"] != float64(id) {
			t.Fatalf("%s: stdout line is not the JSON-RPC response: %q (%v)", method, line, err)
		}
		return msg
	}
	roundTrip(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	roundTrip(2, "tools/list", `{}`)
	roundTrip(3, "tools/call", `{"name":"pgbus_health","arguments":{}}`)
	if msg := roundTrip(4, "tools/call", `{"name":"pgbus_dlq_list","arguments":{"limit":"many"}}`); !strings.Contains(fmt.Sprint(msg["result"]), "isError:true") {
		t.Errorf("a bad call did not answer a tool error: %v", msg)
	}
	roundTrip(5, "ping", `{}`)
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stdout)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pgbus serve after stdin closed: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("pgbus serve did not exit after stdin closed")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("stdout carried more than the responses: %q", rest)
	}
	logs := stderr.String()
	for _, want := range []string{"pgbus MCP server on stdio", "mcp tool call", "pgbus MCP server stopped", "--work is deprecated; use --queue"} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
}

// serve --transport http on a free port: the address is logged on stderr,
// mcp-go's client works against it, and SIGTERM stops it cleanly.
func TestServeHTTPAndSignal(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--database-url", url, "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=tok-123", "PGBUS_MCP_MAX_SESSIONS=1"}
	var stdout syncBuffer
	cmd.Stdout = &stdout
	endpoint, logs := startListening(t, cmd, "pgbus MCP server listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	c := connectHTTP(t, ctx, endpoint, "tok-123", logs)
	callTool(t, c, "pgbus_queue_stats", map[string]any{})
	// PGBUS_MCP_MAX_SESSIONS=1: a client of a protocol with sessions gets
	// one, and a second takes its place once it is idle: the first is
	// open no more.
	var first string
	for i := range 2 {
		status, id, body := sessionInitialize(t, ctx, endpoint, "tok-123", "")
		if status != http.StatusOK || id == "" {
			t.Fatalf("session %d with PGBUS_MCP_MAX_SESSIONS=1: %d %s; want a session", i+1, status, body)
		}
		if first == "" {
			first = id
		}
	}
	if status, _, body := sessionInitialize(t, ctx, endpoint, "tok-123", first); status != http.StatusNotFound {
		t.Fatalf("the first session, after a second took its place with PGBUS_MCP_MAX_SESSIONS=1: %d %s; want 404", status, body)
	}
	_ = c.Close()

	// A shutdown that hangs is killed when ctx ends, and fails here.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if stdout.String() != "" {
		t.Errorf("stdout: %q", stdout.String())
	}
}

// --session-idle-timeout ends a Streamable HTTP session after that long
// without a request, instead of the default hour.
func TestServeSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--database-url", url, "--log-format", "json", "--session-idle-timeout", "1s")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=tok-123"}
	endpoint, logs := startListening(t, cmd, "pgbus MCP server listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	status, id, body := sessionInitialize(t, ctx, endpoint, "tok-123", "")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s\n%s", status, body, logs.String())
	}
	pgtest.Eventually(t, time.Minute, "the session idle past --session-idle-timeout 1s to end", func() bool {
		status, _, _ := sessionInitialize(t, ctx, endpoint, "tok-123", id)
		return status == http.StatusNotFound
	})
}

// sessionInitialize starts a Streamable HTTP session of protocol
// 2025-06-18 at endpoint, sending the Mcp-Session-Id session unless it is
// empty, and returns the answer's status, session id and body.
func sessionInitialize(t *testing.T, ctx context.Context, endpoint, token, session string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// Bad serve command lines are usage errors (exit 2) found before any
// database starts; binding beyond loopback without a token, or with a
// short one, is one, and so is a token of white space.
func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args []string
		want string
	}{
		"public addr without token": {[]string{"serve", "--transport", "http", "--addr", "0.0.0.0:0"}, "--auth-token"},
		"sse on all interfaces":     {[]string{"serve", "--transport", "sse", "--addr", ":0"}, "PGBUS_MCP_TOKEN"},
		"blank token":               {[]string{"serve", "--transport", "http", "--auth-token", "   "}, "--auth-token is empty"},
		"blank token off loopback":  {[]string{"serve", "--transport", "http", "--addr", "0.0.0.0:0", "--auth-token", "   "}, "--auth-token is empty"},
		"token with a space":        {[]string{"serve", "--transport", "http", "--auth-token", "a b"}, "white space, which no client can send in a bearer token; use a random token, e.g. the output of `openssl rand -hex 32`"},
		"short token off loopback":  {[]string{"serve", "--transport", "http", "--addr", "0.0.0.0:0", "--auth-token", "a"}, "use a random token of at least 32 characters, e.g. openssl rand -hex 32"},
		"unknown transport":         {[]string{"serve", "--transport", "pigeon"}, "stdio, http or sse"},
		"bad addr":                  {[]string{"serve", "--transport", "http", "--addr", "nonsense"}, "host:port"},
		"bad origin":                {[]string{"serve", "--transport", "http", "--allowed-origins", "evil"}, "origin"},
		"bad work concurrency":      {[]string{"serve", "--work", "orders:lots"}, "concurrency"},
		"bad work queue":            {[]string{"serve", "--work", "Orders"}, "Orders"},
		"bad queue concurrency":     {[]string{"serve", "--queue", "orders:lots", "--handler", "demo"}, "concurrency"},
		"bad queue name":            {[]string{"serve", "--queue", "Orders", "--handler", "demo"}, "Orders"},
		"queue without handler":     {[]string{"serve", "--queue", "orders"}, "has no handler"},
		"unknown handler":           {[]string{"serve", "--queue", "orders", "--handler", "pigeon"}, "unknown handler type"},
		"extra argument":            {[]string{"serve", "now"}, "serve"},
		"bad safe field":            {[]string{"serve", "--safe-fields", "tenant,file..type"}, `--safe-fields: safe field "file..type"`},
		"bad poll interval":         {[]string{"serve", "--queue", "orders", "--handler", "demo", "--poll-interval", "1ns"}, "--poll-interval 1ns is out of range"},
		"bad drain timeout":         {[]string{"serve", "--drain-timeout", "-1s"}, "--drain-timeout"},
		"zero drain timeout":        {[]string{"serve", "--drain-timeout", "0s"}, "out of range 1ms..24h"},
		"bad no-listen value":       {[]string{"serve", "--no-listen=maybe"}, "no-listen"},
		"bad trusted proxy":         {[]string{"serve", "--transport", "http", "--trusted-proxies", "10.0.0.0/8,proxy.internal"}, `--trusted-proxies: "proxy.internal" is not an IP address or CIDR prefix: give IP addresses or CIDR prefixes`},
		"injected trusted proxy":    {[]string{"dashboard", "--trusted-proxies", "10.0.0.1'; DROP TABLE x"}, "--trusted-proxies"},
		"bad proxy prefix":          {[]string{"dashboard", "--trusted-proxies", "10.0.0.0/99"}, "CIDR"},
		"no sessions":               {[]string{"serve", "--transport", "http", "--max-sessions", "0"}, "--max-sessions 0: give 1 or more"},
		"no idle timeout":           {[]string{"serve", "--transport", "http", "--session-idle-timeout", "0s"}, "--session-idle-timeout 0s: give 1s or more"},
		"idle timeout below 1s":     {[]string{"serve", "--transport", "http", "--session-idle-timeout", "500ms"}, "--session-idle-timeout 500ms: give 1s or more"},
		"too many sessions":         {[]string{"serve", "--transport", "http", "--max-sessions", "99999999999"}, "--max-sessions 99999999999 is more than 100000"},
		"sessions not a number":     {[]string{"serve", "--transport", "http", "--max-sessions", "lots'; DROP TABLE x"}, "max-sessions"},
		"zero concurrency":          {[]string{"serve", "--queue", "orders", "--handler", "demo", "--concurrency", "0"}, "--concurrency 0 is out of range"},
	}
	if r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "PGBUS_TRUSTED_PROXIES=everyone"}, "dashboard"); r.code != 2 || !strings.Contains(r.stderr, `"everyone"`) {
		t.Errorf("PGBUS_TRUSTED_PROXIES=everyone: exit %d, stderr %q; want exit 2 naming the value", r.code, r.stderr)
	}
	if r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "PGBUS_MCP_MAX_SESSIONS=-5"}, "serve", "--transport", "http"); r.code != 2 || !strings.Contains(r.stderr, "environment variable PGBUS_MCP_MAX_SESSIONS") {
		t.Errorf("PGBUS_MCP_MAX_SESSIONS=-5: exit %d, stderr %q; want exit 2 naming the variable", r.code, r.stderr)
	}
	// Too many, too: the flag it named was given nowhere.
	if r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "PGBUS_MCP_MAX_SESSIONS=200000"}, "serve", "--transport", "http"); r.code != 2 || !strings.Contains(r.stderr, "200000 (from environment variable PGBUS_MCP_MAX_SESSIONS) is more than 100000") {
		t.Errorf("PGBUS_MCP_MAX_SESSIONS=200000: exit %d, stderr %q; want exit 2 naming the variable", r.code, r.stderr)
	}
	for label, c := range cases {
		// An unreachable database: a usage error must come before it is used.
		r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and a message with %q", label, r.code, r.stderr, r.stdout, c.want)
		}
	}
}

// mcp.json at the repository root is a client configuration that starts
// this binary's serve command.
func TestMCPJSON(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("mcp.json: %v", err)
	}
	srv, ok := cfg.MCPServers["pgbus"]
	if !ok || srv.Command != "pgbus" || len(srv.Args) == 0 || srv.Args[0] != "serve" {
		t.Fatalf("mcp.json: %+v", cfg)
	}
	if r := pgbus(t, nil, append(srv.Args, "--help")...); r.code != 0 || !strings.Contains(r.stdout, "--transport") {
		t.Fatalf("pgbus %v --help: exit %d %q", srv.Args, r.code, r.stderr)
	}
}

// SIGINT ends a stdio server whose client still holds stdin open, with
// exit code 0.
func TestServeStdioSignal(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, stdin, stdoutPipe, stderr := startRaw(t, ctx, []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, "serve", "--database-url", url)
	defer stdin.Close()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := bufio.NewReader(stdoutPipe).ReadString('\n'); err != nil {
		t.Fatalf("no initialize response: %v\n%s", err, stderr.String())
	}
	// Stopping that hangs is killed when ctx ends, and fails here.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, stderr.String())
	}
}

// serve --work runs embedded workers with the handler given: a message sent
// before is worked and archived while the MCP server runs.
func TestServeRunsWorkers(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "served", "--backoff", "50ms", "--backoff-max", "1s")
	d.ok(t, "send", "served", `{"simulate": "ok"}`)
	d.ok(t, "send", "served", `{"simulate": "flaky", "failures": 1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0",
		"--database-url", d.url, "--queue", "served:2", "--handler", "demo", "--poll-interval", "100ms")
	// Behind a pooler in transaction mode serve's workers poll, as pgbus
	// work's do, set the same way.
	cmd.Env = append(baseEnv(), "PGBUS_NO_LISTEN=1")
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(time.Minute)
	for d.count(t, `SELECT count(*) FROM pgmq.a_served`) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the served queue was not worked:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if n := d.count(t, `SELECT count(*) FROM pgbus.failures WHERE queue_name = 'served'`); n != 1 {
		t.Fatalf("%d failures recorded, want the flaky message's one", n)
	}
	if !strings.Contains(logs.String(), "notifications are off") || !strings.Contains(logs.String(), `"poll_interval":"100ms"`) {
		t.Fatalf("serve's workers did not take PGBUS_NO_LISTEN and --poll-interval:\n%s", logs.String())
	}
}

// The embedded workers of pgbus serve take their concurrency from
// PGBUS_CONCURRENCY, as pgbus work's do, where they ran every queue the
// environment names with the default of 10.
func TestServeConcurrencyFromTheEnvironment(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "served")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0")
	cmd.Env = append(baseEnv(), "DATABASE_URL="+d.url, "PGBUS_QUEUES=served", "PGBUS_HANDLER=demo", "PGBUS_CONCURRENCY=3")
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	var ws ops.Workers
	pgtest.Eventually(t, time.Minute, "serve's workers to start", func() bool {
		d.json(t, &ws, "workers")
		return ws.Running == 1
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	for _, w := range ws.Workers {
		if w.Status == "running" && w.Concurrency != 3 {
			t.Fatalf("serve's workers run %d jobs at once, want PGBUS_CONCURRENCY's 3", w.Concurrency)
		}
	}
}

// embeddedDataDir is a private data directory for an embedded PostgreSQL,
// under t.TempDir but reachable by the postgres user it runs as under root.
func embeddedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Whatever the test saw, leave no server behind: a pgbus run adopts a
	// server left running and, as its last user, stops it.
	t.Cleanup(func() {
		if embeddedPID(t, dir) != 0 {
			_ = pgbus(t, nil, "migrate", "--data-dir", dir)
		}
	})
	return dir
}

// embeddedPID returns the pid of the embedded PostgreSQL running in dataDir,
// from its postmaster.pid, or 0 when none is running.
func embeddedPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 {
		t.Fatalf("postmaster.pid %q: %v", b, err)
	}
	return pid
}

// assertEmbeddedStopped fails unless the embedded server pid ran in dataDir
// has stopped: its postmaster.pid is gone, as a clean shutdown leaves it.
func assertEmbeddedStopped(t *testing.T, dataDir string, pid int) {
	t.Helper()
	if now := embeddedPID(t, dataDir); now != 0 {
		alive := false
		if p, err := os.FindProcess(now); err == nil {
			alive = p.Signal(syscall.Signal(0)) == nil
		}
		t.Fatalf("the embedded PostgreSQL (pid %d, started as %d, alive %v) still runs after pgbus exited", now, pid, alive)
	}
}

// SIGHUP (the terminal went away) stops serve as SIGTERM does, and with it
// the embedded PostgreSQL it started.
func TestServeSIGHUPStopsEmbedded(t *testing.T) {
	t.Parallel()
	dir := embeddedDataDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, stdin, stdoutPipe, stderr := startRaw(t, ctx, baseEnv(), "serve", "--data-dir", dir)
	defer stdin.Close()
	defer func() { _ = cmd.Process.Kill() }()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if _, err := bufio.NewReader(stdoutPipe).ReadString('\n'); err != nil {
		t.Fatalf("no initialize response: %v\n%s", err, stderr.String())
	}
	pid := embeddedPID(t, dir)
	if pid == 0 {
		t.Fatalf("serve answered but no embedded PostgreSQL runs in %s:\n%s", dir, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGHUP: %v\n%s", err, stderr.String())
	}
	assertEmbeddedStopped(t, dir, pid)
}

// A reader of stdout that goes away (pgbus demo | head -3) makes the
// command stop at its next write, exit 1 rather than die of SIGPIPE, and
// stop the embedded PostgreSQL it started.
func TestDemoStdoutClosedStopsEmbedded(t *testing.T) {
	t.Parallel()
	dir := embeddedDataDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "demo", "--data-dir", dir)
	cmd.Env = baseEnv()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	w.Close()
	if _, err := bufio.NewReader(r).ReadString('\n'); err != nil {
		t.Fatalf("no first line: %v\n%s", err, stderr.String())
	}
	pid := embeddedPID(t, dir)
	if pid == 0 {
		t.Fatalf("the demo printed but no embedded PostgreSQL runs in %s:\n%s", dir, stderr.String())
	}
	r.Close() // the reader goes away, as head does
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit after stdout closed: %v, want exit code 1\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "pgbus: ") {
		t.Errorf("an error was reported for the closed stdout:\n%s", stderr.String())
	}
	assertEmbeddedStopped(t, dir, pid)
}

// startRaw starts the binary with env and args and pipes on its stdin and
// stdout, for tests that speak the protocol or send signals themselves.
func startRaw(t *testing.T, ctx context.Context, env []string, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *syncBuffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout, stderr
}

// A bad trusted proxy from the environment says where it came from, as
// every other setting's bad value does: the command line has no
// --trusted-proxies to correct.
func TestTrustedProxiesFromTheEnvironmentNameIt(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "PGBUS_TRUSTED_PROXIES=notanip"}
	for _, args := range [][]string{{"serve", "--transport", "http"}, {"dashboard"}} {
		r := usageRun(t, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--trusted-proxies (from environment variable PGBUS_TRUSTED_PROXIES)") || !strings.Contains(r.stderr, `"notanip"`) || !strings.Contains(r.stderr, "give IP addresses or CIDR prefixes") {
			t.Errorf("pgbus %s with PGBUS_TRUSTED_PROXIES=notanip: exit %d, stderr %q; want 2 naming the variable, the value and what to give", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// Given on the command line, the flag is named alone.
	r := usageRun(t, env[:1], "dashboard", "--trusted-proxies", "notanip")
	if r.code != 2 || strings.Contains(r.stderr, "environment variable") || !strings.Contains(r.stderr, `--trusted-proxies: "notanip" is not`) {
		t.Errorf("pgbus dashboard --trusted-proxies notanip: exit %d, stderr %q; want 2 naming the flag alone", r.code, r.stderr)
	}
}
