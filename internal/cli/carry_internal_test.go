package cli

import (
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// Next steps carry the global flags the command was given on its command
// line, so that a step copied runs against the same database with the same
// handlers; a database URL's password and the query parameters that may
// be credentials stay out of the output, and the settings that say which
// database it is (a socket's directory as host, the port) stay in.
func TestNextStepsCarryGlobalFlags(t *testing.T) {
	t.Parallel()
	cmd := commandAt(t, []string{"dlq", "summary"})
	err := cmd.ParseFlags([]string{"--database-url", "postgres://ops:s3cret@/pgbus?host=/run/pg&password=x&port=5433",
		"--data-dir", "/srv/pg bus", "--config", "/etc/pgbus.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	a := &app{}
	a.setCarry(cmd.Flags())
	got := a.command(ops.Hint{Op: ops.OpDLQList, Args: map[string]any{"queue": "orders"}})
	want := "pgbus dlq list --queue orders --config /etc/pgbus.yaml --data-dir '/srv/pg bus' --database-url 'postgres://ops:[REDACTED]@/pgbus?host=/run/pg&[REDACTED]&port=5433'"
	if got != want {
		t.Fatalf("next step = %q\nwant        %q", got, want)
	}
	if line := a.carried("curl http://localhost/livez"); line != "curl http://localhost/livez" {
		t.Fatalf("a line that does not run pgbus became %q", line)
	}
	plain := commandAt(t, []string{"dlq", "summary"})
	if err := plain.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	a.setCarry(plain.Flags())
	if got := a.command(ops.Hint{Op: ops.OpDLQList}); got != "pgbus dlq list" {
		t.Fatalf("with no global flag given, next step = %q", got)
	}
}

// A discard by ids asks for --yes when it names more than one message: an
// id given twice is one.
func TestDistinctIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ids  []int64
		want int
	}{{nil, 0}, {[]int64{4, 4}, 1}, {[]int64{4, 5, 4}, 2}, {[]int64{9, 8, 7}, 3}} {
		if got := distinct(c.ids); got != c.want {
			t.Errorf("distinct(%v) = %d, want %d", c.ids, got, c.want)
		}
	}
}

// The same command from a line of its input keeps the command's words but
// --from-line, quoted for a shell, its database URL's secrets hidden.
func TestSameCommandFrom(t *testing.T) {
	t.Parallel()
	a := &app{args: []string{"send", "my orders", "--ndjson", "in.ndjson", "--from-line", "7", "--database-url", "postgres://u:Zq8pw@db/app", "--from-line=9"}}
	want := "pgbus send 'my orders' --ndjson in.ndjson --database-url 'postgres://u:[REDACTED]@db/app' --from-line 2001"
	if got := a.sameCommandFrom(2001); got != want {
		t.Fatalf("sameCommandFrom = %q\nwant             %q", got, want)
	}
}
