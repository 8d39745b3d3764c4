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
	"github.com/pgbus/pgbus/store"
)

// TestReadyzSaysTheDatabaseRefusedANewConnection: once the process runs, a
// connection its pool opens later can be refused by the database (the
// role's password rotated, the role's CONNECTION LIMIT reached); /readyz
// then says what the refusal means, as the health check of a first
// connection does, rather than to check that PostgreSQL runs.
func TestReadyzSaysTheDatabaseRefusedANewConnection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, alter, want string
		password          bool
	}{
		{"password rotated", "PASSWORD 'rotated-elsewhere'", "check the user and password", true},
		{"connection limit reached", "CONNECTION LIMIT 0", "allows no more connections", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var dbURL string
			if c.password {
				dbURL = pgtest.PasswordCluster(t)
			} else {
				dbURL = pgtest.NewDatabase(t)
			}
			pgtest.OpenStore(t, dbURL)
			role, roleURL := pgtest.NewRole(t, dbURL)
			pgtest.Exec(t, dbURL, store.ReadGrants(role))
			st, err := store.Open(pgtest.Context(t), roleURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(st.Close)
			svc, err := ops.New(st, ops.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var log pgtest.SyncBuffer
			base := serve(t, metrics.Probes(svc, metrics.ProbeOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))}))
			if code, _, body := getReadyz(t, base); code != http.StatusOK {
				t.Fatalf("/readyz with the database up: %d %s", code, body)
			}
			pgtest.Exec(t, dbURL, "ALTER ROLE "+role+" "+c.alter)
			pgtest.Exec(t, dbURL, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '"+role+"'")
			var code int
			var r metrics.Readiness
			var body string
			pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
				code, r, body = getReadyz(t, base)
				return code == http.StatusServiceUnavailable && len(r.Reasons) > 0
			})
			t.Logf("/readyz: %s", body)
			msg := r.Reasons[0].Message
			if r.Reasons[0].Code != "database_unreachable" || !strings.Contains(msg, c.want) || strings.Contains(msg, "PostgreSQL runs") ||
				strings.Contains(msg, "did not answer") || strings.Contains(body, role) {
				t.Errorf("/readyz: %s\nwant database_unreachable saying the database refused the connection, %q, naming no role, and not to check that PostgreSQL runs", body, c.want)
			}
			if l := log.String(); !strings.Contains(l, "refused the health check's connection") || strings.Contains(l, "did not answer") {
				t.Errorf("the log says %q; want it to say the database refused the connection", l)
			}
		})
	}
}
