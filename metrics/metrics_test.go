package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// classed is an error of a given class.
type classed struct{ class string }

func (e classed) Error() string      { return "failed with " + e.class }
func (e classed) ErrorClass() string { return e.class }

// work is a job's payload: what its handler does.
type work struct {
	Mode  string `json:"mode"`
	Class string `json:"class,omitempty"`
}

func handle(_ context.Context, job *engine.Job) error {
	var w work
	if err := json.Unmarshal(job.Payload, &w); err != nil {
		return engine.NonRetryable(err)
	}
	switch w.Mode {
	case "retry":
		if job.Attempt == 1 {
			return errors.New("flaky downstream")
		}
	case "dead":
		return engine.NonRetryable(classed{w.Class})
	}
	return nil
}

// serve serves h on a loopback port until the test ends and returns its
// base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, ln, h, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// scrape GETs /metrics and parses the text exposition.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + metrics.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s: %s", resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the exposition: %v", err)
	}
	return fams
}

// value returns the value of the sample of family name whose labels
// include want, or -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// Types is the type of every pgbus metric.
var Types = map[string]dto.MetricType{
	"pgbus_jobs_finished_total":               dto.MetricType_COUNTER,
	"pgbus_job_failures_total":                dto.MetricType_COUNTER,
	"pgbus_job_attempt_duration_seconds":      dto.MetricType_HISTOGRAM,
	"pgbus_job_start_latency_seconds":         dto.MetricType_HISTOGRAM,
	"pgbus_circuit_breaker_transitions_total": dto.MetricType_COUNTER,
	"pgbus_mcp_tool_calls_total":              dto.MetricType_COUNTER,
	"pgbus_mcp_sessions_open":                 dto.MetricType_GAUGE,
	"pgbus_mcp_streams_open":                  dto.MetricType_GAUGE,
	"pgbus_queue_messages":                    dto.MetricType_GAUGE,
	"pgbus_dlq_messages":                      dto.MetricType_GAUGE,
	"pgbus_queue_oldest_ready_age_seconds":    dto.MetricType_GAUGE,
	"pgbus_circuit_breaker_state":             dto.MetricType_GAUGE,
	"pgbus_circuit_breaker_held_jobs":         dto.MetricType_GAUGE,
	"pgbus_workers_running":                   dto.MetricType_GAUGE,
	"pgbus_queue_workers_running":             dto.MetricType_GAUGE,
	"pgbus_database_up":                       dto.MetricType_GAUGE,
	"pgbus_schema_ready":                      dto.MetricType_GAUGE,
	"pgbus_gauges_age_seconds":                dto.MetricType_GAUGE,
	"pgbus_queue_paused":                      dto.MetricType_GAUGE,
	"pgbus_queue_managed":                     dto.MetricType_GAUGE,
	"pgbus_queue_messages_estimated":          dto.MetricType_GAUGE,
	"pgbus_build_info":                        dto.MetricType_GAUGE,
}

// After 5 jobs that succeed, 3 that fail once and then succeed, and 4
// dead-lettered with two error classes (3 and 1), a scrape over HTTP
// counts exactly that, and the gauges read from the database show the
// DLQ's depth and a backlog nobody works.
func TestScrapeAfterWorkload(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the gauges read every queue of the database
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := pgtest.NewFastQueue(t, st, "met", func(s *store.QueueSettings) { s.RetryBackoff, s.RetryBackoffMax = 0, 0 })
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))

	client := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Observers = []engine.Observer{m} })
	client.HandleQueue(q, handle)
	var jobs []work
	for range 5 {
		jobs = append(jobs, work{Mode: "ok"})
	}
	for range 3 {
		jobs = append(jobs, work{Mode: "retry"})
	}
	for _, c := range []string{"bank_declined", "schema_invalid", "bank_declined", "bank_declined"} {
		jobs = append(jobs, work{Mode: "dead", Class: c})
	}
	for _, j := range jobs {
		pgtest.Send(t, client, q, j, engine.SendOptions{Kind: "charge"})
	}
	stop := pgtest.Start(t, client)
	pgtest.Eventually(t, time.Minute, "8 archived and 4 dead", func() bool {
		return pgtest.Archived(t, st, q) == 8 && pgtest.Live(t, st, store.DLQName(q)) == 4
	})
	stop()
	// A backlog the gauges must show: two ready messages nobody works.
	for range 2 {
		pgtest.Send(t, client, q, work{Mode: "ok"}, engine.SendOptions{Kind: "charge"})
	}
	m.ToolCalled("pgbus_health", metrics.ToolOK)
	fams := scrape(t, base)

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"pgbus_jobs_finished_total", map[string]string{"queue": q, "kind": "charge", "outcome": "succeeded", "reason": ""}, 8},
		{"pgbus_jobs_finished_total", map[string]string{"queue": q, "kind": "charge", "outcome": "retried", "reason": ""}, 3},
		{"pgbus_jobs_finished_total", map[string]string{"queue": q, "kind": "charge", "outcome": "dead_lettered", "reason": store.ReasonNonRetryable}, 4},
		{"pgbus_job_failures_total", map[string]string{"queue": q, "outcome": "retried", "error_class": "error"}, 3},
		{"pgbus_job_failures_total", map[string]string{"queue": q, "outcome": "dead_lettered", "error_class": "bank_declined"}, 3},
		{"pgbus_job_failures_total", map[string]string{"queue": q, "outcome": "dead_lettered", "error_class": "schema_invalid"}, 1},
		{"pgbus_job_attempt_duration_seconds", map[string]string{"queue": q}, 15},
		{"pgbus_job_start_latency_seconds", map[string]string{"queue": q}, 15},
		{"pgbus_queue_messages", map[string]string{"queue": q, "state": "visible"}, 2},
		{"pgbus_queue_messages", map[string]string{"queue": q, "state": "in_flight"}, 0},
		{"pgbus_queue_messages", map[string]string{"queue": q, "state": "waiting_retry"}, 0},
		{"pgbus_queue_messages", map[string]string{"queue": q, "state": "scheduled"}, 0},
		{"pgbus_dlq_messages", map[string]string{"queue": q}, 4},
		{"pgbus_queue_workers_running", map[string]string{"queue": q}, 0}, // its worker stopped
		{"pgbus_database_up", nil, 1},
		{"pgbus_mcp_tool_calls_total", map[string]string{"tool": "pgbus_health", "result": "ok"}, 1},
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(fams, "pgbus_job_failures_total", map[string]string{"queue": q, "outcome": "succeeded"}); got != -1 {
		t.Errorf("a success counted as a failure: %v", got)
	}
	if age := value(fams, "pgbus_queue_oldest_ready_age_seconds", map[string]string{"queue": q}); age < 0 {
		t.Errorf("no oldest ready age for %s", q)
	}
	// No MCP server runs here: its sessions and streams are not exposed.
	checkFamilies(t, fams, "pgbus_circuit_breaker_transitions_total", "pgbus_circuit_breaker_state", "pgbus_circuit_breaker_held_jobs",
		"pgbus_mcp_sessions_open", "pgbus_mcp_streams_open")
}

// checkFamilies checks that every pgbus family exposed has HELP text and
// its type, and that every known one is exposed but those absent allows.
func checkFamilies(t *testing.T, fams map[string]*dto.MetricFamily, absent ...string) {
	t.Helper()
	for name, f := range fams {
		if !strings.HasPrefix(name, "pgbus_") {
			continue
		}
		want, known := Types[name]
		if !known {
			t.Errorf("%s is exposed but not in this test's list of types", name)
			continue
		}
		if f.GetType() != want {
			t.Errorf("%s has type %s, want %s", name, f.GetType(), want)
		}
		if len(f.GetHelp()) < 20 {
			t.Errorf("%s has no real HELP: %q", name, f.GetHelp())
		}
	}
	if up := fams["pgbus_database_up"]; up != nil && len(up.GetMetric()) == 1 && up.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("pgbus_database_up is %v: the gauges could not be read from the database (the process log says why)", up.GetMetric()[0].GetGauge().GetValue())
	}
	if v := buildinfo.Version(); value(fams, "pgbus_build_info", map[string]string{"version": v}) != 1 {
		t.Errorf("pgbus_build_info has no sample of value 1 for version %q", v)
	}
	skip := map[string]bool{}
	for _, a := range absent {
		skip[a] = true
	}
	for name := range Types {
		if fams[name] == nil && !skip[name] {
			t.Errorf("%s is not exposed", name)
		}
	}
}

// With 1,000 distinct error classes, the error_class label takes at most
// MaxErrorClasses values besides "other", and every failure is counted; a
// frequent class seen after them gets a label of its own all the same.
func TestErrorClassBound(t *testing.T) {
	m := metrics.New(metrics.Options{MaxErrorClasses: 10})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	job := &engine.Job{Queue: "q", Kind: "k"}
	for i := range 1000 {
		err := classed{fmt.Sprintf("class_%d", i)}
		m.JobFinished(context.Background(), job, engine.Finish{Outcome: engine.OutcomeDeadLettered, Reason: store.ReasonMaxRetriesExceeded,
			Err: err, ErrorClass: err.ErrorClass(), Ran: true})
	}
	classes := failuresByClass(t, reg)
	var total float64
	for _, n := range classes {
		total += n
	}
	if len(classes) != 11 || classes[metrics.Other] != 990 || total != 1000 {
		t.Fatalf("%d error_class values (want 10 and other), other = %v, total %v", len(classes), classes[metrics.Other], total)
	}
	for i := range 10 {
		if classes[fmt.Sprintf("class_%d", i)] != 1 {
			t.Errorf("class_%d has no label of its own: %v", i, classes)
		}
	}

	// A class that comes often takes the slot of the least frequent one
	// on its third failure, when it has failed more than twice as often;
	// the series of the class that lost the slot are gone.
	for range 5 {
		err := classed{"hot"}
		m.JobFinished(context.Background(), job, engine.Finish{Outcome: engine.OutcomeRetried, Err: err, ErrorClass: err.ErrorClass(), Ran: true})
	}
	classes = failuresByClass(t, reg)
	if len(classes) != 11 || classes["hot"] != 3 || classes[metrics.Other] != 992 {
		t.Fatalf("after 5 failures of class hot: %d values, hot %v, other %v; want 11, 3, 992: %v", len(classes), classes["hot"], classes[metrics.Other], classes)
	}
	if _, ok := classes["class_0"]; ok {
		t.Errorf("class_0 kept its series after losing its slot: %v", classes)
	}
}

// A kind or error class longer than MaxLabelBytes, as another producer
// may write into a queue, is counted under other: a label value of
// 100,000 characters made the scrape one a Prometheus with
// label_value_length_limit refuses whole.
func TestLongLabelValuesAreOther(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	long := strings.Repeat("Z", 100_000)
	err := classed{long}
	m.JobFinished(context.Background(), &engine.Job{Queue: "q", Kind: long}, engine.Finish{Outcome: engine.OutcomeDeadLettered,
		Reason: store.ReasonNonRetryable, Err: err, ErrorClass: err.ErrorClass(), Ran: true})
	edge := strings.Repeat("k", metrics.MaxLabelBytes)
	m.JobFinished(context.Background(), &engine.Job{Queue: "q", Kind: edge}, engine.Finish{Outcome: engine.OutcomeSucceeded, Ran: true})
	fams, gerr := reg.Gather()
	if gerr != nil {
		t.Fatal(gerr)
	}
	kinds := map[string]bool{}
	for _, f := range fams {
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if len(l.GetValue()) > metrics.MaxLabelBytes {
					t.Errorf("%s has a label %s of %d bytes", f.GetName(), l.GetName(), len(l.GetValue()))
				}
				if l.GetName() == "kind" {
					kinds[l.GetValue()] = true
				}
			}
		}
	}
	if !kinds[metrics.Other] || !kinds[edge] {
		t.Errorf("kind label values %d: want other for the long kind, and the one of %d bytes as it is", len(kinds), metrics.MaxLabelBytes)
	}
	if classes := failuresByClass(t, reg); classes[metrics.Other] != 1 {
		t.Errorf("error classes %v: want the long one counted under other", classes)
	}
}

// failuresByClass sums pgbus_job_failures_total by error_class.
func failuresByClass(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "pgbus_job_failures_total" {
			continue
		}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == "error_class" {
					classes[l.GetValue()] += s.Counter.GetValue()
				}
			}
		}
	}
	return classes
}

// A breaker that the process's failures open is counted as a transition
// from closed to open, and its state gauge, read from the database, says
// open; once a probe succeeds it says closed, with both transitions
// counted.
func TestBreakerMetrics(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the gauges read every queue of the database
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := pgtest.NewFastQueue(t, st, "brk", func(s *store.QueueSettings) { s.RetryBackoff, s.RetryBackoffMax, s.MaxRetries = 0, 0, 100 })
	breaker := pgtest.Name("bank")
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
	var failing sync.Map
	failing.Store("on", true)
	client := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Observers = []engine.Observer{m} })
	client.HandleQueue(q, func(context.Context, *engine.Job) error {
		if _, on := failing.Load("on"); on {
			return errors.New("bank down")
		}
		return nil
	}, engine.HandlerOptions{Breaker: &store.BreakerConfig{Name: breaker, FailureThreshold: 2, CoolOff: 200 * time.Millisecond, MaxCoolOff: 200 * time.Millisecond}})
	pgtest.Start(t, client)
	pgtest.Send(t, client, q, work{Mode: "ok"}, engine.SendOptions{})
	opened := map[string]string{"breaker": breaker, "from": store.BreakerClosed, "to": store.BreakerOpen}
	pgtest.Eventually(t, time.Minute, "the breaker to open", func() bool {
		return value(scrape(t, base), "pgbus_circuit_breaker_transitions_total", opened) == 1
	})
	fams := scrape(t, base)
	if v := value(fams, "pgbus_circuit_breaker_state", map[string]string{"breaker": breaker, "state": store.BreakerOpen}); v != 1 &&
		value(fams, "pgbus_circuit_breaker_state", map[string]string{"breaker": breaker, "state": store.BreakerHalfOpen}) != 1 {
		t.Errorf("state gauge of an opened breaker: open = %v", v)
	}
	if v := value(fams, "pgbus_circuit_breaker_state", map[string]string{"breaker": breaker, "state": store.BreakerClosed}); v != 0 {
		t.Errorf("state gauge of an opened breaker: closed = %v, want 0", v)
	}
	failing.Delete("on")
	pgtest.Eventually(t, time.Minute, "the breaker to close", func() bool {
		return value(scrape(t, base), "pgbus_circuit_breaker_state", map[string]string{"breaker": breaker, "state": store.BreakerClosed}) == 1
	})
	fams = scrape(t, base)
	if v := value(fams, "pgbus_circuit_breaker_transitions_total", map[string]string{"breaker": breaker, "from": store.BreakerHalfOpen, "to": store.BreakerClosed}); v != 1 {
		t.Errorf("half_open to closed counted %v times, want 1", v)
	}
	if v := value(fams, "pgbus_circuit_breaker_transitions_total", map[string]string{"breaker": breaker, "from": store.BreakerOpen, "to": store.BreakerHalfOpen}); v < 1 {
		t.Errorf("open to half_open counted %v times, want at least 1", v)
	}
	checkFamilies(t, fams, "pgbus_mcp_tool_calls_total", "pgbus_mcp_sessions_open", "pgbus_mcp_streams_open")
}

// The jobs a breaker in use holds are a gauge, scraped over HTTP: the
// two an opening by hand holds, then none once a reset runs them; a
// breaker whose queue no running worker serves is left out, as from the
// state gauge.
func TestBreakerHeldJobsGauge(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := pgtest.Context(t)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.New(metrics.Options{Ops: svc, CacheFor: -1}))
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
	const bank, unused = "http:bank", "http:unused"
	for _, b := range []string{bank, unused} {
		if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: b, FailureThreshold: 2, CoolOff: time.Minute, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"payments", "reports"} {
		if err := st.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: "w-pay", Hostname: "h", PID: 1, Queues: []string{"payments"}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	pgtest.Held(t, st, "payments", bank)
	pgtest.Held(t, st, "payments", bank)
	pgtest.Held(t, st, "reports", unused) // no running worker serves reports
	for _, b := range []string{bank, unused} {
		if _, err := svc.CircuitOpen(ctx, ops.CircuitOpenRequest{Name: b, For: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, base)
	if v := value(fams, "pgbus_circuit_breaker_held_jobs", map[string]string{"breaker": bank}); v != 2 {
		t.Fatalf("held jobs of %s open by hand = %v, want 2", bank, v)
	}
	if v := value(fams, "pgbus_circuit_breaker_held_jobs", map[string]string{"breaker": unused}); v != -1 {
		t.Errorf("held jobs of %s, which no running worker uses = %v, want it left out", unused, v)
	}
	if _, err := svc.CircuitReset(ctx, ops.CircuitResetRequest{Name: bank, EndOpeningByHand: true}); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, base)
	if v := value(fams, "pgbus_circuit_breaker_held_jobs", map[string]string{"breaker": bank}); v != 0 {
		t.Errorf("held jobs of %s after its reset = %v, want 0", bank, v)
	}
	if v := value(fams, "pgbus_circuit_breaker_state", map[string]string{"breaker": bank, "state": store.BreakerClosed}); v != 1 {
		t.Errorf("state of %s after its reset: closed = %v, want 1", bank, v)
	}
}

// Failures of many classes from many workers at once, some classes far
// more frequent than others so that slots change hands, never leave more
// than MaxErrorClasses+1 error_class values.
func TestErrorClassBoundConcurrent(t *testing.T) {
	m := metrics.New(metrics.Options{MaxErrorClasses: 10})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			job := &engine.Job{Queue: "q", Kind: "k"}
			for i := range 2000 {
				class := fmt.Sprintf("c%d", (i*(w+1))%(10+i/100)) // the set of classes grows as it goes
				err := classed{class}
				m.JobFinished(context.Background(), job, engine.Finish{Outcome: engine.OutcomeRetried, Err: err, ErrorClass: class, Ran: true})
			}
		})
	}
	wg.Wait()
	classes := failuresByClass(t, reg)
	if len(classes) > 11 || classes[metrics.Other] == 0 {
		t.Fatalf("%d error_class values, want at most 11 with other among them: %v", len(classes), classes)
	}
}

// Jobs of a queue with priority levels are counted under the queue's own
// name, as its gauges and stats are, not under its levels' (the alert on a
// backlog not draining matched nothing for such a queue).
func TestPriorityQueueCountedUnderItsName(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the gauges read every queue of the database
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := pgtest.Name("metpri")
	if err := st.CreatePriorityQueue(pgtest.Context(t), q, 2); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
	client := pgtest.NewClient(t, st, q, func(c *engine.Config) { c.Observers = []engine.Observer{m} })
	client.HandleQueue(q, handle)
	for p := range 2 {
		pgtest.Send(t, client, q, work{Mode: "ok"}, engine.SendOptions{Kind: "charge", Priority: p})
	}
	stop := pgtest.Start(t, client)
	pgtest.Eventually(t, time.Minute, "both archived", func() bool {
		return pgtest.Archived(t, st, q+"_p0")+pgtest.Archived(t, st, q+"_p1") == 2
	})
	if got := value(scrape(t, base), "pgbus_queue_workers_running", map[string]string{"queue": q}); got != 1 {
		t.Errorf("pgbus_queue_workers_running{queue=%q} while its worker runs = %v, want 1", q, got)
	}
	stop()
	fams := scrape(t, base)
	if got := value(fams, "pgbus_jobs_finished_total", map[string]string{"queue": q, "kind": "charge", "outcome": "succeeded", "reason": ""}); got != 2 {
		t.Errorf("jobs finished under %s: %v, want 2", q, got)
	}
	for _, level := range []string{q + "_p0", q + "_p1"} {
		for _, name := range []string{"pgbus_jobs_finished_total", "pgbus_job_attempt_duration_seconds", "pgbus_job_start_latency_seconds"} {
			if got := value(fams, name, map[string]string{"queue": level}); got != -1 {
				t.Errorf("%s{queue=%q} = %v; want no series for a level", name, level, got)
			}
		}
	}
}

// Probes without an operations layer fail where they are made, saying
// what is missing, not at the first request.
func TestProbesWithoutOps(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "ops.New") {
			t.Fatalf("Probes(nil) recovered %v; want a panic saying to make one with ops.New", r)
		}
	}()
	metrics.Probes(nil, metrics.ProbeOptions{})
}

// The DLQ of a queue dropped outside pgbus keeps its depth gauge while it
// holds messages, and the queue has no live-message gauges.
func TestDroppedQueueKeepsItsDLQGauge(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // the gauges read every queue of the database
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	if err := st.CreateQueue(ctx, "orphan"); err != nil {
		t.Fatal(err)
	}
	pgtest.DeadLetterN(t, st, "orphan", 3, pgtest.DeadSpec{})
	pgtest.DropOutside(t, st, "orphan")
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	fams := scrape(t, serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{})))
	if got := value(fams, "pgbus_dlq_messages", map[string]string{"queue": "orphan"}); got != 3 {
		t.Errorf("pgbus_dlq_messages of the dropped queue = %v, want 3", got)
	}
	for _, name := range []string{"pgbus_queue_messages", "pgbus_queue_workers_running", "pgbus_queue_oldest_ready_age_seconds"} {
		if got := value(fams, name, map[string]string{"queue": "orphan"}); got != -1 {
			t.Errorf("%s of the dropped queue = %v, want no series", name, got)
		}
	}
}

// A scraper that asks for OpenMetrics gets it, ended by its # EOF line;
// one that does not gets the text format.
func TestOpenMetricsOnRequest(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "pgbus_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(3)
	base := serve(t, metrics.Handler(reg))
	for _, accept := range []string{"application/openmetrics-text;version=1.0.0", ""} {
		req, err := http.NewRequest(http.MethodGet, base+metrics.PathMetrics, nil)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		open := strings.HasPrefix(ct, "application/openmetrics-text") && strings.HasSuffix(string(body), "# EOF\n")
		if open != (accept != "") || !strings.Contains(string(body), "pgbus_test_things_total 3") {
			t.Errorf("Accept %q: Content-Type %q, body %q", accept, ct, body)
		}
	}
}

// A dead letter the database refuses (the workers' role may not insert
// into the queue's DLQ) is not counted dead-lettered, however often its
// message comes back: each refused delivery is counted as the retry that
// kept the message in its queue, and the dead letter once it is in the
// DLQ, so that the counter agrees with the DLQ's depth. It was counted at
// every return of the message, before its write was tried.
func TestDeadLetterCountedOnceInTheDLQ(t *testing.T) {
	url := pgtest.NewDatabase(t) // the gauges read every queue of the database
	owner := pgtest.OpenStore(t, url)
	q := pgtest.NewFastQueue(t, owner, "refused", func(s *store.QueueSettings) { s.VisibilityTimeout, s.MaxRetries = time.Second, 100 })
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "REVOKE ALL ON pgmq.q_"+q+"_dlq FROM "+role)
	svc, err := ops.New(owner, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	base := serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))

	client := pgtest.NewClient(t, pgtest.OpenStore(t, roleURL), q, func(c *engine.Config) { c.Observers = []engine.Observer{m} })
	var runs sync.Map // attempt -> true
	client.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		runs.Store(job.Attempt, true)
		return handle(ctx, job)
	})
	stop := pgtest.Start(t, client)
	pgtest.Send(t, client, q, work{Mode: "dead", Class: "bank_declined"}, engine.SendOptions{Kind: "charge"})
	dead := map[string]string{"queue": q, "kind": "charge", "outcome": "dead_lettered", "reason": store.ReasonNonRetryable}
	retried := map[string]string{"queue": q, "kind": "charge", "outcome": "retried", "reason": ""}
	counted := func(fams map[string]*dto.MetricFamily) float64 {
		return max(value(fams, "pgbus_jobs_finished_total", retried), 0) + max(value(fams, "pgbus_jobs_finished_total", dead), 0)
	}
	pgtest.Eventually(t, time.Minute, "three refused deliveries counted", func() bool { return counted(scrape(t, base)) >= 3 })
	fams := scrape(t, base)
	if got := value(fams, "pgbus_jobs_finished_total", dead); got > 0 {
		t.Fatalf("pgbus_jobs_finished_total%v = %v while the DLQ refuses the message, want none", dead, got)
	}
	if got := value(fams, "pgbus_dlq_messages", map[string]string{"queue": q}); got != 0 {
		t.Fatalf("pgbus_dlq_messages = %v while the DLQ refuses the message, want 0", got)
	}

	pgtest.Exec(t, url, "GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.q_"+q+"_dlq TO "+role)
	pgtest.Eventually(t, time.Minute, "the message in the DLQ once granted", func() bool { return pgtest.Live(t, owner, store.DLQName(q)) == 1 })
	stop() // every outcome written is counted by then
	fams = scrape(t, base)
	if got := value(fams, "pgbus_jobs_finished_total", dead); got != 1 {
		t.Errorf("pgbus_jobs_finished_total%v = %v, want 1: the dead letter in the DLQ", dead, got)
	}
	if got := value(fams, "pgbus_dlq_messages", map[string]string{"queue": q}); got != 1 {
		t.Errorf("pgbus_dlq_messages = %v, want 1", got)
	}
	n := 0
	runs.Range(func(any, any) bool { n++; return true })
	if got := counted(fams); got != float64(n) {
		t.Errorf("%v deliveries counted for %d runs; want each run counted once", got, n)
	}
}

// A queue too large to count at each scrape has its ready count estimated,
// and pgbus_queue_messages_estimated says so for it, and only for it, so
// that a dashboard can mark the number it shows.
func TestEstimatedCountsFlagged(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	for q, n := range map[string]int{"big": 12, "small": 3} {
		if err := st.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		msgs := make([]store.NewMessage, n)
		for i := range msgs {
			msgs[i] = store.NewMessage{Payload: []byte(`{}`)}
		}
		if _, err := st.SendBatch(ctx, q, msgs); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.SettleRowStats(t, st, "pgmq.q_big")
	st.SetExactCountLimit(10)
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	fams := scrape(t, serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{})))
	for q, want := range map[string][2]float64{"big": {12, 1}, "small": {3, 0}} {
		visible := value(fams, "pgbus_queue_messages", map[string]string{"queue": q, "state": "visible"})
		flagged := value(fams, "pgbus_queue_messages_estimated", map[string]string{"queue": q})
		if visible != want[0] || flagged != want[1] {
			t.Errorf("queue %s: visible %v, estimated %v; want %v and %v", q, visible, flagged, want[0], want[1])
		}
	}
}

// A kind or an error class holding a secret, or characters a terminal
// acts on or that reorder text, is scraped redacted and escaped, as the
// log shows it: kinds are written by any producer, classes by handlers.
func TestLabelValuesRedactedAndEscaped(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	const secret = "hunter2secret"
	kind := "job password=" + secret + " \x1b[31mred\u202e\U000E0041"
	err := classed{"auth token=" + secret + "x\u202e"}
	for range 2 { // the second from the labels' cache
		m.JobFinished(context.Background(), &engine.Job{Queue: "q", Kind: kind}, engine.Finish{Outcome: engine.OutcomeDeadLettered,
			Reason: store.ReasonNonRetryable, Err: err, ErrorClass: err.ErrorClass(), Ran: true})
	}
	resp, gerr := http.Get(serve(t, metrics.Mux(reg, nil, metrics.ProbeOptions{})) + metrics.PathMetrics)
	if gerr != nil {
		t.Fatal(gerr)
	}
	defer resp.Body.Close()
	body, rerr := io.ReadAll(resp.Body)
	if rerr != nil {
		t.Fatal(rerr)
	}
	text := string(body)
	if strings.Contains(text, secret) || strings.ContainsAny(text, "\x1b\u202e\U000E0041") {
		t.Fatalf("/metrics shows a secret or a hidden character:\n%s", text)
	}
	for _, want := range []string{`kind="job password=` + ops.Redacted, `\\u001b[31mred\\u202e\\udb40\\udc41",outcome="dead_lettered",queue="q",reason="non_retryable_error"} 2`, `error_class="auth token=` + ops.Redacted} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, text)
		}
	}
}
