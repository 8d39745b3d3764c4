package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

func dlqIDs(t testing.TB, s *store.Store, dlq string) []int64 {
	t.Helper()
	rows, err := s.Pool().Query(testContext(t), `SELECT msg_id FROM pgmq."q_`+dlq+`" ORDER BY msg_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func movedIDs(moved []store.DeadID) []int64 {
	ids := make([]int64, len(moved))
	for i, m := range moved {
		ids[i] = m.MsgID
	}
	slices.Sort(ids)
	return ids
}

// A dry run of a discard by filter moves nothing and names the set it
// selected; the real call with that token moves exactly that set.
func TestDiscardDryRunThenGuarded(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	bad := deadN(t, s, q, 3, "k", "BadInput", store.ReasonNonRetryable)
	keep := deadN(t, s, q, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	f := store.DeadFilter{Queue: q, ErrorClass: "BadInput"}

	dry, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{DryRun: true})
	if err != nil || !dry.DryRun || dry.Discarded != 3 || !slices.Equal(movedIDs(dry.Moved), bad) || dry.Token == "" {
		t.Fatalf("dry run = %+v, %v; want the 3 BadInput ids %v and a token", dry, err, bad)
	}
	if got := dlqIDs(t, s, dlq); len(got) != 4 {
		t.Fatalf("after the dry run the DLQ holds %v, want all 4", got)
	}
	byIDs, err := s.DeadIDsToken(ctx, store.DeadSetDiscard, q, []int64{bad[2], bad[0], bad[1], bad[0]})
	if err != nil || byIDs != dry.Token {
		t.Fatalf("token of the ids = %q, %v; want the dry run's %q", byIDs, err, dry.Token)
	}
	// The token of a retry's dry run of the same set guards no discard:
	// a set agreed to be retried is not one agreed to be discarded.
	retryDry, err := s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{DryRun: true})
	if err != nil || retryDry.Token == "" || retryDry.Token == dry.Token {
		t.Fatalf("retry dry run = %+v, %v; want a token of its own", retryDry, err)
	}
	_, err = s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: retryDry.Token})
	wantErr(t, "discard guarded by a retry's token", err, store.ErrInvalid, "dry run's of a retry, and this call is a discard")
	_, err = s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
	wantErr(t, "retry guarded by a discard's token", err, store.ErrInvalid, "dry run's of a discard, and this call is a retry")
	if got := dlqIDs(t, s, dlq); len(got) != 4 {
		t.Fatalf("after the refused calls the DLQ holds %v, want all 4", got)
	}
	real, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: dry.Token})
	if err != nil || real.Discarded != 3 || !slices.Equal(movedIDs(real.Moved), movedIDs(dry.Moved)) {
		t.Fatalf("guarded discard = %+v, %v; want what the dry run listed", real, err)
	}
	if got := dlqIDs(t, s, dlq); !slices.Equal(got, keep) {
		t.Fatalf("after the discard the DLQ holds %v, want only %v", got, keep)
	}
}

// A guarded discard whose filter selects another set now (a new dead
// letter) is refused, and moves nothing.
func TestDiscardGuardedRefusedWhenSetGrew(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	f := store.DeadFilter{Queue: q, ErrorClass: "BadInput"}
	dry, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	deadN(t, s, q, 1, "k", "BadInput", store.ReasonNonRetryable)
	rep, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: dry.Token})
	wantErr(t, "guarded discard after a new dead letter", err, store.ErrChanged, "2 then, 3 now")
	if rep.Discarded != 0 {
		t.Fatalf("refused discard reports %d discarded", rep.Discarded)
	}
	if got := dlqIDs(t, s, store.DLQName(q)); len(got) != 3 {
		t.Fatalf("after the refusal the DLQ holds %v, want all 3", got)
	}
	_, err = s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: "not a token"})
	wantErr(t, "guarded discard with a malformed token", err, store.ErrInvalid, "run the dry run again")
}

// A guarded discard refused because the set shrank to one message counts
// that one in the singular.
func TestDiscardGuardedRefusedWhenOneIsLeft(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	f := store.DeadFilter{Queue: q}
	dry, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{DryRun: true})
	if err != nil || dry.Discarded != 2 {
		t.Fatalf("dry run = %+v, %v; want 2 selected", dry, err)
	}
	if _, err := s.RetryDead(ctx, q, ids[:1], store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: dry.Token})
	wantErr(t, "guarded discard after one of two was retried", err, store.ErrChanged, "2 then, 1 now")
	if got := dlqIDs(t, s, store.DLQName(q)); !slices.Equal(got, ids[1:]) {
		t.Fatalf("after the refusal the DLQ holds %v, want %v untouched", got, ids[1:])
	}
}

// A guarded retry moves the dry run's set; once another call has retried
// one of them, the same token is refused and nothing moves.
func TestRetryGuarded(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 3, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	f := store.DeadFilter{Queue: q}

	dry, err := s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 3 || dry.Token == "" {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if _, err := s.RetryDead(ctx, q, ids[:1], store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
	wantErr(t, "guarded retry after another retry", err, store.ErrChanged, "3 then, 2 now")
	if got := dlqIDs(t, s, dlq); !slices.Equal(got, ids[1:]) {
		t.Fatalf("after the refusal the DLQ holds %v, want %v", got, ids[1:])
	}

	dry, err = s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
	if err != nil || rep.Retried != 2 || len(rep.Moved) != 2 || rep.Moved[0].MsgID == 0 || rep.Moved[0].Queue != q {
		t.Fatalf("guarded retry = %+v, %v; want 2 moved back to %s with new ids", rep, err, q)
	}
	if got := dlqIDs(t, s, dlq); len(got) != 0 {
		t.Fatalf("after the guarded retry the DLQ holds %v", got)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 3 {
		t.Fatalf("queue holds %d messages, want the 3 retried", n)
	}
}

// A message another transaction takes while the guarded call waits for
// its row lock is seen gone under the lock: the call is refused and moves
// nothing, although the set matched when it was selected.
func TestDiscardGuardedRefusedWhenTakenMeanwhile(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	ids := deadN(t, s, q, 2, "k", "BadInput", store.ReasonNonRetryable)
	f := store.DeadFilter{Queue: q}
	dry, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := other.Exec(ctx, `DELETE FROM pgmq."q_`+dlq+`" WHERE msg_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.DiscardDeadSelected(ctx, f, 100, store.DiscardOptions{Expect: dry.Token})
		done <- err
	}()
	// Wait until the guarded call waits for the row the other transaction
	// holds, then let that transaction commit.
	for {
		var waiting int
		err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND query LIKE '%`+dlq+`%'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the guarded call ended without waiting for the lock: %v", err)
		case <-time.After(10 * time.Millisecond): // poll gently
		}
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "guarded discard of a message taken meanwhile", <-done, store.ErrChanged, "1 of the selected dead messages of "+dlq+" was retried or discarded by another call meanwhile")
	if got := dlqIDs(t, s, dlq); !slices.Equal(got, ids[1:]) {
		t.Fatalf("after the refusal the DLQ holds %v, want %v untouched", got, ids[1:])
	}
}

// A guarded retry refused for a set of the same size (one moved, another
// died since) says the set changed, not only its size.
func TestRetryGuardedRefusedWhenSetSwapped(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids := deadN(t, s, q, 2, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	f := store.DeadFilter{Queue: q}
	dry, err := s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 2 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if _, err := s.RetryDead(ctx, q, ids[:1], store.RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	deadN(t, s, q, 1, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	_, err = s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
	wantErr(t, "guarded retry after a swap", err, store.ErrChanged, "as many, 2, but not the same ones: some were moved or died since, or the dry run had other filters than this call")
	if got := dlqIDs(t, s, store.DLQName(q)); len(got) != 2 {
		t.Fatalf("after the refusal the DLQ holds %v, want 2", got)
	}
}

// A queue dropped and made again under its name, its DLQ numbering its
// dead messages from 1 again (as pgmq.create makes it): the token of a dry
// run before the drop does not guard the new messages of the same ids,
// which nobody agreed to move.
func TestRetryGuardedRefusedAfterTheQueueWasMadeAgain(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	before := deadN(t, s, q, 2, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	f := store.DeadFilter{Queue: q}
	dry, err := s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{DryRun: true})
	if err != nil || dry.Retried != 2 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if err := s.DropQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	pgtest.RestartIDs(t, s, store.DLQName(q))
	after := deadN(t, s, q, 2, "k", "Timeout", store.ReasonMaxRetriesExceeded)
	if !slices.Equal(before, after) {
		t.Fatalf("the queue made again numbered its dead messages %v, where they were %v: the test proves nothing", after, before)
	}
	_, err = s.RetryDeadMatching(ctx, f, 100, store.RetryOptions{Expect: dry.Token})
	wantErr(t, "guarded retry after the queue was made again", err, store.ErrChanged, "not the same")
	if got := dlqIDs(t, s, store.DLQName(q)); len(got) != 2 {
		t.Fatalf("after the refusal the DLQ holds %v, want 2", got)
	}
}
