package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/mcpserver"
)

// postMedia POSTs body to the Streamable HTTP endpoint at base with the
// given Content-Type and Accept headers, each left out when "-".
func postMedia(t *testing.T, base, contentType, accept, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "-" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "-" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", mcpserver.PathMCP, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// A POST to the Streamable HTTP endpoint must carry a JSON body, labelled
// so, and accept an answer in JSON or as an event stream: one whose
// Content-Type is another (a form, as curl -d sends, plain text, or none)
// is refused with 415, and one whose Accept takes neither JSON nor an
// event stream with 406, each with a JSON-RPC error that says what to
// send, and neither starts a session. What real clients send passes: the
// official SDKs' "application/json, text/event-stream", curl's "*/*", curl
// --json's "application/json", or no Accept at all.
func TestStreamableHTTPChecksMediaTypes(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	const both = "application/json, text/event-stream"
	for _, c := range []struct {
		name, contentType, accept string
		status                    int
		says                      []string
	}{
		{"plain text", "text/plain", both, http.StatusUnsupportedMediaType, []string{"Content-Type: application/json", `"text/plain"`}},
		{"a form, as curl -d sends", "application/x-www-form-urlencoded", "*/*", http.StatusUnsupportedMediaType, []string{"Content-Type: application/json"}},
		{"no Content-Type", "-", both, http.StatusUnsupportedMediaType, []string{"Content-Type: application/json", "none"}},
		{"JSON of another type", "application/json-patch+json", both, http.StatusUnsupportedMediaType, []string{"Content-Type: application/json"}},
		{"an Accept of HTML only", "application/json", "text/html", http.StatusNotAcceptable, []string{"Accept: application/json, text/event-stream", `"text/html"`}},
		{"an Accept that refuses both", "application/json", "application/json;q=0, text/event-stream;q=0, text/html", http.StatusNotAcceptable, []string{"Accept: application/json, text/event-stream"}},
		{"an Accept of XML and images", "application/json", "application/xml, image/*", http.StatusNotAcceptable, []string{"Accept: application/json, text/event-stream"}},
	} {
		r := postMedia(t, base, c.contentType, c.accept, rawInitialize)
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		err := json.Unmarshal([]byte(r.body), &msg)
		if r.status != c.status || err != nil || msg.JSONRPC != "2.0" || msg.Error.Code != -32600 || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %s; want %d with a JSON-RPC error of code -32600", c.name, r.status, r.header.Get("Content-Type"), r.body, c.status)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(msg.Error.Message, s) {
				t.Errorf("%s: the refusal %q does not say %q", c.name, msg.Error.Message, s)
			}
		}
		if id := r.header.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("%s: refused, yet issued session %q", c.name, id)
		}
	}
	for _, c := range []struct{ name, contentType, accept string }{
		{"the official SDKs' headers", "application/json", both},
		{"a charset", "application/json; charset=utf-8", both},
		{"curl's */*", "application/json", "*/*"},
		{"curl --json's Accept", "application/json", "application/json"},
		{"an event stream only", "application/json", "text/event-stream"},
		{"wildcards of each type", "application/json", "application/*;q=0.9, text/*;q=0.5"},
		{"no Accept", "application/json", "-"},
	} {
		r := postMedia(t, base, c.contentType, c.accept, rawInitialize)
		if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" || !strings.Contains(r.body, `"result"`) {
			t.Errorf("initialize with %s: %d, session %q, %s; want 200 with a session", c.name, r.status, r.header.Get("Mcp-Session-Id"), r.body)
			continue
		}
		// The session works with the same headers.
		req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(rawListTools))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", c.contentType)
		if c.accept != "-" {
			req.Header.Set("Accept", c.accept)
		}
		req.Header.Set("Mcp-Session-Id", r.header.Get("Mcp-Session-Id"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "pgbus_dlq_list") {
			t.Errorf("tools/list with %s: %d %s", c.name, resp.StatusCode, b)
		}
	}
}

// A GET of the Streamable HTTP endpoint opens a session's event stream:
// one whose Accept header does not take an event stream is refused with
// 406 and a JSON-RPC error that says what to send, and the session is
// left as it was; one that takes it, by name, by a wildcard or by sending
// no Accept, gets the stream.
func TestStreamableHTTPGetChecksAccept(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP})
	id := rawSession(t, base)
	get := func(accept string) (int, string, string) {
		ctx, cancel := context.WithCancel(testContext(t))
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+mcpserver.PathMCP, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "-" {
			req.Header.Set("Accept", accept)
		}
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET with Accept %q: %v", accept, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), "" // a stream: not read to its end
	}
	for _, accept := range []string{"application/json", "text/html", "text/event-stream;q=0, application/json"} {
		status, ct, body := get(accept)
		if status != http.StatusNotAcceptable || ct != "application/json" || !strings.Contains(body, "Accept: text/event-stream") || !strings.Contains(body, "-32600") {
			t.Errorf("GET with Accept %q: %d %q %s; want 406 with a JSON-RPC error naming Accept: text/event-stream", accept, status, ct, body)
		}
	}
	for _, accept := range []string{"text/event-stream", "text/*", "*/*", "-"} {
		if status, ct, body := get(accept); status != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("GET with Accept %q: %d %q %s; want the event stream", accept, status, ct, body)
		}
	}
	if r := rawRequest(t, http.MethodPost, base+mcpserver.PathMCP, id, rawListTools); r.status != http.StatusOK || !strings.Contains(r.body, "pgbus_dlq_list") {
		t.Errorf("tools/list on the session after refused GETs: %d %s", r.status, r.body)
	}
}

// A POST to the legacy SSE transport's message endpoint must carry a JSON
// body labelled so: another Content-Type is refused with 415 and a
// JSON-RPC error that says what to send, before the message reaches the
// session, which goes on.
func TestSSEMessageChecksContentType(t *testing.T) {
	t.Parallel()
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE})
	ctx, closeStream := context.WithCancel(testContext(t))
	defer closeStream()
	session := openSSEStream(t, ctx, base)
	url := base + mcpserver.PathMessage + "?sessionId=" + session
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "-"} {
		req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, url, strings.NewReader(rawInitialize))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "-" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(b), "Content-Type: application/json") || !strings.Contains(string(b), "message endpoint") {
			t.Errorf("POST /message with Content-Type %q: %d %s; want 415 naming Content-Type: application/json", ct, resp.StatusCode, b)
		}
	}
	if r := rawRequest(t, http.MethodPost, url, "", rawInitialize); r.status != http.StatusAccepted {
		t.Errorf("a JSON message on the session after refused ones: %d %s; want 202", r.status, r.body)
	}
}
