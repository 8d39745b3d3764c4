package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// pgbus dashboard serves the dashboard alone: the login page guards it,
// the token opens it, no MCP endpoint answers, and SIGTERM stops it.
func TestDashboardCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "dash-token-0123456789"
	cmd := exec.CommandContext(ctx, binary, "dashboard", "--addr", "127.0.0.1:0", "--database-url", url, "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=" + token}
	base, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, bearer bool) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(base, "/")+path, nil)
		if bearer {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Location")
	}
	if code, _, to := get("/", false); code != http.StatusSeeOther || !strings.HasPrefix(to, "/login") {
		t.Fatalf("GET / without the token: %d to %q", code, to)
	}
	if code, page, _ := get("/", true); code != http.StatusOK || !strings.Contains(page, "<h1>Overview</h1>") {
		t.Fatalf("GET / with the token: %d\n%s", code, page)
	}
	if code, page, _ := get("/mcp", true); code != http.StatusNotFound || !strings.Contains(page, "without an MCP endpoint") {
		t.Fatalf("GET /mcp of the dashboard alone: %d\n%s", code, page)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// pgbus dashboard serves the probes of pgbus serve, for a load balancer
// or Kubernetes in front of it, without the token that guards its pages
// (and its metrics behind that token, as pgbus serve does):
// /livez answers while it serves, /readyz while the database answers, and
// 503 once it does not, without the database's error. They were not
// served: a probe got the dashboard's login redirect.
func TestDashboardCommandProbes(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const token = "dash-token-0123456789"
	cmd := exec.CommandContext(ctx, binary, "dashboard", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN=" + token}
	url, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	get := getter(t, strings.TrimSuffix(url, "/"))
	if code, body, _ := get("/livez", ""); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /livez without the token: %d %q; want 200 ok", code, body)
	}
	if code, body, _ := get("/readyz", ""); code != http.StatusOK || !strings.Contains(body, `"ready":true`) {
		t.Errorf("GET /readyz without the token: %d %s; want 200, ready", code, body)
	}
	// Its reasons, which name the queues, are left out, only counted,
	// whatever token a request sends: the token keeps the queues from
	// everyone else.
	st := pgtest.OpenStore(t, dbURL)
	q := pgtest.NewQueue(t, st, "unseen")
	if _, err := st.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", token, "wrong-token"} {
		var body string
		pgtest.Eventually(t, time.Minute, "/readyz to count a reason", func() bool {
			_, body, _ = get("/readyz", tok)
			return strings.Contains(body, `"hidden":`)
		})
		if strings.Contains(body, q) || !strings.Contains(body, `"reasons":[]`) {
			t.Errorf("/readyz with token %q: %s; want no reason shown, none naming %s", tok, body, q)
		}
	}
	if code, _, to := get("/", ""); code != http.StatusSeeOther || !strings.HasPrefix(to, "/login") {
		t.Errorf("GET / without the token: %d to %q; the pages still need the login", code, to)
	}
	// Its metrics, the database's gauges, as pgbus serve's: behind the
	// token.
	if code, body, _ := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d %.200q; want 401", code, body)
	}
	if code, body, _ := get("/metrics", token); code != http.StatusOK || !strings.Contains(body, "pgbus_database_up 1") {
		t.Errorf("GET /metrics with the token: %d %.300q; want 200 with pgbus_database_up 1", code, body)
	}
	pgtest.Exec(t, pgtest.URL(t), "DROP DATABASE "+cfg.Database+" WITH (FORCE)")
	var code int
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
		code, body, _ = get("/readyz", "")
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, `"status":"UNREACHABLE"`) || strings.Contains(body, cfg.Database) {
		t.Errorf("/readyz with the database gone: %s; want UNREACHABLE, without the database's name", body)
	}
	if code, body, _ := get("/livez", ""); code != http.StatusOK {
		t.Errorf("GET /livez with the database gone: %d %q; want 200: the process serves", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// Bad dashboard command lines are usage errors found before any database
// starts.
func TestDashboardUsageErrors(t *testing.T) {
	t.Parallel()
	for label, c := range map[string]struct {
		args []string
		want string
	}{
		"public addr without token": {[]string{"dashboard", "--addr", "0.0.0.0:0"}, "--auth-token"},
		"short token off loopback":  {[]string{"dashboard", "--addr", "0.0.0.0:0", "--auth-token", "a"}, "at least 32 characters"},
		"bad addr":                  {[]string{"dashboard", "--addr", "nonsense"}, "host:port"},
		"bad safe field":            {[]string{"dashboard", "--safe-fields", "tenant,file..type"}, `--safe-fields: safe field "file..type"`},
	} {
		r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and a message with %q", label, r.code, r.stderr, r.stdout, c.want)
		}
	}
}
