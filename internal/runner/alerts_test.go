package runner_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// countingReceiver is a webhook receiver over real HTTP that counts posts.
func countingReceiver(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	t.Cleanup(srv.Close)
	return srv, &n
}

func alertsConfig(t *testing.T, yaml string) *config.Alerts {
	t.Helper()
	f, err := config.Parse("pgbus.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return f.Alerts
}

// Alerts turned off send nothing. The proof is a second process with
// alerts on, started after it: it sends the alert for the new group, which
// it could not if the first had started a notifier (that one would lead).
func TestAlertsOffSendNothing(t *testing.T) {
	ctx := pgtest.Context(t)
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.CreateQueue(t, st, "orders")
	if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: pgtest.Name("w"), Hostname: "test", PID: 1, Queues: []string{"orders"}, Concurrency: 1, HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	offSrv, offPosts := countingReceiver(t)
	onSrv, onPosts := countingReceiver(t)

	for _, yaml := range []string{"log_level: info\n", "alerts:\n  enabled: false\n  url: " + offSrv.URL + "\n"} {
		stop, err := runner.StartAlerts(ctx, st, svc, alertsConfig(t, yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	var logs pgtest.SyncBuffer
	stop, err := runner.StartAlerts(ctx, st, svc, alertsConfig(t, "alerts:\n  url: "+onSrv.URL+"\n  check_interval: 1s\n"),
		slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The baseline is what the first check sees: the dead letters come
	// once it is recorded, not when the log says a check will take it.
	pgtest.Eventually(t, 30*time.Second, "the notifier's baseline", func() bool {
		_, err := st.LastAlertCheck(ctx)
		return strings.Contains(logs.String(), "this process sends the alerts") && err == nil
	})
	pgtest.DeadLetterN(t, st, "orders", 50, pgtest.DeadSpec{Kind: "charge", Class: "bank.declined", Message: "declined"})
	pgtest.Eventually(t, 30*time.Second, "the alert of the process with alerts on", func() bool { return onPosts.Load() >= 1 })
	if n := offPosts.Load(); n != 0 {
		t.Fatalf("alerts turned off posted %d times", n)
	}
}
