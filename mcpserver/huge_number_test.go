package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// A tool call holding a number a JSON client cannot read as a number (past
// a 64-bit float's range, 1e400) is answered by pgbus as invalid params
// (-32602) naming the argument and saying how to pass it, over every
// transport, not as mcp-go's invalid request (-32600) quoting its Go types;
// a corrected payload holding one names the command that retries with it
// from a file. A call without such a number is the tool's, as before.
func TestToolCallWithNumberPastFloat64(t *testing.T) {
	t.Parallel()
	for tr, tp := range rawTransports(t) {
		if res := rawCall(t, tp, 1, "initialize", legacyInit); res.Error != nil {
			t.Fatalf("%s: initialize: %+v", tr, res.Error)
		}
		if err := tp.SendNotification(testContext(t), mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{Method: string(mcp.MethodNotificationInitialized)}}); err != nil {
			t.Fatal(err)
		}
		for i, tc := range []struct {
			params string
			says   []string
		}{
			{`{"name":"pgbus_dlq_retry","arguments":{"ids":[42],"queue":"orders","payload":{"e":1e400}}}`,
				[]string{"argument payload.e", "1e400", "as a string", "pgbus dlq retry 42 ", "--queue orders", "--payload @payload.json"}},
			{`{"name":"pgbus_dlq_list","arguments":{"queue":"orders","since":[1, -2E+999]}}`,
				[]string{"argument since[1]", "-2E+999", "as a string"}},
		} {
			res := rawCall(t, tp, int64(10+i), "tools/call", tc.params)
			if res.Error == nil || res.Error.Code != mcp.INVALID_PARAMS {
				t.Errorf("%s: tools/call %s: %+v; want %d", tr, tc.params, res.Error, mcp.INVALID_PARAMS)
				continue
			}
			for _, s := range tc.says {
				if !strings.Contains(res.Error.Message, s) {
					t.Errorf("%s: tools/call %s: %q; want it to say %q", tr, tc.params, res.Error.Message, s)
				}
			}
			if strings.Contains(res.Error.Message, "Go struct") || strings.Contains(res.Error.Message, "float64") {
				t.Errorf("%s: tools/call %s: %q names Go's types", tr, tc.params, res.Error.Message)
			}
		}
		// A large number within range, and a tiny one, pass to the tool.
		res := rawCall(t, tp, 20, "tools/call", `{"name":"pgbus_dlq_list","arguments":{"queue":"nosuch_queue","limit":1e2,"since":"1e-400"}}`)
		if res.Error != nil && res.Error.Code != mcp.INVALID_PARAMS || res.Error != nil && strings.Contains(res.Error.Message, "64-bit") {
			t.Errorf("%s: a call without a number past range: %+v; want the tool's answer", tr, res.Error)
		}
	}
}

// The command a refusal of a number past a 64-bit float's range names
// carries the server's global flags, as every command it names does.
func TestNumberPastFloat64CommandCarriesFlags(t *testing.T) {
	t.Parallel()
	d := deps(t, testStore(t))
	d.CommandFlags = "--config /etc/pgbus.yaml"
	tp := serveStdio(t, newServer(t, d, mcpserver.Options{}))
	if err := tp.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	if res := rawCall(t, tp, 1, "initialize", legacyInit); res.Error != nil {
		t.Fatalf("initialize: %+v", res.Error)
	}
	res := rawCall(t, tp, 2, "tools/call", `{"name":"pgbus_dlq_retry","arguments":{"ids":[7],"payload":[1e999]}}`)
	if res.Error == nil || !strings.Contains(res.Error.Message, "argument payload[0]") || !strings.Contains(res.Error.Message, "--config /etc/pgbus.yaml") {
		t.Fatalf("tools/call: %+v; want the command with the server's flags", res.Error)
	}
}
