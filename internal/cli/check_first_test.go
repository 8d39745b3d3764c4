package cli_test

import (
	"strconv"
	"strings"
	"testing"
)

// A request the operations layer refuses on its face is refused before
// the database is opened: with a database that cannot be reached, each of
// these exits 2 with the operation's own words, not 1 with a connection
// error.
func TestBadRequestsRefusedWithoutADatabase(t *testing.T) {
	t.Parallel()
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	long := strings.Repeat("n", 300)
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"retry of 101 ids", append([]string{"dlq", "retry", "--queue", "orders"}, ids...), "101 ids given; at most 100 are allowed per call"},
		{"discard of 101 ids", append([]string{"dlq", "discard", "--queue", "orders", "--yes"}, ids...), "101 ids given; at most 100 are allowed per call"},
		{"retry in a bad queue", []string{"dlq", "retry", "1", "--queue", "bad name!"}, `queue name "bad name!" must start with a lowercase letter`},
		{"show in a bad queue", []string{"dlq", "show", "1", "--queue", "Orders"}, `queue name "Orders" must start with a lowercase letter`},
		{"purge of a bad queue", []string{"dlq", "purge", "--queue", "Orders", "--yes"}, `queue name "Orders" must start with a lowercase letter`},
		{"purge's count of a bad queue", []string{"dlq", "purge", "--queue", "Orders"}, `queue name "Orders" must start with a lowercase letter`},
		{"retry-all too slow for its limit", []string{"dlq", "retry-all", "--queue", "orders", "--limit", "100000", "--rate", "0.0167"}, "a paced retry may take 7 days at most"},
		{"dlq list's limit", []string{"dlq", "list", "--limit", "101"}, "--limit 101 is out of range; give 1 to 100"},
		{"audit's limit", []string{"audit", "--limit", "101"}, "--limit 101 is out of range; give 1 to 100"},
		{"audit's since", []string{"audit", "--since", "yesterday"}, `--since "yesterday" is not a time: give an RFC 3339 time`},
		{"audit's tool", []string{"audit", "--tool", "frobnicate"}, `--tool "frobnicate" is no operation the audit log records`},
		{"messages' limit", []string{"queue", "messages", "orders", "--limit", "101"}, "--limit 101 is out of range; give 1 to 100"},
		{"messages' state", []string{"queue", "messages", "orders", "--state", "dead"}, `state "dead" is unknown`},
		{"messages of a DLQ", []string{"queue", "messages", "orders_dlq"}, "orders_dlq is the dead-letter queue of orders"},
		{"reset of a name no breaker has", []string{"circuit", "reset", long}, "no breaker has a name over"},
		// A script's list of ids that came out empty is no id, never a
		// filter: an empty argument is refused as an id.
		{"retry of an empty id", []string{"dlq", "retry", "", "--queue", "orders"}, `message id ""`},
		{"discard of an empty id beside a filter", []string{"dlq", "discard", "", "--queue", "orders", "--error-class", "E", "--yes"}, `message id ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := pgbus(t, nil, append(c.args, "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")...)
			if r.code != 2 || !strings.Contains(r.stderr, c.says) {
				t.Errorf("exit %d, stderr %q; want 2 saying %q without trying the database", r.code, r.stderr, c.says)
			}
		})
	}
}
