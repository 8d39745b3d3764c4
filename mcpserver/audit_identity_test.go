package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

const auditToken = "audit-identity-token-0123456789abcdef"

// pauseAs starts c, initializes it as client name (on protocol version
// 2025-11-25 when legacy is set, on mcp-go's default otherwise), pauses
// queue through pgbus_queue_pause, and returns the audit entry of the pause.
func pauseAs(t *testing.T, s *store.Store, c *client.Client, name string, legacy bool, queue string) store.AuditEntry {
	t.Helper()
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	if legacy {
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res := callTool(t, c, "pgbus_queue_pause", map[string]any{"queue": queue}); res.IsError || !paused(t, s, queue) {
		t.Fatalf("pause %s: %s", queue, resultText(res))
	}
	page, err := s.ListAudit(ctx, store.AuditFilter{Tool: "queue_pause"}, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Items {
		if strings.Contains(string(e.Arguments), queue) {
			return e
		}
	}
	t.Fatalf("no audit entry for the pause of %s among %d", queue, len(page.Items))
	return store.AuditEntry{}
}

// stdioClient serves d over ServeStdio on pipes, and returns mcp-go's client
// on the other ends; the server stops when the test ends.
func stdioClient(t *testing.T, d tools.Deps) *client.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.ServeStdio(ctx, newServer(t, d, mcpserver.Options{}), inR, outW, nil) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-done; err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	})
	return client.NewClient(transport.NewIO(outR, inW, nil))
}

// streamableClient serves d over Streamable HTTP, with token unless it is
// empty, and returns mcp-go's client of it, sending the token.
func streamableClient(t *testing.T, d tools.Deps, token string) *client.Client {
	t.Helper()
	base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: token})
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The audit entry of a write names the client as it declared itself, the
// transport it came over and, over HTTP with the bearer token, the token's
// principal; a client that calls itself cli is recorded as an MCP client.
func TestAuditIdentity(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	s := testStore(t)
	d := deps(t, s)
	sum := sha256.Sum256([]byte(auditToken))
	principal := "token sha256:" + hex.EncodeToString(sum[:])[:8]
	for _, tc := range []struct {
		name, client, transport, principal string
		legacy                             bool
		newClient                          func(t *testing.T) *client.Client
	}{
		{"http", "agent-http", "http", principal, false, func(t *testing.T) *client.Client { return streamableClient(t, d, auditToken) }},
		{"http session named cli", "cli", "http", principal, true, func(t *testing.T) *client.Client { return streamableClient(t, d, auditToken) }},
		{"sse", "agent-sse", "sse", principal, true, func(t *testing.T) *client.Client {
			base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE, AuthToken: auditToken})
			c, err := client.NewSSEMCPClient(base+mcpserver.PathSSE, transport.WithHeaders(map[string]string{"Authorization": "Bearer " + auditToken}))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"http without token", "agent-open", "http", "", false, func(t *testing.T) *client.Client { return streamableClient(t, d, "") }},
		{"stdio named cli", "cli", "stdio", "", true, func(t *testing.T) *client.Client { return stdioClient(t, d) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := newQueue(t, s)
			e := pauseAs(t, s, tc.newClient(t), tc.client, tc.legacy, queue)
			if e.Client != "mcp:"+tc.client+"/1" || e.Transport != tc.transport || e.Principal != tc.principal {
				t.Fatalf("audit entry: client %q, transport %q, principal %q; want %q, %q, %q",
					e.Client, e.Transport, e.Principal, "mcp:"+tc.client+"/1", tc.transport, tc.principal)
			}
		})
	}
}

// A client that names itself at length, in letters of several bytes, is
// still audited: its name is cut to what the audit log keeps, not lost
// with the entry.
func TestAuditLongClientName(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, which the stdio servers of parallel tests would share.
	s := testStore(t)
	d := deps(t, s)
	for _, name := range []string{strings.Repeat("é", 300), strings.Repeat("x", 150) + strings.Repeat("日本", 100)} {
		queue := newQueue(t, s)
		e := pauseAs(t, s, stdioClient(t, d), name, true, queue)
		if !strings.HasPrefix(e.Client, "mcp:"+name[:40]) || len(e.Client) > 200 || !utf8.ValidString(e.Client) {
			t.Errorf("audit entry of client %.20q…: client %q", name, e.Client)
		}
	}
}
