package mcpserver_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/metrics"
)

// serveWithMetrics serves the MCP server over transport with its metrics
// at PathMetrics, told of the transport's sessions and streams, and
// returns its base URL.
func serveWithMetrics(t *testing.T, transport string) string {
	t.Helper()
	m := metrics.New(metrics.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	return serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: transport, Metrics: metrics.Handler(reg), Watch: m.WatchMCP})
}

// scrapeOpen scrapes base's metrics over HTTP and returns the values of
// pgbus_mcp_sessions_open and pgbus_mcp_streams_open of transport, -1
// for one not there.
func scrapeOpen(t *testing.T, base, transport string) (sessions, streams float64) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, base+mcpserver.PathMetrics, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d", resp.StatusCode)
	}
	sessions, streams = -1, -1
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		series, value, ok := strings.Cut(lines.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch series {
		case `pgbus_mcp_sessions_open{transport="` + transport + `"}`:
			sessions = v
		case `pgbus_mcp_streams_open{transport="` + transport + `"}`:
			streams = v
		}
	}
	return sessions, streams
}

// waitOpen waits until a scrape of base gives transport sessions and
// streams open.
func waitOpen(t *testing.T, base, transport string, sessions, streams float64) {
	t.Helper()
	var gotSessions, gotStreams float64
	pgtest.Eventually(t, time.Minute, "the gauges of open sessions and streams", func() bool {
		gotSessions, gotStreams = scrapeOpen(t, base, transport)
		return gotSessions == sessions && gotStreams == streams
	})
}

// connectLegacy starts and initializes c on protocol 2025-11-25, the last
// with sessions, closing it when the test ends.
func connectLegacy(t *testing.T, c *client.Client) {
	t.Helper()
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	req.Params.ClientInfo = mcp.Implementation{Name: "pgbus-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// A scrape of /metrics over HTTP gives the MCP sessions and event streams
// open, by transport: over Streamable HTTP a session once initialized, a
// stream once a client listens (a session's GET, or a subscriptions/listen
// request of protocol 2026-07-28, which has no session), each gone once
// closed; over SSE each event stream, which is its session.
func TestMetricsCountOpenSessionsAndStreams(t *testing.T) {
	t.Parallel()
	t.Run(mcpserver.TransportHTTP, func(t *testing.T) {
		t.Parallel()
		base := serveWithMetrics(t, mcpserver.TransportHTTP)
		if sessions, streams := scrapeOpen(t, base, mcpserver.TransportHTTP); sessions != 0 || streams != 0 {
			t.Fatalf("before any client: %v sessions, %v streams; want 0 and 0", sessions, streams)
		}
		quiet, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		connectLegacy(t, quiet)
		if sessions, streams := scrapeOpen(t, base, mcpserver.TransportHTTP); sessions != 1 || streams != 0 {
			t.Fatalf("one session, no stream: %v sessions, %v streams", sessions, streams)
		}
		listening, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		connectLegacy(t, listening)
		waitOpen(t, base, mcpserver.TransportHTTP, 2, 1)

		tp, err := transport.NewStreamableHTTP(base + mcpserver.PathMCP)
		if err != nil {
			t.Fatal(err)
		}
		modern := client.NewClient(tp)
		ctx := testContext(t)
		if err := modern.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = modern.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
		init.Params.ClientInfo = mcp.Implementation{Name: "modern", Version: "1"}
		if _, err := modern.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		stop := listen(t, modern, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"pgbus://queues"}})
		waitOpen(t, base, mcpserver.TransportHTTP, 2, 2)
		stop()
		waitOpen(t, base, mcpserver.TransportHTTP, 2, 1)

		if err := listening.Close(); err != nil {
			t.Fatal(err)
		}
		waitOpen(t, base, mcpserver.TransportHTTP, 1, 0)
		if err := quiet.Close(); err != nil {
			t.Fatal(err)
		}
		waitOpen(t, base, mcpserver.TransportHTTP, 0, 0)
	})
	t.Run(mcpserver.TransportSSE, func(t *testing.T) {
		t.Parallel()
		base := serveWithMetrics(t, mcpserver.TransportSSE)
		if sessions, streams := scrapeOpen(t, base, mcpserver.TransportSSE); sessions != 0 || streams != 0 {
			t.Fatalf("before any client: %v sessions, %v streams; want 0 and 0", sessions, streams)
		}
		c, err := client.NewSSEMCPClient(base + mcpserver.PathSSE)
		if err != nil {
			t.Fatal(err)
		}
		connectLegacy(t, c)
		if sessions, streams := scrapeOpen(t, base, mcpserver.TransportSSE); sessions != 1 || streams != 1 {
			t.Fatalf("one client: %v sessions, %v streams; want 1 and 1", sessions, streams)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		waitOpen(t, base, mcpserver.TransportSSE, 0, 0)
	})
}
