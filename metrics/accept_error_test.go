package metrics_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
)

// The metrics server's accepts that fail for want of a file descriptor
// are told in the process's structured log, once and with the limit to
// raise, rather than as net/http's bare line at each of its retries.
func TestMetricsAcceptErrorsAreToldOnceWithAdvice(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failing := pgtest.OutOfFilesListener(ln, 6)
	var logs pgtest.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- metrics.Serve(ctx, failing, http.NotFoundHandler(), slog.New(slog.NewJSONHandler(&logs, nil)))
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "too many open files") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d lines name the accept error; want one:\n%s", n, out)
	}
	if strings.Contains(out, "http: Accept error") || !strings.Contains(out, "ulimit -n") || !strings.Contains(out, `"level":"WARN"`) {
		t.Errorf("the accept errors are not told in the structured log with the limit to raise:\n%s", out)
	}
}
