package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A lock another session holds on one queue's table makes the read of the
// gauges fail while the database answers. Within the grace, a scrape
// serves the gauges of the last successful read, of every queue, and says
// how old they are, so that dashboards keep their data and pending alerts
// their clocks; past it (here a grace of none) the gauges are left out,
// and their age alone, with pgbus_database_up 1, says what is wrong. Once
// the lock is gone, a scrape reads them again.
func TestGaugesServedThroughALock(t *testing.T) {
	url := pgtest.NewDatabase(t)
	st := pgtest.OpenStore(t, url)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held, other := pgtest.NewFastQueue(t, st, "held", nil), pgtest.NewFastQueue(t, st, "other", nil)
	for _, q := range []string{held, other} {
		if _, err := st.SendBatch(pgtest.Context(t), q, []store.NewMessage{{Payload: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	base := func(grace time.Duration) string {
		m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1, GaugesGrace: grace})
		reg := prometheus.NewRegistry()
		reg.MustRegister(m)
		return serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{}))
	}
	within, past := base(time.Hour), base(-1)
	visible := func(q string) map[string]string { return map[string]string{"queue": q, "state": "visible"} }
	for _, b := range []string{within, past} {
		fams := scrape(t, b)
		if v, age := value(fams, "pgbus_queue_messages", visible(held)), value(fams, "pgbus_gauges_age_seconds", nil); v != 1 || age < 0 {
			t.Fatalf("before the lock: %s visible %v, gauges age %v; want 1 and an age", held, v, age)
		}
	}

	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+held)
	fams := scrape(t, within)
	if up := value(fams, "pgbus_database_up", nil); up != 1 {
		t.Fatalf("pgbus_database_up = %v while a lock holds one queue's table, want 1: the database answers", up)
	}
	for _, q := range []string{held, other} {
		if v := value(fams, "pgbus_queue_messages", visible(q)); v != 1 {
			t.Errorf("within the grace, %s's visible messages scraped as %v, want the last read's 1", q, v)
		}
	}
	if v := value(fams, "pgbus_workers_running", nil); v != 0 {
		t.Errorf("within the grace, pgbus_workers_running = %v, want the last read's 0", v)
	}
	heldAge := value(fams, "pgbus_gauges_age_seconds", nil)
	if heldAge <= 0 {
		t.Errorf("within the grace, pgbus_gauges_age_seconds = %v, want the age of the last successful read", heldAge)
	}

	fams = scrape(t, past)
	if up := value(fams, "pgbus_database_up", nil); up != 1 {
		t.Fatalf("past the grace, pgbus_database_up = %v, want 1", up)
	}
	for _, name := range []string{"pgbus_queue_messages", "pgbus_dlq_messages", "pgbus_workers_running"} {
		if fams[name] != nil && len(fams[name].GetMetric()) > 0 {
			t.Errorf("past the grace, %s is still served", name)
		}
	}
	if age := value(fams, "pgbus_gauges_age_seconds", nil); age <= 0 {
		t.Errorf("past the grace, pgbus_gauges_age_seconds = %v, want the age of the last successful read", age)
	}

	lock.Release()
	fams = scrape(t, past)
	if v, age := value(fams, "pgbus_queue_messages", visible(held)), value(fams, "pgbus_gauges_age_seconds", nil); v != 1 || age < 0 || age >= heldAge {
		t.Errorf("after the lock: %s visible %v, gauges age %v; want 1, read again (younger than the %v seconds during the lock)", held, v, age, heldAge)
	}
}

// A paused queue's gauge says so, and a queue working as usual says it
// is not: the alert rules leave a queue paused on purpose out of those
// that say it is not draining.
func TestPausedQueueGauge(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	paused, working := pgtest.NewFastQueue(t, st, "paused", nil), pgtest.NewFastQueue(t, st, "working", nil)
	if _, err := svc.QueuePause(pgtest.Context(t), ops.QueueRequest{Queue: paused}); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Options{Ops: svc, CacheFor: -1})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	fams := scrape(t, serve(t, metrics.Mux(reg, svc, metrics.ProbeOptions{})))
	for q, want := range map[string]float64{paused: 1, working: 0} {
		if v := value(fams, "pgbus_queue_paused", map[string]string{"queue": q}); v != want {
			t.Errorf("pgbus_queue_paused{queue=%q} = %v, want %v", q, v, want)
		}
	}
}
