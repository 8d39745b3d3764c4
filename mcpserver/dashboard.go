package mcpserver

import (
	"net/http"
	"net/url"
	"strings"
)

// withDashboard sends the requests of every path mux leaves to its
// catch-all to dash, behind the Host, Origin and body checks but not the
// bearer token, which a browser cannot send: dash authenticates them
// itself. Every other path goes to endpoints, behind every check, and so
// do the well-known paths MCP clients probe (OAuth discovery), which get
// the answers they got before the dashboard.
func (s *Security) withDashboard(endpoints http.Handler, mux *http.ServeMux, dash http.Handler) http.Handler {
	page := s.wrap(dash, false)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "/" && !strings.HasPrefix(r.URL.Path, "/.well-known/") {
			page.ServeHTTP(w, r)
			return
		}
		endpoints.ServeHTTP(w, r)
	})
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
