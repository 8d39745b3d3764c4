package tools_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// rubyPgbusDB returns a database as the Ruby gem pgbus leaves it
// (testdata/ruby_pgbus.sql, on PGMQ's script), migrated by pgbus.
func rubyPgbusDB(t *testing.T) *store.Store {
	t.Helper()
	return rubyPgbusDBAt(t, pgtest.NewDatabase(t))
}

// rubyPgbusDBAt is rubyPgbusDB in the new database at url.
func rubyPgbusDBAt(t *testing.T, url string) *store.Store {
	t.Helper()
	script := pgtest.PGMQScript(t)
	fixture, err := os.ReadFile("testdata/ruby_pgbus.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := pgtest.RunSQL(t, url, script); err != nil {
		t.Fatalf("PGMQ's script: %v", err)
	}
	if err := pgtest.RunSQL(t, url, string(fixture)); err != nil {
		t.Fatalf("the Ruby pgbus fixture: %v", err)
	}
	return pgtest.OpenStore(t, url)
}

// rubyTables is a digest of the Ruby gem's own tables, to show pgbus never
// writes them.
func rubyTables(t *testing.T, st *store.Store) string {
	t.Helper()
	var digest string
	err := st.Pool().QueryRow(testContext(t), `
		SELECT md5((SELECT coalesce(string_agg(p::text, ';' ORDER BY id), '') FROM public.pgbus_processes p) || '|' ||
		           (SELECT coalesce(string_agg(f::text, ';' ORDER BY id), '') FROM public.pgbus_failed_events f) || '|' ||
		           (SELECT coalesce(string_agg(q::text, ';' ORDER BY id), '') FROM public.pgbus_queue_states q))`).Scan(&digest)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// An operator triages a Ruby pgbus database with the MCP tools, read-only
// first, and retries two dead messages back to pgbus_default as Ruby pgbus
// would: without the block, with pgbus_dlq_retries counting the trips.
func TestTriageRubyPgbusDatabase(t *testing.T) {
	t.Parallel()
	st := rubyPgbusDB(t)
	before := rubyTables(t, st)
	ro := newEnvOn(t, st, ops.Options{ReadOnly: true})

	sum := callOK[ops.DLQSummary](t, ro, "pgbus_dlq_summary", map[string]any{})
	if sum.Total != 6 || len(sum.Groups) != 5 {
		t.Fatalf("summary: %d dead in %d groups, want 6 in 5", sum.Total, len(sum.Groups))
	}
	top := sum.Groups[0]
	if top.Kind != "ChargeCardJob" || top.ErrorClass != "Stripe::CardError" || top.Count != 2 || top.SourceQueue != "pgbus_default" ||
		!slices.Equal(top.Reasons, []string{"max_retries_exceeded"}) {
		t.Fatalf("largest group = %+v, want the two declined cards of pgbus_default", top)
	}
	notRecorded := 0
	for _, g := range sum.Groups {
		if slices.Equal(g.Reasons, []string{ops.ReasonNotRecorded}) {
			notRecorded += int(g.Count)
		}
	}
	if notRecorded != 2 {
		t.Fatalf("%d messages in groups whose reason is not recorded, want the 2 pre-block rows: %+v", notRecorded, sum.Groups)
	}

	list := callOK[ops.DLQList](t, ro, "pgbus_dlq_list", map[string]any{"queue": "pgbus_default"})
	reasons := map[int64]string{}
	for _, it := range list.Items {
		reasons[it.MsgID] = it.Reason
	}
	if len(list.Items) != 5 || reasons[103] != ops.ReasonNotRecorded || reasons[104] != ops.ReasonNotRecorded || reasons[101] != "max_retries_exceeded" {
		t.Fatalf("list of pgbus_default's DLQ: reasons %v, want 5 with 103 and 104 not recorded", reasons)
	}

	pre := callOK[ops.DLQList](t, ro, "pgbus_dlq_list", map[string]any{"reason": ops.ReasonNotRecorded})
	if len(pre.Items) != 2 || pre.Items[0].MsgID != 104 || pre.Items[1].MsgID != 103 {
		t.Fatalf("list with reason not_recorded = %+v, want the pre-block rows 104 and 103", pre.Items)
	}

	old := callOK[ops.DeadMessage](t, ro, "pgbus_dlq_show", map[string]any{"queue": "pgbus_default_dlq", "msg_id": 103})
	if old.DeadLetter != nil || old.Kind != "ChargeCardJob" || old.Queue != "pgbus_default" || !slices.ContainsFunc(old.Notes, func(n string) bool {
		return strings.HasPrefix(n, "reason not recorded")
	}) {
		t.Fatalf("show of a pre-block row = %+v, want no block, its kind, and a note that the reason is not recorded", old)
	}
	event := callOK[ops.DeadMessage](t, ro, "pgbus_dlq_show", map[string]any{"queue": "pgbus_default", "msg_id": 105})
	if event.DeadLetter == nil || event.DeadLetter.Source != "consumer" || event.DeadLetter.ErrorClass != "ActiveRecord::RecordNotFound" ||
		string(event.Headers) != `["legacy","list"]` {
		t.Fatalf("show of a consumer's dead event = %+v (headers %s)", event.DeadLetter, event.Headers)
	}

	ws := callOK[ops.Workers](t, ro, "pgbus_workers", map[string]any{})
	byKind := map[string]ops.WorkerStatus{}
	for _, w := range ws.Workers {
		if w.System == store.SystemRubyPgbus {
			byKind[w.Kind] = w
		}
	}
	worker, super := byKind["worker"], byKind["supervisor"]
	if len(byKind) != 2 || worker.Status != ops.WorkerRunning || !slices.Equal(worker.Queues, []string{"pgbus_default", "pgbus_mailers"}) ||
		worker.Concurrency != 5 || worker.PID != 4242 || super.Status != ops.WorkerStale {
		t.Fatalf("Ruby pgbus processes = %+v, want its running worker on pgbus_default and pgbus_mailers and its stale supervisor", byKind)
	}

	// The gem's running worker serves its queues: health does not call
	// them unserved, nor a retry tell to start a worker of pgbus's.
	h := healthOK(t, ro, map[string]any{})
	for _, r := range h.Reasons {
		if r.Code == "no_workers" || r.Code == "stale_workers" {
			t.Errorf("health of the Ruby pgbus database: %s on %q: %s; its running Ruby worker serves its queues", r.Code, r.Queue, r.Message)
		}
	}

	rw := newEnvOn(t, st, ops.Options{})
	rep := callOK[ops.DLQRetry](t, rw, "pgbus_dlq_retry", map[string]any{"queue": "pgbus_default_dlq", "ids": []int64{102, 103}})
	if rep.Retried != 2 || rep.Failed != 0 {
		t.Fatalf("retry = %+v, want both retried", rep)
	}
	if len(rep.Workers) != 1 || rep.Workers[0].Queue != "pgbus_default" || rep.Workers[0].Status != ops.CoverageRunning {
		t.Errorf("retry's workers = %+v, want pgbus_default served by the running Ruby worker", rep.Workers)
	}
	rows, err := st.Pool().Query(testContext(t), `SELECT message->>'job_id', headers FROM pgmq.q_pgbus_default WHERE message->>'job_id' IN ('c2', 'c3') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]map[string]json.RawMessage{}
	for rows.Next() {
		var job string
		var h map[string]json.RawMessage
		if err := rows.Scan(&job, &h); err != nil {
			t.Fatal(err)
		}
		got[job] = h
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// c2 was retried from the DLQ once before; c3 died before the block.
	if len(got) != 2 || string(got["c2"][store.HeaderDLQRetries]) != "2" || string(got["c3"][store.HeaderDLQRetries]) != "1" ||
		got["c2"][store.HeaderDeadLetter] != nil || got["c3"][store.HeaderDeadLetter] != nil {
		t.Fatalf("retried messages in pgbus_default: %v; want pgbus_dlq_retries 2 and 1 and no block", got)
	}
	if n := pgtest.Live(t, st, "pgbus_default_dlq"); n != 3 {
		t.Fatalf("pgbus_default_dlq holds %d, want the 3 not retried", n)
	}
	if after := rubyTables(t, st); after != before {
		t.Fatalf("the Ruby gem's own tables changed")
	}
}

// A pgbus_processes table whose times are timestamptz holds instants, as
// the gem's own timestamp columns hold UTC wall times: read under a
// session time zone far from UTC, its processes are as old as they are
// with either, where reading instants as UTC wall times moved them by the
// zone's offset (13h45 in Chatham) and made the running worker stale.
func TestRubyProcessesUnderAnotherTimeZone(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"timestamp", "timestamptz"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewDatabaseSet(t, "TimeZone", "Pacific/Chatham")
			st := rubyPgbusDBAt(t, url)
			if typ == "timestamptz" {
				pgtest.Exec(t, url, `ALTER TABLE public.pgbus_processes
					ALTER COLUMN last_heartbeat_at TYPE timestamptz USING last_heartbeat_at AT TIME ZONE 'UTC',
					ALTER COLUMN created_at TYPE timestamptz USING created_at AT TIME ZONE 'UTC',
					ALTER COLUMN updated_at TYPE timestamptz USING updated_at AT TIME ZONE 'UTC'`)
			}
			var zone string
			if err := st.Pool().QueryRow(testContext(t), `SELECT current_setting('TimeZone')`).Scan(&zone); err != nil || zone != "Pacific/Chatham" {
				t.Fatalf("session TimeZone = %q, %v; want Pacific/Chatham", zone, err)
			}
			ws := callOK[ops.Workers](t, newEnvOn(t, st, ops.Options{ReadOnly: true}), "pgbus_workers", map[string]any{})
			byKind := map[string]ops.WorkerStatus{}
			for _, w := range ws.Workers {
				if w.System == store.SystemRubyPgbus {
					byKind[w.Kind] = w
				}
			}
			// The fixture's worker beat 2 minutes ago, its supervisor 2 hours ago.
			worker, super := byKind["worker"], byKind["supervisor"]
			if worker.Status != ops.WorkerRunning || worker.HeartbeatAgeSeconds < 60 || worker.HeartbeatAgeSeconds > 600 ||
				super.Status != ops.WorkerStale || super.HeartbeatAgeSeconds < 3600 || super.HeartbeatAgeSeconds > 3*3600 {
				t.Fatalf("Ruby pgbus processes = %+v; want the worker running, its heartbeat 2 minutes old, and the supervisor's 2 hours", byKind)
			}
			if d := time.Since(worker.HeartbeatAt); d < time.Minute || d > 10*time.Minute {
				t.Errorf("worker's heartbeat at %s, %s ago; want about 2 minutes ago", worker.HeartbeatAt.UTC(), d)
			}
		})
	}
}
