package tools_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// responseLimit is the most characters a tool's answer (the JSON text of
// its result) may have, whatever the arguments: an agent reads every
// character of it.
const responseLimit = 16_000

// bigDLQ fills a queue's DLQ with 10,000 dead messages: 9,900 written in
// bulk (the store's bench loader, so the test stays fast), then the
// newest 100 with 20 KB payloads, 3 KB headers, 4,000-character errors,
// long backtraces and a history of 30 failures, identical ones in runs;
// and 40 live messages like them in retrying state. It returns the queue
// and the newest dead message's id.
func bigDLQ(t *testing.T, st *store.Store) (string, int64) {
	t.Helper()
	ctx := testContext(t)
	q := newQueue(t, st)
	longErr := "upstream refused the request: " + strings.Repeat("connection reset by peer while writing the body; ", 80)
	trace := strings.Repeat("github.com/acme/orders/internal/charge.(*Client).Do(0xc000123456)\n\t/src/charge/client.go:123 +0x1f\n", 15)
	if err := st.BulkLoadDead(ctx, q, 9_900, 50); err != nil {
		t.Fatal(err)
	}

	large := fmt.Sprintf(`{"order_id": "ord-2", "lines": %q}`, strings.Repeat("y", 20_000))
	msgs := make([]store.NewMessage, 140)
	for i := range msgs {
		msgs[i] = store.NewMessage{Payload: json.RawMessage(large), Headers: json.RawMessage(`{"pgbus_kind": "charge", "note": "` + strings.Repeat("h", 3000) + `"}`)}
	}
	ids, err := st.SendBatch(ctx, q, msgs)
	if err != nil {
		t.Fatal(err)
	}
	// 30 failures each: identical ones in runs, and some that differ.
	for attempt := 1; attempt <= 30; attempt++ {
		msg := longErr
		if attempt%10 == 0 {
			msg = fmt.Sprintf("attempt %d: %s", attempt, longErr)
		}
		items := make([]store.RetryItem, len(ids))
		for i, id := range ids {
			items[i] = store.RetryItem{MsgID: id, Failure: store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: msg, Backtrace: trace,
				Detail: store.FailureDetail{ElapsedMS: ptr(int64(1200)), Output: strings.Repeat("stderr line\n", 100)}}}
		}
		if _, err := st.RetryMany(ctx, q, items); err != nil {
			t.Fatal(err)
		}
	}
	dead := make([]store.DeadLetterItem, 100)
	for i := range dead {
		dead[i] = store.DeadLetterItem{MsgID: ids[i], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 30,
			Failure: &store.Failure{Attempt: 31, Kind: "charge", ErrorClass: "net.OpError", ErrorMessage: longErr, Backtrace: trace}}
	}
	moved, err := st.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceWorker, dead)
	if err != nil || len(moved) != 100 {
		t.Fatalf("dead-letter the large messages: %d moved, %v", len(moved), err)
	}
	return q, moved[len(moved)-1].DLQMsgID
}

// manyWorkersAndBreakers registers 1,000 worker processes that ran (two
// of them running now, the rest stopped), each serving 20 queues, and 150
// circuit breakers used by 40 queues each, 3 of them open.
func manyWorkersAndBreakers(t *testing.T, st *store.Store, q string) {
	t.Helper()
	ctx := testContext(t)
	queues := make([]string, 20)
	for i := range queues {
		queues[i] = fmt.Sprintf("%s_%02d", q, i)
	}
	_, err := st.Pool().Exec(ctx, `INSERT INTO pgbus.workers (id, hostname, pid, queues, concurrency, started_at, heartbeat_at, stopped_at)
		SELECT 'budget-'||i, 'host-'||i, i, $1, 10, now() - interval '1 hour', now() - interval '30 minutes', now() - interval '30 minutes'
		FROM generate_series(1, 1000) i`, queues)
	if err != nil {
		t.Fatal(err)
	}
	// Hourly beats: the two stay running however long the breakers below
	// take to make on a busy machine.
	for _, id := range []string{"budget-7", "budget-900"} {
		if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "live", PID: 1, Queues: queues, Concurrency: 10, HeartbeatInterval: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	users := make([]store.BreakerUser, 40)
	for i := range users {
		users[i] = store.BreakerUser{Queue: fmt.Sprintf("%s_%02d", q, i), Kind: "charge"}
	}
	for i := range 150 {
		name := fmt.Sprintf("http:bank-%03d.example.com", i)
		if err := st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordBreakerUsers(ctx, name, users); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			if _, err := st.BreakerFailure(ctx, name, "503 Service Unavailable: "+strings.Repeat("upstream overloaded; ", 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestResponsesStayUnderBudget calls every tool but the system-wide lists
// (TestSystemListsStayUnderBudget) with its default arguments
// and with its largest allowed ones on a DLQ of 10,000 messages with long
// errors and large payloads, payloads allowed and asked for, and checks
// every answer is under responseLimit characters.
func TestResponsesStayUnderBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{AllowPayloads: true})
	start := time.Now()
	q, newest := bigDLQ(t, e.st)
	t.Logf("fixture: %v", time.Since(start))
	all := make([]int64, 100)
	for i := range all {
		all[i] = newest - int64(i)
	}
	// Audit entries with long arguments and results, so that its largest
	// page is large.
	for range 30 {
		callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", map[string]any{"queue": q, "ids": all, "dry_run": true})
		callOK[ops.QueuePaused](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
	}
	t.Logf("audit entries: %v", time.Since(start))
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"pgbus_health", nil},
		{"pgbus_queue_stats", nil},
		{"pgbus_queue_stats", map[string]any{"queue": q}},
		{"pgbus_dlq_summary", nil},
		{"pgbus_dlq_summary", map[string]any{"queue": q}},
		{"pgbus_dlq_list", nil},
		{"pgbus_dlq_list", map[string]any{"queue": q, "limit": 100}},
		{"pgbus_dlq_show", map[string]any{"msg_id": newest}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": newest, "include_payload": true}},
		{"pgbus_dlq_show", map[string]any{"queue": q, "msg_id": newest, "include_payload": true, "full_history": true}},
		{"pgbus_queue_messages", map[string]any{"queue": q}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "limit": 100, "include_payload": true}},
		{"pgbus_queue_messages", map[string]any{"queue": q, "limit": 100, "include_payload": true, "full_history": true}},
		{"pgbus_audit", nil},
		{"pgbus_audit", map[string]any{"limit": 100}},
		{"pgbus_audit", map[string]any{"limit": 100, "tool": "all", "since": "1h"}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "limit": 1000, "dry_run": true}},
		{"pgbus_dlq_retry", map[string]any{"queue": q, "ids": all, "dry_run": true}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "limit": 1000, "dry_run": true}},
		{"pgbus_dlq_discard", map[string]any{"queue": q, "ids": all, "dry_run": true}},
		{"pgbus_dlq_purge", map[string]any{"queue": q, "older_than": "1h", "confirm": true}},
		{"pgbus_queue_resume", map[string]any{"queue": q}},
		{"pgbus_queue_pause", map[string]any{"queue": q}},
		{"pgbus_queue_run_now", map[string]any{"queue": q, "dry_run": true}},
		{"pgbus_circuit_reset", map[string]any{"name": "budget-test-breaker"}},
	}
	for _, c := range cases {
		res := e.call(t, c.tool, c.args)
		text := resultText(res)
		n := utf8.RuneCountInString(text)
		t.Logf("%s %v: %d characters (%v)", c.tool, c.args, n, time.Since(start))
		if res.IsError && !strings.Contains(text, "breaker") {
			t.Errorf("%s(%v): tool error: %s", c.tool, c.args, text)
		}
		if n >= responseLimit {
			t.Errorf("%s(%v): %d characters, want under %d", c.tool, c.args, n, responseLimit)
		}
	}
	checkDiscardedPages(t, e, q, all)
}

// checkDiscardedPages discards the dead messages ids of q, whose errors
// are long, and lists them 100 to a page: each page within the budget,
// fewer rows than asked for, and the pages, followed by their cursors,
// list each id once, as a restore needs them all.
func checkDiscardedPages(t *testing.T, e *env, q string, ids []int64) {
	t.Helper()
	if d := callOK[ops.DLQDiscard](t, e, "pgbus_dlq_discard", map[string]any{"queue": q, "ids": ids}); d.Discarded != len(ids) {
		t.Fatalf("discarded %d of %d", d.Discarded, len(ids))
	}
	seen := map[int64]int{}
	args := map[string]any{"queue": q, "limit": 100}
	pages := 0
	for ; pages < 50; pages++ {
		checkSize(t, e, "pgbus_dlq_discarded", args)
		page := callOK[ops.DLQDiscarded](t, e, "pgbus_dlq_discarded", args)
		for _, it := range page.Items {
			seen[it.MsgID]++
		}
		if page.NextCursor == "" {
			break
		}
		args = map[string]any{"queue": q, "limit": 100, "cursor": page.NextCursor}
	}
	if pages < 1 {
		t.Errorf("the %d discarded messages fit one page under the budget; the test wants them to need several", len(ids))
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("discarded message %d listed %d times over %d pages, want once", id, seen[id], pages+1)
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("the pages list %d messages, want the %d discarded", len(seen), len(ids))
	}
}

// checkSize fails the test when a tool's answer is not under responseLimit.
func checkSize(t *testing.T, e *env, tool string, args map[string]any) {
	t.Helper()
	if n := utf8.RuneCountInString(resultText(e.call(t, tool, args))); n >= responseLimit {
		t.Errorf("%s(%v): %d characters, want under %d", tool, args, n, responseLimit)
	}
}

// TestSystemListsStayUnderBudget: 1,000 worker processes and 150 breakers
// used by 40 queues each are listed within the budget, the ones to act on
// (running workers, open breakers) first, and the answer says how many it
// left out.
func TestSystemListsStayUnderBudget(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)), ops.Options{})
	manyWorkersAndBreakers(t, e.st, newQueue(t, e.st))
	checkSize(t, e, "pgbus_workers", nil)
	checkSize(t, e, "pgbus_circuits", nil)

	ws := callOK[ops.Workers](t, e, "pgbus_workers", nil)
	if ws.Running != 2 || ws.Stopped != 998 || ws.Omitted == 0 || len(ws.Workers)+ws.Omitted != 1000 || len(ws.Notes) != 1 {
		t.Fatalf("workers: %d listed, running %d, stopped %d, omitted %d, notes %v", len(ws.Workers), ws.Running, ws.Stopped, ws.Omitted, ws.Notes)
	}
	if ws.Workers[0].Status != ops.WorkerRunning || ws.Workers[1].Status != ops.WorkerRunning || ws.Workers[2].Status != ops.WorkerStopped {
		t.Errorf("workers start %s, %s, %s; want the two running first", ws.Workers[0].Status, ws.Workers[1].Status, ws.Workers[2].Status)
	}
	if !strings.HasSuffix(ws.Notes[0], "; pgbus workers on the command line lists more") {
		t.Errorf("note %q does not say where to see more", ws.Notes[0])
	}

	cs := callOK[ops.Circuits](t, e, "pgbus_circuits", nil)
	if cs.Open != 3 || cs.Omitted == 0 || len(cs.Circuits)+cs.Omitted != 150 || len(cs.Notes) != 1 {
		t.Fatalf("circuits: %d listed, open %d, omitted %d, notes %v", len(cs.Circuits), cs.Open, cs.Omitted, cs.Notes)
	}
	if !strings.HasSuffix(cs.Notes[0], "; pgbus circuits on the command line lists them all") {
		t.Errorf("note %q does not say where to see them all", cs.Notes[0])
	}
	for i, b := range cs.Circuits {
		if (i < 3) != (b.State == store.BreakerOpen) {
			t.Errorf("circuit %d is %s %s; want the 3 open ones first", i, b.Name, b.State)
		}
		if len(b.Users) != 20 || b.UsersOmitted != 20 {
			t.Errorf("%s lists %d users, omits %d; want 20 and 20", b.Name, len(b.Users), b.UsersOmitted)
		}
	}
}

// descriptionsLimit bounds the characters of the tools' descriptions in
// tools/list, every tool's: a client sends them to its model before the
// first call, so they cost every session. (The schemas, output schemas
// above all, are most of tools/list; they are checked by TestSchemas.)
const descriptionsLimit = 12_000

// TestToolDescriptionsAreTight checks that the descriptions of all tools,
// the write tools included, stay under descriptionsLimit characters.
func TestToolDescriptionsAreTight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	res, err := e.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tool := range res.Tools {
		n += utf8.RuneCountInString(tool.Description)
	}
	whole, _ := json.Marshal(res)
	t.Logf("tools/list: %d tools, descriptions %d characters, all %d", len(res.Tools), n, utf8.RuneCount(whole))
	if len(res.Tools) < 15 || n >= descriptionsLimit {
		t.Errorf("tools/list: %d tools with %d characters of descriptions, want all 15 under %d", len(res.Tools), n, descriptionsLimit)
	}
}

// TestQueueStatsOfManyQueuesStayUnderBudget: with more queues than fit,
// pgbus_queue_stats lists the ones to act on (dead messages, a backlog),
// by name, leaves out the others and says how many, and how many of them
// hold dead messages; the service's
// unbounded read, for the dashboard, still has every queue.
func TestQueueStatsOfManyQueuesStayUnderBudget(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	st := e.st
	ctx := testContext(t)
	const total = 45
	queues := make([]string, total)
	for i := range queues {
		queues[i] = newQueue(t, st)
	}
	// The queues an operator acts on are named last, so that a list cut
	// by name would lose them; and more queues than fit hold a dead
	// message each, so that a list of those first would lose the
	// backlog, and the queue with the most dead among them.
	slices.Sort(queues)
	dead, backlog := queues[total-1], queues[total-2]
	if err := st.BulkLoadDead(ctx, dead, 3, 1); err != nil {
		t.Fatal(err)
	}
	for _, q := range queues[:total-2] {
		if err := st.BulkLoadDead(ctx, q, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.SendBatch(ctx, backlog, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}

	got := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", nil)
	if n := utf8.RuneCountInString(resultText(e.call(t, "pgbus_queue_stats", nil))); n >= responseLimit {
		t.Fatalf("pgbus_queue_stats: %d characters, want under %d", n, responseLimit)
	}
	if got.Omitted == 0 || len(got.Queues)+got.Omitted != total || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], fmt.Sprintf("of the %d queues", total)) ||
		!strings.HasSuffix(got.Notes[0], "; pass queue for one of the others, or name_contains for those whose names contain a part (a tenant's prefix); pgbus queues on the command line lists them all") {
		t.Fatalf("%d listed, %d omitted, notes %v; want some left out of %d, and a note saying how to see them", len(got.Queues), got.Omitted, got.Notes, total)
	}
	// Every queue left out holds a dead message: the note says so, where
	// it let an agent take them for quiet ones.
	if want := fmt.Sprintf("; of the %d left out, %d hold dead messages;", got.Omitted, got.Omitted); !strings.Contains(got.Notes[0], want) {
		t.Fatalf("note %q does not say %q", got.Notes[0], want)
	}
	listed := make([]string, len(got.Queues))
	for i, q := range got.Queues {
		listed[i] = q.Queue
	}
	if !slices.IsSorted(listed) || !slices.Contains(listed, dead) || !slices.Contains(listed, backlog) {
		t.Fatalf("listed %v: want them by name, with %s (dead messages) and %s (a backlog)", listed, dead, backlog)
	}

	all, err := newDeps(t, st, ops.Options{}).Ops.QueueStats(ctx, ops.QueueStatsRequest{All: true})
	if err != nil || len(all.Queues) != total || all.Omitted != 0 {
		t.Fatalf("All: %d queues, %d omitted, %v; want all %d", len(all.Queues), all.Omitted, err, total)
	}
}

// TestQueueStatsNotesStayUnderBudget: the stats of every queue, cut to
// fit, keep the notes of the queues whose DLQ tables are gone and of the
// PGMQ queues pgbus cannot list within the response bound too, as they
// count on the list's room.
func TestQueueStatsNotesStayUnderBudget(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	st := e.st
	ctx := testContext(t)
	for range 45 {
		if err := st.BulkLoadDead(ctx, newQueue(t, st), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 8 {
		q := pgtest.Name(fmt.Sprintf("lost_dlq_table_%d", i))
		if err := st.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, fmt.Sprintf(`DROP TABLE pgmq.%q`, "q_"+store.DLQName(q))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		name := fmt.Sprintf("Another_Clients_Queue_%02d_%s", i, strings.Repeat("X", 40))
		if _, err := st.Pool().Exec(ctx, `INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged) VALUES ($1, false, false)`, name); err != nil {
			t.Fatal(err)
		}
	}
	text := resultText(e.call(t, "pgbus_queue_stats", nil))
	if n := utf8.RuneCountInString(text); n >= responseLimit {
		t.Fatalf("pgbus_queue_stats: %d characters, want under %d:\n%s", n, responseLimit, text)
	}
	got := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", nil)
	notes := strings.Join(got.Notes, "\n")
	for _, want := range []string{"of the 53 queues", "dead-letter queue's table is gone", "3 more queues have lost their dead-letter queues' tables", "7 PGMQ queues are not listed"} {
		if !strings.Contains(notes, want) {
			t.Errorf("pgbus_queue_stats notes %q; want one saying %q", got.Notes, want)
		}
	}
}

// TestHealthOfManyStalledQueuesStaysUnderBudget: when more queues have
// problems than fit, pgbus_health lists the STALLED ones first, leaves out
// the rest and counts them, and its verdict still counts every queue.
func TestHealthOfManyStalledQueuesStaysUnderBudget(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	st := e.st
	ctx := testContext(t)
	const total = 60
	for i := range total {
		q := newQueue(t, st)
		if _, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		// Paused queues are only DEGRADED: they must not push out the
		// STALLED ones.
		if i%20 == 0 {
			callOK[ops.QueuePaused](t, e, "pgbus_queue_pause", map[string]any{"queue": q})
		}
	}
	h, text := healthOKText(t, e, nil)
	if n := utf8.RuneCountInString(text); n >= responseLimit {
		t.Fatalf("pgbus_health: %d characters, want under %d", n, responseLimit)
	}
	if h.Status != ops.HealthStalled || counted(h.Queues) != total || counted(h.Backlog) != int64(total) || h.Omitted == 0 || len(h.Reasons)+h.Omitted != total || len(h.Notes) != 1 {
		t.Fatalf("status %s, %d queues, backlog %d, %d reasons listed, %d omitted, notes %v", h.Status, counted(h.Queues), counted(h.Backlog), len(h.Reasons), h.Omitted, h.Notes)
	}
	if !strings.HasSuffix(h.Notes[0], "; pgbus health on the command line lists them all") || !strings.Contains(h.Notes[0], "left out: ") ||
		!regexp.MustCompile(`left out: (\w+ \d+, )*queue_paused 3\b`).MatchString(h.Notes[0]) {
		t.Errorf("note %q does not say which reasons it left out, and where to see them all", h.Notes[0])
	}
	if !slices.ContainsFunc(h.Next, func(n ops.Hint) bool { return n.Op == "pgbus_health" && n.Args["code"] == "queue_paused" }) {
		t.Errorf("next %+v does not name pgbus_health with the code left out, queue_paused", h.Next)
	}
	for _, r := range h.Reasons {
		if r.Status != ops.HealthStalled {
			t.Fatalf("listed %s %s (%s) while STALLED reasons were left out", r.Status, r.Code, r.Queue)
		}
	}
}

// TestLongFiltersStayUnderBudget: a move by filter whose arguments are as
// long as a string argument may be (kind, error class and text past what
// a filter compares; queue, group and times padded with blanks or zeros)
// is answered under the budget, refused or not: its errors' next steps
// repeat the filter.
func TestLongFiltersStayUnderBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	const most = 10<<10 - 100 // a string argument's bound, less room for the value
	pad := strings.Repeat(" ", most)
	zeros := strings.Repeat("0", most)
	long := strings.Repeat("k", most)
	padded := map[string]any{"queue": pad + q, "since": zeros + "2h", "until": zeros + "1h"}
	cases := []map[string]any{
		{"kind": long, "error_class": long, "text": long},
		{"kind": long, "error_class": long, "text": long, "group": pad + "4f9a0c7e-1b2d-3e4f-8a9b-0c1d2e3f4a5b"},
		padded,
	}
	for i, filter := range cases {
		for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard"} {
			for _, extra := range []map[string]any{{"expect": long}, {"expect": "1, 2"}, {"dry_run": true}, {"expect": "1, 2", "confirm": true}} {
				if tool == "pgbus_dlq_retry" && extra["confirm"] != nil {
					continue
				}
				args := map[string]any{"limit": 1000}
				for k, v := range filter {
					args[k] = v
				}
				for k, v := range extra {
					args[k] = v
				}
				text := resultText(e.call(t, tool, args))
				if n := utf8.RuneCountInString(text); n >= responseLimit {
					t.Errorf("%s, filter %d with %s: %d characters, want under %d: %.300s", tool, i, slices.Sorted(maps.Keys(extra)), n, responseLimit, text)
				}
			}
		}
		text := resultText(e.call(t, "pgbus_dlq_list", filter))
		if n := utf8.RuneCountInString(text); n >= responseLimit {
			t.Errorf("pgbus_dlq_list, filter %d: %d characters, want under %d: %.300s", i, n, responseLimit, text)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestWorkerOfManyQueuesStaysUnderBudget: a worker process that serves
// 500 queues (one started with every queue of its configuration) is
// listed under the budget, with the first of its queues and a count of
// the others, which the command line lists.
func TestWorkerOfManyQueuesStaysUnderBudget(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	const many = 500
	queues := make([]string, many)
	for i := range queues {
		queues[i] = fmt.Sprintf("customer_notification_webhooks_region_%03d", i)
	}
	if err := e.st.RegisterWorker(testContext(t), store.WorkerProcess{ID: uniqueName("w"), Hostname: "live", PID: 1, Queues: queues, Concurrency: 10, HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	checkSize(t, e, "pgbus_workers", nil)
	ws := callOK[ops.Workers](t, e, "pgbus_workers", nil)
	if len(ws.Workers) != 1 || ws.Running != 1 {
		t.Fatalf("workers: %d listed, %d running; want the one", len(ws.Workers), ws.Running)
	}
	w := ws.Workers[0]
	if len(w.Queues) == 0 || len(w.Queues)+w.QueuesOmitted != many || w.Queues[0] != queues[0] {
		t.Fatalf("the worker lists %d queues (first %v) and omits %d; want the first of its %d and a count of the rest", len(w.Queues), w.Queues[:min(1, len(w.Queues))], w.QueuesOmitted, many)
	}
	if !slices.ContainsFunc(ws.Notes, func(n string) bool {
		return strings.Contains(n, "pgbus workers") && strings.Contains(n, "queues_omitted")
	}) {
		t.Errorf("notes %q do not say how many queues were left out and where to see them", ws.Notes)
	}
}

// TestQueueStatsByNamePart: among more queues than fit, name_contains
// lists those whose names contain a part, as a tenant's prefix, every
// one of them, so that an agent reaches the queues the note counts as
// left out without knowing their names.
func TestQueueStatsByNamePart(t *testing.T) {
	t.Parallel()
	e := newIsolatedEnv(t, ops.Options{})
	st := e.st
	ctx := testContext(t)
	tenant := pgtest.Name("tenant") + "_"
	var mine []string
	for i := range 45 {
		q := pgtest.Name("other")
		if i%15 == 0 {
			q = tenant + fmt.Sprint(i)
			mine = append(mine, q)
		}
		pgtest.CreateQueue(t, st, q)
		if err := st.BulkLoadDead(ctx, q, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(mine)
	all := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", nil)
	if all.Omitted == 0 || !strings.Contains(all.Notes[0], "name_contains") {
		t.Fatalf("%d omitted, notes %v; want some left out and the note naming name_contains", all.Omitted, all.Notes)
	}
	got := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", map[string]any{"name_contains": strings.ToUpper(tenant)})
	var listed []string
	for _, q := range got.Queues {
		listed = append(listed, q.Queue)
	}
	if !slices.Equal(listed, mine) || got.Omitted != 0 {
		t.Fatalf("listed %v, %d omitted; want %v", listed, got.Omitted, mine)
	}
	none := callOK[ops.QueueStatsResult](t, e, "pgbus_queue_stats", map[string]any{"name_contains": "no_such_part"})
	if len(none.Queues) != 0 || len(none.Notes) != 1 || !strings.Contains(none.Notes[0], `no queue's name contains "no_such_part"`) {
		t.Fatalf("%v, notes %v; want none, and a note saying no name contains it", none.Queues, none.Notes)
	}
	res := e.call(t, "pgbus_queue_stats", map[string]any{"name_contains": "x", "queue": mine[0]})
	if !res.IsError || !strings.Contains(resultText(res), "not both") {
		t.Fatalf("queue and name_contains together: %s; want a refusal", resultText(res))
	}
}
