package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The workers page says, under a process that stopped on an error, why:
// redacted as it was stored, and escaped. A person saw it stopped but not
// why.
func TestWorkersPageSaysWhyOneStopped(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	why := "engine: queue \"orders\": permission denied for table q_orders <script>alert(1)</script> \u202e; dsn postgres://app:pw-hunter2@db/orders"
	if err := st.StopWorkerOnError(pgtest.Context(t), store.WorkerProcess{ID: "w-denied", Hostname: "host-denied", PID: 43, Queues: []string{"orders"}, Concurrency: 1, HeartbeatInterval: time.Hour}, why); err != nil {
		t.Fatal(err)
	}
	page := workersPage(t, st)
	for _, want := range []string{"Stopped on an error", "permission denied for table q_orders &lt;script&gt;alert(1)&lt;/script&gt; \\u202e", "[REDACTED]"} {
		if !strings.Contains(page, want) {
			t.Errorf("the workers page lacks %q:\n%s", want, page)
		}
	}
	for _, bad := range []string{"pw-hunter2", "<script>alert", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("the workers page shows %q:\n%s", bad, page)
		}
	}
}
