package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/pgbus/pgbus/internal/basepath"
	"github.com/pgbus/pgbus/ops"
)

// withDashboard sends the requests of every path mux leaves to its
// catch-all to dash, behind the Host, Origin and body checks but not the
// bearer token, which a browser cannot send: dash authenticates them
// itself. Every other path goes to endpoints, behind every check, and so
// do the well-known paths MCP clients probe (OAuth discovery), which get
// the answers they got before the dashboard. Under a base path, the
// dashboard gets the request with it, as it came. loggedIn is the
// dashboard's check of a login (loginCheck).
func (s *Security) withDashboard(endpoints http.Handler, mux *http.ServeMux, dash http.Handler, base string, loggedIn func(*http.Request) bool) http.Handler {
	page := s.wrap(dash, false, loggedIn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "/" && !strings.HasPrefix(r.URL.Path, base+"/.well-known/") {
			page.ServeHTTP(w, r)
			return
		}
		endpoints.ServeHTTP(w, r)
	})
}

// loginCheck is the dashboard's check that a request is of a logged-in
// browser or script, nil when dash has none.
func loginCheck(dash http.Handler) func(*http.Request) bool {
	if d, ok := dash.(interface{ LoggedIn(*http.Request) bool }); ok {
		return d.LoggedIn
	}
	return nil
}

// sameOrigin reports whether origin names the host the request was sent
// to, as a browser's form on one of the dashboard's own pages does (its
// scheme may be https in front of a TLS proxy). The Host header itself is
// checked against the server's names before this.
func sameOrigin(origin, host string) bool {
	n := normalizeOrigin(origin)
	if n == "" {
		return false
	}
	u, err := url.Parse(n)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// ServeDashboard serves the dashboard alone, without an MCP endpoint, on
// ln under the security of the HTTP transport configured by cfg (whose
// Transport is TransportHTTP and whose Dashboard is set), until ctx is
// done; then it shuts down gracefully. It closes ln. cfg.Probes, when
// set, answers PathLivez and PathReadyz under the base path, as beside
// the MCP endpoint: without the bearer token. cfg.Metrics is not served.
func ServeDashboard(ctx context.Context, ln net.Listener, cfg HTTPConfig) error {
	if err := refuseNil("ServeDashboard", needContext(ctx)); err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	cfg.command = commandDashboard
	cfg = cfg.withDefaults()
	if err := cfg.Check(); err != nil {
		_ = ln.Close()
		return err
	}
	if cfg.Dashboard == nil {
		_ = ln.Close()
		return errors.New("mcpserver: ServeDashboard needs HTTPConfig.Dashboard")
	}
	sec, err := NewSecurity(cfg, ln.Addr())
	if err != nil {
		_ = ln.Close()
		return err
	}
	base, _ := basepath.Clean(cfg.BasePath) // Check accepted it
	who := ops.Caller{Transport: cfg.Transport, Principal: sec.Principal()}
	h := sec.wrap(identify(cfg.Dashboard, who), false, loginCheck(cfg.Dashboard))
	if cfg.Probes != nil || cfg.Metrics != nil {
		// A load balancer, Kubernetes or Prometheus reaches the dashboard
		// as it does the MCP endpoint: the same paths, under the same
		// checks (the metrics behind the bearer token, the probes
		// without). Every other path is the dashboard's, as it came.
		mux := http.NewServeMux()
		if cfg.Probes != nil {
			sec.handleProbes(mux, base, cfg.Probes)
		}
		if cfg.Metrics != nil {
			mux.Handle(base+PathMetrics, http.StripPrefix(base, cfg.Metrics))
		}
		served, page := sec.Wrap(identify(mux, who)), h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if sec.open[r.URL.Path] || cfg.Metrics != nil && r.URL.Path == base+PathMetrics {
				served.ServeHTTP(w, r)
				return
			}
			page.ServeHTTP(w, r)
		})
	}
	srv := newHTTPServer(ctx, cfg, underBase(base, h))
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve the dashboard: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("shut down the dashboard: %w", err)
		}
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
