package cli_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The README's quick start, literally: pgbus demo on a machine with nothing
// running (a fresh embedded cluster), then what its output tells to do
// next: look at the summary, retry the outage's victims, work the queue.
func TestQuickStartDemo(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "pgbus-demo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	d := db{env: []string{"PGBUS_DATA_DIR=" + dir}}

	started := time.Now()
	out := d.ok(t, "demo")
	t.Logf("pgbus demo took %s", time.Since(started).Round(time.Millisecond))
	for _, s := range []string{
		"pgbus demo on embedded PostgreSQL in " + dir,
		"all 347 jobs settled",
		"Queues (pgbus queues):", "QUEUE", "DEPTH", "demo_orders", "demo_emails",
		"Dead letters (pgbus dlq summary):", "ERROR CLASS", "demo.Unavailable", "demo.ValidationError",
		"context.DeadlineExceeded", "deadline_exceeded", "dead messages in 5 groups",
		"pgbus dlq retry-all --queue demo_orders --error-class demo.Unavailable --yes",
		"Connect an AI agent", "pgbus serve", `in claude_desktop_config.json or .cursor/mcp.json:
    {"mcpServers":{"pgbus":{"command":"pgbus",`, `in .vscode/mcp.json:
    {"servers":{"pgbus":{"type":"stdio","command":"pgbus",`, "export PGBUS_DATA_DIR=" + dir,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("demo output lacks %q", s)
		}
	}
	if t.Failed() {
		t.Fatalf("demo output:\n%s", out)
	}

	// The summary groups at least three distinct causes.
	var sum ops.DLQSummary
	d.json(t, &sum, "dlq", "summary")
	causes := map[string]int64{}
	var dead int64
	for _, g := range sum.Groups {
		causes[g.SourceQueue+" "+g.ErrorClass+" "+strings.Join(g.Reasons, ",")] += g.Count
		dead += g.Count
	}
	if len(causes) < 3 || dead != 27 || sum.Total != 27 {
		t.Fatalf("summary: %d causes, %d dead: %v", len(causes), dead, causes)
	}
	outage := causes["demo_orders demo.Unavailable max_retries_exceeded"]
	if outage != 12 || causes["demo_orders demo.ValidationError non_retryable_error"] != 6 ||
		causes["demo_emails context.DeadlineExceeded max_retries_exceeded"] != 4 || causes["demo_emails  deadline_exceeded"] != 3 {
		t.Fatalf("causes: %v", causes)
	}
	// Ids are per queue: id 1 is dead in both demo DLQs, and the error
	// says how to show either.
	if msg := d.fails(t, 2, "dlq", "show", "1"); !strings.Contains(msg, "in 2 DLQs") ||
		!strings.Contains(msg, "pgbus dlq show 1 --queue demo_orders_dlq") || !strings.Contains(msg, "pgbus dlq show 1 --queue demo_emails_dlq") {
		t.Errorf("ambiguous id: %q", msg)
	}
	// The demo's writes are in the audit log as the operations they are,
	// by the CLI.
	byOp := map[string]int{}
	for _, e := range d.audit(t, "--tool", "all") {
		if e.Client != "cli" {
			t.Errorf("audit entry of client %q: %+v", e.Client, e)
		}
		byOp[e.Op]++
	}
	if byOp[ops.OpQueueCreate] != 2 || byOp[ops.OpSend] != 2 || byOp["demo"] != 0 {
		t.Errorf("demo audit entries: %v; want a queue_create and a send per demo queue, and no demo entry", byOp)
	}
	st := d.stats(t, "demo_orders")
	ordersDead, ordersArchived := st.DLQDepth, st.Archived

	// Retry everything dead in demo_orders: the transient ones succeed now,
	// the rest die again.
	var rep ops.DLQRetry
	d.json(t, &rep, "dlq", "retry-all", "--queue", "demo_orders", "--yes")
	if rep.Retried != int(ordersDead) || rep.Failed != 0 || rep.DryRun {
		t.Fatalf("retry-all: %+v, want %d retried", rep, ordersDead)
	}
	d.ok(t, "work", "--queue", "demo_orders", "--handler", "demo", "--until-idle")
	if s := d.stats(t, "demo_orders"); s.Depth != 0 || s.Archived != ordersArchived+outage || s.DLQDepth != ordersDead-outage {
		t.Fatalf("after retry-all and work: depth %d, archived %d (was %d), dead %d (was %d)", s.Depth, s.Archived, ordersArchived, s.DLQDepth, ordersDead)
	}
	d.json(t, &sum, "dlq", "summary", "--queue", "demo_orders")
	for _, g := range sum.Groups {
		if g.ErrorClass == "demo.Unavailable" {
			t.Fatalf("transient failures still dead: %+v", g)
		}
	}

	// Run again: it starts over, with the same result, its queues made
	// again handing out ids after the first run's, so that no new job
	// takes an old job's default idempotency key, nor a dead message an
	// id noted before.
	var firstDead ops.DLQList
	d.json(t, &firstDead, "dlq", "list", "--queue", "demo_emails", "--limit", "100")
	var firstHighest int64
	for _, it := range firstDead.Items {
		firstHighest = max(firstHighest, it.MsgID)
	}
	out = d.ok(t, "demo")
	if !strings.Contains(out, "all 347 jobs settled") || !strings.Contains(out, "27 dead-lettered") || !strings.Contains(out, "dead messages in 5 groups") {
		t.Fatalf("second demo:\n%s", out)
	}
	var all ops.QueueStatsResult
	d.json(t, &all, "queues")
	if len(all.Queues) != 2 {
		t.Errorf("queues after the second run: %+v", all.Queues)
	}
	for _, s := range all.Queues {
		if s.TotalSent != map[string]int64{"demo_orders": 240, "demo_emails": 107}[s.Queue] {
			t.Errorf("second run: %s sent %d", s.Queue, s.TotalSent)
		}
	}
	var secondDead ops.DLQList
	d.json(t, &secondDead, "dlq", "list", "--queue", "demo_emails", "--limit", "100")
	if len(secondDead.Items) != len(firstDead.Items) || firstHighest == 0 {
		t.Fatalf("demo_emails' DLQ holds %d messages after the second run, %d (up to id %d) after the first", len(secondDead.Items), len(firstDead.Items), firstHighest)
	}
	for _, it := range secondDead.Items {
		if it.MsgID <= firstHighest || it.SourceMsgID == nil || *it.SourceMsgID <= 107 {
			t.Errorf("dead message %d (from message %v) of the second run: want ids after the first run's (dead up to %d, sent up to 107)", it.MsgID, it.SourceMsgID, firstHighest)
		}
	}
	id := secondDead.Items[len(secondDead.Items)-1].MsgID
	var m ops.DeadMessage
	d.json(t, &m, "dlq", "show", strconv.FormatInt(id, 10), "--queue", "demo_emails")
	if m.DLQ != "demo_emails_dlq" || m.MsgID != id || len(m.History) > 4 {
		t.Errorf("a dead message of the second run carries %d failures: history from the first run leaked", len(m.History))
	}
}

// A second pgbus demo started while one runs on the same database leaves it
// alone: it says so and exits 1, where it dropped the first one's queues
// under its workers, which then failed or reported what the second did.
func TestDemoTwiceAtOnce(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	first := startDemo(t, d)
	// The first run works its jobs now; the second starts beside it.
	second := pgbus(t, d.env, "demo")
	out, stderr, err := first.wait()
	if err != nil {
		t.Fatalf("first demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	const settled = "all 347 jobs settled"
	const ended = "320 succeeded (some after retries), 27 dead-lettered"
	if !strings.Contains(out, settled) || !strings.Contains(out, ended) {
		t.Fatalf("first demo reported another run's jobs:\n%s", out)
	}
	switch second.code {
	case 0: // the first had finished when it started
		if !strings.Contains(second.stdout, ended) {
			t.Fatalf("second demo:\n%s", second.stdout)
		}
	case 1:
		if !strings.Contains(second.stderr, "another pgbus demo is running on this database") || strings.Contains(second.stdout, settled) {
			t.Fatalf("second demo, refused: stdout %q, stderr %q", second.stdout, second.stderr)
		}
	default:
		t.Fatalf("second demo: exit %d\nstdout: %s\nstderr: %s", second.code, second.stdout, second.stderr)
	}
	for q, dead := range map[string]int64{"demo_orders": 20, "demo_emails": 7} {
		if s := d.stats(t, q); s.Depth != 0 || s.DLQDepth != dead {
			t.Errorf("%s after both runs: depth %d, %d dead, want 0 and %d", q, s.Depth, s.DLQDepth, dead)
		}
	}
}

// A demo a signal stops says what is true of it: its queues keep what it
// did, and pgbus demo runs it again from the start, where the words of
// other commands (run it again to finish) would promise what a rerun does
// not do.
func TestDemoStoppedBySignalSaysARerunStartsOver(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "migrate")
	demo := startDemo(t, d)
	// The jobs take seconds to settle, through retries with backoff: the
	// signal comes while they do.
	if err := demo.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := demo.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("demo after SIGTERM: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	const want = "pgbus: the demo was stopped by a signal before finishing; its queues demo_orders and demo_emails keep what it did so far (pgbus queues shows them): pgbus demo runs it again from the start, dropping and recreating them\n"
	if got := stderr; !strings.HasSuffix(got, want) || strings.Contains(got, "to finish") {
		t.Errorf("demo stopped by SIGTERM said:\n%s\nwant it to end with:\n%s", got, want)
	}
	var all ops.QueueStatsResult
	d.json(t, &all, "queues")
	if len(all.Queues) != 2 {
		t.Errorf("queues after the stopped demo: %+v; want demo_orders and demo_emails kept", all.Queues)
	}
}

// runningDemo is a pgbus demo started by startDemo.
type runningDemo struct {
	cmd    *exec.Cmd
	sc     *bufio.Scanner
	out    strings.Builder
	stderr pgtest.SyncBuffer
}

// startDemo starts pgbus demo on d and returns once it has sent its jobs,
// while it works them.
func startDemo(t *testing.T, d db) *runningDemo {
	t.Helper()
	r := &runningDemo{cmd: exec.Command(binary, "demo")}
	r.cmd.Env = append(baseEnv(), d.env...)
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	r.sc = bufio.NewScanner(stdout)
	for r.sc.Scan() {
		r.out.WriteString(r.sc.Text() + "\n")
		if strings.HasPrefix(r.sc.Text(), "sent 347 jobs") {
			return r
		}
	}
	t.Fatalf("demo ended before it sent its jobs:\n%s\nstderr:\n%s", r.out.String(), r.stderr.String())
	return nil
}

// wait reads the rest of the demo's output and waits for it to exit.
func (r *runningDemo) wait() (stdout, stderr string, err error) {
	for r.sc.Scan() {
		r.out.WriteString(r.sc.Text() + "\n")
	}
	err = r.cmd.Wait()
	return r.out.String(), r.stderr.String(), err
}

// A demo whose database came from the configuration file names it in
// every step to try next, and starts the agent's server with it: it said
// to set DATABASE_URL as for the run, which no one had set, so the steps
// pasted as printed went to the embedded database.
func TestDemoStepsCarryTheConfigurationFile(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cfg := writeFile(t, "pgbus.yaml", "database_url: "+d.url+"\n")
	r := pgbus(t, nil, "demo", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("demo --config: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	_, next, _ := strings.Cut(r.stdout, "Try next:")
	if strings.Contains(next, "DATABASE_URL") {
		t.Errorf("the demo's next steps name DATABASE_URL, which the run did not use:\n%s", next)
	}
	for _, want := range []string{
		"  pgbus dlq list --queue demo_orders --config " + cfg + "\n",
		"  pgbus work --queue demo_orders --handler demo --until-idle --config " + cfg + "\n",
		"  pgbus dlq summary --config " + cfg + "\n",
		"  pgbus serve --config " + cfg + " --no-workers\n",
		`"args":["serve","--config","` + cfg + `","--no-workers"]`,
	} {
		if !strings.Contains(next, want) {
			t.Errorf("the demo's next steps lack %q:\n%s", want, next)
		}
	}
	// As printed, a step reads the demo's database.
	d.ok(t, "dlq", "list", "--queue", "demo_orders", "--config", cfg)
	if out := pgbus(t, nil, "dlq", "summary", "--config", cfg); out.code != 0 || !strings.Contains(out.stdout, "demo.Unavailable") {
		t.Errorf("dlq summary --config as the demo printed it: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
}
