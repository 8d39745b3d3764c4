package tracing_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// The built-in http handler's request carries the attempt's trace context
// in its traceparent header, so that the downstream service's spans join
// the message's trace under the attempt that called it, rather than
// starting a trace of their own.
func TestHTTPHandlerCarriesTheTraceDownstream(t *testing.T) {
	s := pgtest.Store(t)
	q := pgtest.NewFastQueue(t, s, "trh", nil)
	tr, exp := newTracer(t)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Get("traceparent"):
		default:
		}
	}))
	defer srv.Close()
	fn, opts, err := handlers.Build(handlers.Spec{Type: "http", Options: map[string]any{"url": srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Observers = []engine.Observer{tr} })
	c.HandleQueue(q, fn, opts)
	defer pgtest.Start(t, c)()
	pgtest.Send(t, c, q, map[string]any{"n": 1}, engine.SendOptions{})
	var header string
	select {
	case header = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the downstream got no request")
	}
	var attempt tracetest.SpanStub
	pgtest.Eventually(t, 30*time.Second, "the attempt's span", func() bool {
		for _, sp := range exp.GetSpans() {
			if sp.Name == "process "+q {
				attempt = sp
				return true
			}
		}
		return false
	})
	if want := "00-" + attempt.SpanContext.TraceID().String() + "-" + attempt.SpanContext.SpanID().String() + "-01"; header != want {
		t.Fatalf("the downstream request carries traceparent %q, want the attempt's %q", header, want)
	}
}
