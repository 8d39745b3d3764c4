package cli_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	if strings.Contains(r.stderr, "tracing with OpenTelemetry") {
		t.Errorf("send, a one-shot command, says at the info level that it traces:\n%s", r.stderr)
	}
}

// pgbus work, a long-running process, says at its start that it traces,
// naming the exporter the OTLP endpoint alone turned on.
func TestWorkSaysItTraces(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	_, url := newCollector(t)
	r := pgbusIn(t, append(d.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+url), "", "work", "--queue", "orders", "--handler", "demo",
		"--until-idle", "--poll-interval", "50ms", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("work: exit %d: %s", r.code, r.stderr)
	}
	// The exporter over http/protobuf sends to the endpoint's path of traces.
	want := `"msg":"pgbus: tracing with OpenTelemetry","exporter":"otlp","endpoint":"` + strings.TrimRight(url, "/") + `/v1/traces"`
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, `"level":"INFO"`) {
		t.Errorf("work's log has no line %s at the info level:\n%s", want, r.stderr)
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

// A retry made on pgbus dashboard, which reads the OTEL_* variables as
// every command does, is traced as a retry from any other front end: a
// dlq_retry span whose context the retried message carries.
func TestDashboardRetryTraced(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "shop", "--max-retries", "1")
	d.ok(t, "send", "shop", `{"amount_cents": 0}`, "--kind", "charge")
	d.ok(t, "work", "--queue", "shop", "--handler", "demo", "--until-idle", "--poll-interval", "50ms")
	var dead int64
	d.query(t, `SELECT msg_id FROM pgmq.q_shop_dlq`, &dead)

	c, collectorURL := newCollector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "dash-token-0123456789"
	cmd := exec.CommandContext(ctx, binary, "dashboard", "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(baseEnv(), "DATABASE_URL="+d.url, "PGBUS_MCP_TOKEN="+token, "OTEL_EXPORTER_OTLP_ENDPOINT="+collectorURL)
	base, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	defer func() { _ = cmd.Process.Kill() }()

	form := url.Values{"queue": {"shop_dlq"}, "id": {strconv.FormatInt(dead, 10)}}
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/")+"/dlq/message/retry", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "retried") {
		t.Fatalf("POST /dlq/message/retry: %d\n%s", resp.StatusCode, page)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil { // flushes the spans
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}

	var tp string
	d.query(t, `SELECT coalesce(headers->>'traceparent', '') FROM pgmq.q_shop`, &tp)
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, ok := c.spans["dlq_retry shop_dlq"]
	if !ok {
		t.Fatalf("the collector got no dlq_retry span from the dashboard's retry; it got %v", c.spans)
	}
	if want := "00-" + ids[0] + "-" + ids[1] + "-01"; tp != want {
		t.Errorf("the retried message carries traceparent %q, want the dlq_retry span's %q", tp, want)
	}
}

// pgbus demo's workers are traced as pgbus work's are: with an OTLP
// endpoint set, the collector gets the spans of the demo's jobs.
func TestDemoTraced(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	c, url := newCollector(t)
	if r := pgbusIn(t, append(d.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+url), "", "demo"); r.code != 0 {
		t.Fatalf("demo: exit %d: %s", r.code, r.stderr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, span := range []string{"process demo_orders", "process demo_emails"} {
		if _, ok := c.spans[span]; !ok {
			t.Errorf("the collector got no %q span from the demo's workers; it got %v", span, c.spans)
		}
	}
}
