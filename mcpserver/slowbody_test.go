package mcpserver_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pgbus/pgbus/mcpserver"
)

const shortBodyTimeout = time.Second

// slowPost opens a raw connection to addr and sends the headers of a POST
// to path announcing a 1000-byte body, then only its first few bytes.
func slowPost(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"", path, addr)
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return conn
}

// A POST whose body does not arrive in time gets 408 with a reason and its
// connection closed, on both HTTP transports; many such connections are
// all closed by the server rather than held until their clients leave.
func TestSlowBodyIsAnsweredAndClosed(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for transport, path := range map[string]string{mcpserver.TransportHTTP: mcpserver.PathMCP, mcpserver.TransportSSE: mcpserver.PathMessage} {
		t.Run(transport, func(t *testing.T) {
			cfg := mcpserver.WithBodyReadTimeout(mcpserver.HTTPConfig{Transport: transport}, shortBodyTimeout)
			addr := strings.TrimPrefix(serveHTTP(t, deps(t, s), cfg), "http://")

			start := time.Now()
			conn := slowPost(t, addr, path)
			_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a body that never completes (after %s): %v", time.Since(start).Round(time.Millisecond), err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "did not arrive") {
				t.Errorf("answer %d %q; want 408 saying the body did not arrive in time", resp.StatusCode, body)
			}
			if _, err := br.ReadByte(); err == nil || isTimeout(err) {
				t.Errorf("the connection was not closed after the 408: %v", err)
			}
			// Never before the client's time is up.
			if d := time.Since(start); d < shortBodyTimeout-100*time.Millisecond {
				t.Errorf("answered after %s; want not before the body timeout of %s", d, shortBodyTimeout)
			}

			const n = 50
			conns := make([]net.Conn, n)
			for i := range conns {
				conns[i] = slowPost(t, addr, path)
			}
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, c := range conns {
				wg.Go(func() {
					// Everything until the server closes: the 408, then EOF.
					_ = c.SetReadDeadline(time.Now().Add(time.Minute))
					_, errs[i] = io.Copy(io.Discard, c)
				})
			}
			wg.Wait()
			held := 0
			for _, err := range errs {
				if isTimeout(err) {
					held++
				}
			}
			if held > 0 {
				t.Errorf("%d of %d connections with an unfinished body were still open after a minute", held, n)
			}
		})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// The body deadline does not reach the long-lived streams: past it, the
// SSE stream still carries answers and a Streamable HTTP GET stream is
// still open.
func TestStreamsOutliveBodyTimeout(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	t.Run(mcpserver.TransportSSE, func(t *testing.T) {
		cfg := mcpserver.WithBodyReadTimeout(mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE}, shortBodyTimeout)
		base := serveHTTP(t, deps(t, s), cfg)
		c, err := client.NewSSEMCPClient(base + mcpserver.PathSSE)
		if err != nil {
			t.Fatal(err)
		}
		connect(t, c)
		time.Sleep(2*shortBodyTimeout + 500*time.Millisecond) // past the body deadline, twice
		callTool(t, c, "pgbus_health", map[string]any{})      // its answer comes on the stream
	})
	t.Run(mcpserver.TransportHTTP, func(t *testing.T) {
		cfg := mcpserver.WithBodyReadTimeout(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}, shortBodyTimeout)
		base := serveHTTP(t, deps(t, s), cfg)
		resp, _ := doRaw(t, base, rawReq{label: "initialize"})
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize: %d, session %q", resp.StatusCode, session)
		}
		addr := strings.TrimPrefix(base, "http://")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", mcpserver.PathMCP, addr, session)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		resp, err = http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		// Nothing is sent on an idle stream: reading must time out on our
		// side, past the server's body deadline, rather than end.
		_ = conn.SetReadDeadline(time.Now().Add(2*shortBodyTimeout + 500*time.Millisecond))
		_, err = io.Copy(io.Discard, resp.Body)
		if !isTimeout(err) {
			t.Errorf("the GET stream ended past the body deadline: %v", err)
		}
	})
}

// A request refused before its body is read (here, without the token) is
// answered at once, and its connection is closed within the body timeout
// instead of waiting for the rest of the body.
func TestRefusedSlowBodyIsClosed(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	cfg := mcpserver.WithBodyReadTimeout(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, AuthToken: "tok-123"}, shortBodyTimeout)
	addr := strings.TrimPrefix(serveHTTP(t, deps(t, s), cfg), "http://")
	conn := slowPost(t, addr, mcpserver.PathMCP)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("answer without a token: %v %v; want 401", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("the connection was not closed after the 401: %v", err)
	}
}
