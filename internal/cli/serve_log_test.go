package cli_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// Over stdio, a client of pgbus serve that sets its log level to debug
// receives the embedded workers' records (a job done) and a retry's
// result as log notifications; with a progress token, the retry's
// progress too.
func TestServeNotifications(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ids := seedDLQ(t, d.url, "logged", `{"simulate":"ok"}`)

	stderr := &syncBuffer{}
	c, err := client.NewStdioMCPClientWithOptions(binary, append(baseEnv(), "PGBUS_LOG_FORMAT=json"),
		[]string{"serve", "--database-url", d.url, "--queue", "logged:1", "--handler", "demo"}, transport.WithCommandStderrWriter(stderr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	var logs, progress []map[string]any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		switch n.Method {
		case "notifications/message":
			logs = append(logs, n.Params.AdditionalFields)
		case "notifications/progress":
			progress = append(progress, n.Params.AdditionalFields)
		}
	})
	saying := func(text string) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logs {
			if data, ok := l["data"].(map[string]any); ok && strings.Contains(fmt.Sprint(data["message"]), text) {
				return l
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Start (the transport already runs) routes notifications to the
	// handler above.
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "cli-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v\nstderr: %s", err, stderr.String())
	}
	if res.Capabilities.Logging == nil {
		t.Fatalf("pgbus serve does not offer logging: %+v", res.Capabilities)
	}
	level := mcp.SetLevelRequest{}
	level.Params.Level = mcp.LoggingLevelDebug
	if err := c.SetLevel(ctx, level); err != nil {
		t.Fatalf("logging/setLevel debug: %v", err)
	}

	retry := mcp.CallToolRequest{}
	retry.Params.Name, retry.Params.Arguments = "pgbus_dlq_retry", map[string]any{"queue": "logged", "ids": ids}
	retry.Params.Meta = &mcp.Meta{ProgressToken: "retry-1"}
	if res, err := c.CallTool(ctx, retry); err != nil || res.IsError {
		t.Fatalf("retry with a progress token: %v %+v", err, res)
	}
	pgtest.Eventually(t, time.Minute, "the retry's progress and log notifications and the worker's", func() bool {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		return n > 0 && saying("pgbus_dlq_retry done") != nil && saying("job done") != nil
	})
	mu.Lock()
	last := progress[len(progress)-1]
	mu.Unlock()
	if last["progressToken"] != "retry-1" || fmt.Sprint(last["progress"]) != "1" || fmt.Sprint(last["total"]) != "1" {
		t.Fatalf("the retry's last progress notification: %v; want 1 of 1", last)
	}
	done := saying("job done")
	if data := done["data"].(map[string]any); done["level"] != "debug" || data["queue"] != "logged" {
		t.Fatalf("the worker's log notification: %v", done)
	}
	if retry := saying("pgbus_dlq_retry done"); retry["level"] != "info" || fmt.Sprint(retry["data"].(map[string]any)["retried"]) != "1" {
		t.Fatalf("the retry's log notification: %v", retry)
	}
}
