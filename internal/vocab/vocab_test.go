package vocab_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// Each operation's hint reads as a command a person can paste and as a
// tool call an agent can make; operations no tool does name the command.
func TestHintWording(t *testing.T) {
	cases := []struct {
		hint          ops.Hint
		command, tool string
	}{
		{ops.Hint{Op: ops.OpDLQList, Args: map[string]any{"queue": "orders", "error_class": "http.503"}},
			"pgbus dlq list --error-class http.503 --queue orders", `pgbus_dlq_list {"error_class":"http.503","queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQShow, Args: map[string]any{"queue": "orders_dlq", "msg_id": int64(42)}},
			"pgbus dlq show 42 --queue orders_dlq", `pgbus_dlq_show {"msg_id":42,"queue":"orders_dlq"}`},
		// The CLI shows a payload unless told not to: include_payload is no flag of it.
		{ops.Hint{Op: ops.OpDLQShow, Args: map[string]any{"queue": "orders_dlq", "msg_id": int64(42), "include_payload": true, "full_history": true}},
			"pgbus dlq show 42 --full-history --queue orders_dlq", `pgbus_dlq_show {"full_history":true,"include_payload":true,"msg_id":42,"queue":"orders_dlq"}`},
		// A call that left the payload out is repeated without it.
		{ops.Hint{Op: ops.OpDLQShow, Args: map[string]any{"queue": "orders_dlq", "msg_id": int64(42), "include_payload": false, "full_history": false}},
			"pgbus dlq show 42 --no-payload --queue orders_dlq", `pgbus_dlq_show {"full_history":false,"include_payload":false,"msg_id":42,"queue":"orders_dlq"}`},
		{ops.Hint{Op: ops.OpQueueMessages, Args: map[string]any{"queue": "orders", "include_payload": false}},
			"pgbus queue messages orders --no-payload", `pgbus_queue_messages {"include_payload":false,"queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"ids": []int64{1, 2}, "queue": "orders"}},
			"pgbus dlq retry 1 2 --queue orders", `pgbus_dlq_retry {"ids":[1,2],"queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "kind": "charge"}},
			"pgbus dlq retry-all --kind charge --queue orders --yes", `pgbus_dlq_retry {"kind":"charge","queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "orders", "dry_run": true, "limit": 10}},
			"pgbus dlq discard --dry-run --limit 10 --queue orders", `pgbus_dlq_discard {"dry_run":true,"limit":10,"queue":"orders"}`},
		// A dry run changes nothing: no --yes, whatever the hint confirms.
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "dry_run": true, "limit": 1000}},
			"pgbus dlq retry-all --dry-run --limit 1000 --queue orders", `pgbus_dlq_retry {"dry_run":true,"limit":1000,"queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQPurge, Args: map[string]any{"older_than": "7d", "dry_run": true, "confirm": true}},
			"pgbus dlq purge --dry-run --older-than 7d", `pgbus_dlq_purge {"confirm":true,"dry_run":true,"older_than":"7d"}`},
		// A discard of more than one id asks --yes as one by filter does.
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"ids": []int64{7, 8, 7}, "queue": "orders"}},
			"pgbus dlq discard 7 8 7 --queue orders --yes", `pgbus_dlq_discard {"ids":[7,8,7],"queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"ids": []int64{7, 7}, "queue": "orders"}},
			"pgbus dlq discard 7 7 --queue orders", `pgbus_dlq_discard {"ids":[7,7],"queue":"orders"}`},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "orders", "confirm": true, "expect": "2-abc"}},
			"pgbus dlq discard --expect 2-abc --queue orders --yes", `pgbus_dlq_discard {"confirm":true,"expect":"2-abc","queue":"orders"}`},
		// The step after a discard stopped at its limit moves the rest.
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "billing", "limit": 2}},
			"pgbus dlq discard --limit 2 --queue billing --yes", `pgbus_dlq_discard {"limit":2,"queue":"billing"}`},
		{ops.Hint{Op: ops.OpQueueMessages, Args: map[string]any{"queue": "orders", "state": "retrying"}},
			"pgbus queue messages orders --state retrying", `pgbus_queue_messages {"queue":"orders","state":"retrying"}`},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"ids": []int64{4}, "queue": "orders", "payload": json.RawMessage(`{"note":"it's fixed"}`)}},
			`pgbus dlq retry 4 --payload '{"note":"it'\''s fixed"}' --queue orders`, `pgbus_dlq_retry {"ids":[4],"payload":{"note":"it's fixed"},"queue":"orders"}`},
		{ops.Hint{Op: ops.OpQueueStats}, "pgbus queues", "pgbus_queue_stats"},
		{ops.Hint{Op: ops.OpSend, Args: map[string]any{"queue": "orders", "payload": json.RawMessage(`"it's 42"`), "kind": "charge"}},
			`pgbus send orders '"it'\''s 42"' --kind charge`, `the CLI: pgbus send orders '"it'\''s 42"' --kind charge`},
		{ops.Hint{Op: ops.OpDLQList, Args: map[string]any{"text": "it's down"}},
			`pgbus dlq list --text 'it'\''s down'`, `pgbus_dlq_list {"text":"it's down"}`},
		{ops.Hint{Op: ops.OpWork, Args: map[string]any{"queue": "orders"}},
			"pgbus work --queue orders", "the CLI: pgbus work --queue orders"},
		{ops.Hint{Op: ops.OpWork, Args: map[string]any{"queue": "demo_emails", "handler": "demo"}},
			"pgbus work --queue demo_emails --handler demo", "the CLI: pgbus work --queue demo_emails --handler demo"},
		{ops.Hint{Op: ops.OpWork, Args: map[string]any{"queue": "orders", ops.WorkNeedsHandler: true}},
			"pgbus work --queue orders --handler TYPE", "the CLI: pgbus work --queue orders --handler TYPE"},
		{ops.Hint{Op: ops.OpMigrate}, "pgbus migrate", "the CLI: pgbus migrate"},
		{ops.Hint{Op: ops.OpMigrate, Args: map[string]any{ops.MigrateInstallPGMQ: "PGMQ_SQL"}},
			"pgbus migrate --install-pgmq PGMQ_SQL", "the CLI: pgbus migrate --install-pgmq PGMQ_SQL"},
		{ops.Hint{Op: ops.OpCircuits, Args: map[string]any{"name": "http:bank"}},
			"pgbus circuits http:bank", `pgbus_circuits {"name":"http:bank"}`},
		// Taking the messages in flight may run a job twice: --yes, as
		// other commands that may do harm, but not for its dry run.
		{ops.Hint{Op: ops.OpQueueRunNow, Args: map[string]any{"queue": "orders", "in_flight": true}},
			"pgbus queue run-now orders --in-flight --yes", `pgbus_queue_run_now {"in_flight":true,"queue":"orders"}`},
		{ops.Hint{Op: ops.OpQueueRunNow, Args: map[string]any{"queue": "orders", "in_flight": true, "dry_run": true}},
			"pgbus queue run-now orders --dry-run --in-flight", `pgbus_queue_run_now {"dry_run":true,"in_flight":true,"queue":"orders"}`},
		{ops.Hint{Op: ops.OpQueueRunNow, Args: map[string]any{"queue": "orders"}},
			"pgbus queue run-now orders", `pgbus_queue_run_now {"queue":"orders"}`},
	}
	for _, c := range cases {
		if got := vocab.Command(c.hint); got != c.command {
			t.Errorf("Command(%+v) = %q, want %q", c.hint, got, c.command)
		}
		if got := vocab.ToolCall(c.hint); got != c.tool {
			t.Errorf("ToolCall(%+v) = %q, want %q", c.hint, got, c.tool)
		}
	}
	if _, ok := vocab.Tool(ops.OpQueueCreate); ok {
		t.Error("queue_create has no MCP tool, yet Tool says it has")
	}
}

// A call relayed as a command (a read-only server's refusal) passes --yes
// only when the call confirmed: one that did not is the command that says
// what it would touch, whatever a hint of the same operation asks.
func TestCallCommand(t *testing.T) {
	for _, c := range []struct {
		hint    ops.Hint
		command string
	}{
		{ops.Hint{Op: ops.OpDLQPurge, Args: map[string]any{"older_than": "0s", "queue": "orders"}}, "pgbus dlq purge --older-than 0s --queue orders"},
		{ops.Hint{Op: ops.OpDLQPurge, Args: map[string]any{"older_than": "0s", "queue": "orders", "confirm": true}}, "pgbus dlq purge --older-than 0s --queue orders --yes"},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "billing", "limit": 2}}, "pgbus dlq discard --limit 2 --queue billing"},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"ids": []int64{7, 8}, "queue": "orders"}}, "pgbus dlq discard 7 8 --queue orders --yes"},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"ids": []int64{7}, "queue": "orders"}}, "pgbus dlq discard 7 --queue orders"},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 5, "expect": "3-abc"}}, "pgbus dlq retry-all --expect 3-abc --limit 5 --queue orders --yes"},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 5, "expect": "3-abc", "dry_run": true}}, "pgbus dlq retry-all --dry-run --expect 3-abc --limit 5 --queue orders"},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"ids": []int64{7, 8}, "queue": "orders", "confirm": true}}, "pgbus dlq discard 7 8 --queue orders --yes"},
		{ops.Hint{Op: ops.OpDLQDiscard, Args: map[string]any{"queue": "orders", "limit": 2, "expect": "2-abc", "confirm": true}}, "pgbus dlq discard --expect 2-abc --limit 2 --queue orders --yes"},
		{ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 5}}, "pgbus dlq retry-all --limit 5 --queue orders"},
		{ops.Hint{Op: ops.OpDLQPurge, Args: map[string]any{"older_than": "7d", "dry_run": true, "confirm": true}}, "pgbus dlq purge --dry-run --older-than 7d"},
		// A tool call takes the messages in flight as it is made.
		{ops.Hint{Op: ops.OpQueueRunNow, Args: map[string]any{"queue": "orders", "in_flight": true}}, "pgbus queue run-now orders --in-flight --yes"},
	} {
		if got := vocab.CallCommand(c.hint); got != c.command {
			t.Errorf("CallCommand(%+v) = %q, want %q", c.hint, got, c.command)
		}
	}
}

// Global flags go before the -- that ends a command's options, where they
// are read as flags, and never into a quoted value.
func TestWithFlagsBeforeEndOfOptions(t *testing.T) {
	t.Parallel()
	const flags = " --config /etc/pgbus.yaml"
	for line, want := range map[string]string{
		"pgbus dlq list --queue orders":                    "pgbus dlq list --queue orders" + flags,
		"pgbus circuit reset -- -cb":                       "pgbus circuit reset" + flags + " -- -cb",
		"pgbus dlq retry-all --text 'a -- b' --queue o":    "pgbus dlq retry-all --text 'a -- b' --queue o" + flags,
		"pgbus circuit reset --why 'it'\\''s -- ok' -- -x": "pgbus circuit reset --why 'it'\\''s -- ok'" + flags + " -- -x",
		"psql -c 'select 1'":                               "psql -c 'select 1'",
	} {
		if got := vocab.WithFlags(line, flags); got != want {
			t.Errorf("WithFlags(%q) = %q; want %q", line, got, want)
		}
	}
}

// A flag's value that starts with a dash is joined to its flag, so that a
// person reading the command does not take it for a flag of its own
// (--text --yes looked confirmed); the CLI reads both forms alike.
func TestDashedValueJoinedToItsFlag(t *testing.T) {
	t.Parallel()
	got := vocab.Command(ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "text": "--yes", "limit": 5}})
	if want := "pgbus dlq retry-all --limit 5 --queue orders --text=--yes --yes"; got != want {
		t.Errorf("command = %q; want %q", got, want)
	}
}
