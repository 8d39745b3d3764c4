package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/ops"
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
		{"pause: no queue", ops.QueueRequest{}.Check, "", "queue is required"},
		{"pause: a DLQ", ops.QueueRequest{Queue: "orders_dlq"}.Check, "", "orders_dlq is the dead-letter queue of orders"},
		{"create: a DLQ's name", ops.QueueCreateRequest{Queue: "orders_dlq"}.Check, "", "reserved for dead-letter queues"},
		{"drop: bad queue", ops.QueueDropRequest{Queue: "orders; DROP TABLE x"}.Check, "", "lowercase"},
		{"purge: no queue", ops.QueuePurgeRequest{}.Check, "", "queue is required"},
		{"create: one level", ops.QueueCreateRequest{Queue: "orders", Priorities: 1}.Check, "priorities", "out of range"},
		{"create: too many levels", ops.QueueCreateRequest{Queue: "orders", Priorities: ops.MaxPriorities + 1}.Check, "priorities", "out of range"},
		{"create: long name", ops.QueueCreateRequest{Queue: strings.Repeat("q", 100)}.Check, "", "characters"},
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
	}
	for i, check := range good {
		if err := check(); err != nil {
			t.Errorf("good request %d refused: %v", i, err)
		}
	}
}

func TestParseDeadline(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-12-01T09:00:00Z": time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		"2026-12-24":           time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC),
		"30m":                  now.Add(30 * time.Minute),
		" 7d ":                 now.Add(7 * 24 * time.Hour),
	} {
		got, err := ops.ParseDeadline(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseDeadline(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// The first instant of year 1 is the zero time, which reads as no
	// deadline: it is refused as the past it is.
	for _, first := range []string{"0001-01-01T00:00:00Z", "0001-01-01", "0001-01-01T00:00:00+00:00"} {
		got, err := ops.ParseDeadline(first, now)
		var oe *ops.Error
		if !errors.As(err, &oe) || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(oe.Msg, "is in the past") {
			t.Errorf("ParseDeadline(%q) = %v, %v; want it refused as in the past", first, got, err)
		}
	}
	for _, bad := range []string{"", "tomorrow", "-5m", "12/01/2026", "9999999999d"} {
		_, err := ops.ParseDeadline(bad, now)
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
