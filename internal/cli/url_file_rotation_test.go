package cli_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The file DATABASE_URL_FILE names is read again for each new connection:
// a secret rotated under a running worker (the role's password changed,
// the mounted file updated) is used from its next connection on, so that
// /readyz, 503 while the database refuses the old password, answers 200
// again without a restart.
func TestDatabaseURLFileRotatedUnderARunningWorker(t *testing.T) {
	t.Parallel()
	superURL := pgtest.PasswordCluster(t)
	pgtest.OpenStore(t, superURL)
	role, roleURL := pgtest.NewRole(t, superURL)
	pgbus(t, []string{"DATABASE_URL=" + superURL}, "queue", "create", "rotated")
	pgtest.Exec(t, superURL, store.OperatorGrants(role))
	file := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(file, []byte(roleURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "work", "--queue", "rotated", "--handler", "demo",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append(baseEnv(), "DATABASE_URL_FILE="+file)
	metricsURL, logs := startListening(t, cmd, "pgbus: metrics and probes listening", "metrics")
	defer func() { _ = cmd.Process.Kill() }()
	var lastReady string // the last /readyz answer, for a failure to show
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last /readyz answer: %s\nthe worker's log:\n%s", lastReady, logs.String())
		}
	})
	readyz := strings.TrimSuffix(metricsURL, "/metrics") + "/readyz"
	ready := func() (int, string) {
		resp, err := http.Get(readyz)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		lastReady = time.Now().Format(time.RFC3339Nano) + " " + resp.Status + " " + string(b)
		return resp.StatusCode, string(b)
	}
	if code, body := ready(); code != http.StatusOK {
		t.Fatalf("/readyz before the rotation: %d %s", code, body)
	}

	// The rotation: the password changes, the sessions logged in with the
	// old one end (a restart of the server, a pooler's), and the process
	// must connect again.
	u, err := url.Parse(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "rotated-0123456789")
	newURL := u.String()
	st := pgtest.OpenStore(t, superURL)
	pgtest.Exec(t, superURL, "ALTER ROLE "+role+" PASSWORD 'rotated-0123456789'")
	// Every session begun before the change was committed ends: those
	// that logged in with the old password, and any still logging in
	// then, which PostgreSQL lists only once logged in, so that they are
	// ended again until /readyz sees the change. One begun after it
	// cannot log in with the old password.
	var altered time.Time
	if err := st.Pool().QueryRow(ctx, "SELECT clock_timestamp()").Scan(&altered); err != nil {
		t.Fatal(err)
	}
	endOldSessions := func() int {
		return pgtest.Int(t, st, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND backend_start < $1 AND (usename = $2 OR usename IS NULL)`, altered, role)
	}
	var code int
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503 while the file holds the old password", func() bool {
		if endOldSessions() > 0 {
			return false
		}
		code, body = ready()
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "refused") {
		t.Errorf("/readyz with the old password: %s; want it to say the database refused the connection", body)
	}
	if err := os.WriteFile(file, []byte(newURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "/readyz to answer 200 once the file holds the new password", func() bool {
		code, body = ready()
		return code == http.StatusOK
	})
	// A job sent now is worked: the workers connect with it too.
	pgbus(t, []string{"DATABASE_URL=" + superURL}, "send", "rotated", `{"simulate": "ok"}`)
	pgtest.Eventually(t, time.Minute, "the job sent after the rotation to be worked", func() bool {
		return pgtest.Live(t, st, "rotated") == 0
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}
