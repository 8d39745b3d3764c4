package metrics_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// TestReadyzBehindATroubledBouncerGivesTheHealthCheckAdvice: behind a
// PgBouncer whose PostgreSQL is down (PgBouncer found it so) or whose
// database is paused (PgBouncer takes the statements and answers none),
// /readyz answers 503 database_unreachable with the advice the health
// check gives (PgBouncer cannot reach PostgreSQL; PgBouncer's pools), not
// only to check PostgreSQL and the connection settings. Its body, served
// without a token, still names no host, port or database.
func TestReadyzBehindATroubledBouncerGivesTheHealthCheckAdvice(t *testing.T) {
	t.Parallel()
	t.Run("postgresql down", func(t *testing.T) {
		t.Parallel()
		_, cluster, _ := pgtest.PrivateStore(t)
		b := bouncertest.Start(t, cluster.URL()) // which logs in once, as a bouncer up before the outage did
		svc, base := probesThrough(t, b)
		if err := cluster.Stop(pgtest.Context(t)); err != nil {
			t.Fatal(err)
		}
		b.AwaitServerDown(t)
		checkReadyzAdvice(t, b, svc, base, "the connection pooler (PgBouncer) cannot reach PostgreSQL")
	})
	t.Run("paused", func(t *testing.T) {
		t.Parallel()
		b := bouncertest.Start(t, pgtest.NewDatabase(t))
		svc, base := probesThrough(t, b)
		b.Pause(t)
		checkReadyzAdvice(t, b, svc, base, "SHOW POOLS")
	})
}

// probesThrough serves /readyz of a service whose store reaches the
// database through b, and checks that it answers 200 first.
func probesThrough(t *testing.T, b *bouncertest.Bouncer) (*ops.Service, string) {
	t.Helper()
	st, err := store.Open(pgtest.Context(t), b.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, metrics.Probes(svc, metrics.ProbeOptions{}))
	if code, _, body := getReadyz(t, base); code != http.StatusOK {
		t.Fatalf("/readyz through PgBouncer with the database up: %d %s", code, body)
	}
	return svc, base
}

// checkReadyzAdvice checks that /readyz answers 503 database_unreachable
// saying advice, what the health check says too, and no detail of the
// database's address.
func checkReadyzAdvice(t *testing.T, b *bouncertest.Bouncer, svc *ops.Service, base, advice string) {
	t.Helper()
	var code int
	var r metrics.Readiness
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503 database_unreachable", func() bool {
		code, r, body = getReadyz(t, base)
		return code == http.StatusServiceUnavailable && len(r.Reasons) > 0 && r.Reasons[0].Code == "database_unreachable"
	})
	t.Logf("/readyz: %s", body)
	msg := r.Reasons[0].Message
	if r.Status != metrics.Unreachable || !strings.Contains(msg, advice) || !strings.Contains(msg, "log") {
		t.Errorf("/readyz: %s\nwant UNREACHABLE, database_unreachable saying %q and pointing at the log", body, advice)
	}
	u, err := url.Parse(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, detail := range []string{u.Host, u.Port(), strings.TrimPrefix(u.Path, "/"), "user="} {
		if strings.Contains(body, detail) {
			t.Errorf("/readyz body names %q, a detail of the database's address: %s", detail, body)
		}
	}
	// The health check an agent asks gives the same advice: /readyz's,
	// after what it says of the check, is in the health check's reason.
	h, err := svc.HealthOrUnreachable(pgtest.Context(t))
	if err != nil || h.Status != ops.HealthUnreachable || len(h.Reasons) == 0 {
		t.Fatalf("health: %+v, %v; want UNREACHABLE", h, err)
	}
	_, given, _ := strings.Cut(msg, "; ")
	if !strings.Contains(given, advice) || !strings.Contains(h.Reasons[0].Message, given) {
		t.Errorf("/readyz advises %q; want the advice of the health check, saying %q: %q", given, advice, h.Reasons[0].Message)
	}
}

// getReadyz GETs /readyz and decodes its body.
func getReadyz(t *testing.T, base string) (int, metrics.Readiness, string) {
	t.Helper()
	resp, err := http.Get(base + metrics.PathReadyz)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r metrics.Readiness
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/readyz: %d %s: %v", resp.StatusCode, body, err)
	}
	return resp.StatusCode, r, string(body)
}
