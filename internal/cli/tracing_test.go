package cli_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver that keeps what it is sent.
type collector struct {
	mu    sync.Mutex
	spans map[string][2]string // span name -> trace id, span id (hex)
	svc   map[string]bool      // service.name values seen
}

func newCollector(t *testing.T) (*collector, string) {
	c := &collector{spans: map[string][2]string{}, svc: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || err != nil || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					c.svc[kv.GetValue().GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					c.spans[sp.Name] = [2]string{hex.EncodeToString(sp.TraceId), hex.EncodeToString(sp.SpanId)}
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// pgbus send with an OTLP endpoint set exports its send span before it
// exits, and the message carries that span's context; the service is
// named pgbus.
func TestSendTracesToTheCollector(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	c, url := newCollector(t)
	r := pgbusIn(t, append(d.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+url), "", "send", "orders", `{"n": 1}`, "--kind", "charge")
	if r.code != 0 {
		t.Fatalf("send: exit %d: %s", r.code, r.stderr)
	}
	var tp string
	d.query(t, `SELECT headers->>'traceparent' FROM pgmq.q_orders`, &tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, ok := c.spans["send orders"]
	if !ok {
		t.Fatalf("the collector got no send span; it got %v", c.spans)
	}
	if want := "00-" + ids[0] + "-" + ids[1] + "-01"; tp != want {
		t.Errorf("the message carries traceparent %q, want the send span's %q", tp, want)
	}
	if !c.svc["pgbus"] {
		t.Errorf("service names %v, want pgbus", c.svc)
	}
}

// An exporter pgbus does not have is a usage error that says what to set,
// before anything is sent.
func TestTracingMisconfigured(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	r := pgbusIn(t, append(d.env, "OTEL_TRACES_EXPORTER=zipkin"), "", "send", "orders", `{}`)
	if r.code != 2 || !strings.Contains(r.stderr, "otlp, console or none") {
		t.Fatalf("send with OTEL_TRACES_EXPORTER=zipkin: exit %d: %s", r.code, r.stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}
