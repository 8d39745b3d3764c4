package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// maxUnanswered is the most requests of one SSE session the server holds
// without their answers written to its stream.
const maxUnanswered = 100

// stalledSSEStream opens the event stream of the SSE transport at base on
// a connection with a small receive buffer, reads up to the endpoint
// event, and returns the session id it announced and the connection,
// which the caller reads no further, or drains with drain.
func stalledSSEStream(t *testing.T, base string) (session string, drain func()) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	host := strings.TrimPrefix(base, "http://")
	conn, err := d.DialContext(testContext(t), "tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, "GET "+mcpserver.PathSSE+" HTTP/1.1\r\nHost: "+host+"\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for session == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the SSE stream announced no endpoint: %v", err)
		}
		if _, rest, ok := strings.Cut(line, "sessionId="); ok {
			session = strings.TrimSpace(rest)
		}
	}
	return session, func() { go func() { _, _ = io.Copy(io.Discard, r) }() }
}

// A client of the SSE transport that stops reading its event stream while
// it posts request after request cannot make the server hold a goroutine
// and an answer for each: past maxUnanswered requests whose answers are
// not yet written to the stream, a message is refused with 429,
// Retry-After and a JSON-RPC error that says to read the stream; once the
// client reads it, its messages are taken again.
func TestSSEStreamNotReadBoundsUnansweredMessages(t *testing.T) {
	// Not parallel: it counts the goroutines of the process.
	base := serveHTTP(t, deps(t, testStore(t)), mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE})
	session, drain := stalledSSEStream(t, base)
	url := base + mcpserver.PathMessage + "?sessionId=" + session
	if r := rawRequest(t, http.MethodPost, url, "", rawInitialize); r.status != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if r := rawRequest(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	before := runtime.NumGoroutine()
	const posts = 500
	accepted, refused := 0, 0
	var refusal rawResponse
	for range posts {
		r := rawRequest(t, http.MethodPost, url, "", rawListTools)
		switch r.status {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			refused++
			refusal = r
		default:
			t.Fatalf("tools/list on a stream not read: %d %s; want 202 or 429", r.status, r.body)
		}
	}
	grown := runtime.NumGoroutine() - before
	if refused == 0 {
		t.Fatalf("all %d tools/list on a stream never read were taken; want those past %d unanswered refused", posts, maxUnanswered)
	}
	if grown > maxUnanswered+50 {
		t.Errorf("the server has %d more goroutines after %d tools/list on a stream never read (%d taken); want at most about %d", grown, posts, accepted, maxUnanswered)
	}
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(refusal.body), &msg); err != nil || msg.JSONRPC != "2.0" || refusal.header.Get("Retry-After") == "" ||
		!strings.Contains(msg.Error.Message, "100 requests") || !strings.Contains(msg.Error.Message, "read") || !strings.Contains(msg.Error.Message, mcpserver.PathSSE) {
		t.Fatalf("refusal: Retry-After %q, %s; want a JSON-RPC error naming the 100 requests and saying to read the %s stream", refusal.header.Get("Retry-After"), refusal.body, mcpserver.PathSSE)
	}
	drain()
	pgtest.Eventually(t, time.Minute, "messages to be taken again once the stream is read", func() bool {
		return rawRequest(t, http.MethodPost, url, "", rawListTools).status == http.StatusAccepted
	})
}

// stalledWriter is the response of an event stream whose client reads the
// endpoint event and nothing more: every later Write waits until the
// test ends.
type stalledWriter struct {
	header  http.Header
	session chan string
	release chan struct{}
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}

func (w *stalledWriter) Write(p []byte) (int, error) {
	if _, rest, ok := bytes.Cut(p, []byte("sessionId=")); ok {
		w.session <- string(bytes.TrimSpace(rest))
		return len(p), nil
	}
	<-w.release
	return 0, errors.New("the client reads no more")
}

// stalledSSE serves the SSE transport's handler in this process, opens an
// event stream whose client never reads past the endpoint event
// (stalledWriter), and returns its session id and how to post a message
// to it.
func stalledSSE(t *testing.T) (post func(body string) *httptest.ResponseRecorder) {
	t.Helper()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	h, closeSessions, err := mcpserver.Handler(newServer(t, deps(t, testStore(t)), mcpserver.Options{}),
		mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE, Addr: addr.String()}, addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	w := &stalledWriter{header: http.Header{}, session: make(chan string, 1), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, mcpserver.PathSSE, nil)
		r.Host = addr.String()
		h.ServeHTTP(w, r)
	}()
	t.Cleanup(func() {
		close(w.release)
		cancel()
		closeSessions(context.Background())
		<-done
	})
	session := <-w.session
	return func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(testContext(t), http.MethodPost, mcpserver.PathMessage+"?sessionId="+session, strings.NewReader(body))
		r.Host = addr.String()
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
}

// On a stream not read, exactly maxUnanswered requests are taken, and no
// more, whatever their kind; the messages that get no answer
// (notifications, the client's answers to pings) are taken however many,
// while those that get one, an error to a notification the server cannot
// take included, count as requests do.
func TestSSEStreamNotReadCountsAnsweredMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ what, message string }{
		{"tools/list", rawListTools},
		{"a notification of JSON-RPC 1.0", `{"jsonrpc":"1.0","method":"notifications/initialized"}`},
		{"a notification with Params for params", `{"jsonrpc":"2.0","method":"notifications/initialized","Params":{}}`},
		{"a batch", "[" + rawListTools + "]"},
	} {
		t.Run(c.what, func(t *testing.T) {
			t.Parallel()
			post := stalledSSE(t)
			// Its answer is the first the stream cannot write.
			if r := post(rawInitialize); r.Code != http.StatusAccepted {
				t.Fatalf("initialize: %d %s", r.Code, r.Body)
			}
			for i := range 3 * maxUnanswered {
				for _, m := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":"ping-1","result":{}}`} {
					if r := post(m); r.Code != http.StatusAccepted {
						t.Fatalf("message %d, %s, on a stream not read: %d %s; want 202: it gets no answer", i, m, r.Code, r.Body)
					}
				}
			}
			taken := 0
			for range 2 * maxUnanswered {
				switch r := post(c.message); r.Code {
				case http.StatusAccepted:
					taken++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("%s on a stream not read: %d %s; want 202 or 429", c.what, r.Code, r.Body)
				}
			}
			if taken != maxUnanswered-1 {
				t.Fatalf("%d of %s taken on a stream not read after initialize; want %d, then refused", taken, c.what, maxUnanswered-1)
			}
		})
	}
}

// An event stream whose client stopped reading ends once a write to it
// makes no progress for the write timeout, and its session with it: its
// messages are refused as those of a session not open, and the stream's
// connection, goroutine and answers are let go.
func TestSSEStreamNotReadEnds(t *testing.T) {
	t.Parallel()
	cfg := mcpserver.WithWriteTimeout(mcpserver.HTTPConfig{Transport: mcpserver.TransportSSE}, time.Second)
	base := serveHTTP(t, deps(t, testStore(t)), cfg)
	session, _ := stalledSSEStream(t, base)
	url := base + mcpserver.PathMessage + "?sessionId=" + session
	if r := rawRequest(t, http.MethodPost, url, "", rawInitialize); r.status != http.StatusAccepted {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	for range 2 * maxUnanswered {
		if r := rawRequest(t, http.MethodPost, url, "", rawListTools); r.status != http.StatusAccepted {
			break // the stream holds as many answers as it may
		}
	}
	pgtest.Eventually(t, 2*time.Minute, "the session of a stream not read to end", func() bool {
		r := rawRequest(t, http.MethodPost, url, "", rawListTools)
		return r.status == http.StatusBadRequest && strings.Contains(r.body, "session")
	})
}
