package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/mcpserver"
)

// rawStdio serves a server over ServeStdio on pipes: send writes a line to
// its input, and next reads the next line of its output as a JSON-RPC
// answer. The server stops when the test ends.
func rawStdio(t *testing.T) (send func(line string), next func() stdioAnswer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := newServer(t, deps(t, testStore(t)), mcpserver.Options{})
	go func() { done <- mcpserver.ServeStdio(ctx, s, inR, outW, nil) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-done; err != nil {
			t.Errorf("serve stdio: %v", err)
		}
	})
	lines := bufio.NewReader(outR)
	send = func(line string) {
		t.Helper()
		if _, err := fmt.Fprintln(inW, line); err != nil {
			t.Fatal(err)
		}
	}
	next = func() stdioAnswer {
		t.Helper()
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("read an answer: %v", err)
		}
		var a stdioAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		a.line = line
		return a
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + legacyInit + `}`)
	if a := next(); a.Error != nil {
		t.Fatalf("initialize: %s", a.line)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send, next
}

// stdioAnswer is a JSON-RPC answer read over stdio.
type stdioAnswer struct {
	ID    json.RawMessage          `json:"id"`
	Error *mcp.JSONRPCErrorDetails `json:"error"`
	line  string
}

// A JSON-RPC batch over stdio, valid JSON, is no parse error: it is
// refused as an invalid request, with id null, saying that pgbus takes no
// batches; the requests after it are answered.
func TestStdioRefusesBatches(t *testing.T) {
	t.Parallel()
	send, next := rawStdio(t)
	for i, batch := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`[]`,
		` [{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
	} {
		send(batch)
		a := next()
		if a.Error == nil || a.Error.Code != mcp.INVALID_REQUEST || string(a.ID) != "null" ||
			!strings.HasPrefix(a.Error.Message, "pgbus: JSON-RPC batches are not taken") || !strings.Contains(a.Error.Message, "line of its own") {
			t.Errorf("batch %s: %s; want %d with id null saying batches are not taken", batch, a.line, mcp.INVALID_REQUEST)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		if a := next(); a.Error != nil || string(a.ID) != fmt.Sprint(100+i) {
			t.Errorf("ping after batch %s: %s", batch, a.line)
		}
	}
}
