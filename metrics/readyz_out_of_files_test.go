package metrics_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
)

// A process with no file descriptor left to open a connection with (a
// low ulimit -n) is told by /readyz as what it is, with the limit to
// raise, not as a database that did not answer the health check.
func TestReadyzSaysTheProcessIsOutOfFiles(t *testing.T) {
	t.Parallel()
	st, runOut := pgtest.OutOfFilesStore(t)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log pgtest.SyncBuffer
	base := serve(t, metrics.Probes(svc, metrics.ProbeOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))}))
	if code, _, body := getReadyz(t, base); code != http.StatusOK {
		t.Fatalf("/readyz with the database up: %d %s", code, body)
	}
	runOut()
	var r metrics.Readiness
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
		var code int
		code, r, body = getReadyz(t, base)
		return code == http.StatusServiceUnavailable && len(r.Reasons) > 0
	})
	msg := r.Reasons[0].Message
	if !strings.Contains(msg, "file descriptor") || !strings.Contains(msg, "ulimit -n") || strings.Contains(msg, "did not answer") || strings.Contains(msg, "PostgreSQL runs") {
		t.Errorf("/readyz: %s\nwant the process's limit of open files, not a database that did not answer", body)
	}
}
