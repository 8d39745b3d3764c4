package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/store"
)

// Helpers of the dead-letter tests. Messages whose headers the store's Send
// refuses (arrays) and failure rows of the past are written with plain SQL,
// as other PGMQ clients and earlier attempts would have.

var isoUTC = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// dlSendRaw inserts a message as pgmq.send does; headers "" means NULL.
func dlSendRaw(t testing.TB, s *store.Store, queue, payload, headers string) int64 {
	t.Helper()
	var h any
	if headers != "" {
		h = headers
	}
	var id int64
	err := s.Pool().QueryRow(testContext(t), `INSERT INTO pgmq."q_`+queue+`" (vt, message, headers) VALUES (clock_timestamp(), $1, $2) RETURNING msg_id`, payload, h).Scan(&id)
	if err != nil {
		t.Fatalf("insert into %s: %v", queue, err)
	}
	return id
}

// dlAddFailure records a failure of an earlier attempt directly.
func dlAddFailure(t testing.TB, s *store.Store, queue string, id int64, attempt int, class, message, backtrace string) {
	t.Helper()
	_, err := s.Pool().Exec(testContext(t), `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message, backtrace) VALUES ($1, $2, $3, $4, $5, $6)`,
		queue, id, attempt, class, message, backtrace)
	if err != nil {
		t.Fatalf("insert failure: %v", err)
	}
}

// dlHeaders returns a row's headers decoded with json.Number, so tests see
// which values are numbers. ok is false when the row is not there.
func dlHeaders(t testing.TB, s *store.Store, queue string, id int64) (any, bool) {
	t.Helper()
	var raw []byte
	err := s.Pool().QueryRow(testContext(t), `SELECT headers FROM pgmq."q_`+queue+`" WHERE msg_id = $1`, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("read headers of %s/%d: %v", queue, id, err)
	}
	if raw == nil {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode headers %s: %v", raw, err)
	}
	return v, true
}

func dlBlock(t testing.TB, s *store.Store, dlq string, id int64) (map[string]any, map[string]any) {
	t.Helper()
	h, ok := dlHeaders(t, s, dlq, id)
	if !ok {
		t.Fatalf("message %d is not in %s", id, dlq)
	}
	hm, _ := h.(map[string]any)
	block, _ := hm[store.HeaderDeadLetter].(map[string]any)
	if block == nil {
		t.Fatalf("message %d in %s has no dead-letter block: %v", id, dlq, h)
	}
	return hm, block
}

func dlCount(t testing.TB, s *store.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(testContext(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func dlKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func dlNumber(t testing.TB, block map[string]any, key string) int64 {
	t.Helper()
	n, ok := block[key].(json.Number)
	if !ok {
		t.Fatalf("block %s = %#v, want a JSON number", key, block[key])
	}
	v, err := n.Int64()
	if err != nil {
		t.Fatalf("block %s = %s, want an integer", key, n)
	}
	return v
}

func dlString(t testing.TB, block map[string]any, key string) string {
	t.Helper()
	v, ok := block[key].(string)
	if !ok {
		t.Fatalf("block %s = %#v, want a JSON string", key, block[key])
	}
	return v
}

func dlEnqueuedAt(t testing.TB, s *store.Store, queue string, id int64) time.Time {
	t.Helper()
	var at time.Time
	if err := s.Pool().QueryRow(testContext(t), `SELECT enqueued_at FROM pgmq."q_`+queue+`" WHERE msg_id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

func dlParseISO(t testing.TB, block map[string]any, key string) time.Time {
	t.Helper()
	v := dlString(t, block, key)
	if !isoUTC.MatchString(v) {
		t.Fatalf("block %s = %q, want UTC ISO 8601 with microseconds and Z", key, v)
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

var (
	baseKeys  = []string{"attempts", "dead_lettered_at", "max_retries", "reason", "recorded_attempts", "source", "source_enqueued_at", "source_msg_id", "source_queue", "version"}
	errorKeys = []string{"backtrace", "error_attempt", "error_class", "error_message", "error_recorded_at"}
)

func sortedKeys(groups ...[]string) []string {
	out := slices.Concat(groups...)
	slices.Sort(out)
	return out
}

func TestDeadLetterManyWritesTheBlock(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)

	// m1: object headers, read twice, ends with a huge failure.
	m1, err := s.Send(ctx, q, store.NewMessage{Payload: json.RawMessage(`{"n":1}`),
		Headers: json.RawMessage(`{"pgbus_kind":"email","pgbus_dlq_retries":2,"x-pgmq-group":"g"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.SetVisibility(ctx, q, m1, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Read(ctx, q, secondVT, 10); err != nil || len(got) == 0 {
			t.Fatalf("read: %v %v", got, err)
		}
	}
	// m2: array headers, no failure. m3: no headers, no failure.
	m2 := dlSendRaw(t, s, q, `{"n":2}`, `[1,2]`)
	m3 := dlSendRaw(t, s, q, `"three"`, "")
	// m4: one earlier failure, then the one that ends it.
	m4 := dlSendRaw(t, s, q, `{"n":4}`, `{"pgbus_kind":"k4"}`)
	dlAddFailure(t, s, q, m4, 1, "FirstError", "first", "")
	// m5: earlier failure only (a crash followed), long texts cut in SQL.
	m5 := dlSendRaw(t, s, q, `{"n":5}`, `{}`)
	longMsg := strings.Repeat("é", 2500)
	var trace15 []string
	for i := range 15 {
		trace15 = append(trace15, fmt.Sprintf("frame %d é", i))
	}
	dlAddFailure(t, s, q, m5, 3, "Crashy", longMsg, strings.Join(trace15, "\n"))

	bigMsg := strings.Repeat("x", 100<<10)
	var trace50 []string
	for i := range 50 {
		trace50 = append(trace50, fmt.Sprintf("main.handler%d() /src/app.go:%d", i, 10+i))
	}
	bigTrace := strings.Join(trace50, "\n")
	enq1 := dlEnqueuedAt(t, s, q, m1)
	before := time.Now()
	items := []store.DeadLetterItem{
		{MsgID: m1, Reason: store.ReasonNonRetryable, MaxRetries: 5, Failure: &store.Failure{Attempt: 2, Kind: "email", ErrorClass: "Boom", ErrorMessage: bigMsg, Backtrace: bigTrace}},
		{MsgID: m2, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3},
		{MsgID: m3, Reason: store.ReasonDeadlineExceeded, MaxRetries: 3},
		{MsgID: 999_999_999, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3, Failure: &store.Failure{ErrorMessage: "not recorded: no such message"}},
		{MsgID: m4, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 2, Failure: &store.Failure{Attempt: 2, ErrorClass: "SecondError", ErrorMessage: "second"}},
		{MsgID: m5, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3},
	}
	moved, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 5 || !slices.IsSortedFunc(moved, func(a, b store.DeadLettered) int { return int(a.SourceMsgID - b.SourceMsgID) }) {
		t.Fatalf("moved = %v, want 5 sorted by source id, the unknown id skipped", moved)
	}
	newID := map[int64]int64{}
	for _, m := range moved {
		newID[m.SourceMsgID] = m.DLQMsgID
	}

	// m1: every key, with its type and value.
	h1, b1 := dlBlock(t, s, dlq, newID[m1])
	if got, want := dlKeys(b1), sortedKeys(baseKeys, errorKeys, []string{"retries_from_dlq"}); !slices.Equal(got, want) {
		t.Fatalf("block keys = %v, want %v", got, want)
	}
	if dlNumber(t, b1, "version") != 1 || dlString(t, b1, "reason") != store.ReasonNonRetryable || dlString(t, b1, "source") != "worker" ||
		dlString(t, b1, "source_queue") != q || dlNumber(t, b1, "source_msg_id") != m1 || dlNumber(t, b1, "attempts") != 2 ||
		dlNumber(t, b1, "max_retries") != 5 || dlNumber(t, b1, "retries_from_dlq") != 2 || dlString(t, b1, "error_class") != "Boom" ||
		dlNumber(t, b1, "error_attempt") != 2 || dlNumber(t, b1, "recorded_attempts") != 1 {
		t.Fatalf("block = %v", b1)
	}
	if got := dlParseISO(t, b1, "source_enqueued_at"); !got.Equal(enq1) {
		t.Fatalf("source_enqueued_at = %v, want %v", got, enq1)
	}
	for _, k := range []string{"dead_lettered_at", "error_recorded_at"} {
		if at := dlParseISO(t, b1, k); at.Before(before.Add(-5*time.Second)) || at.After(time.Now().Add(5*time.Second)) {
			t.Fatalf("%s = %v, want about now", k, at)
		}
	}
	if msg := dlString(t, b1, "error_message"); msg != store.BlockErrorMessage(bigMsg) || len([]rune(msg)) != store.BlockErrorMessageMax {
		t.Fatalf("block error_message has %d characters, want %d", len([]rune(msg)), store.BlockErrorMessageMax)
	}
	if bt := dlString(t, b1, "backtrace"); bt != store.BlockBacktrace(bigTrace) || strings.Count(bt, "\n") != store.BlockBacktraceMaxLines-1 {
		t.Fatalf("block backtrace = %q, want the first 10 lines", bt)
	}
	if h1["pgbus_kind"] != "email" || h1["x-pgmq-group"] != "g" || h1["pgbus_dlq_retries"] != json.Number("2") || len(h1) != 4 {
		t.Fatalf("headers of the copy = %v, want the original ones plus the block", h1)
	}
	hist, err := s.FailureHistory(ctx, dlq, newID[m1])
	if err != nil || len(hist) != 1 {
		t.Fatalf("history = %v, %v; want the one failure", hist, err)
	}
	if f := hist[0]; len([]rune(f.ErrorMessage)) != store.HistoryErrorMessageMax || f.Backtrace != bigTrace || f.Kind != "email" || f.Attempt != 2 || f.Queue != dlq {
		t.Fatalf("history keeps %d characters of message and backtrace %q", len([]rune(f.ErrorMessage)), f.Backtrace)
	}

	// m2: array headers kept under pgbus_original_headers; no failure, no error keys.
	h2, b2 := dlBlock(t, s, dlq, newID[m2])
	if got, want := dlKeys(h2), []string{store.HeaderDeadLetter, store.HeaderOriginalHeaders}; !slices.Equal(got, want) {
		t.Fatalf("headers keys = %v, want %v", got, want)
	}
	if orig, _ := json.Marshal(h2[store.HeaderOriginalHeaders]); string(orig) != `[1,2]` {
		t.Fatalf("original headers = %s, want [1,2]", orig)
	}
	if got := dlKeys(b2); !slices.Equal(got, baseKeys) {
		t.Fatalf("block keys without failure = %v, want %v", got, baseKeys)
	}
	if dlNumber(t, b2, "attempts") != 0 || dlNumber(t, b2, "max_retries") != 3 || dlNumber(t, b2, "recorded_attempts") != 0 {
		t.Fatalf("block = %v", b2)
	}

	// m3: NULL headers become an object with just the block.
	h3, b3 := dlBlock(t, s, dlq, newID[m3])
	if len(h3) != 1 || dlString(t, b3, "reason") != store.ReasonDeadlineExceeded || !slices.Equal(dlKeys(b3), baseKeys) {
		t.Fatalf("headers = %v", h3)
	}

	// m4: the last of two failures; both rows follow the message.
	_, b4 := dlBlock(t, s, dlq, newID[m4])
	if dlString(t, b4, "error_class") != "SecondError" || dlString(t, b4, "error_message") != "second" || dlNumber(t, b4, "error_attempt") != 2 {
		t.Fatalf("block = %v, want the second failure", b4)
	}
	if _, ok := b4["backtrace"]; ok {
		t.Fatalf("block has a backtrace key though none was recorded: %v", b4)
	}
	hist, err = s.FailureHistory(ctx, dlq, newID[m4])
	if err != nil || len(hist) != 2 || hist[0].ErrorClass != "FirstError" || hist[1].ErrorClass != "SecondError" {
		t.Fatalf("history = %+v, %v; want both failures, oldest first", hist, err)
	}

	// m5: block built in SQL from the stored failure reads as Go would cut it.
	_, b5 := dlBlock(t, s, dlq, newID[m5])
	if dlString(t, b5, "error_message") != store.BlockErrorMessage(longMsg) || dlString(t, b5, "backtrace") != store.BlockBacktrace(strings.Join(trace15, "\n")) ||
		dlString(t, b5, "error_class") != "Crashy" || dlNumber(t, b5, "error_attempt") != 3 {
		t.Fatalf("block = %v", b5)
	}
	dlParseISO(t, b5, "error_recorded_at")

	// The originals are gone, and no failure row is left under the source queue.
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 0 {
		t.Fatalf("%d messages left in the source queue", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, q); n != 0 {
		t.Fatalf("%d failure rows left under the source queue", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1`, dlq); n != 4 {
		t.Fatalf("%d failure rows under the DLQ, want 4", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE error_message = 'not recorded: no such message'`); n != 0 {
		t.Fatalf("the failure of an id not in the queue was recorded %d times", n)
	}
	// The copies are plain PGMQ rows that pgmq.read reads.
	rows, err := s.Pool().Query(ctx, `
		WITH cte AS (
			SELECT msg_id FROM pgmq."q_`+dlq+`"
			WHERE vt <= clock_timestamp() ORDER BY msg_id ASC LIMIT $1 FOR UPDATE SKIP LOCKED)
		UPDATE pgmq."q_`+dlq+`" m SET vt = clock_timestamp() + make_interval(secs => $2), read_ct = read_ct + 1
		FROM cte WHERE m.msg_id = cte.msg_id
		RETURNING m.msg_id, m.read_ct`, 10, 30)
	if err != nil {
		t.Fatal(err)
	}
	read, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ ID, ReadCt int64 }])
	if err != nil || len(read) != 5 || read[0].ReadCt != 1 {
		t.Fatalf("pgmq.read on the DLQ = %v, %v; want 5 messages first read", read, err)
	}
}

func TestDeadLetterManyBatchOf500(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	ids, err := s.SendBatch(ctx, q, msgs(500))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]store.DeadLetterItem, len(ids))
	for i, id := range ids {
		items[i] = store.DeadLetterItem{MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5,
			Failure: &store.Failure{Attempt: 5, ErrorClass: "E", ErrorMessage: fmt.Sprint("failure ", i)}}
	}
	start := time.Now()
	moved, err := s.DeadLetterMany(ctx, q, store.DLQName(q), store.SourceConsumer, items)
	if err != nil || len(moved) != 500 {
		t.Fatalf("dead-letter 500 = %d, %v", len(moved), err)
	}
	t.Logf("500 messages dead-lettered in %v", time.Since(start))
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+store.DLQName(q)+`" WHERE headers->'pgbus_dead_letter'->>'source' = 'consumer'`); n != 500 {
		t.Fatalf("DLQ holds %d copies, want 500", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures f JOIN pgmq."q_`+store.DLQName(q)+`" d
		ON f.queue_name = $1 AND f.msg_id = d.msg_id AND f.error_message = 'failure ' || (d.message->>'n')`, store.DLQName(q)); n != 500 {
		t.Fatalf("%d failure rows keyed to their DLQ copy, want 500", n)
	}
}

// One message that cannot be stored stops the whole batch: nothing moves,
// no failure is recorded, history stays where it was.
func TestDeadLetterManyIsAtomic(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	fn := "pgbus." + uniqueName("refuse")
	_, err := s.Pool().Exec(ctx, `
		CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.message->>'n' = '2' THEN RAISE EXCEPTION 'refused by test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON pgmq."q_`+dlq+`" FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Pool().Exec(ctx, `DROP FUNCTION IF EXISTS `+fn+` CASCADE`) })
	ids, err := s.SendBatch(ctx, q, msgs(3))
	if err != nil {
		t.Fatal(err)
	}
	dlAddFailure(t, s, q, ids[0], 1, "Earlier", "earlier", "")
	var items []store.DeadLetterItem
	for _, id := range ids {
		items = append(items, store.DeadLetterItem{MsgID: id, Reason: store.ReasonNonRetryable, Failure: &store.Failure{Attempt: 1, ErrorMessage: "x"}})
	}
	if _, err := s.DeadLetterMany(ctx, q, dlq, store.SourceWorker, items); err == nil || !strings.Contains(err.Error(), "refused by test") {
		t.Fatalf("dead-letter = %v, want the trigger's error", err)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 3 {
		t.Fatalf("%d messages left in the queue, want all 3", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+dlq+`"`); n != 0 {
		t.Fatalf("%d messages in the DLQ, want none", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name IN ($1, $2)`, q, dlq); n != 1 {
		t.Fatalf("%d failure rows, want only the earlier one", n)
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, q, ids[0]); n != 1 {
		t.Fatal("the earlier failure row moved")
	}
}

func TestDeadLetterManyRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	q := newQueue(t, s)
	dlq := store.DLQName(q)
	id, err := s.Send(ctx, q, msg(`1`))
	if err != nil {
		t.Fatal(err)
	}
	ok := store.DeadLetterItem{MsgID: id, Reason: store.ReasonNonRetryable}
	cases := []struct {
		name              string
		queue, dlq, src   string
		items             []store.DeadLetterItem
		wantNotFound      bool
		wantMessageSubstr string
	}{
		{"no items", q, dlq, "worker", nil, false, "1 to"},
		{"bad queue name", `x"; DROP TABLE pgbus.failures; --`, dlq, "worker", []store.DeadLetterItem{ok}, false, "queue name"},
		{"bad dlq name", q, "Orders_DLQ", "worker", []store.DeadLetterItem{ok}, false, "queue name"},
		{"same queue", q, q, "worker", []store.DeadLetterItem{ok}, false, "must differ"},
		{"bad source", q, dlq, "cron", []store.DeadLetterItem{ok}, false, "source"},
		{"bad reason", q, dlq, "worker", []store.DeadLetterItem{{MsgID: id, Reason: "tired"}}, false, "reason"},
		{"zero id", q, dlq, "worker", []store.DeadLetterItem{{MsgID: 0, Reason: store.ReasonNonRetryable}}, false, "not valid"},
		{"negative max retries", q, dlq, "worker", []store.DeadLetterItem{{MsgID: id, Reason: store.ReasonNonRetryable, MaxRetries: -1}}, false, "max_retries"},
		{"duplicate id", q, dlq, "worker", []store.DeadLetterItem{ok, ok}, false, "twice"},
		{"missing dlq", q, uniqueName("nodlq"), "worker", []store.DeadLetterItem{ok}, true, "does not exist"},
	}
	for _, c := range cases {
		_, err := s.DeadLetterMany(ctx, c.queue, c.dlq, c.src, c.items)
		want := store.ErrInvalid
		if c.wantNotFound {
			want = store.ErrNotFound
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), c.wantMessageSubstr) {
			t.Errorf("%s: err = %v, want %v mentioning %q", c.name, err, want, c.wantMessageSubstr)
		}
	}
	if n := dlCount(t, s, `SELECT count(*) FROM pgmq."q_`+q+`"`); n != 1 {
		t.Fatalf("the message moved after refused calls")
	}
}

func TestFailureHistoryRejectsBadInput(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	if _, err := s.FailureHistory(ctx, "Bad Name", 1); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := s.FailureHistory(ctx, "orders", 0); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("zero id: %v", err)
	}
	if h, err := s.FailureHistory(ctx, uniqueName("none"), 1); err != nil || len(h) != 0 {
		t.Fatalf("history of a message without failures = %v, %v; want empty", h, err)
	}
}
