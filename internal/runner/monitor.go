package runner

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
)

// Monitor is what a pgbus process shows Prometheus and probes: the
// metrics of its jobs and tool calls, the database's gauges, the Go
// runtime's and the process's, and the health verdict.
type Monitor struct {
	Metrics  *metrics.Metrics
	Registry *prometheus.Registry
	ops      *ops.Service
	probes   metrics.ProbeOptions

	mu  sync.Mutex
	own []string // the ids of the process's worker processes (Runs)
}

// NewMonitor makes the monitor of a process whose operations layer is
// svc and which works queues (none for a process that only serves).
func NewMonitor(svc *ops.Service, log *slog.Logger, queues []config.WorkQueue) *Monitor {
	m := metrics.New(metrics.Options{Ops: svc, Logger: log})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mon := &Monitor{Metrics: m, Registry: reg, ops: svc, probes: metrics.ProbeOptions{Queues: queueNames(queues), Logger: log}}
	mon.probes.Alive = mon.alive
	return mon
}

// Runs tells the monitor that this process runs the worker process of id
// (engine.Client.ID): its /readyz counts it running whatever its heartbeat
// says. A nil monitor ignores it.
func (m *Monitor) Runs(id string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.own = append(m.own, id)
}

// alive is the ids Runs was told.
func (m *Monitor) alive() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.own)
}

// Observers are the engine observers that count a client's jobs: none for
// a nil monitor.
func (m *Monitor) Observers() []engine.Observer {
	if m == nil {
		return nil
	}
	return []engine.Observer{m.Metrics}
}

// MetricsHandler serves the metrics.
func (m *Monitor) MetricsHandler() http.Handler { return metrics.Handler(m.Registry) }

// ProbesHandler answers /livez and /readyz.
func (m *Monitor) ProbesHandler() http.Handler { return metrics.Probes(m.ops, m.probes) }

// Serve serves /metrics, /livez and /readyz on addr (--metrics-addr) in
// the background until the function it returns is called, and returns the
// address it listens on. It fails at once when addr cannot be listened
// on.
func (m *Monitor) Serve(ctx context.Context, addr string, log *slog.Logger) (stop func(), bound net.Addr, err error) {
	log = orDiscard(log)
	ln, err := metrics.Listen(addr)
	if err != nil {
		return nil, nil, err
	}
	log.Info("pgbus: metrics and probes listening", "addr", ln.Addr().String(),
		"metrics", "http://"+ln.Addr().String()+metrics.PathMetrics, "readyz", "http://"+ln.Addr().String()+metrics.PathReadyz)
	probes := m.probes
	probes.Stopping = ctx.Done() // not ready while the workers drain
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := metrics.Serve(ctx, ln, metrics.Mux(m.Registry, m.ops, probes), log); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("pgbus: the metrics server stopped; scrapes of --metrics-addr fail until the process restarts", "err", err)
		}
	}()
	return func() { cancel(); <-done }, ln.Addr(), nil
}
