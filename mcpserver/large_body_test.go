package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// A request body over the HTTP transports' cap, which a corrected payload
// a message may carry but a tool call cannot (4 to 8 MiB) makes, is
// refused unread as a JSON-RPC error a client hands its caller, which
// says what to do, as stdio's answer to such a call does: send less, and
// retry with a large corrected payload from a file on the command line,
// the command carrying the server's global flags.
func TestBodyOverTheCapIsAJSONRPCError(t *testing.T) {
	t.Parallel()
	d := deps(t, testStore(t))
	d.CommandFlags = " --config /etc/pgbus.yaml"
	const command = "pgbus dlq retry ID --payload @payload.json --config /etc/pgbus.yaml"
	payload := map[string]any{"blob": strings.Repeat("a", 5<<20)}

	base := serveHTTP(t, d, mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	c, err := client.NewStreamableHttpClient(base + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "pgbus_dlq_retry", map[string]any{"ids": []int64{42}, "queue": "orders", "payload": payload}
	_, err = c.CallTool(testContext(t), req)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(mcpserver.DefaultMaxBodyBytes)) || !strings.Contains(err.Error(), command) || strings.Contains(err.Error(), "status 413") {
		t.Errorf("a %d-byte tool call over Streamable HTTP: %v; want a JSON-RPC error naming the cap and %q", 5<<20, err, command)
	}

	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "pgbus_dlq_retry", "arguments": map[string]any{"ids": []int64{42}, "payload": payload}}})
	for _, tr := range []string{mcpserver.TransportHTTP, mcpserver.TransportSSE} {
		path := mcpserver.PathMCP
		if tr == mcpserver.TransportSSE {
			path = mcpserver.PathMessage + "?sessionId=nope"
		}
		resp, text := doRaw(t, serveHTTP(t, d, mcpserver.HTTPConfig{Transport: tr}), rawReq{label: tr, path: path, body: string(body)})
		var m struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      *json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(text), &m) != nil ||
			m.JSONRPC != "2.0" || m.ID != nil || m.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(m.Error.Message, command) {
			t.Errorf("%s: a %d-byte POST to %s: %d %s %q; want 413 with a JSON-RPC error (id null) naming %q", tr, len(body), path, resp.StatusCode, resp.Header.Get("Content-Type"), text, command)
		}
	}
}
