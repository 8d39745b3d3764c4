package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// rawTransports are mcp-go's transports of one server over stdio,
// Streamable HTTP and SSE, started, not initialized; they close when the
// test ends.
func rawTransports(t *testing.T) map[string]transport.Interface {
	t.Helper()
	d := deps(t, testStore(t))
	httpTp, err := transport.NewStreamableHTTP(serveServer(t, newServer(t, d, mcpserver.Options{}), mcpserver.TransportHTTP) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	sseTp, err := transport.NewSSE(serveServer(t, newServer(t, d, mcpserver.Options{}), mcpserver.TransportSSE) + mcpserver.PathSSE)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]transport.Interface{
		transportStdio:          serveStdio(t, newServer(t, d, mcpserver.Options{})),
		mcpserver.TransportHTTP: httpTp,
		mcpserver.TransportSSE:  sseTp,
	}
	for name, tp := range out {
		if err := tp.Start(testContext(t)); err != nil {
			t.Fatalf("%s: start: %v", name, err)
		}
		t.Cleanup(func() { _ = tp.Close() })
	}
	return out
}

// rawCall sends a request of method with params, as written, over tp and
// returns its answer.
func rawCall(t *testing.T, tp transport.Interface, id int64, method, params string) *transport.JSONRPCResponse {
	t.Helper()
	res, err := tp.SendRequest(testContext(t), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: method, Params: json.RawMessage(params),
	})
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

// legacyInit is the params of an initialize of protocol 2025-11-25.
const legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pgbus-test","version":"1"}}`

// A valid request whose params are wrong is answered invalid params
// (-32602), as JSON-RPC 2.0 asks, not invalid request (-32600), with the
// words it had, over every transport.
func TestBadParamsAreInvalidParams(t *testing.T) {
	t.Parallel()
	for tr, tp := range rawTransports(t) {
		if res := rawCall(t, tp, 1, "initialize", legacyInit); res.Error != nil {
			t.Fatalf("%s: initialize: %+v", tr, res.Error)
		}
		if err := tp.SendNotification(testContext(t), mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: string(mcp.MethodNotificationInitialized)}}); err != nil {
			t.Fatal(err)
		}
		for i, tc := range []struct{ method, params, says string }{
			{"resources/read", `{"uri":"pgbus://dlq/demo_orders/+42"}`, "msg_id"},
			{"resources/read", `{}`, "uri is required: read pgbus://queues"},
			{"resources/subscribe", `{}`, "uri is required: read pgbus://queues"},
			{"resources/unsubscribe", `{}`, "uri is required: read pgbus://queues"},
			{"initialize", `{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}`, "unparsable initialize request"},
		} {
			res := rawCall(t, tp, int64(10+i), tc.method, tc.params)
			if res.Error == nil || res.Error.Code != mcp.INVALID_PARAMS || !strings.Contains(res.Error.Message, tc.says) {
				t.Errorf("%s: %s %s: %+v; want %d saying %q", tr, tc.method, tc.params, res.Error, mcp.INVALID_PARAMS, tc.says)
			}
		}
	}
}

// An initialize without the protocol version the client speaks, a field
// the protocol requires, is refused as invalid params naming the field and
// the versions pgbus speaks, over every transport; mcp-go took it as
// 2025-03-26.
func TestInitializeNeedsProtocolVersion(t *testing.T) {
	t.Parallel()
	for tr, tp := range rawTransports(t) {
		for i, params := range []string{`{"capabilities":{},"clientInfo":{"name":"x","version":"1"}}`, `{"protocolVersion":"","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`} {
			res := rawCall(t, tp, int64(i+1), "initialize", params)
			if res.Error == nil || res.Error.Code != mcp.INVALID_PARAMS || !strings.Contains(res.Error.Message, "protocolVersion") ||
				!strings.Contains(res.Error.Message, mcp.LATEST_LEGACY_PROTOCOL_VERSION) || !strings.Contains(res.Error.Message, mcp.ProtocolVersion20241105) {
				t.Errorf("%s: initialize %s: %+v %.100s; want %d naming protocolVersion and the versions", tr, params, res.Error, res.Result, mcp.INVALID_PARAMS)
			}
		}
		if res := rawCall(t, tp, 3, "initialize", legacyInit); res.Error != nil {
			t.Errorf("%s: initialize with a protocol version after the refusals: %+v", tr, res.Error)
		}
	}
}
