package cli_test

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// pgbus dashboard started while its database is down (a supervisor starts
// it whenever it likes) serves at once: its pages answer 503 saying the
// database does not answer yet and to reload in a moment, /readyz answers
// 503 and /livez 200. Once the database is started, the dashboard
// connects and migrates it by itself, and the same pages show, without a
// restart. It used to wait about a minute for the database, serving
// nothing, and then exit.
func TestDashboardStartedWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	dir, cluster := pgtest.PrivateCluster(t)
	url := cluster.URL()
	if err := cluster.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "dashboard", "--addr", "127.0.0.1:0", "--database-url", url, "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	base, logs := startListening(t, cmd, "pgbus dashboard listening", "url")
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	get := getter(t, strings.TrimSuffix(base, "/"))

	for _, path := range []string{"/", "/dlq"} {
		code, page, _ := get(path, "")
		if code != http.StatusServiceUnavailable || !strings.Contains(page, "the database does not answer yet") || !strings.Contains(page, "Reload this page in a moment") {
			t.Errorf("GET %s while the database is down: %d, want 503 saying the database does not answer yet and to reload:\n%s\nlog:\n%s", path, code, page, logs.String())
		}
	}
	if code, body, _ := get("/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, `"status":"UNREACHABLE"`) {
		t.Errorf("/readyz while the database is down: %d %s, want 503 UNREACHABLE", code, body)
	}
	if code, body, _ := get("/livez", ""); code != http.StatusOK {
		t.Errorf("/livez while the database is down: %d %q, want 200: the process serves", code, body)
	}

	pgtest.StartCluster(t, dir)
	var code int
	var page string
	pgtest.Eventually(t, 2*time.Minute, "the overview to answer once the database is up", func() bool {
		code, page, _ = get("/", "")
		return code == http.StatusOK
	})
	if !strings.Contains(page, "<h1>Overview</h1>") || strings.Contains(page, "does not answer") {
		t.Errorf("GET / once the database is up: %d, want the overview:\n%s", code, page)
	}
	// The probe's verdict is kept for a moment: it comes in time.
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 200 once the database is up", func() bool {
		code, body, _ = get("/readyz", "")
		return code == http.StatusOK
	})
	if !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz once the database is up: %d %s, want 200, ready", code, body)
	}
}
