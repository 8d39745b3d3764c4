package cli_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pgbus work --metrics-addr makes a worker-only process scrapeable: its
// /metrics counts the jobs it ran and shows the queue's depth, and its
// probes answer.
func TestWorkMetricsAddr(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "scraped", "--backoff", "50ms", "--backoff-max", "1s")
	d.ok(t, "send", "scraped", `{"simulate": "ok"}`)
	d.ok(t, "send", "scraped", `{"simulate": "flaky", "failures": 1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "work", "--queue", "scraped", "--handler", "demo", "--poll-interval", "50ms",
		"--metrics-addr", "127.0.0.1:0", "--database-url", d.url, "--log-format", "json")
	cmd.Env = baseEnv()
	metricsURL, logs := startListening(t, cmd, "pgbus: metrics and probes listening", "metrics")
	defer func() { _ = cmd.Process.Kill() }()
	base := strings.TrimSuffix(metricsURL, "/metrics")
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	want := []string{
		`pgbus_jobs_finished_total{kind="",outcome="succeeded",queue="scraped",reason=""} 2`,
		`pgbus_jobs_finished_total{kind="",outcome="retried",queue="scraped",reason=""} 1`,
		`pgbus_queue_messages{queue="scraped",state="visible"} 0`,
		`pgbus_dlq_messages{queue="scraped"} 0`,
		"pgbus_workers_running 1",
	}
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := get(metricsURL)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
			}
		}
		if code == http.StatusOK && missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %d, lacks %q:\n%s\nlogs:\n%s", code, missing, body, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get(base + "/livez"); code != http.StatusOK {
		t.Errorf("/livez: %d %s", code, body)
	}
	if code, body := get(base + "/readyz"); code != http.StatusOK || !strings.Contains(body, `"status":`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
}

// A --metrics-addr that is not host:port is a usage error, found before
// the database is used.
func TestMetricsAddrUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"work", "--queue", "q", "--handler", "demo", "--metrics-addr", "nonsense"},
		{"serve", "--metrics-addr", "9187"},
	} {
		r := usageRun(t, []string{"DATABASE_URL=postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "is not host:port") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and host:port", args, r.code, r.stderr)
		}
	}
}

// An address another program listens on fails the server's start saying
// to choose another, not to look at the database's health, which answers.
func TestAddressInUseIsNoDatabaseOutage(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	msg := d.fails(t, 1, "dashboard", "--addr", ln.Addr().String())
	if !strings.Contains(msg, "choose another --addr or stop what uses it") || strings.Contains(msg, "health") {
		t.Fatalf("dashboard on an address in use: %s; want it to say choose another --addr, and nothing of the health check", msg)
	}
}
