package cli_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// getter fetches paths of a server without following redirects, with the
// bearer token when one is given.
func getter(t *testing.T, origin string) func(path, bearer string) (int, string, string) {
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(path, bearer string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, origin+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Location")
	}
}

// pgbus dashboard --base-path /pgbus/ serves the dashboard under /pgbus/
// alone, with its probes, the flag winning over PGBUS_BASE_PATH, and logs
// that address.
func TestDashboardCommandBasePath(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "dash-token-0123456789"
	cmd := exec.CommandContext(ctx, binary, "dashboard", "--addr", "127.0.0.1:0", "--database-url", pgtest.NewDatabase(t), "--log-format", "json", "--base-path", "/pgbus/")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=" + token, "PGBUS_BASE_PATH=/other"}
	url, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	origin, found := strings.CutSuffix(url, "/pgbus/")
	if !found {
		t.Fatalf("the dashboard says it listens at %s, not under /pgbus/", url)
	}
	get := getter(t, origin)
	if code, _, to := get("/pgbus/", ""); code != http.StatusSeeOther || to != "/pgbus/login?next=%2F" {
		t.Fatalf("GET /pgbus/ without the token: %d to %q", code, to)
	}
	if code, page, _ := get("/pgbus/", token); code != http.StatusOK || !strings.Contains(page, "<h1>Overview</h1>") || !strings.Contains(page, `href="/pgbus/static/style.css`) {
		t.Fatalf("GET /pgbus/ with the token: %d\n%s", code, page)
	}
	if code, _, to := get("/pgbus", ""); code != http.StatusMovedPermanently || to != "/pgbus/" {
		t.Fatalf("GET /pgbus: %d to %q", code, to)
	}
	// The probes are under the base path too, without the token.
	for path, want := range map[string]string{"/pgbus/livez": "ok", "/pgbus/readyz": `"ready":true`} {
		if code, body, _ := get(path, ""); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s without the token: %d %q; want 200 with %s", path, code, body, want)
		}
	}
	for _, p := range []string{"/", "/dlq", "/other/", "/livez", "/readyz"} {
		if code, page, _ := get(p, token); code != http.StatusNotFound {
			t.Errorf("GET %s outside the base path: %d\n%s", p, code, page)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// pgbus serve --transport http under PGBUS_BASE_PATH serves everything
// under it: an MCP client works against /pgbus/mcp, the probes and
// metrics answer under it, the dashboard is at /pgbus/, and nothing
// answers outside it.
func TestServeHTTPBasePath(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "serve-token-0123456789"
	cmd := exec.CommandContext(ctx, binary, "serve", "--transport", "http", "--addr", "127.0.0.1:0", "--database-url", pgtest.NewDatabase(t), "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=" + token, "PGBUS_BASE_PATH=/pgbus"}
	endpoint, logs := startListening(t, cmd, "pgbus MCP server listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	origin, found := strings.CutSuffix(endpoint, "/pgbus/mcp")
	if !found {
		t.Fatalf("the MCP endpoint is said to be %s, not under /pgbus", endpoint)
	}
	c := connectHTTP(t, ctx, endpoint, token, logs)
	callTool(t, c, "pgbus_queue_stats", map[string]any{})
	_ = c.Close()

	get := getter(t, origin)
	for path, want := range map[string]int{"/pgbus/livez": http.StatusOK, "/pgbus/readyz": http.StatusOK, "/pgbus/metrics": http.StatusUnauthorized} {
		if code, body, _ := get(path, ""); code != want {
			t.Errorf("GET %s without the token: %d, want %d\n%s", path, code, want, body)
		}
	}
	if code, body, _ := get("/pgbus/metrics", token); code != http.StatusOK || !strings.Contains(body, "pgbus_") {
		t.Errorf("GET /pgbus/metrics with the token: %d\n%.300s", code, body)
	}
	if code, page, _ := get("/pgbus/", token); code != http.StatusOK || !strings.Contains(page, `data-live-src="/pgbus/live"`) {
		t.Errorf("GET /pgbus/ with the token: %d\n%s", code, page)
	}
	for _, p := range []string{"/mcp", "/livez", "/metrics", "/", "/.well-known/oauth-protected-resource"} {
		if code, body, _ := get(p, token); code != http.StatusNotFound || !strings.Contains(body, "/pgbus/mcp") {
			t.Errorf("GET %s outside the base path: %d\n%s", p, code, body)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// A base path that is not a clean URL path, or one given to a transport
// that serves none, is refused before any database starts, saying what
// to give and where the value came from.
func TestBasePathUsageErrors(t *testing.T) {
	t.Parallel()
	dead := "DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for label, c := range map[string]struct {
		env  []string
		args []string
		want []string
	}{
		"no leading slash":   {nil, []string{"dashboard", "--base-path", "pgbus"}, []string{"--base-path", `"pgbus" does not start with /`, "such as /pgbus"}},
		"dot dot":            {nil, []string{"dashboard", "--base-path", "/a/../b"}, []string{"--base-path", ".. segment"}},
		"query":              {nil, []string{"serve", "--transport", "http", "--base-path", "/pgbus?x=1"}, []string{"--base-path", "? or #"}},
		"space":              {nil, []string{"dashboard", "--base-path", "/pg bus"}, []string{"--base-path", "not a character of a URL path"}},
		"too long":           {nil, []string{"dashboard", "--base-path", "/" + strings.Repeat("a", 300)}, []string{"--base-path", "more than 200"}},
		"from the env":       {[]string{"PGBUS_BASE_PATH=pgbus"}, []string{"dashboard"}, []string{"--base-path (from environment variable PGBUS_BASE_PATH)", "does not start with /"}},
		"sse":                {nil, []string{"serve", "--transport", "sse", "--base-path", "/pgbus"}, []string{"only --transport http serves under a base path", "/sse"}},
		"stdio":              {nil, []string{"serve", "--base-path", "/pgbus"}, []string{"only --transport http serves under a base path", "stdio"}},
		"stdio from the env": {[]string{"PGBUS_BASE_PATH=/pgbus"}, []string{"serve"}, []string{"(from environment variable PGBUS_BASE_PATH)", "stdio"}},
		"flag over bad env":  {[]string{"PGBUS_BASE_PATH=bad"}, []string{"dashboard", "--base-path", "/ok", "--addr", "0.0.0.0:0"}, []string{"--auth-token"}},
	} {
		r := usageRun(t, append([]string{dead}, c.env...), c.args...)
		ok := r.code == 2 && r.stdout == ""
		for _, w := range c.want {
			ok = ok && strings.Contains(r.stderr, w)
		}
		if !ok {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and a message with %q", label, r.code, r.stderr, r.stdout, c.want)
		}
	}
}
