package ops_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// hintFilter is the filter and limit a hint's arguments give, as a front
// end passes them on when the next step is followed.
func hintFilter(t *testing.T, h ops.Hint) (ops.DeadFilter, int) {
	t.Helper()
	str := func(k string) string {
		if v, ok := h.Args[k]; ok {
			return v.(string)
		}
		return ""
	}
	limit := 0
	if v, ok := h.Args["limit"]; ok {
		limit = v.(int)
	}
	return ops.DeadFilter{Queue: str("queue"), Kind: str("kind"), ErrorClass: str("error_class"), Reason: str("reason"),
		Since: str("since"), Until: str("until"), Text: str("text"), Group: str("group")}, limit
}

func findHint(t *testing.T, hints []ops.Hint, op string) ops.Hint {
	t.Helper()
	for _, h := range hints {
		if h.Op == op {
			return h
		}
	}
	t.Fatalf("no %s hint among %+v", op, hints)
	return ops.Hint{}
}

// A retry or discard by filter that stops at its limit says to call again
// with the same filter and limit: followed, the hint moves the rest of
// what was asked for and nothing else (not every dead message of every
// queue, as a hint without the filter would).
func TestLimitReachedHintsKeepTheFilter(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	for _, op := range []string{ops.OpDLQRetry, ops.OpDLQDiscard} {
		t.Run(op, func(t *testing.T) {
			q, other := newQueue(t, s, nil), newQueue(t, s, nil)
			pgtest.DeadLetterN(t, s, q, 3, pgtest.DeadSpec{Class: "net.Unavailable"})
			pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{Class: "bad.Input"})
			pgtest.DeadLetterN(t, s, other, 2, pgtest.DeadSpec{Class: "net.Unavailable"})
			f := ops.DeadFilter{Queue: q, ErrorClass: "net.Unavailable"}
			move := func(f ops.DeadFilter, limit int) (int, bool, []ops.Hint) {
				if op == ops.OpDLQRetry {
					r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: f, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					return r.Retried, r.LimitReached, r.Next
				}
				r, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: f, Limit: limit, Confirm: true})
				if err != nil {
					t.Fatal(err)
				}
				return r.Discarded, r.LimitReached, r.Next
			}
			n, reached, next := move(f, 2)
			if n != 2 || !reached {
				t.Fatalf("first call moved %d, limit reached %v; want 2 and true", n, reached)
			}
			again, limit := hintFilter(t, findHint(t, next, op))
			if again != f || limit != 2 {
				t.Fatalf("the call-again hint selects %+v with limit %d; want %+v with limit 2", again, limit, f)
			}
			if n, _, _ := move(again, limit); n != 1 {
				t.Fatalf("following the hint moved %d; want the 1 left of the class", n)
			}
			if got := pgtest.Live(t, s, q+"_dlq"); got != 2 {
				t.Errorf("the DLQ of %s holds %d; want the 2 of the other class, untouched", q, got)
			}
			if got := pgtest.Live(t, s, other+"_dlq"); got != 2 {
				t.Errorf("the DLQ of %s holds %d; want its 2, untouched", other, got)
			}
		})
	}
}

// The real call a dry run with a corrected payload names carries that
// payload: without it the payload that failed would run again. A payload
// too large to repeat is stood in for by a value the retry refuses, and
// the hint says to pass it again: followed as it is, the hint moves
// nothing, rather than retrying the payload that failed.
func TestDryRunHintKeepsTheCorrectedPayload(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{}, pgtest.DeadSpec{})
	fixed := json.RawMessage(`{"order_id":42,"amount_cents":1999}`)
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}, Payload: fixed, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	h := findHint(t, r.Next, ops.OpDLQRetry)
	if got := fmt.Sprintf("%s", h.Args["payload"]); got != string(fixed) || h.Args["dry_run"] != nil {
		t.Fatalf("the real call after the dry run: %+v; want the corrected payload %s and no dry_run", h, fixed)
	}

	big := json.RawMessage(fmt.Sprintf(`{"blob":%q}`, strings.Repeat("a", 4096)))
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[1:], Filter: ops.DeadFilter{Queue: q}, Payload: big, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	h = findHint(t, r.Next, ops.OpDLQRetry)
	if !strings.Contains(h.Why, "pass the corrected payload again") || len(fmt.Sprint(h)) > 1000 {
		t.Fatalf("the real call after a dry run with a 4 KB payload: %+v; want a short stand-in and a why saying to pass it again", h)
	}
	followHintRefused(t, svc, h)
	if got := pgtest.Live(t, s, q+"_dlq"); got != 2 {
		t.Fatalf("dry runs moved messages: the DLQ holds %d, want 2", got)
	}
}

// followHintRefused makes the retry hint h names, as it is, and fails the
// test unless it is refused as invalid.
func followHintRefused(t *testing.T, svc *ops.Service, h ops.Hint) {
	t.Helper()
	payload, ok := h.Args["payload"].(json.RawMessage)
	if !ok {
		t.Fatalf("the hint %+v carries no payload: followed, it would retry the payload that failed", h)
	}
	ids, _ := h.Args["ids"].([]int64)
	queue, _ := h.Args["queue"].(string)
	_, err := svc.DLQRetry(testContext(t), ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: queue}, Payload: payload})
	if !errors.Is(err, ops.ErrInvalid) {
		t.Fatalf("the hint %+v followed as it is: %v; want it refused as invalid", h, err)
	}
}

// After a retry, the hint to watch the retried messages finds them.
func TestRetryHintFindsTheRetriedMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{})
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	h := findHint(t, r.Next, ops.OpQueueMessages)
	req := ops.QueueMessagesRequest{Queue: fmt.Sprint(h.Args["queue"])}
	if st, ok := h.Args["state"]; ok {
		req.State = fmt.Sprint(st)
	}
	page, err := svc.QueueMessages(ctx, req)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("following the hint %+v lists %+v, %v; want the retried message", h, page, err)
	}
}

// Dropping a priority level alone is refused before the confirmation is
// asked for: the question would otherwise offer a drop that cannot be.
func TestQueueDropRefusesALevel(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("levels")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	for _, confirm := range []bool{false, true} {
		_, err := svc.QueueDrop(ctx, ops.QueueDropRequest{Queue: q + "_p2", Confirm: confirm})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "priority level 2 of queue") {
			t.Errorf("drop %s_p2 (confirm %v): %v; want ErrInvalid naming its queue", q, confirm, err)
		}
	}
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q + "_p1"}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "priority level 1 of queue") {
		t.Errorf("pause %s_p1: %v; want ErrInvalid naming its queue", q, err)
	}
	if res, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); err != nil || len(res.Queues) != 1 || res.Queues[0].Paused {
		t.Fatalf("queue %s after the refused drops and pause: %+v, %v", q, res, err)
	}
}

// Live messages are listed per work queue: a DLQ's name points to the DLQ
// operations, while a queue with priority levels lists the messages of its
// levels, each saying its level, as one of its levels named alone does.
func TestQueueMessagesOfADLQOrOfLevels(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	plain := newQueue(t, s, nil)
	pgtest.DeadLetter(t, s, plain, pgtest.DeadSpec{})
	_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: plain + "_dlq"})
	if !errors.Is(err, ops.ErrInvalid) || !hasHint(ops.HintsOf(err), ops.OpDLQSummary, map[string]any{"queue": plain}) {
		t.Errorf("messages of %s_dlq: %v, hints %+v; want ErrInvalid pointing to the DLQ summary", plain, err, ops.HintsOf(err))
	}

	pq := uniqueName("levels")
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: pq, Priorities: 3}); err != nil {
		t.Fatal(err)
	}
	sent, err := svc.Send(ctx, ops.SendRequest{Queue: pq, Payload: json.RawMessage(`{}`), Priority: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{pq, store.PriorityQueueName(pq, 2)} {
		page, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("messages of %s: %+v, %v; want the message sent at priority 2", q, page, err)
		}
		if m := page.Items[0]; m.MsgID != sent.MsgID || m.Queue != store.PriorityQueueName(pq, 2) || m.Priority == nil || *m.Priority != 2 {
			t.Errorf("messages of %s: %+v; want message %d of %s at priority 2", q, m, sent.MsgID, store.PriorityQueueName(pq, 2))
		}
	}
}

// A retry into a paused queue names its resume first: the retried
// messages wait there, unread, which would look like a retry that did
// nothing.
func TestRetryIntoAPausedQueueSaysResume(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{}, pgtest.DeadSpec{})
	if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	if len(r.Next) == 0 || r.Next[0].Op != ops.OpQueueResume || r.Next[0].Args["queue"] != q {
		t.Fatalf("retry into paused %s: next %+v; want its resume first", q, r.Next)
	}
	if _, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q}); err != nil {
		t.Fatal(err)
	}
	r, err = svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[1:], Filter: ops.DeadFilter{Queue: q}})
	if err != nil || hasHint(r.Next, ops.OpQueueResume, nil) {
		t.Fatalf("retry into %s resumed: next %+v, %v; want no resume", q, r.Next, err)
	}
}

// A setting that clashes with one stored earlier (a configuration file
// that no longer names it) says the stored values, which the request
// never gave.
func TestQueueCreateClashWithStoredSettings(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("stored")
	ten, five := 10*time.Minute, 5*time.Minute
	if _, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{Backoff: &ten, BackoffMax: &ten}}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{BackoffMax: &five}})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "keep their stored values (backoff 600s") || strings.Contains(err.Error(), "backoff_max 600s") {
		t.Fatalf("create with backoff_max under the stored backoff: %v; want ErrInvalid naming the stored backoff, not the backoff_max given", err)
	}
	// A request that clashes with itself is not blamed on what is stored.
	_, err = svc.QueueCreate(ctx, ops.QueueCreateRequest{Queue: q, Settings: ops.SettingsChange{Backoff: &ten, BackoffMax: &five}})
	if !errors.Is(err, ops.ErrInvalid) || strings.Contains(err.Error(), "stored values") {
		t.Fatalf("create whose backoff_max is under its own backoff: %v; want ErrInvalid without stored values", err)
	}
}

// A retry or discard without ids or a filter (an empty selection, more
// often a caller's mistake, such as a blank queue from an unset variable,
// than a wish) moves nothing unless All says every dead message is meant.
func TestMoveOfNothingSelected(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	pgtest.DeadLetterN(t, s, q, 4, pgtest.DeadSpec{})
	blank := ops.DeadFilter{Queue: "  ", Group: " ", Text: " ", Kind: "\t"}
	for _, req := range []ops.DLQRetryRequest{{}, {DryRun: true}, {IDs: []int64{}}, {Filter: blank, Limit: 10}} {
		if _, err := svc.DLQRetry(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "nothing is selected") {
			t.Errorf("retry %+v: %v; want ErrInvalid saying nothing is selected", req, err)
		}
	}
	for _, req := range []ops.DLQDiscardRequest{{Confirm: true}, {DryRun: true}, {IDs: []int64{}, Confirm: true}, {Filter: blank, Limit: 10, Confirm: true}} {
		if _, err := svc.DLQDiscard(ctx, req); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "nothing is selected") {
			t.Errorf("discard %+v: %v; want ErrInvalid saying nothing is selected", req, err)
		}
	}
	if got := pgtest.Live(t, s, q+"_dlq"); got != 4 {
		t.Fatalf("refused moves moved messages: the DLQ holds %d, want 4", got)
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{All: true, Limit: 2})
	if err != nil || r.Retried != 2 || pgtest.Live(t, s, q) != 2 {
		t.Fatalf("retry of all: %+v, %v; want 2 moved", r, err)
	}
	dry, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{All: true, DryRun: true})
	if err != nil || dry.Discarded != 2 {
		t.Fatalf("dry run of a discard of all: %+v, %v; want 2", dry, err)
	}
	// The real call the dry run names says all too, and works as named.
	h := findHint(t, dry.Next, ops.OpDLQDiscard)
	if h.Args["all"] != true {
		t.Fatalf("the real call after a dry run of all: %+v; want all", h)
	}
	limit, _ := h.Args["limit"].(int)
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{All: true, Confirm: true, Expect: h.Args["expect"].(string), Limit: limit})
	if err != nil || d.Discarded != 2 || pgtest.Live(t, s, q+"_dlq") != 0 {
		t.Fatalf("discard of all: %+v, %v; want the 2 left moved", d, err)
	}
}

// The hints for an id in several DLQs, one per DLQ, are the call made
// with that DLQ: a dry run stays a dry run, and the corrected payload and
// the clearing of deadlines go with it.
func TestAmbiguousIDHintsKeepTheCall(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t) // its calls by ids alone read every DLQ
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	first := pgtest.DLQStart()
	a, b := newQueueAt(t, s, first, nil), newQueueAt(t, s, first, nil)
	id := pgtest.DeadLetter(t, s, a, pgtest.DeadSpec{})[0]
	if pgtest.DeadLetter(t, s, b, pgtest.DeadSpec{})[0] != id {
		t.Fatal("the two DLQs should hold the same id")
	}
	fixed := json.RawMessage(`{"order_id":1}`)
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: []int64{id}, DryRun: true, ClearDeadline: true, Payload: fixed})
	if err != nil || r.Ambiguous != 1 {
		t.Fatalf("retry of an id in two DLQs: %+v, %v; want it ambiguous", r, err)
	}
	for _, q := range []string{a, b} {
		want := map[string]any{"queue": q + "_dlq", "dry_run": true, "clear_deadline": true, "payload": fixed}
		if !hasHint(r.Next, ops.OpDLQRetry, want) {
			t.Errorf("retry hints %+v; want one with %v", r.Next, want)
		}
	}
	d, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{IDs: []int64{id}, DryRun: true})
	if err != nil || d.Ambiguous != 1 {
		t.Fatalf("discard of an id in two DLQs: %+v, %v; want it ambiguous", d, err)
	}
	for _, q := range []string{a, b} {
		if !hasHint(d.Next, ops.OpDLQDiscard, map[string]any{"queue": q + "_dlq", "dry_run": true}) {
			t.Errorf("discard hints %+v; want a dry run in %s", d.Next, q)
		}
	}
	if !inDLQ(t, s, a, id) || !inDLQ(t, s, b, id) {
		t.Fatal("dry runs moved a message")
	}
}

// A corrected payload that holds a secret is not repeated in the next
// call a dry run names: hints are shown and kept where secrets are not.
// The hint shows it with the secret redacted, which the retry refuses, and
// says to put the real value back: followed as it is, it moves nothing.
func TestDryRunHintLeavesASecretPayloadOut(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{})
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, DryRun: true,
		Payload: json.RawMessage(`{"order_id":42,"password":"hunter3"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h := findHint(t, r.Next, ops.OpDLQRetry)
	if strings.Contains(fmt.Sprint(h), "hunter3") || !strings.Contains(fmt.Sprintf("%s", h.Args["payload"]), `"order_id":42`) ||
		!strings.Contains(h.Why, "put the real one back") {
		t.Fatalf("the real call after a dry run with a secret in its payload: %+v; want the payload redacted and a why saying to put the secret back", h)
	}
	followHintRefused(t, svc, h)
	if got := pgtest.Live(t, s, q+"_dlq"); got != 1 {
		t.Fatalf("the DLQ holds %d, want 1", got)
	}
}

// When the oldest messages a retry by filter selects, as many as its
// limit, all fail, the same call would select them again: the next steps
// say so instead of calling it again.
func TestRetryStuckOnItsOldestMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	passed := pgtest.DeadSpec{Headers: `{"pgbus_deadline":"2020-01-01T00:00:00Z"}`}
	pgtest.DeadLetter(t, s, q, passed, passed, passed)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	for _, dry := range []bool{true, false} {
		r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 3, DryRun: dry})
		if err != nil || r.Retried != 0 || r.Failed != 3 || !r.LimitReached {
			t.Fatalf("retry (dry run %v) of 3 whose deadlines passed: %+v, %v", dry, r, err)
		}
		for _, h := range r.Next {
			if h.Op == ops.OpDLQRetry && h.Args["clear_deadline"] != true {
				t.Errorf("dry run %v: next %+v calls the same retry again, which would select the same 3", dry, h)
			}
		}
		if !slices.ContainsFunc(r.Next, func(h ops.Hint) bool {
			return h.Op == ops.OpDLQList && strings.Contains(h.Why, "select them again") && h.Args["queue"] == q
		}) {
			t.Errorf("dry run %v: %+v; want a list of them saying why", dry, r.Next)
		}
	}
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}, Limit: 4})
	if err != nil || r.Retried != 1 || !hasHint(r.Next, ops.OpDLQRetry, map[string]any{"limit": 4, "queue": q}) {
		t.Fatalf("a retry that moved one: %+v, %v; want the same call again named", r, err)
	}
}

// A process that crashed long ago and whose queues running processes serve
// again is history: it no longer keeps health DEGRADED (it did for the day
// the list keeps it). One that crashed lately, or whose queue nobody
// serves, still does.
func TestStaleWorkersThatNoLongerMatter(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	// crashed registers a worker on queue whose last heartbeat was ago.
	crashed := func(id, queue, ago string) {
		t.Helper()
		register(t, s, id, queue)
		if _, err := s.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - $2::interval WHERE id = $1`, id, ago); err != nil {
			t.Fatal(err)
		}
	}
	register(t, s, "w-live", "orders")
	crashed("w-old", "orders", "2 hours")
	h, err := svc.Health(ctx)
	if err != nil || reasonOf(h, "stale_workers", "") != nil {
		t.Fatalf("a crash 2 hours ago, its queue served again: %+v, %v; want no stale_workers", h, err)
	}
	crashed("w-recent", "orders", "10 minutes")
	if h, err = svc.Health(ctx); err != nil || reasonOf(h, "stale_workers", "") == nil || !strings.HasPrefix(reasonOf(h, "stale_workers", "").Message, "1 worker process") {
		t.Fatalf("a crash 10 minutes ago: %+v, %v; want stale_workers counting it alone", h, err)
	}
	crashed("w-orphan", "emails", "3 hours")
	if h, err = svc.Health(ctx); err != nil || reasonOf(h, "stale_workers", "") == nil || !strings.HasPrefix(reasonOf(h, "stale_workers", "").Message, "2 worker process") {
		t.Fatalf("an old crash whose queue nobody serves: %+v, %v; want it counted too", h, err)
	}
}

// The step that starts a worker for a queue no worker serves names the
// handler the queue is known to run with (Options.Handlers): a type, none
// for one the configuration gives, and for a queue with none known it
// says a handler is still to be chosen (WorkNeedsHandler) instead of
// naming a worker that refuses to start.
func TestStartWorkerHintNamesTheHandler(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	demoQ, configured, unknown := newQueue(t, s, nil), newQueue(t, s, nil), newQueue(t, s, nil)
	svc := newService(t, s, ops.Options{Handlers: map[string]string{demoQ: "demo", configured: ops.HandlerConfigured}})
	for queue, want := range map[string]map[string]any{
		demoQ:      {"queue": demoQ, "handler": "demo"},
		configured: {"queue": configured},
		unknown:    {"queue": unknown, ops.WorkNeedsHandler: true},
	} {
		res, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		if h := findHint(t, res.Next, ops.OpWork); !maps.Equal(h.Args, want) {
			t.Errorf("resume of %s: work hint %+v, want args %v", queue, h, want)
		}
	}
}

// The live messages of a queue dropped outside pgbus while its DLQ holds
// dead messages: not found, saying it was dropped and how many dead
// messages are left, with a hint to them; a queue that never was is
// still just not found.
func TestQueueMessagesOfADroppedQueue(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := uniqueName("gone")
	pgtest.CreateQueue(t, s, q)
	pgtest.DeadLetterN(t, s, q, 2, pgtest.DeadSpec{})
	pgtest.DropOutside(t, s, q)
	_, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q})
	hints := ops.HintsOf(err)
	if !errors.Is(err, ops.ErrNotFound) || !strings.Contains(err.Error(), "was dropped") || !strings.Contains(err.Error(), q+"_dlq holds 2 dead messages") ||
		len(hints) == 0 || hints[0].Op != ops.OpDLQSummary || hints[0].Args["queue"] != q {
		t.Fatalf("messages of the dropped queue: %v, hints %+v; want not found, saying it was dropped with 2 dead messages, a hint to them first", err, hints)
	}
	never := uniqueName("never")
	if _, err := svc.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: never}); !errors.Is(err, ops.ErrNotFound) || strings.Contains(err.Error(), "dropped") {
		t.Fatalf("messages of a queue that never was: %v; want not found, no word of a drop", err)
	}
}

// A service given no Handlers serves a Go program that runs its own
// workers, with handlers of its code that no command starts: no next step
// starts a worker for a queue none serves (an OpWork step named the
// command-line worker and its handler types), while the verdict still
// says the queue is not served and points at the worker processes.
func TestNoStartWorkerHintWithoutHandlers(t *testing.T) {
	t.Parallel()
	s := isolatedStore(t)
	ctx := testContext(t)
	q := newQueue(t, s, nil)
	if _, err := s.Send(ctx, q, store.NewMessage{Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, s, ops.Options{})
	h, err := svc.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := reasonOf(h, "no_workers", q)
	if r == nil {
		t.Fatalf("health of a queue with a ready message and no worker: %+v; want no_workers", h.Reasons)
	}
	resumed, err := svc.QueueResume(ctx, ops.QueueRequest{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	for what, next := range map[string][]ops.Hint{"health's no_workers": r.Next, "resume": resumed.Next} {
		if slices.ContainsFunc(next, func(h ops.Hint) bool { return h.Op == ops.OpWork }) {
			t.Errorf("%s of a Go program's queue: next %+v; want no step that starts a command-line worker", what, next)
		}
	}
	if !slices.ContainsFunc(r.Next, func(h ops.Hint) bool { return h.Op == ops.OpWorkers }) {
		t.Errorf("health's no_workers: next %+v; want the worker processes", r.Next)
	}
}
