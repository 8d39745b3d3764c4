package mcpserver_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pgbus/pgbus/mcpserver"
)

// A session that expires after being idle closes the event stream its
// client opened with GET and left open: an abandoned client's stream
// would otherwise hold its connection and goroutine after its session
// is gone.
func TestIdleSessionClosesItsEventStream(t *testing.T) {
	t.Parallel()
	cfg := mcpserver.WithSessionIdleTTL(mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}, time.Second)
	base := serveHTTP(t, deps(t, testStore(t)), cfg)
	id := rawSession(t, base)
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, base+mcpserver.PathMCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the session's event stream: %d", resp.StatusCode)
	}
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		closed <- err
	}()
	// Nothing is asked of the session meanwhile: a request would keep it.
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the event stream of a session idle for a minute, with an idle expiry of a second, is still open")
	}
	wantSessionNotOpen(t, "a request after the session expired", rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools))
}
