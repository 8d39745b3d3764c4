package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// TestHealthOfAPausedBouncerAnswersWithinItsOwnBound: PgBouncer takes
// the health check's statements and answers none while its database is
// paused, as it does in the moment between PostgreSQL going down and its
// first failed connect. The health check gives up at its own bound
// (ops.HealthCheckTimeout), not at the database call timeout, two minutes
// here, and answers UNREACHABLE saying that the database did not answer
// the health check within that bound and what to check: PostgreSQL, and
// PgBouncer's pools. A regression answers after the call timeout, saying
// so, or after PgBouncer's own two minutes, saying its query_wait_timeout.
func TestHealthOfAPausedBouncerAnswersWithinItsOwnBound(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := bouncertest.Start(t, pgtest.NewDatabase(t))
	st := pgtest.OpenStore(t, b.URL())
	svc := newService(t, st, ops.Options{DatabaseCallTimeout: 2 * time.Minute})
	if h, err := svc.HealthOrUnreachable(ctx); err != nil || h.Status != ops.HealthOK {
		t.Fatalf("health through PgBouncer before the pause: %+v, %v; want OK", h, err)
	}

	b.Pause(t)
	h, err := svc.HealthOrUnreachable(ctx)
	if err != nil {
		t.Fatalf("health through a paused PgBouncer failed: %v; want the verdict UNREACHABLE", err)
	}
	if h.Status != ops.HealthUnreachable || len(h.Reasons) != 1 || h.Reasons[0].Code != "database_unreachable" {
		t.Fatalf("health through a paused PgBouncer = %s %+v; want UNREACHABLE with database_unreachable", h.Status, h.Reasons)
	}
	msg := h.Reasons[0].Message
	t.Logf("health through a paused PgBouncer: %s", msg)
	for _, want := range []string{
		"did not answer the health check within " + ops.HealthCheckTimeout.String(),
		"check that PostgreSQL is up",
		"SHOW POOLS",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("health through a paused PgBouncer says %q; want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "(database call timeout)") || strings.Contains(msg, "query_wait_timeout") {
		t.Errorf("health through a paused PgBouncer waited for the call timeout or PgBouncer's: %q", msg)
	}
	if len(h.Reasons[0].Next) == 0 || h.Reasons[0].Next[0].Op != ops.OpHealth {
		t.Errorf("health through a paused PgBouncer: next %+v; want the health check again", h.Reasons[0].Next)
	}

	// Once PgBouncer resumes, the same service answers OK.
	b.Resume(t)
	if h, err := svc.HealthOrUnreachable(ctx); err != nil || h.Status != ops.HealthOK {
		t.Errorf("health once PgBouncer resumed: %+v, %v; want OK", h, err)
	}
}
