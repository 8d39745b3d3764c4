package mcpserver_test

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
)

// The HTTP transports' accepts (and the dashboard's beside them) that
// fail for want of a file descriptor are told in the process's structured
// log, once and with the limit to raise, rather than as net/http's bare
// line at each of its retries.
func TestHTTPAcceptErrorsAreToldOnceWithAdvice(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failing := pgtest.OutOfFilesListener(ln, 6)
	var logs pgtest.SyncBuffer
	base, stop := startHTTPWith(t, deps(t, pgtest.Store(t)), mcpserver.Options{},
		mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, failing)
	resp, err := http.Get(base + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	stop()
	out := logs.String()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "too many open files") {
			n++
		}
	}
	if n != 1 || strings.Contains(out, "http: Accept error") || !strings.Contains(out, "ulimit -n") || !strings.Contains(out, "cannot accept connections") {
		t.Errorf("%d lines name the accept error; want one, in the structured log, with the limit to raise:\n%s", n, out)
	}
}
