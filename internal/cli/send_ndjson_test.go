package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// ndjsonLines is n lines {"order_id": 0} to {"order_id": n-1}.
func ndjsonLines(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"order_id": %d}`, i)
	}
	return lines
}

func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseIDs reads the ids send prints, one a line.
func parseIDs(t *testing.T, out string) []int64 {
	t.Helper()
	var ids []int64
	for _, f := range strings.Fields(out) {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatalf("stdout %q holds %q, not an id", out, f)
		}
		ids = append(ids, id)
	}
	return ids
}

// send --ndjson sends 2,500 lines, more than one transaction holds, in
// order, with the same options, printing their ids; it is one entry in
// the audit log, and a real worker works every message.
func TestSendNDJSONSendsEveryLineInOrder(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	path := writeLines(t, ndjsonLines(2500))

	ids := parseIDs(t, d.ok(t, "send", "orders", "--ndjson", path, "--kind", "reimport", "--header", "tenant=acme"))
	if len(ids) != 2500 {
		t.Fatalf("%d ids printed for 2500 lines", len(ids))
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("id %d of line %d does not follow %d", id, i+1, ids[i-1])
		}
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders WHERE headers->>'pgbus_kind' = 'reimport' AND headers->>'tenant' = 'acme'`); n != 2500 {
		t.Fatalf("%d messages with the kind and header; want 2500", n)
	}
	if bad := d.count(t, `SELECT count(*) FROM (SELECT (message->>'order_id')::int AS n, row_number() OVER (ORDER BY msg_id) - 1 AS i FROM pgmq.q_orders) x WHERE n <> i`); bad != 0 {
		t.Fatalf("%d messages out of the lines' order", bad)
	}
	if first := d.count(t, `SELECT min(msg_id) FROM pgmq.q_orders`); int64(first) != ids[0] {
		t.Fatalf("first id printed %d, first in the queue %d", ids[0], first)
	}
	sends := d.audit(t, "--tool", "send")
	if len(sends) != 1 || sends[0].IsError || !strings.Contains(string(sends[0].Arguments), `"messages": 2500`) || !strings.Contains(string(sends[0].Result), `"sent": 2500`) {
		t.Fatalf("audit entries of send: %+v; want one counting 2500", sends)
	}

	d.ok(t, "work", "--queue", "orders", "--handler", "demo", "--until-idle")
	if n := d.count(t, `SELECT count(*) FROM pgmq.a_orders`); n != 2500 {
		t.Fatalf("%d messages worked and archived; want 2500", n)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
}

// A bad line anywhere refuses the whole input, naming the line, with
// nothing sent and nothing in the audit log; so do a huge line and input
// with no payloads.
func TestSendNDJSONRefusesBadInputBeforeSending(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	before := d.snapshot(t)

	lines := ndjsonLines(2500)
	lines[1233] = `{"order_id": 1233,}`
	msg := d.fails(t, 2, "send", "orders", "--ndjson", writeLines(t, lines))
	if !strings.Contains(msg, "line 1234 of file") || !strings.Contains(msg, "must be JSON") || !strings.Contains(msg, "nothing was sent") {
		t.Errorf("a line that is not JSON: %q; want it named as line 1234", msg)
	}
	lines[1233] = strings.Repeat(" ", 3) // blank lines are skipped, not counted as payloads
	lines[2000] = `"` + strings.Repeat("x", 9<<20) + `"`
	msg = d.fails(t, 2, "send", "orders", "--ndjson", writeLines(t, lines))
	if !strings.Contains(msg, "line 2001 of file") || !strings.Contains(msg, "most a message may carry") {
		t.Errorf("a line of 9 MiB: %q; want it named as line 2001, too large", msg)
	}
	lines[2000] = `{"order_id": 2000, "note": "\u0000"}`
	msg = d.fails(t, 2, "send", "orders", "--ndjson", writeLines(t, lines))
	if !strings.Contains(msg, "line 2001 of file") || !strings.Contains(msg, "nothing was sent") {
		t.Errorf("a line PostgreSQL cannot store: %q; want it named as line 2001", msg)
	}
	for name, stdin := range map[string]string{"empty": "", "blank lines": "\n  \n\n"} {
		msg = d.failsIn(t, 2, stdin, "send", "orders", "--ndjson", "-")
		if !strings.Contains(msg, "stdin holds no payloads") || !strings.Contains(msg, "nothing was sent") {
			t.Errorf("%s stdin: %q; want it said to hold no payloads", name, msg)
		}
	}
	msg = d.fails(t, 2, "send", "orders", "--ndjson", "-", "--idempotency-key", "k")
	if !strings.Contains(msg, "--idempotency-key goes with one message") {
		t.Errorf("--ndjson with a key: %q", msg)
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused input changed the database: %s, then %s", before, after)
	}
}

// send --ndjson - reads stdin; a failure in the database after some
// transactions were sent says which lines were sent and which line to go
// on from, and --from-line sends the rest once the line is put right.
func TestSendNDJSONFromStdinAndResumesAfterAFailure(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")

	lines := ndjsonLines(2500)
	lines[1500] = `{"order_id": 1e1000000}` // JSON, but no number jsonb holds
	r := pgbusIn(t, d.env, strings.Join(lines, "\n"), "send", "orders", "--ndjson", "-", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "lines 1 to 1000 of stdin were sent") || !strings.Contains(r.stderr, "--from-line 1001") {
		t.Errorf("stderr %q does not say what was sent and where to go on", r.stderr)
	}
	if !strings.Contains(r.stderr, "line 1501 of stdin: ") || strings.Contains(r.stderr, "index 500") {
		t.Errorf("stderr %q does not name the line PostgreSQL refused", r.stderr)
	}
	// Its next steps are the ones the line names: the same command from
	// the line to go on from, which the resume below runs.
	resume := "pgbus send orders --ndjson - --json --from-line 1001"
	if e := decodeErrorJSON(t, r); !slices.ContainsFunc(e.Next, func(n nextStep) bool { return n.Command == resume && n.Why != "" }) {
		t.Errorf("next %+v; want %q", e.Next, resume)
	}
	var sent struct {
		Queue  string  `json:"queue"`
		MsgIDs []int64 `json:"msg_ids"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sent); err != nil || len(sent.MsgIDs) != 1000 {
		t.Fatalf("stdout %.200q (%v): want the ids of the 1000 sent", r.stdout, err)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 1000 {
		t.Fatalf("%d messages sent; want 1000", n)
	}
	sends := d.audit(t, "--tool", "send")
	if len(sends) != 1 || !sends[0].IsError || !strings.Contains(string(sends[0].Result), `"sent": 1000`) {
		t.Fatalf("audit entries of send: %+v; want one error counting the 1000 sent", sends)
	}

	lines[1500] = `{"order_id": 1500}`
	var res struct {
		Queue  string  `json:"queue"`
		MsgIDs []int64 `json:"msg_ids"`
	}
	out := pgbusIn(t, d.env, strings.Join(lines, "\n"), strings.Fields(strings.TrimPrefix(resume, "pgbus "))...)
	if out.code != 0 {
		t.Fatalf("resume: exit %d: %s", out.code, out.stderr)
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || res.Queue != "orders" || len(res.MsgIDs) != 1500 {
		t.Fatalf("resume --json: %q, %v", out.stdout, err)
	}
	if bad := d.count(t, `SELECT count(*) FROM (SELECT (message->>'order_id')::int AS n, row_number() OVER (ORDER BY msg_id) - 1 AS i FROM pgmq.q_orders) x WHERE n <> i`); bad != 0 {
		t.Fatalf("%d messages out of order or sent twice after the resume", bad)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 2500 {
		t.Fatalf("%d messages after the resume; want 2500", n)
	}
}

// A connection that breaks as a transaction of send --ndjson commits
// leaves its lines neither sent nor unsent for sure: the error says so,
// with the lines before them sent, how to look, and the line to go on
// from either way, where it said they were not sent and resuming from
// them could send them twice.
func TestSendNDJSONCommitCutOffIsUnsure(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	// At the commit of the transaction holding order 1500, its session
	// is ended, as by a failover: the client sees the connection go.
	pgtest.Exec(t, d.url, `CREATE FUNCTION public.end_my_session() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$`)
	pgtest.Exec(t, d.url, `CREATE CONSTRAINT TRIGGER end_session AFTER INSERT ON pgmq.q_orders DEFERRABLE INITIALLY DEFERRED
		FOR EACH ROW WHEN ((NEW.message->>'order_id') = '1500') EXECUTE FUNCTION public.end_my_session()`)

	r := pgbusIn(t, d.env, strings.Join(ndjsonLines(2500), "\n"), "send", "orders", "--ndjson", "-", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %.200s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"lines 1 to 1000 of stdin were sent", "lines 1001 to 2000 may or may not have been sent",
		"pgbus queue messages orders", "--from-line 1001 if they are not there, --from-line 2001 if they are"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
	var steps []string
	for _, n := range decodeErrorJSON(t, r).Next {
		steps = append(steps, n.Command)
	}
	if want := []string{"pgbus health", "pgbus queue messages orders", "pgbus send orders --ndjson - --json --from-line 1001", "pgbus send orders --ndjson - --json --from-line 2001"}; !slices.Equal(steps, want) {
		t.Errorf("next steps %q; want those the line names, %q", steps, want)
	}
	// The words of a call that sent nothing would contradict the lines'.
	for _, not := range []string{"try the call again", "nothing was changed", "check before calling again"} {
		if strings.Contains(r.stderr, not) {
			t.Errorf("stderr %q says %q", r.stderr, not)
		}
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 1000 {
		t.Fatalf("%d messages in the queue; want the first transaction's 1000", n)
	}
}

// A payload file saved with a byte order mark and CRLF line ends, as
// Windows editors and PowerShell save them, is read as its JSON, whether
// sent with @FILE, from stdin or as lines with --ndjson (files joined by
// cat carry a mark at the start of each); a file that is no JSON says so
// in words for a file, not a shell's.
func TestSendReadsFilesWithAByteOrderMark(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	const bom = "\uFEFF"
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	d.ok(t, "send", "orders", "@"+write("one.json", bom+`{"order_id": 1}`+"\r\n"))
	if r := pgbusIn(t, d.env, bom+`{"order_id": 2}`, "send", "orders", "-"); r.code != 0 {
		t.Fatalf("send from stdin with a byte order mark: exit %d: %s", r.code, r.stderr)
	}
	part := bom + `{"order_id": 3}` + "\r\n" + `{"order_id": 4}` + "\r\n"
	d.ok(t, "send", "orders", "--ndjson", write("joined.ndjson", part+strings.ReplaceAll(strings.ReplaceAll(part, "3", "5"), "4", "6")))
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders WHERE message = jsonb_build_object('order_id', msg_id)`); n != 6 {
		t.Fatalf("%d of the 6 messages hold {\"order_id\": N} in the order sent", n)
	}
	msg := d.fails(t, 2, "send", "orders", "@"+write("cut.json", bom+`{"order_id": `))
	if !strings.Contains(msg, "payload from file") || !strings.Contains(msg, "it must hold one JSON value") || strings.Contains(msg, "shell") {
		t.Fatalf("a file that is no JSON: %q", msg)
	}
}

// A bad last line refuses the whole input, from a file, from stdin or
// from a pipe named as the file, naming the line, with nothing sent: the
// input is checked to its end before the first line is sent, and read
// again to send. stdin's copy, which it is read again from, is not left
// behind; a pipe is read once, as stdin is.
func TestSendNDJSONBadLastLineSendsNothing(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	before := d.snapshot(t)
	tmp := t.TempDir()
	env := append(slices.Clone(d.env), "TMPDIR="+tmp)
	left := func(when string) {
		t.Helper()
		if names, err := os.ReadDir(tmp); err != nil || len(names) > 0 {
			t.Fatalf("%s: TMPDIR holds %v (%v); want nothing left", when, names, err)
		}
	}

	lines := ndjsonLines(2500)
	lines[2499] = `{"order_id": 2499`
	msg := d.fails(t, 2, "send", "orders", "--ndjson", writeLines(t, lines))
	if !strings.Contains(msg, "line 2500 of file") || !strings.Contains(msg, "nothing was sent") {
		t.Errorf("a bad last line of a file: %q; want it named as line 2500, nothing sent", msg)
	}
	r := runBinary(t, quickBinary, env, strings.Join(lines, "\n"), "send", "orders", "--ndjson", "-")
	if r.code != 2 || !strings.Contains(r.stderr, "line 2500 of stdin") || !strings.Contains(r.stderr, "nothing was sent") {
		t.Errorf("a bad last line of stdin: exit %d, %q; want exit 2 naming line 2500, nothing sent", r.code, r.stderr)
	}
	left("refused stdin")
	if after := d.snapshot(t); after != before {
		t.Fatalf("refused input changed the database: %s, then %s", before, after)
	}

	lines[2499] = `{"order_id": 2499}`
	if r := pgbusIn(t, env, strings.Join(lines, "\n"), "send", "orders", "--ndjson", "-"); r.code != 0 || len(parseIDs(t, r.stdout)) != 2500 {
		t.Fatalf("stdin of 2500 lines: exit %d, %d ids: %s", r.code, len(parseIDs(t, r.stdout)), r.stderr)
	}
	left("stdin sent")
	fifo := filepath.Join(t.TempDir(), "jobs.pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString(strings.Join(ndjsonLines(1500), "\n"))
	}()
	if r := pgbusIn(t, env, "", "send", "orders", "--ndjson", fifo); r.code != 0 || len(parseIDs(t, r.stdout)) != 1500 {
		t.Fatalf("a pipe of 1500 lines: exit %d, %d ids: %s", r.code, len(parseIDs(t, r.stdout)), r.stderr)
	}
	left("pipe sent")
	if n := d.count(t, `SELECT count(*) FROM pgmq.q_orders`); n != 4000 {
		t.Fatalf("%d messages sent; want 4000", n)
	}
}
