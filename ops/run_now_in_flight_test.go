package ops_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// QueueRunNow with InFlight makes visible now the messages a worker read
// and has not settled (state in_flight: after a restore or a failover,
// their workers are gone, and they would wait out the visibility
// timeout), as many as the queue's stats count in flight; the retrying,
// held, scheduled and waiting ones keep their times. Its dry run counts
// them, its next step warning that a job still running runs twice; the
// audit records the in_flight asked for, and a kind narrows it.
func TestQueueRunNowInFlight(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	retrying := pgtest.Retrying(t, s, q)
	held := pgtest.Held(t, s, q, "http:"+q)
	ids, err := s.SendBatch(ctx, q, []store.NewMessage{
		{Payload: json.RawMessage(`1`), Headers: json.RawMessage(`{"pgbus_kind": "mail"}`)},
		{Payload: json.RawMessage(`2`), Headers: json.RawMessage(`{"pgbus_kind": "sms"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(ctx, q, time.Hour, 2); err != nil || len(got) != 2 {
		t.Fatalf("read the two in flight: %+v, %v", got, err)
	}
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`3`), Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	waiting, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`4`)})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q})
	if err != nil || stats.Queues[0].InFlight != 2 {
		t.Fatalf("stats: %+v, %v; want 2 in flight", stats, err)
	}

	dry, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, InFlight: true, DryRun: true})
	if err != nil || dry.Visible != 2 || !dry.InFlight {
		t.Fatalf("dry run of the in-flight messages = %+v, %v; want the 2 the stats count in flight", dry, err)
	}
	next := findHint(t, dry.Next, ops.OpQueueRunNow)
	if next.Args["in_flight"] != true || next.Args["dry_run"] != nil || !strings.Contains(next.Why, "twice") {
		t.Errorf("dry run's next step %+v; want the same call with in_flight, not dry, warning that a job still running runs twice", next)
	}
	one, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, InFlight: true, Kind: "sms"})
	if err != nil || one.Visible != 1 {
		t.Fatalf("run now of the in-flight messages of kind sms = %+v, %v; want 1", one, err)
	}
	out, err := svc.QueueRunNow(ctx, ops.QueueRunNowRequest{Queue: q, InFlight: true})
	if err != nil || out.Visible != 1 || !out.InFlight {
		t.Fatalf("run now of the in-flight messages = %+v, %v; want the other 1", out, err)
	}
	got, err := s.Read(ctx, q, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	var read []int64
	for _, m := range got {
		read = append(read, m.ID)
		if m.ID != waiting && m.ReadCount != 2 {
			t.Errorf("message %d read again at attempt %d; want its second: the attempt it was on counts, as after a crash", m.ID, m.ReadCount)
		}
	}
	slices.Sort(read)
	if want := append(slices.Clone(ids), waiting); !slices.Equal(read, want) {
		t.Errorf("read after run now of the in-flight messages: %v; want the two in flight and the one waiting, %v, not the retrying %d or held %d", read, want, retrying, held)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgbus.audit_log WHERE tool = $1 AND arguments->>'queue' = $2 AND arguments->>'in_flight' = 'true'`, ops.OpQueueRunNow, q); n != 3 {
		t.Errorf("%d audit entries of run now with in_flight; want 3, the dry run's included", n)
	}
}
