package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A request checks itself without a database, in the words the operation
// would use: a front end can refuse it before it connects.
func TestRequestsCheckThemselves(t *testing.T) {
	t.Parallel()
	payload := json.RawMessage(`{}`)
	cases := []struct {
		name  string
		check func() error
		field string // the ops.Error's Field, "" for none
		want  string
	}{
		{"send: injection in queue", ops.SendRequest{Queue: "x'||pg_sleep(5)||'", Payload: payload}.Check, "", "lowercase"},
		{"send: to a DLQ", ops.SendRequest{Queue: "orders_dlq", Payload: payload}.Check, "", `send to "orders" instead`},
		{"send: not JSON", ops.SendRequest{Queue: "orders", Payload: json.RawMessage(`{`)}.Check, "", "must be JSON"},
		{"send: no payload", ops.SendRequest{Queue: "orders"}.Check, "", "must be JSON"},
		{"send: huge payload", ops.SendRequest{Queue: "orders", Payload: json.RawMessage(`"` + strings.Repeat("a", ops.MaxPayloadBytes) + `"`)}.Check, "", "more than the"},
		{"send: negative delay", ops.SendRequest{Queue: "orders", Payload: payload, Delay: -72 * time.Hour}.Check, "delay", "-72h is negative"},
		{"send: huge delay", ops.SendRequest{Queue: "orders", Payload: payload, Delay: ops.MaxDelay + time.Second}.Check, "delay", "too long"},
		{"send: negative priority", ops.SendRequest{Queue: "orders", Payload: payload, Priority: -1}.Check, "priority", "out of range"},
		{"send: NUL in kind", ops.SendRequest{Queue: "orders", Payload: payload, Kind: "a\x00b"}.Check, "", "kind"},
		{"stats: bad queue", ops.QueueStatsRequest{Queue: "Orders"}.Check, "", "lowercase"},
		{"pause: no queue", ops.QueueRequest{}.Check, "queue", "queue is required"},
		{"pause: a DLQ", ops.QueueRequest{Queue: "orders_dlq"}.Check, "", "orders_dlq is the dead-letter queue of orders"},
		{"create: a DLQ's name", ops.QueueCreateRequest{Queue: "orders_dlq"}.Check, "", "reserved for dead-letter queues"},
		{"drop: bad queue", ops.QueueDropRequest{Queue: "orders; DROP TABLE x"}.Check, "", "lowercase"},
		{"purge: no queue", ops.QueuePurgeRequest{}.Check, "queue", "queue is required"},
		{"create: one level", ops.QueueCreateRequest{Queue: "orders", Priorities: 1}.Check, "priorities", "out of range"},
		{"create: too many levels", ops.QueueCreateRequest{Queue: "orders", Priorities: ops.MaxPriorities + 1}.Check, "priorities", "out of range"},
		{"create: long name", ops.QueueCreateRequest{Queue: strings.Repeat("q", 100)}.Check, "", "characters"},
		{"retry: too many ids", ops.DLQRetryRequest{IDs: manyIDs(ops.MaxIDs + 1), Filter: ops.DeadFilter{Queue: "orders"}}.Check, "", "101 ids given; at most 100"},
		{"retry: id 0", ops.DLQRetryRequest{IDs: []int64{0}}.Check, "", "0 is not a message id"},
		{"retry: ids and a filter", ops.DLQRetryRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Kind: "k"}}.Check, "", "not both"},
		{"retry: ids and a limit", ops.DLQRetryRequest{IDs: []int64{1}, Limit: 5}.Check, "limit", "limit applies to a filter"},
		{"retry: ids and expect", ops.DLQRetryRequest{IDs: []int64{1}, Expect: "1"}.Check, "expect", "expect applies to a call by filter"},
		{"retry: ids of a bad queue", ops.DLQRetryRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: "Orders"}}.Check, "queue", "lowercase"},
		{"retry: payload not JSON", ops.DLQRetryRequest{IDs: []int64{1}, Payload: json.RawMessage(`{`)}.Check, "", "not valid JSON"},
		{"retry: payload for two ids", ops.DLQRetryRequest{IDs: []int64{1, 2}, Payload: payload}.Check, "", "exactly one message, and 2 ids"},
		{"retry: payload by filter", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "orders"}, Payload: payload}.Check, "", "give its id instead of a filter"},
		{"retry: rate out of range", ops.DLQRetryRequest{IDs: []int64{1}, Rate: -1}.Check, "rate", "rate -1 is out of range"},
		{"retry: nothing selected", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: " "}}.Check, "", "nothing is selected"},
		{"retry: limit too high", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "orders"}, Limit: ops.MaxBulkLimit + 1}.Check, "limit", "out of range"},
		{"retry: rate too slow for the limit", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "orders"}, Limit: 100000, Rate: ops.MinRetryRate}.Check, "rate", "7 days at most"},
		{"retry: bad since", ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "orders", Since: "yesterday"}}.Check, "since", "yesterday"},
		{"discard: too many ids", ops.DLQDiscardRequest{IDs: manyIDs(ops.MaxIDs + 1)}.Check, "", "101 ids given"},
		{"discard: ids and expect", ops.DLQDiscardRequest{IDs: []int64{1}, Expect: "1"}.Check, "expect", "expect applies to a call by filter"},
		{"discard: nothing selected", ops.DLQDiscardRequest{}.Check, "", "nothing is selected"},
		{"discard: limit too low", ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: "orders"}, Limit: -1}.Check, "limit", "out of range"},
		{"discard: bad reason", ops.DLQDiscardRequest{Filter: ops.DeadFilter{Reason: "boredom"}}.Check, "", "reason"},
		{"purge: negative age", ops.DLQPurgeRequest{OlderThan: -time.Hour}.Check, "", "negative"},
		{"purge: bad queue", ops.DLQPurgeRequest{Queue: "Orders"}.Check, "queue", "lowercase"},
		{"list: limit too high", ops.DLQListRequest{Limit: ops.MaxPageSize + 1}.Check, "limit", "out of range"},
		{"list: NUL in cursor", ops.DLQListRequest{Cursor: "a\x00"}.Check, "cursor", "cannot be used"},
		{"list: bad queue", ops.DLQListRequest{Filter: ops.DeadFilter{Queue: "Orders"}}.Check, "queue", "lowercase"},
		{"list: bad until", ops.DLQListRequest{Filter: ops.DeadFilter{Until: "soon"}}.Check, "until", "RFC 3339"},
		{"show: no id", ops.DLQShowRequest{Queue: "orders"}.Check, "", "msg_id is missing"},
		{"show: bad queue", ops.DLQShowRequest{Queue: "Orders", MsgID: 1}.Check, "queue", "lowercase"},
		{"summary: bad group", ops.DLQSummaryRequest{Filter: ops.DeadFilter{Group: "nope"}}.Check, "group", "not a group's key"},
		{"audit: limit too high", ops.AuditRequest{Limit: ops.MaxPageSize + 1}.Check, "limit", "out of range"},
		{"audit: unknown tool", ops.AuditRequest{Op: "frobnicate"}.Check, "tool", "no operation the audit log records"},
		{"audit: bad since", ops.AuditRequest{Since: "last week"}.Check, "since", "RFC 3339"},
		{"circuit reset: no name", ops.CircuitResetRequest{}.Check, "", "name is required"},
		{"circuit reset: long name", ops.CircuitResetRequest{Name: strings.Repeat("n", 1000)}.Check, "", "no breaker has a name over"},
		{"circuits: NUL in name", ops.CircuitsRequest{Name: "a\x00"}.Check, "name", "cannot be used"},
		{"messages: no queue", ops.QueueMessagesRequest{}.Check, "queue", "queue is required"},
		{"messages: a DLQ", ops.QueueMessagesRequest{Queue: "orders_dlq"}.Check, "", "orders_dlq is the dead-letter queue of orders"},
		{"messages: bad state", ops.QueueMessagesRequest{Queue: "orders", State: "dead"}.Check, "state", "state \"dead\" is unknown"},
		{"messages: limit too high", ops.QueueMessagesRequest{Queue: "orders", Limit: ops.MaxPageSize + 1}.Check, "limit", "out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.check()
			if !errors.Is(err, ops.ErrInvalid) {
				t.Fatalf("got %v, want an ops.ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			var oe *ops.Error
			if !errors.As(err, &oe) {
				t.Fatalf("%v is not an *ops.Error", err)
			}
			if oe.Field != c.field || c.field != "" && !strings.HasPrefix(oe.Msg, c.field+" ") {
				t.Errorf("Field %q, message %q: want field %q named first", oe.Field, oe.Msg, c.field)
			}
		})
	}
	good := []func() error{
		ops.SendRequest{Queue: "orders", Payload: payload, Delay: time.Hour, Priority: 2}.Check,
		ops.QueueStatsRequest{}.Check,
		ops.QueueStatsRequest{Queue: "orders_dlq"}.Check,
		ops.QueueRequest{Queue: "orders"}.Check,
		ops.QueueCreateRequest{Queue: "orders", Priorities: 3}.Check,
		ops.DLQRetryRequest{IDs: manyIDs(ops.MaxIDs), Filter: ops.DeadFilter{Queue: "orders"}}.Check,
		ops.DLQRetryRequest{IDs: []int64{7, 7}, Payload: payload}.Check,
		ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: "orders", Since: "7d"}, Limit: 500, Rate: 10}.Check,
		ops.DLQRetryRequest{All: true}.Check,
		ops.DLQDiscardRequest{IDs: []int64{1}, Filter: ops.DeadFilter{Queue: "orders_dlq"}}.Check,
		ops.DLQDiscardRequest{Filter: ops.DeadFilter{ErrorClass: "Timeout"}}.Check,
		ops.DLQPurgeRequest{}.Check,
		ops.DLQPurgeRequest{Queue: "orders", OlderThan: time.Hour}.Check,
		ops.DLQListRequest{}.Check,
		ops.DLQShowRequest{MsgID: 1}.Check,
		ops.DLQSummaryRequest{}.Check,
		ops.AuditRequest{Op: "pgbus_dlq_retry", Since: "2h", Limit: 100}.Check,
		ops.AuditRequest{Op: ops.AuditAll}.Check,
		ops.CircuitResetRequest{Name: "payments"}.Check,
		ops.CircuitsRequest{}.Check,
		ops.QueueMessagesRequest{Queue: "orders", State: "retrying"}.Check,
		ops.WorkersRequest{}.Check,
	}
	for i, check := range good {
		if err := check(); err != nil {
			t.Errorf("good request %d refused: %v", i, err)
		}
	}
}

// manyIDs is the ids 1 to n.
func manyIDs(n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	return ids
}

func TestParseDeadline(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		"2026-12-01T09:00:00Z": time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		"2026-12-24":           time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC),
		// RFC 3339's other spellings, as the pgbus_deadline header takes.
		"2026-12-01t09:00:00z": time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		"2026-12-01 09:00:00Z": time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	} {
		at, d, err := ops.ParseDeadline(in)
		if err != nil || !at.Equal(want) || d != 0 {
			t.Errorf("ParseDeadline(%q) = %v, %s, %v; want %v", in, at, d, err, want)
		}
	}
	// A duration is from now on the database server's clock, which Send
	// reads: given as it is.
	for in, want := range map[string]time.Duration{"30m": 30 * time.Minute, " 7d ": 7 * 24 * time.Hour} {
		at, d, err := ops.ParseDeadline(in)
		if err != nil || !at.IsZero() || d != want {
			t.Errorf("ParseDeadline(%q) = %v, %s, %v; want %s from now", in, at, d, err, want)
		}
	}
	// The first instant of year 1 is the zero time, which reads as no
	// deadline: it is refused as the past it is.
	for _, first := range []string{"0001-01-01T00:00:00Z", "0001-01-01", "0001-01-01T00:00:00+00:00"} {
		at, _, err := ops.ParseDeadline(first)
		var oe *ops.Error
		if !errors.As(err, &oe) || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(oe.Msg, "is in the past") {
			t.Errorf("ParseDeadline(%q) = %v, %v; want it refused as in the past", first, at, err)
		}
	}
	// A duration of zero or less is a deadline that has passed by the
	// time the message is read: refused as a past date is.
	for _, past := range []string{"0s", "0", "0d", "-5m", "-1d"} {
		_, _, err := ops.ParseDeadline(past)
		var oe *ops.Error
		if !errors.As(err, &oe) || oe.Field != "deadline" || !errors.Is(err, ops.ErrInvalid) || !strings.HasPrefix(oe.Msg, `deadline "`+past+`"`) ||
			!strings.Contains(oe.Msg, "has passed") || !strings.Contains(oe.Msg, "could never run") || strings.Contains(oe.Msg, "not a time") {
			t.Errorf("ParseDeadline(%q): %v; want it refused as a deadline that has passed", past, err)
		}
	}
	for _, bad := range []string{"", "tomorrow", "12/01/2026", "9999999999d"} {
		_, _, err := ops.ParseDeadline(bad)
		var oe *ops.Error
		if !errors.As(err, &oe) || oe.Field != "deadline" || !strings.Contains(oe.Msg, "RFC 3339") {
			t.Errorf("ParseDeadline(%q): %v; want an error about the deadline saying what to give", bad, err)
		}
	}
}

// A service without a store is refused as bad input, saying where a store
// comes from.
func TestNewWithoutAStore(t *testing.T) {
	t.Parallel()
	_, err := ops.New(nil, ops.Options{})
	if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "store.Open") {
		t.Fatalf("New(nil) = %v; want ErrInvalid saying to open a store with store.Open", err)
	}
}

// A store without a pool (store.New(nil), a zero store.Store) is refused
// up front as bad input, in ops.New's own words (not those of a part it
// makes), saying what to pass; one over a pool that has made no
// connection yet is taken, as its calls connect when they need to.
func TestNewWithoutAPool(t *testing.T) {
	t.Parallel()
	for name, st := range map[string]*store.Store{"store.New(nil)": store.New(nil), "a zero store.Store": {}} {
		svc, err := ops.New(st, ops.Options{})
		if svc != nil || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "ops.New needs a store with a pool") ||
			!strings.Contains(err.Error(), "store.Open") || strings.Contains(err.Error(), "NewClient") {
			t.Errorf("New(%s) = %v, %v; want ErrInvalid saying to pass a store with a pool", name, svc, err)
		}
	}
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := ops.New(store.New(pool), ops.Options{}); err != nil {
		t.Errorf("New over a pool that has not connected: %v; want a service", err)
	}
}

// A time or deadline that cannot be read is quoted without a colon after
// it: a value that reads as a secret's key ("token") followed by one took
// the advice after it for its secret, and redaction hid the advice.
func TestUnreadableTimesSurviveRedaction(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"token", "password", "api_key"} {
		for name, err := range map[string]error{
			"since":       ops.DeadFilter{Since: v}.Check(),
			"until":       ops.DeadFilter{Until: v}.Check(),
			"audit since": ops.AuditRequest{Since: v}.Check(),
			"deadline":    func() error { _, _, err := ops.ParseDeadline(v); return err }(),
		} {
			if err == nil {
				t.Errorf("%s %q was taken; want it refused", name, v)
				continue
			}
			shown, n := ops.RedactText(err.Error())
			if n != 0 || strings.Contains(shown, ops.Redacted) || !strings.Contains(shown, `"`+v+`"`) || !strings.Contains(shown, "give an RFC 3339 time") {
				t.Errorf("%s %q, redacted: %s; want the value named and the advice whole", name, v, shown)
			}
		}
	}
}
