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

// A request over stdio whose id is neither a string nor an integer, as MCP
// has them, null included, is refused as an invalid request with id null:
// one with id null was taken for a notification and never answered, and
// one with an object for an id was served.
func TestStdioRefusesInvalidIDs(t *testing.T) {
	t.Parallel()
	send, next := rawStdio(t)
	for i, id := range []string{`null`, `{"a":1}`, `[1]`, `true`, `1.5`} {
		// The refusal comes before the answer to the next line's ping:
		// the server answers it as it reads it.
		// In one write, which the server reads whole: it may answer the
		// first before it reads the second, and write no more while its
		// answer is not read.
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n" + fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 200+i))
		var before []string
		for {
			a := next()
			if string(a.ID) == fmt.Sprint(200+i) {
				if a.Error != nil {
					t.Errorf("ping after the one with id %s: %s", id, a.line)
				}
				break
			}
			before = append(before, a.line)
			if a.Error == nil || a.Error.Code != mcp.INVALID_REQUEST || string(a.ID) != "null" || !strings.Contains(a.Error.Message, "a string or an integer") {
				t.Errorf("ping with id %s: %s; want %d with id null saying what an id is", id, a.line, mcp.INVALID_REQUEST)
			}
		}
		if len(before) != 1 {
			t.Errorf("ping with id %s: answered %q before the next request's answer; want one refusal", id, before)
		}
	}
	send(`{"jsonrpc":"2.0","id":"s-1","method":"ping"}`)
	if a := next(); a.Error != nil || string(a.ID) != `"s-1"` {
		t.Errorf("ping with a string id: %s", a.line)
	}
}
