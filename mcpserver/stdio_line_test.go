package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
)

// Over stdio a line is bounded (MaxStdioLineBytes), above the largest
// message a tool takes: a corrected payload as large as a message may
// carry reaches pgbus_dlq_retry, which says to retry with it from a file;
// a longer line is not read into memory but answered with an invalid
// request error that names the bound, and the session goes on.
func TestStdioBoundsLines(t *testing.T) {
	// Not parallel: mcp-go serves stdio through one session for the whole
	// process, whose notifications the stdio servers of parallel tests
	// would share.
	if mcpserver.MaxStdioLineBytes < 2*ops.MaxPayloadBytes {
		t.Fatalf("MaxStdioLineBytes %d is under twice the largest payload, %d", mcpserver.MaxStdioLineBytes, ops.MaxPayloadBytes)
	}
	send, nextLine := rawStdio(t)
	next := func() stdioAnswer { // the next answer, past notifications
		t.Helper()
		for {
			a := nextLine()
			var m struct {
				Method string `json:"method"`
			}
			if json.Unmarshal([]byte(a.line), &m) != nil || m.Method == "" {
				return a
			}
		}
	}

	blob := strings.Repeat("a", ops.MaxCorrectedPayloadBytes-100)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pgbus_dlq_retry","arguments":{"ids":[1],"queue":"orders","payload":{"blob":%q}}}}`, blob))
	a := next()
	var res struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(a.line), &res); err != nil || string(a.ID) != "2" || a.Error != nil || res.Result == nil ||
		!strings.Contains(resultText(res.Result), "too large for a tool call") {
		t.Fatalf("a retry with a corrected payload of %d bytes: %.300s; want the tool's answer that it is too large for a tool call", len(blob), a.line)
	}

	pad := strings.Repeat("x", mcpserver.MaxStdioLineBytes)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pgbus_health","arguments":{},"pad":"` + pad + `"}}`)
	a = next()
	if string(a.ID) != "null" || a.Error == nil || a.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(a.Error.Message, "16 MiB") {
		t.Fatalf("a line over %d bytes: %.300s; want an invalid request error, id null, naming the bound", mcpserver.MaxStdioLineBytes, a.line)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if a := next(); string(a.ID) != "4" || a.Error != nil {
		t.Fatalf("a ping after the long line: %s; want it answered", a.line)
	}
}
