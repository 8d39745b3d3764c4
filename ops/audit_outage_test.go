//go:build linux || darwin

package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// outageStore starts a cluster of the test's own, opens a migrated
// store on it with the queue "outage", and returns its directory, the
// cluster's stop and the store.
func outageStore(t *testing.T) (string, func(), *store.Store) {
	t.Helper()
	ctx := testContext(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	pgtest.CreateQueue(t, st, "outage")
	return dir, func() {
		if err := cluster.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}, st
}

// A pause whose audit entry the database stopped taking midway keeps its
// entry: the service holds it, and a resume refused while the database is
// down queues behind it; once the database is back both are written, in
// order, each with the time its operation ended and its result.
func TestAuditEntryHeldThroughAnOutage(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, stop, st := outageStore(t)
	var logs pgtest.SyncBuffer
	svc := newService(t, st, ops.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	// Hold the pause at its audit entry: a share lock on the audit log
	// blocks its insert, so that the server stops while it waits.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgbus.audit_log IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	type paused struct {
		out ops.QueuePaused
		err error
	}
	began := time.Now().Truncate(time.Microsecond)
	done := make(chan paused, 1)
	go func() {
		out, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "outage"})
		done <- paused{out, err}
	}()
	pgtest.Eventually(t, time.Minute, "the pause's audit entry waiting for the lock", func() bool {
		var n int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'pgbus.audit_log'::regclass AND NOT granted`).Scan(&n)
		return err == nil && n == 1
	})
	stop()
	_ = tx.Rollback(context.Background())
	p := <-done
	if p.err != nil || !p.out.Paused {
		t.Fatalf("the pause: %+v, %v; want it done, its audit entry being no error of it", p.out, p.err)
	}
	_, resumeErr := svc.QueueResume(ctx, ops.QueueRequest{Queue: "outage"})
	if resumeErr == nil {
		t.Fatal("a resume while the database is stopped succeeded")
	}
	ended := time.Now()

	pgtest.StartCluster(t, dir)
	type row struct {
		id      int64
		at      time.Time
		tool    string
		result  string
		isError bool
	}
	var rows []row
	pgtest.Eventually(t, time.Minute, "the held entries written", func() bool {
		r, err := st.Pool().Query(ctx, `SELECT id, at, tool, result::text, is_error FROM pgbus.audit_log ORDER BY id`)
		if err != nil {
			return false
		}
		defer r.Close()
		rows = rows[:0]
		for r.Next() {
			var x row
			if r.Scan(&x.id, &x.at, &x.tool, &x.result, &x.isError) == nil {
				rows = append(rows, x)
			}
		}
		return r.Err() == nil && len(rows) == 2
	})
	pause, resume := rows[0], rows[1]
	if pause.tool != ops.OpQueuePause || pause.isError || !strings.Contains(pause.result, `"paused": true`) {
		t.Errorf("first entry %+v, want the pause, done, its result saying paused", pause)
	}
	if resume.tool != ops.OpQueueResume || !resume.isError || !strings.Contains(resume.result, "does not answer") {
		t.Errorf("second entry %+v, want the resume, failed, saying the database does not answer", resume)
	}
	for _, r := range rows {
		if r.at.Before(began) || r.at.After(ended) {
			t.Errorf("%s dated %s, want the time its operation ended, between %s and %s, before the database came back", r.tool, r.at, began, ended)
		}
	}
	if pause.at.After(resume.at) {
		t.Errorf("the pause dated %s after the resume %s", pause.at, resume.at)
	}
	if !strings.Contains(logs.String(), "could not record an operation in the audit log; it is held") {
		t.Errorf("the log does not say the entry is held:\n%s", logs.String())
	}
}

// An entry the database does not take before Close gives up is written to
// Options.Unrecorded as one JSON line: the entry as it would be stored,
// saying it could not be recorded.
func TestAuditEntryUnrecordedAtClose(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	_, stop, st := outageStore(t)
	var out bytes.Buffer
	svc := newService(t, st, ops.Options{Unrecorded: &out})
	stop()
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "outage"}); err == nil {
		t.Fatal("a pause while the database is stopped succeeded")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	svc.Close(cctx)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("Close wrote %d lines, want one for the one entry:\n%s", len(lines), out.String())
	}
	var line struct {
		Level, Msg string
		Entry      struct {
			At        time.Time       `json:"at"`
			Client    string          `json:"client"`
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
			Result    json.RawMessage `json:"result"`
			IsError   bool            `json:"is_error"`
		} `json:"audit_entry"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	e := line.Entry
	if line.Level != "ERROR" || !strings.Contains(line.Msg, "could not record this operation in the audit log") ||
		e.Tool != ops.OpQueuePause || !e.IsError || e.At.IsZero() || e.Client != "unknown" ||
		string(e.Arguments) != `{"queue":"outage"}` || !strings.Contains(string(e.Result), "does not answer") {
		t.Errorf("unrecorded line %s, want the pause's entry at level ERROR saying it could not be recorded", lines[0])
	}
}

// An entry the audit log refuses whenever it is tried (here, a transport
// name longer than it keeps) is not held, where it would stop every entry
// behind it: it is given up as unrecorded at once, and the entry held
// before it is written once the database is back.
func TestAuditEntryRefusedByTheLogIsNotHeld(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, stop, st := outageStore(t)
	var out pgtest.SyncBuffer
	svc := newService(t, st, ops.Options{Unrecorded: &out})
	stop()
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: "outage"}); err == nil {
		t.Fatal("a pause while the database is stopped succeeded")
	}
	long := ops.WithCaller(ctx, ops.Caller{Client: "test", Transport: strings.Repeat("t", store.MaxAuditName+1)})
	if _, err := svc.QueueResume(long, ops.QueueRequest{Queue: "outage"}); err == nil {
		t.Fatal("a resume while the database is stopped succeeded")
	}
	if s := out.String(); strings.Count(s, "\n") != 1 || !strings.Contains(s, `"tool":"queue_resume"`) {
		t.Errorf("unrecorded lines while the database is stopped:\n%s\nwant the resume's alone, at once", s)
	}
	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, time.Minute, "the pause's entry written", func() bool {
		var n int
		err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pgbus.audit_log WHERE tool = 'queue_pause' AND is_error`).Scan(&n)
		return err == nil && n == 1
	})
	svc.Close(ctx)
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`); n != 1 {
		t.Errorf("%d audit entries, want the pause's alone", n)
	}
}

// A retry by filter whose outcome the database stopped taking at its end
// reads, while the outcome is held, as not finished, by its entry written
// before its work; once the database is back and the held outcome is
// written, it completes that entry: the audit shows the retry once,
// finished, with its outcome, and nothing unfinished.
func TestAuditHeldOutcomeCompletesItsStart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir, stop, st := outageStore(t)
	pgtest.DeadLetterN(t, st, "outage", 3, pgtest.DeadSpec{Kind: "k", Class: "Down"})
	svc := newService(t, st, ops.Options{})

	// The newest dead message is locked, so that the retry waits there
	// with its first entry written; then a share lock on the audit log
	// holds its outcome, so that the server stops while the insert waits.
	release, done := retryBehindALock(ctx, t, st, svc, "outage", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "outage"}})
	pgtest.Eventually(t, time.Minute, "the retry's first entry written and the retry waiting on the locked message", func() bool {
		return pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log WHERE pending`) == 1 &&
			pgtest.Int(t, st, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
	logTx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logTx.Rollback(context.Background()) }()
	if _, err := logTx.Exec(ctx, `LOCK TABLE pgbus.audit_log IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the retry's outcome waiting for the lock on the audit log", func() bool {
		var n int
		err := logTx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'pgbus.audit_log'::regclass AND NOT granted`).Scan(&n)
		return err == nil && n == 1
	})
	stop()
	r := <-done
	if r.err != nil || r.out.Retried != 3 {
		t.Fatalf("the retry: %+v, %v; want its 3 messages retried, its audit entry being no error of it", r.out, r.err)
	}

	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, time.Minute, "the held outcome written", func() bool {
		var n int
		err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pgbus.audit_log WHERE NOT pending`).Scan(&n)
		return err == nil && n == 1
	})
	page, err := svc.Audit(ctx, ops.AuditRequest{Op: ops.OpDLQRetry})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("audit once the held outcome is written: %+v, %v; want the retry once", page, err)
	}
	e := page.Items[0]
	var res ops.DLQRetry
	if err := json.Unmarshal(e.Result, &res); err != nil || e.Unfinished || e.Running || e.IsError || res.Retried != 3 || len(page.Notes) != 0 {
		t.Errorf("the retry once its held outcome is written: %+v, result %s, notes %q; want it finished, 3 retried", e, e.Result, page.Notes)
	}
}
