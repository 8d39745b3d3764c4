package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// connCounter is a real HTTP server that counts the connections clients
// open to it.
func connCounter(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &opened
}

// An answer whose body is larger than the 64 KB a failure's is quoted from
// is read to its end, within a bound, so that the next job reuses the
// connection instead of opening one (and a TLS handshake) per job. The
// bound is a minute here: on a busy machine half a second may pass before
// a body is read, which is TestHTTPHandlerDrainIsBounded's to test.
func TestHTTPHandlerReusesConnectionsAfterLargeBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		size   int
	}{
		{200, 1 << 10},             // read whole without draining too
		{200, 200 << 10},           // well past 64 KB
		{200, handlers.MaxCapture}, // exactly 64 KB: reading 64 KB does not see its end
		{202, 3 * handlers.MaxCapture},
		{503, 150 << 10}, // a retryable failure's body, quoted in part
	} {
		t.Run(fmt.Sprintf("%d, %d bytes", tc.status, tc.size), func(t *testing.T) {
			body := strings.Repeat("x", tc.size)
			srv, opened := connCounter(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(body))
			})
			fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": srv.URL}})
			const jobs = 5
			ctx := handlers.WithDrainWait(context.Background(), time.Minute)
			for i := range jobs {
				err := fn(ctx, &engine.Job{Queue: "q", ID: int64(i + 1), Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: fmt.Sprintf("q:%d", i+1)})
				if ok := tc.status < 300; ok != (err == nil) {
					t.Fatalf("job %d: %v", i+1, err)
				}
			}
			if n := opened.Load(); n != 1 {
				t.Errorf("%d jobs opened %d connections; want 1, reused", jobs, n)
			}
		})
	}
}

// What is left of a body is read only so far: past the bound the
// connection is closed rather than megabytes read, and a body that comes
// slowly does not hold the job (nor its worker) until the timeout.
func TestHTTPHandlerDrainIsBounded(t *testing.T) {
	t.Parallel()
	t.Run("huge body", func(t *testing.T) {
		var sent atomic.Int64
		var ended atomic.Int32
		srv, opened := connCounter(t, func(w http.ResponseWriter, r *http.Request) {
			defer ended.Add(1)
			chunk := []byte(strings.Repeat("y", 32<<10))
			for range 64 << 20 / len(chunk) {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": srv.URL}})
		for i := range 2 {
			if err := fn(context.Background(), &engine.Job{Queue: "q", ID: int64(i + 1), Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"}); err != nil {
				t.Fatal(err)
			}
		}
		// Each answer's connection was given up on: two were opened, and
		// far less than the 64 MB of each answer was read.
		if n := opened.Load(); n != 2 {
			t.Errorf("opened %d connections; want 2 (one per 64 MB answer)", n)
		}
		// Each answer's writes end once its connection is closed, or once
		// all of it was read.
		pgtest.Eventually(t, time.Minute, "the server to stop writing both answers", func() bool { return ended.Load() == 2 })
		// What the sockets' buffers take is written without the client
		// reading: a few MB each.
		if n := sent.Load(); n > 40<<20 {
			t.Errorf("the server could write %d bytes; want the client to stop reading well before the 128 MB of both answers", n)
		}
	})
	// A 2xx whose body stops coming before the 64 KB a failure's would be
	// quoted from, or after.
	for _, sent := range []int{1 << 10, 100 << 10} {
		t.Run(fmt.Sprintf("slow body after %d bytes", sent), func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			srv, _ := connCounter(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(1<<20))
				_, _ = w.Write([]byte(strings.Repeat("z", sent)))
				w.(http.Flusher).Flush()
				select { // the rest never comes in time
				case <-release:
				case <-r.Context().Done():
				}
			})
			// The attempt's timeout is an hour: a handler that waited for
			// the rest of the body would still wait when the test gives up.
			fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(time.Hour), Options: map[string]any{"url": srv.URL}})
			done := make(chan error, 1)
			go func() {
				done <- fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("error %v; want the 2xx to succeed without the rest of its body", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the handler still waits for the rest of a 2xx body after a minute; want it to give up on the body, as the status decided")
			}
		})
	}
}

// The status of a failure decides what the attempt did: a body that stops
// coming after its first words is quoted as far as it came, and does not
// hold the job (nor its worker) until the attempt's timeout.
func TestHTTPHandlerSlowFailureBodyIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv, _ := connCounter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("upstream pool exhausted\n"))
		w.(http.Flusher).Flush()
		select { // the rest never comes
		case <-release:
		case <-r.Context().Done():
		}
	})
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(time.Hour), Options: map[string]any{"url": srv.URL}})
	done := make(chan error, 1)
	go func() {
		done <- fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: []byte(`{}`), IdempotencyKey: "q:1"})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the handler still waits for the rest of a 503's body after a minute; want it to give up on the body, as the status decided")
	}
	var se *handlers.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable || se.Body != "upstream pool exhausted" {
		t.Fatalf("error %v (%T); want a 503 StatusError quoting what came of the body", err, err)
	}
	if o := se.FailureOutput(); o.Text != "upstream pool exhausted" || !o.Truncated {
		t.Errorf("captured %+v; want what came of the body, marked as only part of it", o)
	}
}
