package ops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
)

// A queue another PGMQ client made and consumes (no settings of pgbus's,
// no pgbus worker ever served it) is no queue pgbus pages about: its ready
// messages wait for that client, so health gives no no_workers reason, nor
// a backlog one, for it. Once a pgbus worker has served it, it is pgbus's
// to watch: its workers gone, it is STALLED no_workers as any queue pgbus
// manages, and so is a queue pgbus made, which no worker ever served.
func TestHealthPagesOnlyForQueuesPgbusManages(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{StallAfter: time.Millisecond})
	foreign := newQueue(t, s, nil)
	mine := newQueue(t, s, nil)
	// As pgmq.create leaves it: its tables, and no row of pgbus's.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.queues WHERE queue_name = $1`, foreign); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{foreign, mine} {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO pgmq.q_`+q+` (vt, enqueued_at, message) VALUES (now() - interval '1 hour', now() - interval '1 hour', '{}')`); err != nil {
			t.Fatal(err)
		}
	}
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.Reasons {
		if r.Queue == foreign {
			t.Errorf("health gives %s %s on %s, a queue another PGMQ client made and consumes: %s", r.Status, r.Code, foreign, r.Message)
		}
	}
	if r := reasonOf(h, "no_workers", mine); r == nil || r.Status != ops.HealthStalled || h.Status != ops.HealthStalled {
		t.Fatalf("health = %+v; want STALLED no_workers on %s, which pgbus made", h, mine)
	}

	register(t, s, "w-served", foreign)
	if err := s.StopWorker(ctx, "w-served"); err != nil {
		t.Fatal(err)
	}
	h, err = svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := reasonOf(h, "no_workers", foreign); r == nil || r.Status != ops.HealthStalled || r.Workers != ops.CoverageStopped || !strings.Contains(r.Message, "shut down") {
		t.Fatalf("health = %+v; want STALLED no_workers on %s, whose pgbus worker stopped", h, foreign)
	}
}
