package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Bad command lines exit 2 with one clear line on stderr, print nothing on
// stdout, and change nothing in the database.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"amount_cents": 0}`)
	d.ok(t, "work", "--queue", "orders", "--handler", "demo", "--until-idle")
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(`"`+strings.Repeat("x", 9<<20)+`"`), 0o644); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(notJSON, []byte(`{"order_id": 42,}`), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("q", 60)
	cases := []struct {
		name  string
		args  []string
		stdin string
		says  string // part of the error message
	}{
		{"unknown flag", []string{"dlq", "list", "--colour"}, "", "unknown flag: --colour; pgbus dlq list --help lists the flags it takes"},
		{"show without an id", []string{"dlq", "show"}, "", "dlq show takes ID (accepts 1 arg(s), received 0): pgbus dlq show ID [flags]; see pgbus dlq show --help"},
		{"circuit open without a name", []string{"circuit", "open"}, "", "circuit open takes NAME (accepts 1 arg(s), received 0)"},
		{"queues with two names", []string{"queues", "a", "b"}, "", "queues takes an optional QUEUE (accepts at most 1 arg(s), received 2)"},
		{"queues with an empty name", []string{"queues", ""}, "", "the queue name is empty: give one, or leave it out for every queue"},
		{"circuits with a blank name", []string{"circuits", " "}, "", "the circuit breaker name is empty: give one, or leave it out for every breaker"},
		{"unknown command", []string{"frobnicate"}, "", `unknown command "frobnicate" for "pgbus"; use one of: audit, bench, circuit,`},
		{"unknown subcommand", []string{"dlq", "frobnicate"}, "", `unknown command "frobnicate"`},
		{"command's flag before its name", []string{"--yes", "dlq", "purge", "orders"}, "", "--yes is a flag of pgbus dlq purge: give it after the command's name (pgbus dlq purge --yes)"},
		{"number flag twice", []string{"dlq", "retry-all", "--queue", "orders", "--limit", "5", "--limit", "100000", "--dry-run"}, "", `--limit was given twice ("5", then "100000"): give it once`},
		{"duration flag twice", []string{"send", "orders", "{}", "--delay", "1h", "--delay", "0s"}, "", "--delay was given twice"},
		{"command's text flag before its name", []string{"--queue", "orders", "dlq", "list"}, "", "--queue is a flag of pgbus dlq list: give it after the command's name"},
		{"unknown flag before the command's name", []string{"--log-level", "debug", "--colour", "queues"}, "", "unknown flag --colour before the command's name"},
		{"unknown queue subcommand", []string{"queue", "rename", "a"}, "", "unknown command"},
		{"queue stats, as the MCP tool is named", []string{"queue", "stats", "orders"}, "", "that is pgbus queues [NAME]; pgbus queue takes one of: create,"},
		{"dlq stats", []string{"dlq", "stats"}, "", "that is pgbus dlq summary"},
		{"circuit list", []string{"circuit", "list"}, "", "that is pgbus circuits"},
		{"missing argument", []string{"send"}, "", "arg"},
		{"bad duration", []string{"send", "orders", "{}", "--delay", "5parsecs"}, "", "--delay"},
		{"duration without a unit", []string{"send", "orders", "{}", "--delay", "5"}, "", `--delay "5": not a duration: give a number with a unit, such as 500ms, 30s, 2m or 7d`},
		{"number in words", []string{"dlq", "list", "--limit", "ten"}, "", `--limit "ten": not a whole number: give one in decimal digits`},
		{"negative delay", []string{"send", "orders", "{}", "--delay", "-5s"}, "", "negative"},
		{"huge delay", []string{"send", "orders", "{}", "--delay", "999999h"}, "", "too long"},
		{"bad deadline", []string{"send", "orders", "{}", "--deadline", "tomorrow-ish"}, "", "RFC 3339"},
		{"past deadline", []string{"send", "orders", "{}", "--deadline", "2001-01-01T00:00:00Z"}, "", "has passed"},
		{"deadline of the first instant", []string{"send", "orders", "{}", "--deadline", "0001-01-01T00:00:00Z"}, "", "deadline 0001-01-01T00:00:00Z is in the past: the message would be dead-lettered without running"},
		{"deadline of the first day", []string{"send", "orders", "{}", "--deadline", "0001-01-01"}, "", "deadline 0001-01-01T00:00:00Z is in the past"},
		{"deadline of the first day, ndjson", []string{"send", "orders", "--ndjson", "-", "--deadline", "0001-01-01"}, "{}\n", "deadline 0001-01-01T00:00:00Z is in the past"},
		{"invalid JSON", []string{"send", "orders", `{"order_id": 42,}`}, "", "not valid JSON"},
		{"invalid JSON file", []string{"send", "orders", "@" + notJSON}, "", "not valid JSON"},
		{"invalid JSON stdin", []string{"send", "orders", "-"}, "{nope", "not valid JSON"},
		{"empty payload", []string{"send", "orders", "  "}, "", "empty"},
		{"missing file", []string{"send", "orders", "@" + filepath.Join(dir, "missing.json")}, "", "no such file"},
		{"directory as payload file", []string{"send", "orders", "@" + dir}, "", "is a directory: name a file"},
		{"directory as --ndjson file", []string{"send", "orders", "--ndjson", dir}, "", "is a directory: name a file"},
		{"@ without a file name", []string{"send", "orders", "@"}, "", "names no file"},
		{"retry payload @ without a file name", []string{"dlq", "retry", "1", "--queue", "orders", "--payload", "@"}, "", "names no file"},
		{"missing --file", []string{"send", "orders", "--file", filepath.Join(dir, "missing.json")}, "", "no such file"},
		{"NUL escape in payload", []string{"send", "orders", `{"name": "a\u0000b"}`}, "", `\u0000`},
		{"NUL escape in payload stdin", []string{"send", "orders", "-"}, `["\u0000"]`, `\u0000`},
		{"lone surrogate in payload", []string{"send", "orders", `"\udc00"`}, "", "surrogate"},
		{"invalid UTF-8 payload", []string{"send", "orders", "{\"name\": \"\xff\"}"}, "", "UTF-8"},
		{"invalid UTF-8 payload stdin", []string{"send", "orders", "-"}, "\"caf\xe9\"", "UTF-8"},
		{"invalid UTF-8 kind", []string{"send", "orders", "{}", "--kind", "\xff"}, "", "kind cannot be stored"},
		{"invalid UTF-8 idempotency key", []string{"send", "orders", "{}", "--idempotency-key", "k\xff"}, "", "idempotency key"},
		{"invalid UTF-8 header key", []string{"send", "orders", "{}", "--header", "t\xffx=1"}, "", "UTF-8"},
		{"invalid UTF-8 header value", []string{"send", "orders", "{}", "--header", "tenant=\xff"}, "", "UTF-8"},
		{"NUL escape in retry payload", []string{"dlq", "retry", "1", "--queue", "orders", "--payload", `{"a": "\u0000"}`}, "", `\u0000`},
		{"invalid UTF-8 retry payload", []string{"dlq", "retry", "1", "--queue", "orders", "--payload", "\"\xff\""}, "", "UTF-8"},
		{"payload twice", []string{"send", "orders", "{}", "--file", notJSON}, "", "not both"},
		{"no payload", []string{"send", "orders"}, "", "missing payload"},
		{"huge payload", []string{"send", "orders", "--file", huge}, "", "larger than"},
		{"reserved header", []string{"send", "orders", "{}", "--header", "pgbus_kind=x"}, "", "are reserved for pgbus, which sets them from options of their own: --kind, --idempotency-key, --deadline, --priority"},
		{"header without =", []string{"send", "orders", "{}", "--header", "tenant"}, "", "key=value"},
		{"send to a DLQ", []string{"send", "orders_dlq", "{}"}, "", "dead-letter queue"},
		{"uppercase queue", []string{"queue", "create", "Orders"}, "", "lowercase"},
		{"injection queue name", []string{"queue", "create", "orders; DROP TABLE pgbus.queues"}, "", "lowercase"},
		{"quote in queue name", []string{"send", "x'||pg_sleep(5)||'", "{}"}, "", "lowercase"},
		{"long queue name", []string{"queue", "create", long}, "", "characters"},
		{"reserved _dlq name", []string{"queue", "create", "orders_dlq"}, "", "reserved"},
		{"huge max retries", []string{"queue", "create", "more", "--max-retries", "99999999"}, "", "--max-retries"},
		{"max retries overflow", []string{"queue", "create", "more", "--max-retries", "99999999999999999999"}, "", "--max-retries"},
		{"negative backoff", []string{"queue", "create", "more", "--backoff", "-1s"}, "", "--backoff"},
		{"backoff max below backoff", []string{"queue", "create", "more", "--backoff", "10m", "--backoff-max", "1m"}, "", "--backoff-max 1m is less than --backoff 10m; it caps every delay, so make it at least the --backoff"},
		{"jitter out of range", []string{"queue", "create", "more", "--jitter", "1.5"}, "", "--jitter"},
		{"archive retention too short", []string{"queue", "create", "more", "--archive-retention", "10s"}, "", "--archive-retention 10s is out of range 1m..87600h"},
		{"dead retention in words", []string{"queue", "create", "more", "--dead-retention", "30 days"}, "", `--dead-retention "30 days": not a duration`},
		{"jitter NaN", []string{"queue", "create", "more", "--jitter", "NaN"}, "", "--jitter"},
		{"bad strategy", []string{"queue", "create", "more", "--strategy", "fibonacci"}, "", "--strategy"},
		{"tiny visibility timeout", []string{"queue", "create", "more", "--visibility-timeout", "10ms"}, "", "--visibility-timeout"},
		{"non-numeric id", []string{"dlq", "show", "abc"}, "", "positive whole numbers"},
		{"id too large to show", []string{"dlq", "show", "99999999999999999999"}, "", "message id 99999999999999999999 is too large: ids go up to 9223372036854775807"},
		{"negative id", []string{"dlq", "retry", "--", "-4"}, "", "positive whole numbers"},
		{"negative id to show", []string{"dlq", "show", "-1"}, "", `message id "-1" is not an id: ids are positive whole numbers`},
		{"negative id among ids", []string{"dlq", "retry", "3", "-12", "--queue", "orders"}, "", `message id "-12" is not an id: ids are positive whole numbers`},
		{"negative id to discard", []string{"dlq", "discard", "-7", "--yes"}, "", `message id "-7" is not an id: ids are positive whole numbers`},
		{"signed id", []string{"dlq", "show", "+42"}, "", `message id "+42" is not an id: ids are positive whole numbers in decimal digits alone (no sign, leading zero`},
		{"id with a leading zero", []string{"dlq", "retry", "042", "--queue", "orders"}, "", `message id "042" is not an id: ids are positive whole numbers in decimal digits alone`},
		{"id with a blank", []string{"dlq", "discard", " 42", "--yes"}, "", `message id " 42" is not an id: ids are positive whole numbers in decimal digits alone`},
		{"id with a separator", []string{"dlq", "show", "4_2"}, "", `message id "4_2" is not an id: ids are positive whole numbers in decimal digits alone`},
		{"payload for many", []string{"dlq", "retry", "1", "2", "--payload", "{}"}, "", "exactly one id"},
		{"bad retry payload", []string{"dlq", "retry", "1", "--queue", "orders", "--payload", "{bad"}, "", "not valid JSON"},
		{"redaction marker in retry payload", []string{"dlq", "retry", "1", "--queue", "orders", "--payload", `{"order_id": 42, "card": "[REDACTED]"}`}, "",
			"marker [REDACTED] in 1 place ($.card), so it would send the marker instead of the hidden values: replace the [REDACTED] values with the real ones"},
		{"list limit too big", []string{"dlq", "list", "--limit", "1000"}, "", "--limit"},
		{"retry-all limit too big", []string{"dlq", "retry-all", "--limit", "100000000", "--yes"}, "", "--limit 100000000 is out of range; give 1 to 100000, and call again for more"},
		{"bad reason", []string{"dlq", "list", "--reason", "bored"}, "", "reason"},
		{"bad since", []string{"dlq", "summary", "--since", "last tuesday"}, "", `since "last tuesday" is not a time: give an RFC 3339 time`},
		{"bad until", []string{"dlq", "list", "--until", "30 days"}, "", `until "30 days"`},
		{"bad age unit", []string{"dlq", "list", "--since", "7w"}, "", "an age such as 30m, 2h or 7d"},
		{"age past a duration's range", []string{"dlq", "list", "--since", "9999999999h"}, "", `"9999999999h" reaches back before 1970, before anything pgbus keeps could have happened; give at most `},
		{"delay in days past the range", []string{"send", "orders", "{}", "--delay", "36501d"}, "", "36501d is too long; at most 365d"},
		{"delay in days past a duration's range", []string{"send", "orders", "{}", "--delay", "200000d"}, "", `"200000d" is too long for a duration: give at most 106751d`},
		{"delay in negative days", []string{"send", "orders", "{}", "--delay", "-3d"}, "", `"-3d" is negative: give 0 or more days`},
		{"drain timeout in days", []string{"work", "--queue", "orders", "--handler", "demo", "--drain-timeout", "2d"}, "", "--drain-timeout 2d is out of range 1ms..24h"},
		{"poll interval in days", []string{"work", "--queue", "orders", "--handler", "demo", "--poll-interval", "2d"}, "", "--poll-interval 2d is out of range 10ms..1h"},
		{"delay in part days", []string{"send", "orders", "{}", "--delay", "1.5d"}, "", `"1.5d" is not a duration: give whole days (7d) or hours and minutes`},
		{"delay past a year", []string{"send", "orders", "{}", "--delay", "400d"}, "", "400d is too long; at most 365d"},
		{"delay past a duration's range", []string{"send", "orders", "{}", "--delay", "9999999999999h"}, "", `"9999999999999h" is too long for a duration: give a shorter one`},
		{"retry-all bad since", []string{"dlq", "retry-all", "--since", "soon", "--yes"}, "", "since"},
		{"until before since", []string{"dlq", "list", "--since", "1h", "--until", "2h"}, "", "is not after the start of the range"},
		{"bad cursor", []string{"dlq", "list", "--cursor", "'; DROP TABLE pgbus.audit_log; --"}, "", "cursor"},
		{"cursor not issued", []string{"dlq", "list", "--cursor", "garbage"}, "", "--cursor is not valid here (issued by another list or database, cut short or changed); start again without --cursor"},
		{"retry rate out of range", []string{"dlq", "retry-all", "--queue", "orders", "--rate", "-1", "--yes"}, "", "--rate -1 is out of range: give messages a second from 0.0167"},
		{"retry rate too slow for its limit", []string{"dlq", "retry-all", "--queue", "orders", "--rate", "0.02", "--limit", "100000", "--yes"}, "",
			"--rate 0.02 with --limit 100000 would take 58 days to make the messages visible, while a paced retry may take 7 days at most: give --rate 0.166 or more, or a lower --limit"},
		{"long text filter", []string{"dlq", "list", "--text", strings.Repeat("a", 5000)}, "", "characters"},
		{"discard nothing", []string{"dlq", "discard"}, "", "nothing selected"},
		{"discard ids and filters", []string{"dlq", "discard", "1", "--reason", "non_retryable_error"}, "", "not both"},
		{"discard ids with a limit", []string{"dlq", "discard", "1", "--limit", "5"}, "", "--limit applies to a filter; with ids every id given is handled: drop --limit"},
		{"discard ids and two filters", []string{"dlq", "discard", "1", "--kind", "email", "--error-class", "Boom"}, "", "not both: drop --kind and --error-class, or drop the ids"},
		{"discard ids and all", []string{"dlq", "discard", "1", "--all", "--yes"}, "", "give ids or --all, not both: drop --all, or drop the ids"},
		{"discard ids with expect", []string{"dlq", "discard", "1", "--expect", "1"}, "", "--expect applies to a call by filter; a call by ids handles exactly the ids given: drop --expect"},
		{"retry expect as ids without a queue", []string{"dlq", "retry-all", "--kind", "email", "--expect", "4,5", "--yes"}, "", "--expect given as ids needs --queue, since an id names a message only within one DLQ: add --queue,"},
		{"retry expect of no id", []string{"dlq", "retry-all", "--queue", "orders", "--expect", ",", "--yes"}, "", "--expect holds no id"},
		{"migrate with a missing PGMQ script", []string{"migrate", "--install-pgmq", "/nonexistent/pgmq.sql"}, "", "pass the path of PGMQ's pgmq.sql"},
		{"purge negative age", []string{"dlq", "purge", "--older-than", "-1h", "--yes"}, "", "--older-than"},
		{"purge age as words", []string{"dlq", "purge", "--older-than", "30 days", "--yes"}, "", "--older-than"},
		{"purge age as a date", []string{"dlq", "purge", "--older-than", "2026-01-01", "--yes"}, "", "not an age"},
		{"too many ids", append([]string{"dlq", "retry"}, manyIDs(101)...), "", "at most 100"},
		{"retry with a filter flag", []string{"dlq", "retry", "1", "--error-class", "x"}, "", "unknown flag"},
		{"discard too many ids", append([]string{"dlq", "discard", "--yes"}, manyIDs(101)...), "", "at most 100"},
		{"queue messages bad state", []string{"queue", "messages", "orders", "--state", "sleeping"}, "", `--state "sleeping" is unknown`},
		{"queue messages limit", []string{"queue", "messages", "orders", "--limit", "0"}, "", "--limit"},
		{"queue messages no queue", []string{"queue", "messages"}, "", "arg"},
		{"one priority level", []string{"queue", "create", "more", "--priorities", "1"}, "", "--priorities"},
		{"too many priority levels", []string{"queue", "create", "more", "--priorities", "11"}, "", "--priorities"},
		{"priority on a plain queue", []string{"send", "orders", "{}", "--priority", "3"}, "", `--priority 3 is out of range: queue "orders" is a plain queue, without levels: send with --priority 0 (the default), or create the queue with levels`},
		{"negative priority", []string{"send", "orders", "{}", "--priority", "-1"}, "", "priority"},
		{"circuit reset without name", []string{"circuit", "reset"}, "", "arg"},
		{"unknown circuit subcommand", []string{"circuit", "trip", "x"}, "", `unknown command "trip"`},
		// The flag is the subcommand's the person meant: the mistake is
		// the subcommand's name.
		{"unknown dlq subcommand with a flag", []string{"dlq", "bogus", "--queue", "orders"}, "", `unknown command "bogus" for "pgbus dlq"`},
		{"unknown queue subcommand with a flag", []string{"queue", "bogus", "--queue", "x"}, "", `unknown command "bogus" for "pgbus queue"`},
		{"unknown flag of a group", []string{"dlq", "--bogus"}, "", "unknown flag: --bogus"},
		{"circuit open without --for", []string{"circuit", "open", "x"}, "", "--for is required"},
		{"circuit open for a negative time", []string{"circuit", "open", "x", "--for", "-1m"}, "", `--for "-1m" is not a duration from 1s to 7d`},
		{"health argument", []string{"health", "now"}, "", "unknown command"},
		{"workers argument", []string{"workers", "all"}, "", `workers takes no arguments (unknown command "all" for "pgbus workers")`},
		{"completion of an unknown shell", []string{"completion", "tcsh"}, "", `unknown command "tcsh" for "pgbus completion"; use one of: bash, fish`},
		{"mistyped command", []string{"queus"}, "", `unknown command "queus" for "pgbus"; did you mean queue or queues? Use one of: audit, bench,`},
		{"mistyped dlq subcommand", []string{"dlq", "retyr", "3"}, "", `unknown command "retyr" for "pgbus dlq"; did you mean retry? Use one of: discard,`},
		{"mistyped queue subcommand", []string{"queue", "craete", "x"}, "", `unknown command "craete" for "pgbus queue"; did you mean create? Use one of: create,`},
		{"mistyped flag", []string{"dlq", "list", "--queeu", "orders"}, "", "unknown flag: --queeu; did you mean --queue? pgbus dlq list --help lists the flags it takes"},
		{"audit limit", []string{"audit", "--limit", "0"}, "", "--limit"},
		{"work without queues", []string{"work"}, "", "no queues"},
		{"work unknown handler", []string{"work", "--queue", "orders", "--handler", "carrier-pigeon"}, "", "unknown handler type"},
		{"work without handler", []string{"work", "--queue", "orders"}, "", "has no handler"},
		{"work bad concurrency", []string{"work", "--queue", "orders:0", "--handler", "demo"}, "", "concurrency"},
		{"work bad poll interval", []string{"work", "--queue", "orders", "--handler", "demo", "--poll-interval", "1ns"}, "", "--poll-interval 1ns is out of range 10ms..1h"},
		{"work poll interval too short", []string{"work", "--queue", "orders", "--handler", "demo", "--poll-interval", "1ms"}, "", "--poll-interval 1ms is out of range 10ms..1h"},
		{"work call timeout too short", []string{"work", "--queue", "orders", "--handler", "demo", "--database-call-timeout", "1ms"}, "", "--database-call-timeout 1ms is out of range"},
		{"work concurrency too high", []string{"work", "--queue", "orders", "--handler", "demo", "--concurrency", "100000"}, "", "--concurrency 100000 is out of range 1..10000"},
		{"log level in words", []string{"--log-level", "bogus", "queues"}, "", `--log-level "bogus": use debug, info, warn or error`},
		{"log format in words", []string{"--log-format", "bogus", "queues"}, "", `--log-format "bogus": use auto, text or json`},
		{"metrics address without a port", []string{"serve", "--metrics-addr", "bogus"}, "", `--metrics-addr "bogus" is not host:port`},
		{"safe field of empty keys", []string{"serve", "--safe-fields", "a..b"}, "", `--safe-fields: safe field "a..b" cannot be used: name payload keys joined by dots`},
		{"huge idempotency key", []string{"send", "orders", "{}", "--idempotency-key", strings.Repeat("k", 5000)}, "", "--idempotency-key is 5000 bytes; at most 255"},
		{"huge kind", []string{"send", "orders", "{}", "--kind", strings.Repeat("k", 100<<10)}, "", "--kind is 102400 bytes; at most 255: a kind names its handler"},
		{"demo negative timeout", []string{"demo", "--timeout", "-1s"}, "", "too short"},
		{"demo zero timeout", []string{"demo", "--timeout", "0s"}, "", "give 1s or more"},
		{"work for zero", []string{"work", "--queue", "orders", "--handler", "demo", "--for", "0s"}, "", "leave --for out"},
		{"work for negative", []string{"work", "--queue", "orders", "--handler", "demo", "--for", "-1m"}, "", "too short"},
	}
	before := d.snapshot(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := d.failsIn(t, 2, c.stdin, c.args...)
			if !strings.Contains(msg, c.says) {
				t.Errorf("stderr %q does not say %q", msg, c.says)
			}
			if !strings.HasPrefix(msg, "pgbus: ") || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
				t.Errorf("stderr is not one error line: %q", msg)
			}
		})
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("rejected command lines changed the database:\nbefore %s\nafter  %s", before, after)
	}
	// Injection-looking filter values are data: they match nothing and
	// break nothing.
	for _, v := range []string{"x' OR '1'='1", `%`, `_`, `\`, "'; DROP TABLE pgbus.failures; --"} {
		out := d.ok(t, "dlq", "list", "--kind", v, "--error-class", v)
		if !strings.Contains(out, "no dead messages match") {
			t.Fatalf("filter %q matched: %q", v, out)
		}
		if v == "_" {
			continue // the error message has one: amount_cents
		}
		if out := d.ok(t, "dlq", "list", "--text", v); !strings.Contains(out, "no dead messages match") {
			t.Fatalf("text %q matched: %q", v, out)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("filters changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// manyIDs returns n message ids as arguments.
func manyIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}
