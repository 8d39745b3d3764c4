package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// bouncerAdvice is what pgbus says of a connection PgBouncer took and did
// not answer: it may have no server connection to give.
const bouncerAdvice = "PgBouncer has no server connection to give"

// pgbus serve and pgbus dashboard started through a PgBouncer whose
// database is paused (PgBouncer takes the connection and answers none of
// its statements until its query_wait_timeout, two minutes) serve at
// once: each try to reach the database gives up at the database call
// timeout, so /readyz answers 503 UNREACHABLE, and pgbus_health, or the
// dashboard's pages, say the database is unreachable with PgBouncer's
// advice; the process keeps trying
// in the background, and is ready once PgBouncer resumes. Their start, and
// each background try, used to wait for PgBouncer's two minutes: the
// server did not listen, and past the minute this test waits it fails.
func TestServeAndDashboardStartedBehindAPausedBouncer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, listening string }{
		{"serve", "pgbus MCP server listening"},
		{"dashboard", "pgbus dashboard listening"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := bouncertest.Start(t, pgtest.NewDatabase(t))
			if r := pgbus(t, []string{"DATABASE_URL=" + b.URL()}, "migrate"); r.code != 0 {
				t.Fatalf("migrate through pgbouncer: exit %d\n%s", r.code, r.stderr)
			}
			b.Pause(t)
			args := []string{"serve", "--transport", "http", "--no-workers"}
			if c.name == "dashboard" {
				args = []string{"dashboard"}
			}
			cmd := exec.Command(binary, append(args, "--addr", "127.0.0.1:0", "--log-format", "json")...)
			cmd.Env = append(baseEnv(), "DATABASE_URL="+b.URL(), "PGBUS_DATABASE_CALL_TIMEOUT=1s")
			endpoint, logs := startListening(t, cmd, c.listening, "url")
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
			})
			origin := strings.TrimSuffix(strings.TrimSuffix(endpoint, "/mcp"), "/")
			get := getter(t, origin)

			var ready struct {
				Status  string         `json:"status"`
				Reasons []healthReason `json:"reasons"`
			}
			code, body, _ := get("/readyz", "")
			if err := json.Unmarshal([]byte(body), &ready); err != nil {
				t.Fatalf("/readyz: %d %s: %v", code, body, err)
			}
			if code != http.StatusServiceUnavailable || ready.Status != "UNREACHABLE" || len(ready.Reasons) == 0 || ready.Reasons[0].Code != "database_unreachable" {
				t.Errorf("/readyz while pgbouncer is paused: %d %s\nwant 503 UNREACHABLE, database_unreachable\nlog:\n%s", code, body, logs.String())
			}
			if c.name == "dashboard" {
				if code, page, _ := get("/", ""); code != http.StatusServiceUnavailable || !strings.Contains(page, "the database does not answer yet") || !strings.Contains(page, bouncerAdvice) {
					t.Errorf("GET / while pgbouncer is paused: %d, want 503 saying the database does not answer yet and %q:\n%s", code, bouncerAdvice, page)
				}
			} else {
				ctx, cancel := context.WithTimeout(pgtest.Context(t), 2*time.Minute)
				defer cancel()
				mc := connectHTTP(t, ctx, endpoint, "", logs)
				status, reasons := healthOf(t, mc)
				if status != "UNREACHABLE" || len(reasons) == 0 || reasons[0].Code != "database_unreachable" || !strings.Contains(reasons[0].Message, bouncerAdvice) {
					t.Errorf("pgbus_health while pgbouncer is paused: %s %+v\nwant UNREACHABLE, database_unreachable, saying %q", status, reasons, bouncerAdvice)
				}
			}

			// The background tries give up at the call timeout too, and go on.
			pgtest.Eventually(t, time.Minute, "a second background try to reach the paused pgbouncer", func() bool {
				return strings.Contains(logs.String(), `"tries":2`)
			})
			b.Resume(t)
			pgtest.Eventually(t, 2*time.Minute, "/readyz to answer 200 once pgbouncer resumed", func() bool {
				code, _, _ := get("/readyz", "")
				return code == http.StatusOK
			})
		})
	}
}
