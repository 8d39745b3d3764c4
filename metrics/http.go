package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgbus/pgbus/internal/quietlog"
	"github.com/pgbus/pgbus/ops"
)

// Paths of the endpoints.
const (
	PathMetrics = "/metrics"
	PathLivez   = "/livez"
	PathReadyz  = "/readyz"
)

// Handler serves the metrics gathered by g in the Prometheus exposition
// formats: the text format, or OpenMetrics to a scraper that asks for it
// (its Accept header).
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// Readiness is the body of /readyz: whether the process is ready, and the
// health verdict with its reasons.
type Readiness struct {
	// Ready is what the status code says: the database answers, its
	// schema is ready for this process, no queue the process works is
	// STALLED, and the workers it runs did not stop on an error
	// (workers_stopped).
	Ready bool `json:"ready"`
	// Status is ops.HealthOK, HealthDegraded or HealthStalled, the verdict
	// on every queue, or Unreachable when the database could not be asked
	// (its reason database_unreachable), or when it answers but this
	// process holds its calls until the schema is ready (schema_not_ready,
	// saying why), or when it answers but refuses the check
	// (health_check_refused: the role may not read pgbus's tables, or the
	// schema cannot be used).
	Status string `json:"status"`
	// Reasons are the verdict's reasons, those that make the process
	// unready first, at most MaxReadyReasons; Omitted counts the rest.
	Reasons []ReadyReason `json:"reasons"`
	Omitted int           `json:"omitted,omitempty"`
	// Hidden counts the reasons left out of an answer to a request marked
	// WithoutReasons: pgbus health, the MCP tool pgbus_health and the
	// dashboard show them.
	Hidden int `json:"hidden,omitempty"`
}

type hideReasonsKey struct{}

// WithoutReasons marks r so that PathReadyz answers it with its verdict
// alone, no reason: for a server that asks a bearer token everywhere but
// of its probes, which would otherwise name its queues and what ails them
// to anyone who can reach it.
func WithoutReasons(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), hideReasonsKey{}, true))
}

// MaxReadyReasons bounds the reasons of a Readiness: the body is served
// without a token, and pgbus health lists them all.
const MaxReadyReasons = 20

// ReadyReason is one reason of the verdict: one that makes it worse than
// OK, or a NOTICE that leaves it as it is.
type ReadyReason struct {
	Status  string `json:"status"`
	Code    string `json:"code"`
	Queue   string `json:"queue,omitempty"`
	Message string `json:"message"`
}

// Unreachable is the status of /readyz when the database cannot be asked.
const Unreachable = ops.HealthUnreachable

// probeCache is how long one health verdict answers /readyz.
const probeCache = time.Second

// ProbeOptions say what /readyz answers for: the process it runs in.
type ProbeOptions struct {
	// Queues are the queues the process works. A STALLED reason about one
	// of them (or about one of its priority levels) makes /readyz answer
	// 503; a STALLED reason about another queue is in the body only, since
	// neither holding this process back from a rollout nor restarting it
	// mends a queue it does not work. A process that works no queue (an
	// MCP server, a dashboard) is ready while the database answers and
	// its pgbus schema is ready for the process.
	Queues []string
	// Alive gives the ids of the process's own worker processes, which
	// /readyz counts running whatever their heartbeats say: the process
	// answering knows they run, though a database that was down held
	// their heartbeats back. Nil: none.
	Alive func() []string
	// Logger gets the error of a database that does not answer or refuses
	// the connection: the body, served without a token, does not give it
	// (it names the database's user, host and port).
	Logger *slog.Logger
	// Stopping, closed once the process is stopping (its workers finish
	// their running jobs and take no new ones), makes /readyz answer 503
	// from then, status STOPPING, so that a load balancer or Kubernetes
	// sends it nothing new while it drains; /livez stays 200. Nil: never.
	Stopping <-chan struct{}
}

// Stopping is the readiness status of a process that is stopping.
const Stopping = "STOPPING"

// Probes answers PathLivez (200 while the process serves) and PathReadyz:
// 200 when the database answers, its schema is ready, no queue of
// o.Queues is STALLED and the workers the process runs did not stop on an
// error (ops.Service.StoppedWorkers, reason workers_stopped, said whether
// the verdict could be read or not), else 503, with a Readiness as JSON.
// Other paths get 404.
func Probes(svc *ops.Service, o ProbeOptions) http.Handler {
	if svc == nil {
		panic("metrics.Probes: the operations layer is nil; make one with ops.New")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &probes{svc: svc, opts: o}
	mux := http.NewServeMux()
	mux.HandleFunc(PathLivez, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(PathReadyz, p.ready)
	return mux
}

type probes struct {
	svc  *ops.Service
	opts ProbeOptions

	mu     sync.Mutex
	at     time.Time
	code   int
	answer Readiness
	warned quietlog.Log // the failed checks told to the log
}

func (p *probes) ready(w http.ResponseWriter, r *http.Request) {
	code, answer := p.verdict(r.Context())
	if why, ok := p.svc.StoppedWorkers(); ok && !slices.ContainsFunc(answer.Reasons, func(r ReadyReason) bool { return r.Code == why.Code }) {
		// The verdict could not be read (often for the cause the workers
		// stopped on), but the process knows its workers stopped.
		code, answer.Ready = http.StatusServiceUnavailable, false
		if answer.Status != Unreachable {
			answer.Status = ops.HealthStalled
		}
		answer.Reasons = append([]ReadyReason{{Status: why.Status, Code: why.Code, Message: why.Message}}, answer.Reasons...)
		if n := len(answer.Reasons) - MaxReadyReasons; n > 0 {
			answer.Reasons, answer.Omitted = answer.Reasons[:MaxReadyReasons], answer.Omitted+n
		}
	}
	select {
	case <-p.opts.Stopping:
		code, answer = http.StatusServiceUnavailable, Readiness{Status: Stopping, Reasons: []ReadyReason{{Status: Stopping, Code: "stopping",
			Message: "this process is stopping: its workers finish their running jobs and take no new ones"}}}
	default:
	}
	if hide, _ := r.Context().Value(hideReasonsKey{}).(bool); hide {
		answer = Readiness{Ready: answer.Ready, Status: answer.Status, Reasons: []ReadyReason{}, Hidden: len(answer.Reasons) + answer.Omitted}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(answer)
}

// verdict asks for the health verdict at most once per probeCache, so
// that probes from many places read the database once.
func (p *probes) verdict(ctx context.Context) (int, Readiness) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < probeCache {
		return p.code, p.answer
	}
	// The bound of a health check (ops.HealthCheckTimeout): a probe
	// answers while the database is in trouble.
	ctx, cancel := context.WithTimeout(ctx, ops.HealthCheckTimeout)
	defer cancel()
	// Overview lists every reason, where Health may leave some out to
	// keep an agent's response short: one about this process's queues
	// must not be among those.
	var alive []string
	if p.opts.Alive != nil {
		alive = p.opts.Alive()
	}
	o, err := p.svc.Overview(ctx, ops.OverviewRequest{Alive: alive})
	if errors.Is(err, ops.ErrSchemaNotReady) {
		// The process holds its calls while it readies the schema of a
		// database that answers (ops.Gate): not ready, and the gate says
		// why, which names no host or user.
		msg, _ := ops.RedactText(err.Error())
		p.warned.OK()
		p.at, p.code, p.answer = time.Now(), http.StatusServiceUnavailable, Readiness{Status: Unreachable, Reasons: []ReadyReason{{Status: Unreachable,
			Code: "schema_not_ready", Message: msg}}}
		return p.code, p.answer
	}
	if kind := ops.ErrorKind(err); err != nil && (kind == ops.KindPermission || kind == ops.KindSchema) {
		// The database answered, and refused: no wait mends it, and the
		// check was not slow. The error, which names the role, goes to
		// the log, with what to do.
		p.at = time.Now()
		if p.warned.Due(p.at) {
			p.opts.Logger.Warn("pgbus: /readyz: the database refused the health check; said here once a minute while it lasts", "err", err)
		}
		msg := "the database refused the health check for want of a privilege (the process's log has its error and the GRANT statements that mend it); grant the role pgbus connects as what it lacks"
		if kind == ops.KindSchema {
			msg = "the health check found the pgbus schema unusable (the process's log says why and what to do)"
		}
		p.code, p.answer = http.StatusServiceUnavailable, Readiness{Status: Unreachable, Reasons: []ReadyReason{{Status: Unreachable,
			Code: "health_check_refused", Message: msg}}}
		return p.code, p.answer
	}
	if err != nil && ops.DatabaseRefused(err) {
		// The database answered the check's new connection and refused
		// it (a password changed, a role's CONNECTION LIMIT reached): it
		// runs, so neither a slow check nor one unanswered. The error,
		// which names the role, goes to the log; the advice names none.
		p.at = time.Now()
		if p.warned.Due(p.at) {
			p.opts.Logger.Warn("pgbus: /readyz: the database refused the health check's connection; said here once a minute while it lasts", "err", err)
		}
		p.code, p.answer = http.StatusServiceUnavailable, Readiness{Status: Unreachable, Reasons: []ReadyReason{{Status: Unreachable,
			Code: "database_unreachable", Message: "the database refused the health check's connection (the process's log has its error); " + ops.DatabaseAdvice(err)}}}
		return p.code, p.answer
	}
	if err != nil && ops.OutOfFiles(err) {
		// This process could not open the check's connection for want of
		// a file descriptor: the database was not asked, so it is no
		// database that did not answer.
		p.at = time.Now()
		if p.warned.Due(p.at) {
			p.opts.Logger.Warn("pgbus: /readyz: this process has no file descriptor left to open the health check's connection; said here once a minute while it lasts", "err", err)
		}
		p.code, p.answer = http.StatusServiceUnavailable, Readiness{Status: Unreachable, Reasons: []ReadyReason{{Status: Unreachable,
			Code: "database_unreachable", Message: "the health check could not open a connection to the database (the process's log has its error); " + ops.DatabaseAdvice(err)}}}
		return p.code, p.answer
	}
	if err != nil {
		// An error of this request's own context says nothing of the
		// database: do not keep it.
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.at = time.Now()
			if p.warned.Due(p.at) {
				p.opts.Logger.Warn("pgbus: /readyz: the database did not answer the health check; said here once a minute while it lasts", "err", err)
			}
		}
		busy := p.svc.PoolBusy() // before SlowRead, which may wait while calls give theirs back
		// A process that holds its calls until it connects (ops.Gate)
		// is not ready whatever a read of its own would find.
		if heldBy, answered := p.svc.SlowRead(context.WithoutCancel(ctx)); answered && !errors.Is(err, ops.ErrNotReady) {
			// A session holding a queue's table, a database too busy to
			// answer in time, or calls of this process holding every
			// connection of its pool (as calls waiting for such a lock
			// do): no restart or failover cures it, and the process goes
			// on with what it can.
			msg := fmt.Sprintf("the health check took longer than %s, though the database answers: it is overloaded, or a long statement holds a table", ops.HealthCheckTimeout)
			switch {
			case busy != "" && heldBy != "":
				msg = fmt.Sprintf("the health check waited %s, though the database answers a connection of its own: ", ops.HealthCheckTimeout) + busy +
					"; another session holds a lock on pgbus's or PGMQ's tables: " + heldBy
			case busy != "":
				msg = fmt.Sprintf("the health check waited %s, though the database answers a connection of its own: ", ops.HealthCheckTimeout) + busy +
					"; if it lasts, give the process a larger pool (pool_max_conns in the database URL)"
			case heldBy != "":
				// Its reads wait for a lock at most their own bound
				// (ops.Options.ReadLockWait), shorter than
				// ops.HealthCheckTimeout.
				msg = "the health check waited for a lock another session holds on pgbus's or PGMQ's tables: " + heldBy
			}
			p.code, p.answer = http.StatusOK, Readiness{Ready: true, Status: ops.HealthDegraded, Reasons: []ReadyReason{{Status: ops.HealthDegraded,
				Code: "health_check_slow", Message: msg}}}
			return p.code, p.answer
		}
		// What to check, as the health check says it, without the error,
		// which names the database's user, host and port.
		advice := ops.DatabaseAdvice(err)
		if advice == "" {
			advice = "check that PostgreSQL runs and the connection settings"
		}
		p.code, p.answer = http.StatusServiceUnavailable, Readiness{Status: Unreachable, Reasons: []ReadyReason{{Status: Unreachable,
			Code: "database_unreachable", Message: "the database did not answer the health check (the process's log has its error); " + advice}}}
		return p.code, p.answer
	}
	p.warned.OK()
	h := o.Health
	own := h.StalledFor(p.opts.Queues)
	out := Readiness{Ready: len(own) == 0, Status: h.Status, Reasons: []ReadyReason{}}
	isOwn := func(r ops.HealthReason) bool {
		return slices.ContainsFunc(own, func(o ops.HealthReason) bool { return o.Code == r.Code && o.Queue == r.Queue })
	}
	for _, r := range slices.Concat(own, slices.DeleteFunc(slices.Clone(h.Reasons), isOwn)) {
		if len(out.Reasons) == MaxReadyReasons {
			out.Omitted++
			continue
		}
		out.Reasons = append(out.Reasons, ReadyReason{Status: r.Status, Code: r.Code, Queue: r.Queue, Message: r.Message})
	}
	code := http.StatusOK
	if !out.Ready {
		code = http.StatusServiceUnavailable
	}
	p.at, p.code, p.answer = time.Now(), code, out
	return code, out
}

// Mux serves Handler(g) at PathMetrics and Probes(svc, o) at PathLivez and
// PathReadyz; with a nil svc, only PathMetrics and PathLivez.
func Mux(g prometheus.Gatherer, svc *ops.Service, o ProbeOptions) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, Handler(g))
	if svc != nil {
		probes := Probes(svc, o)
		mux.Handle(PathLivez, probes)
		mux.Handle(PathReadyz, probes)
	} else {
		mux.HandleFunc(PathLivez, func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	}
	probes := PathLivez + " and " + PathReadyz
	if svc == nil {
		probes = PathLivez
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("pgbus: no endpoint %s here; scrape %s, probe %s", r.URL.Path, PathMetrics, probes), http.StatusNotFound)
	})
	return mux
}

// Serve serves h on ln until ctx ends, then shuts down within a few
// seconds; it closes ln. Only GET and HEAD are answered. Requests from
// browsers are refused (403): any with an Origin header unless the server
// listens on loopback only and the origin is a loopback one; and when it
// listens on loopback only, any whose Host header does not name loopback
// (a page that rebinds its own name to 127.0.0.1). A server listening on
// other addresses accepts any Host, so that scrapers may use any name.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{
		Handler:           guard(isLoopback(host), h, log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          quietlog.ServerLog(log, "the metrics server at "+ln.Addr().String()),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve metrics: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics: %w", err)
	}
	return nil
}

// Listen opens the listener of a metrics address (host:port); an address
// without a host listens on every interface.
func Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--metrics-addr %q is not host:port (for example 127.0.0.1:9187, or :9187 for every interface): %v", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %v; choose another port or stop what uses it", addr, err) // %v: a listener refused is no database that does not answer
	}
	return ln, nil
}

func guard(loopback bool, next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(code int, msg string) {
			log.Warn("pgbus metrics: request refused", "status", code, "method", r.Method, "path", r.URL.Path,
				"remote", r.RemoteAddr, "host", r.Host, "origin", r.Header.Get("Origin"), "reason", msg)
			http.Error(w, "pgbus: "+msg, code)
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			refuse(http.StatusMethodNotAllowed, "only GET and HEAD are answered here")
			return
		}
		if loopback {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !isLoopback(host) {
				refuse(http.StatusForbidden, fmt.Sprintf("Host %q does not name loopback, where this server listens; scrape it as localhost or 127.0.0.1", r.Host))
				return
			}
		}
		if origin := r.Header.Get("Origin"); origin != "" && !(loopback && loopbackOrigin(origin)) {
			refuse(http.StatusForbidden, fmt.Sprintf("Origin %q: the metrics and probes are not served to web pages", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(host string) bool {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopback(u.Hostname())
}
