package ops_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// dropTablesKeepMeta drops the tables of the physical queues named, queue
// and archive, and keeps their rows of pgmq.meta: what a restore of a dump
// of PGMQ installed as an extension leaves, as pg_dump leaves out the
// extension's member tables but dumps pgmq.meta, a configuration table.
func dropTablesKeepMeta(t *testing.T, s *store.Store, physical ...string) {
	t.Helper()
	for _, name := range physical {
		for _, table := range []string{"q_" + name, "a_" + name} {
			if _, err := s.Pool().Exec(testContext(t), fmt.Sprintf(`DROP TABLE IF EXISTS pgmq.%q`, table)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A queue pgbus's settings list whose PGMQ tables are gone (a restore of
// a dump that left them out) is named by health, DEGRADED, with the two
// next steps that end it: the create that makes it again with its
// settings (and priority levels), and the drop that forgets it. Followed,
// each ends the reason; a queue whose tables are there is not named.
// So in pgbus's own layout and with PGMQ's functions installed (whose
// drop_queue leaves pgmq.meta's row of a queue whose table is gone).
func TestHealthNamesQueuesWhoseTablesAreGone(t *testing.T) {
	t.Parallel()
	for _, withPGMQ := range []bool{false, true} {
		t.Run(fmt.Sprintf("pgmq_functions=%v", withPGMQ), func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabase(t)
			if withPGMQ {
				if err := pgtest.RunSQL(t, url, pgtest.PGMQScript(t)); err != nil {
					t.Fatal(err)
				}
			}
			healthNamesQueuesWhoseTablesAreGone(t, pgtest.OpenStore(t, url))
		})
	}
}

func healthNamesQueuesWhoseTablesAreGone(t *testing.T, s *store.Store) {
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	kept, again, forgotten, tiered := "kept", "again", "forgotten", "tiered"
	for _, q := range []string{kept, again, forgotten} {
		settings := store.DefaultQueueSettings(q)
		settings.MaxRetries = 9
		if err := s.CreateQueueWithSettings(ctx, 0, settings); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreatePriorityQueue(ctx, tiered, 2); err != nil {
		t.Fatal(err)
	}
	dropTablesKeepMeta(t, s, again, store.DLQName(again), forgotten, store.DLQName(forgotten), "tiered_p0", "tiered_p1", store.DLQName(tiered))

	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]ops.HealthReason{}
	for _, r := range h.Reasons {
		if r.Code == "queue_tables_missing" {
			reasons[r.Queue] = r
		}
	}
	if len(reasons) != 3 || h.Status != ops.HealthDegraded {
		t.Fatalf("health with the tables of %s, %s and %s gone: %s, %+v; want DEGRADED, one queue_tables_missing reason for each", again, forgotten, tiered, h.Status, h.Reasons)
	}
	for q, r := range reasons {
		if r.Status != ops.HealthDegraded || !strings.Contains(r.Message, fmt.Sprintf("%q", q)) || !strings.Contains(r.Message, "pgmq.q_") {
			t.Errorf("reason of %s: %+v; want DEGRADED, naming the queue and its tables gone", q, r)
		}
		create, drop := findHint(t, r.Next, ops.OpQueueCreate), findHint(t, r.Next, ops.OpQueueDrop)
		if create.Args["queue"] != q || drop.Args["queue"] != q || drop.Args["confirm"] != true {
			t.Errorf("reason of %s: next %+v; want the create and the confirmed drop of %s", q, r.Next, q)
		}
		if levels, ok := create.Args["priorities"]; ok != (q == tiered) || ok && fmt.Sprint(levels) != "2" {
			t.Errorf("reason of %s: create %+v; want the priority levels it had, 2 for %s only", q, create, tiered)
		}
	}

	// Followed: the creates make them again, with their settings.
	for _, q := range []string{again, tiered} {
		create := findHint(t, reasons[q].Next, ops.OpQueueCreate)
		levels, _ := create.Args["priorities"].(int)
		if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: levels}); err != nil {
			t.Fatalf("the create health offers for %s: %v", q, err)
		}
	}
	if set, err := s.QueueSettingsOf(ctx, again); err != nil || set.MaxRetries != 9 {
		t.Errorf("settings of %s made again: %+v, %v; want its max_retries 9 kept", again, set, err)
	}
	// The drop forgets the other.
	if _, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: forgotten, Confirm: true}); err != nil {
		t.Fatalf("the drop health offers for %s: %v", forgotten, err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.queues WHERE queue_name = $1`, forgotten); n != 0 {
		t.Errorf("%s dropped: still in pgbus.queues", forgotten)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.meta WHERE queue_name IN ($1, $2)`, forgotten, store.DLQName(forgotten)); n != 0 {
		t.Errorf("%s dropped: %d rows of it and its DLQ left in pgmq.meta", forgotten, n)
	}
	h, err = svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.Reasons {
		if r.Code == "queue_tables_missing" {
			t.Errorf("health once each was made again or dropped: %+v; want no queue_tables_missing", r)
		}
	}
}

// A queue whose DLQ table alone was dropped by hand (its archive and its
// row of pgmq.meta left) is named by health, DEGRADED, as its DLQ gone,
// with the create that makes the DLQ again as its next step and no drop:
// its work tables and messages are there; the queue's stats note it.
// Followed, the step ends it. A queue another PGMQ client made without a
// DLQ, registered with pgbus, is not named: it never had one.
func TestHealthNamesAQueueWhoseDLQAloneIsGone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// A database of its own: the shared one's reasons, of every test,
	// may pass the response bound, which leaves DEGRADED ones out.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, s, ops.Options{})
	// Named after the lost queue, for the reads of the queues so named:
	// of every queue of the shared database, other tests' queues whose
	// DLQs are gone would take the notes' places.
	lost := pgtest.Name("lost")
	foreign := lost + "_foreign"
	if err := s.CreatePriorityQueue(ctx, lost, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, lost+"_p1", store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, fmt.Sprintf(`DROP TABLE pgmq.%q`, "q_"+store.DLQName(lost))); err != nil {
		t.Fatal(err)
	}
	// As pgmq.create makes a queue: no DLQ at all, no trace of one.
	dropTablesKeepMeta(t, s, store.DLQName(foreign))
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgmq.meta WHERE queue_name = $1`, store.DLQName(foreign)); err != nil {
		t.Fatal(err)
	}
	// Registered with pgbus as it is, without a DLQ.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM pgbus.queues WHERE queue_name = $1`, foreign); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterQueue(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	reasons := func() map[string]ops.HealthReason {
		t.Helper()
		out := map[string]ops.HealthReason{}
		for _, r := range reasonsOfCode(t, svc, "queue_tables_missing") {
			if r.Queue == lost || r.Queue == foreign {
				out[r.Queue] = r
			}
		}
		return out
	}
	got := reasons()
	r, ok := got[lost]
	if len(got) != 1 || !ok || r.Status != ops.HealthDegraded || !strings.Contains(r.Message, "pgmq.q_"+store.DLQName(lost)) || !strings.Contains(r.Message, "dead-letter queue") {
		t.Fatalf("health with the DLQ table of %s dropped: %+v; want one DEGRADED reason for %s naming its DLQ's table", lost, got, lost)
	}
	create := findHint(t, r.Next, ops.OpQueueCreate)
	if len(r.Next) != 1 || create.Args["queue"] != lost || fmt.Sprint(create.Args["priorities"]) != "2" {
		t.Fatalf("reason of %s: next %+v; want only the create of %s with its 2 priority levels", lost, r.Next, lost)
	}
	// The stats of the queue, and of the queues named after it (a read of
	// every queue), note it too, with what makes the DLQ again.
	for _, req := range []ops.QueueStatsRequest{{Queue: lost}, {NameContains: lost}} {
		st, err := svc.QueueStats(ctx, req)
		notes := strings.Join(st.Notes, "\n")
		if err != nil || !strings.Contains(notes, fmt.Sprintf("queue %q", lost)) || !strings.Contains(notes, "pgmq.q_"+store.DLQName(lost)) ||
			!strings.Contains(notes, "creating the queue again") || strings.Contains(notes, foreign) {
			t.Errorf("stats %+v with the DLQ table of %s dropped: notes %q, %v; want one naming %s's DLQ table and what makes it again", req, lost, st.Notes, err, lost)
		}
	}
	// A list the response bound cuts still notes it, though its row is
	// left out: a busier queue of the same name part takes the one place.
	busy := lost + "_busy"
	if err := s.CreateQueue(ctx, busy); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := s.Send(ctx, busy, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	cut := newService(t, s, ops.Options{Bounds: ops.Bounds{Response: 1200}})
	st, err := cut.QueueStats(ctx, ops.QueueStatsRequest{NameContains: lost})
	notes := strings.Join(st.Notes, "\n")
	if err != nil || len(st.Queues) != 1 || st.Queues[0].Queue != busy || !strings.Contains(notes, fmt.Sprintf("queue %q", lost)) || !strings.Contains(notes, "creating the queue again") {
		t.Errorf("stats of the queues named %s*, cut to one: queues %+v, notes %q, %v; want %s listed and a note naming %s's lost DLQ table", lost, st.Queues, st.Notes, err, busy, lost)
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: lost, Priorities: 2}); err != nil {
		t.Fatalf("the create health offers for %s: %v", lost, err)
	}
	if st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: lost}); err != nil || len(st.Notes) != 0 {
		t.Errorf("stats of %s once its DLQ is made again: notes %q, %v; want none", lost, st.Notes, err)
	}
	if got := reasons(); len(got) != 0 {
		t.Errorf("health once the DLQ of %s is made again: %+v; want no queue_tables_missing", lost, got)
	}
	if n := pgtest.Live(t, s, lost+"_p1"); n != 1 {
		t.Errorf("%d messages in %s once its DLQ is made again; want its 1 kept", n, lost)
	}
}

// A queue whose DLQ was dropped with PGMQ's own drop_queue, which takes
// its row of pgmq.meta and its archive with it and so leaves no trace of
// it in PGMQ's tables, is named by health as a DLQ table dropped by hand
// is, and noted by its stats and the warnings of a migration: pgbus made
// its DLQ, so it is gone. So is that of a queue another PGMQ client made,
// registered with pgbus without one, once a worker made it its DLQ; until
// then it never had one and is not named.
func TestHealthNamesAQueueWhoseDLQPGMQDropped(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	url := pgtest.NewDatabase(t)
	if err := pgtest.RunSQL(t, url, pgtest.PGMQScript(t)); err != nil {
		t.Fatal(err)
	}
	s := pgtest.OpenStore(t, url)
	svc := newService(t, s, ops.Options{})
	dropped, foreign := "dropped", "foreign"
	if err := s.CreateQueue(ctx, dropped); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, dropped, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `SELECT pgmq.drop_queue('dropped_dlq')`)
	pgtest.Exec(t, url, `SELECT pgmq.create('foreign')`)
	if err := s.RegisterQueue(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	named := func() map[string]ops.HealthReason {
		t.Helper()
		h, err := svc.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]ops.HealthReason{}
		for _, r := range h.Reasons {
			if r.Code == "queue_tables_missing" {
				out[r.Queue] = r
			}
		}
		gone, err := svc.QueuesWithoutTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(gone) != len(out) {
			t.Errorf("a migration warns of %+v, health names %+v; want the same queues", gone, out)
		}
		return out
	}
	got := named()
	r, ok := got[dropped]
	if len(got) != 1 || !ok || r.Status != ops.HealthDegraded || !strings.Contains(r.Message, "pgmq.q_dropped_dlq") || !strings.Contains(r.Message, "dead-letter queue") {
		t.Fatalf("health with the DLQ of %s dropped by pgmq.drop_queue: %+v; want one DEGRADED reason for %s naming its DLQ's table", dropped, got, dropped)
	}
	if create := findHint(t, r.Next, ops.OpQueueCreate); len(r.Next) != 1 || create.Args["queue"] != dropped {
		t.Fatalf("reason of %s: next %+v; want only the create of %s", dropped, r.Next, dropped)
	}
	st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: dropped})
	if notes := strings.Join(st.Notes, "\n"); err != nil || !strings.Contains(notes, "pgmq.q_dropped_dlq") {
		t.Errorf("stats of %s: notes %q, %v; want one naming its DLQ's table", dropped, st.Notes, err)
	}

	// The foreign queue gets its DLQ as a worker starting on it makes it;
	// dropped by PGMQ then, it is named too.
	if err := s.CreateDLQ(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `SELECT pgmq.drop_queue('foreign_dlq')`)
	if got := named(); len(got) != 2 || got[foreign].Status != ops.HealthDegraded {
		t.Fatalf("health with the DLQ a worker made of %s dropped by pgmq.drop_queue: %+v; want it named", foreign, got)
	}
	for _, q := range []string{dropped, foreign} {
		if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q}); err != nil {
			t.Fatalf("the create health offers for %s: %v", q, err)
		}
	}
	if got := named(); len(got) != 0 {
		t.Errorf("health once the DLQs are made again: %+v; want none named", got)
	}
	if n := pgtest.Live(t, s, dropped); n != 1 {
		t.Errorf("%d messages in %s once its DLQ is made again; want its 1 kept", n, dropped)
	}
}

// The stats of a queue whose DLQ table is gone say so in a field of the
// queue's own, not only in a note: asked for alone, in a list, and in a
// list for a reader that polls (no archive), which takes no notes.
func TestQueueStatsMarkAQueueWhoseDLQIsGone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	lost, whole := pgtest.Name("lost"), pgtest.Name("whole")
	for _, q := range []string{lost, whole} {
		if err := s.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.DropOutside(t, s, store.DLQName(lost))
	for _, req := range []ops.QueueStatsRequest{{Queue: lost}, {Queue: whole}, {All: true}, {All: true, NoArchive: true}, {NameContains: lost}} {
		st, err := svc.QueueStats(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, q := range st.Queues {
			if q.Queue == lost || q.Queue == whole {
				seen++
				if q.DLQMissing != (q.Queue == lost) {
					t.Errorf("stats %+v: %s has dlq_missing %v; want it only for %s", req, q.Queue, q.DLQMissing, lost)
				}
			}
		}
		if seen == 0 {
			t.Errorf("stats %+v list neither queue: %+v", req, st.Queues)
		}
	}
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: lost}); err != nil {
		t.Fatal(err)
	}
	if st, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: lost}); err != nil || st.Queues[0].DLQMissing {
		t.Errorf("stats of %s once its DLQ is made again: %+v, %v; want dlq_missing false", lost, st.Queues, err)
	}
}
