package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
)

// Text PostgreSQL cannot take (bytes that are not UTF-8, NUL characters)
// in any flag or argument exits 2 with one line naming the flag, and no
// database error.
func TestBadTextNamesTheFlag(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	bad := "a\xffb"
	// Every message but the one about a queue name goes on "...: it is not
	// valid UTF-8; pass UTF-8 text without NUL characters".
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"dlq", "list", "--kind", bad}, "--kind cannot be used: it is not valid UTF-8; pass UTF-8 text without NUL characters"},
		{[]string{"dlq", "summary", "--error-class", bad}, "--error-class cannot be used"},
		{[]string{"dlq", "retry-all", "--text", bad, "--yes"}, "--text cannot be used"},
		{[]string{"dlq", "discard", "--since", bad, "--yes"}, "--since cannot be used"},
		{[]string{"dlq", "list", "--cursor", bad}, "--cursor cannot be used"},
		{[]string{"dlq", "show", "1", "--queue", bad}, "--queue cannot be used"},
		{[]string{"dlq", "retry", "1", "--queue", bad}, "--queue cannot be used"},
		{[]string{"dlq", "purge", "--queue", bad, "--yes"}, "--queue cannot be used"},
		{[]string{"queue", "messages", "orders", "--state", bad}, "--state cannot be used"},
		{[]string{"queue", "messages", "orders", "--cursor", bad}, "--cursor cannot be used"},
		{[]string{"queue", "messages", bad}, "queue cannot be used"},
		// Checked before the CLI connects, by the request's own check.
		{[]string{"queue", "pause", bad}, "pgbus: queue cannot be used: it is not valid UTF-8"},
		{[]string{"queue", "create", bad}, "pgbus: queue cannot be used: it is not valid UTF-8"},
		{[]string{"queues", bad}, "pgbus: queue cannot be used: it is not valid UTF-8"},
		{[]string{"audit", "--tool", bad}, "--tool cannot be used"},
		{[]string{"audit", "--client", bad}, "--client cannot be used"},
		{[]string{"audit", "--cursor", bad}, "--cursor cannot be used"},
		{[]string{"circuit", "reset", bad}, "name cannot be used"},
	}
	before := d.snapshot(t)
	for _, c := range cases {
		msg := d.fails(t, 2, c.args...)
		if !strings.Contains(msg, c.says) || strings.Contains(msg, "SQLSTATE") {
			t.Errorf("pgbus %q: stderr %q, want %q and what is wrong, without a database error", c.args, msg, c.says)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused command lines changed the database:\nbefore %s\nafter  %s", before, after)
	}
	if rows := d.audit(t, "--client", "cli"); len(rows) != 1 {
		t.Errorf("audit log holds %d entries, want the queue create only: %+v", len(rows), rows)
	}

	// A process's arguments cannot hold NUL characters; Go callers of Main
	// can pass them.
	for flag, args := range map[string][]string{
		"--kind":   {"dlq", "list", "--kind", "a\x00b"},
		"--client": {"audit", "--client", "a\x00b"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.Main(append([]string{"--database-url", d.url}, args...), strings.NewReader(""), &stdout, &stderr)
		if code != cli.ExitUsage || !strings.HasPrefix(stderr.String(), "pgbus: "+flag+" cannot be used: it holds a NUL character") || stdout.Len() != 0 {
			t.Errorf("Main %q: exit %d, stdout %q, stderr %q", args, code, stdout.String(), stderr.String())
		}
	}
}
