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
// result as log notifications, redacted as the log on stderr is.
func TestServeLogNotifications(t *testing.T) {
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
	var logs []map[string]any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			logs = append(logs, n.Params.AdditionalFields)
			mu.Unlock()
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

	callTool(t, c, "pgbus_dlq_retry", map[string]any{"queue": "logged", "ids": ids})
	pgtest.Eventually(t, time.Minute, "the retry's and the worker's log notifications", func() bool {
		return saying("pgbus_dlq_retry done") != nil && saying("job done") != nil
	})
	done := saying("job done")
	if data := done["data"].(map[string]any); done["level"] != "debug" || data["queue"] != "logged" {
		t.Fatalf("the worker's log notification: %v", done)
	}
	if retry := saying("pgbus_dlq_retry done"); retry["level"] != "info" || fmt.Sprint(retry["data"].(map[string]any)["retried"]) != "1" {
		t.Fatalf("the retry's log notification: %v", retry)
	}
}
