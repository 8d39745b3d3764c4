package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// The real retry a dry run with a corrected payload names never retries
// the payload that failed, followed as it is printed: a payload read from
// a file is read from it again (named by its absolute path), whatever it
// holds; one given inline that holds a secret is shown with the secret
// redacted, which the retry refuses, and one too large to repeat by a
// stand-in refused the same way, each with a why that says what to pass.
// In plain output and with --json alike.
func TestRetryDryRunNextCarriesTheCorrectedPayload(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "orders")
	ids := pgtest.DeadLetter(t, s, "orders", pgtest.DeadSpec{Payload: `{"order_id": 1}`}, pgtest.DeadSpec{Payload: `{"order_id": 2}`}, pgtest.DeadSpec{Payload: `{"order_id": 3}`})
	file := filepath.Join(t.TempDir(), "k5.json")
	if err := os.WriteFile(file, []byte(`{"order_id": 11, "password": "pw-file-77", "note": "`+strings.Repeat("x", 3000)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(ids[0])
	out := d.ok(t, "dlq", "retry", id, "--queue", "orders", "--payload", "@"+file, "--dry-run")
	step := nextLine(t, out, "pgbus dlq retry "+id)
	if want := "pgbus dlq retry " + id + " --payload @" + file + " --queue orders"; !strings.HasPrefix(step, want+"   #") ||
		strings.Contains(step, "again") || strings.Contains(out, "pw-file-77") {
		t.Fatalf("next after a dry run with --payload @FILE: %q; want %q with a why that asks for nothing more", step, want)
	}
	var jsonOut struct {
		Next []struct {
			Op   string         `json:"op"`
			Args map[string]any `json:"args"`
		} `json:"next"`
	}
	out = d.ok(t, "dlq", "retry", id, "--queue", "orders", "--payload", "@"+file, "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &jsonOut); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range jsonOut.Next {
		found = found || n.Args["command"] == "pgbus dlq retry "+id+" --payload @"+file+" --queue orders"
	}
	if !found {
		t.Fatalf("--json next %+v; want the retry reading the file again", jsonOut.Next)
	}
	// Followed, it retries with the corrected payload.
	d.ok(t, shellWords(t, strings.TrimPrefix(step[:strings.Index(step, "   #")], "pgbus "))...)
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders WHERE message->>'password' = 'pw-file-77' AND message->>'order_id' = '11'`); n != 1 {
		t.Fatalf("%d messages carry the corrected payload after the step was followed, want 1", n)
	}

	for _, c := range []struct {
		id      int64
		payload string
		why     string
	}{
		{ids[1], `{"order_id": 22, "password": "pw-inline-88"}`, "put the real one back"},
		{ids[2], `{"order_id": 33, "note": "` + strings.Repeat("y", 3000) + `"}`, "pass the corrected payload again"},
	} {
		id := fmt.Sprint(c.id)
		out := d.ok(t, "dlq", "retry", id, "--queue", "orders", "--payload", c.payload, "--dry-run")
		step := nextLine(t, out, "pgbus dlq retry "+id+" --payload ")
		if strings.Contains(out, "pw-inline-88") || !strings.Contains(step, c.why) || len(step) > 1000 {
			t.Fatalf("next after a dry run with an inline payload: %q; want the payload's stand-in and a why saying %q", step, c.why)
		}
		before := d.snapshot(t)
		stderr := d.fails(t, 2, shellWords(t, strings.TrimPrefix(step[:strings.Index(step, "   #")], "pgbus "))...)
		if !strings.Contains(stderr, "corrected payload still holds") {
			t.Fatalf("the step followed: %s; want it refused", stderr)
		}
		if after := d.snapshot(t); after != before {
			t.Fatalf("the refused step changed the database: %s, then %s", before, after)
		}
	}
}

// nextLine returns the first "next: " line of out that starts with
// prefix, without "next: ".
func nextLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if step, ok := strings.CutPrefix(line, "next: "); ok && strings.HasPrefix(step, prefix) {
			return step
		}
	}
	t.Fatalf("no next step %q in:\n%s", prefix, out)
	return ""
}

// shellWords splits a command line as a POSIX shell does the words the
// CLI's steps hold: plain words and single-quoted ones, '\” for a quote.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			w.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case c == ' ':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unclosed quote in %q", line)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
