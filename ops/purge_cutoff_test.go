package ops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A person asked about a purge by age is told how many messages it
// deletes, archived before when; their yes, minutes later, deletes those
// and nothing that has grown older than the age since. Each case makes
// one message grow old between the question and the answer (its archive
// time set to an hour before a moment after the question); a purge that
// works its cutoff out again at the answer deletes it too.
func TestPurgeDeletesWhatThePersonWasAskedAbout(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	setup := func(t *testing.T) (q string, ageNewer func()) {
		q = newQueue(t, s, nil)
		ids := pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "BadInput"})
		if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil || d.Discarded != 2 {
			t.Fatalf("discard = %+v, %v", d, err)
		}
		archive := `pgmq."a_` + q + `_dlq"`
		if _, err := s.Pool().Exec(ctx, `UPDATE `+archive+` SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, ids[0]); err != nil {
			t.Fatal(err)
		}
		return q, func() {
			if _, err := s.Pool().Exec(ctx, `UPDATE `+archive+` SET archived_at = now() - interval '1 hour' WHERE msg_id = $1`, ids[1]); err != nil {
				t.Error(err)
			}
		}
	}
	// check checks a purge asked about between from and to.
	check := func(t *testing.T, q, question string, p ops.DLQPurge, err error, from, to time.Time) {
		t.Helper()
		if !strings.Contains(question, "Delete for good the 1 dead message archived in the DLQ of "+q+" at or before ") {
			t.Errorf("question %q; want it to name the 1 message older than the age and the cutoff", question)
		}
		if err != nil || p.Purged != 1 || pgtest.Archived(t, s, q+"_dlq") != 1 {
			t.Fatalf("purge = %+v, %v, %d left; want the 1 message asked about purged and the one grown old since kept", p, err, pgtest.Archived(t, s, q+"_dlq"))
		}
		// The server's clock is this one, read to the microsecond.
		if first, last := from.Add(-time.Hour-time.Millisecond), to.Add(-time.Hour); p.DiscardedBefore.Before(first) || p.DiscardedBefore.After(last) {
			t.Errorf("discarded_before %s; want an hour before the question, between %s and %s", p.DiscardedBefore, first, last)
		}
	}

	t.Run("ask", func(t *testing.T) {
		q, ageNewer := setup(t)
		var question string
		from := time.Now()
		p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, OlderThan: time.Hour, Ask: func(_ context.Context, text string) (bool, error) {
			question = text
			ageNewer()
			return true, nil
		}})
		check(t, q, question, p, err, from, time.Now())
	})
	t.Run("deferred", func(t *testing.T) {
		q, ageNewer := setup(t)
		req := ops.DLQPurgeRequest{Queue: q, OlderThan: time.Hour, Deferred: &ops.Deferred{}}
		from := time.Now()
		_, err := svc.DLQPurge(ctx, req)
		to := time.Now()
		question := askFirst(t, err)
		ageNewer()
		req.Deferred = &ops.Deferred{Answered: true, State: question.State, Yes: true}
		p, err := svc.DLQPurge(ctx, req)
		check(t, q, question.Text, p, err, from, to)
	})
	t.Run("nothing old enough", func(t *testing.T) {
		q, _ := setup(t)
		asked := false
		p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, OlderThan: 3 * time.Hour, Ask: func(context.Context, string) (bool, error) {
			asked = true
			return true, nil
		}})
		if err != nil || asked || p.Purged != 0 || pgtest.Archived(t, s, q+"_dlq") != 2 {
			t.Fatalf("purge = %+v, %v, asked %v; want nothing asked and nothing purged", p, err, asked)
		}
	})
}

// A DLQ's archive also keeps the original of a message retried with a
// corrected payload, and a purge deletes it too: on a DLQ where nothing was
// ever discarded, the question and the refusal without confirm must not
// call what goes "discarded" alone.
func TestPurgeWordsNameEverythingArchived(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{})
	if r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: []byte(`{"fixed":true}`)}); err != nil || r.Retried != 1 {
		t.Fatalf("retry with a payload = %+v, %v", r, err)
	}
	if n := pgtest.Archived(t, s, q+"_dlq"); n != 1 {
		t.Fatalf("the DLQ's archive holds %d messages after a corrected retry, want its original", n)
	}
	_, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q})
	if err == nil || !strings.Contains(err.Error(), "originals of a retry with a corrected payload") {
		t.Errorf("purge without confirm = %v; want it to say originals of corrected retries go too", err)
	}
	var question string
	p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, Ask: func(_ context.Context, text string) (bool, error) {
		question = text
		return true, nil
	}})
	if err != nil || p.Purged != 1 {
		t.Fatalf("purge = %+v, %v; want the original purged", p, err)
	}
	if !strings.Contains(question, "archived in the DLQ of "+q) || !strings.Contains(question, "originals kept by a retry with a corrected payload") {
		t.Errorf("question %q; want it to say the messages are archived ones, originals of corrected retries included", question)
	}
}

// A purge's dry run counts what the purge would delete, with no
// confirmation, and deletes nothing.
func TestPurgeDryRunCountsAndDeletesNothing(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	client := uniqueName("purge_dry")
	ctx := ops.WithClient(testContext(t), client)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Class: "BadInput"})
	if d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}}); err != nil || d.Discarded != 3 {
		t.Fatalf("discard = %+v, %v", d, err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE pgmq."a_`+q+`_dlq" SET archived_at = now() - interval '2 hours' WHERE msg_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	for age, want := range map[time.Duration]int64{0: 3, time.Hour: 1, 3 * time.Hour: 0} {
		p, err := svc.DLQPurge(ctx, ops.DLQPurgeRequest{Queue: q, OlderThan: age, DryRun: true})
		if err != nil || !p.DryRun || p.Purged != want || p.Queue != q {
			t.Errorf("dry run older than %s = %+v, %v; want %d would be purged", age, p, err, want)
		}
	}
	if n := pgtest.Archived(t, s, q+"_dlq"); n != 3 {
		t.Fatalf("%d archived dead messages after the dry runs; want the 3 kept", n)
	}
	// Audited as every dry run a caller asks for, saying it was one.
	rows := auditRows(t, s, client)
	if len(rows) != 4 || rows[0].Tool != ops.OpDLQDiscard {
		t.Fatalf("audit rows %+v; want the discard and the three dry runs", rows)
	}
	for _, r := range rows[1:] {
		if r.Tool != ops.OpDLQPurge || !strings.Contains(r.Arguments, `"dry_run": true`) || r.IsError {
			t.Errorf("audit row of a dry run: %+v", r)
		}
	}
}
