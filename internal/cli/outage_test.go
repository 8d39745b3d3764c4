//go:build linux || darwin

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// A dlq retry-all cut off by the database stopping exits 1 saying the
// database does not answer, how many messages it retried, which stay
// retried, and to run the same command again once it answers; each dead
// message is then in the queue or in the DLQ, none in both, none lost, and
// the same command run again retries the rest. The audit entry of what it
// did, which the database could not take, is printed on stderr as one
// JSON line saying so, with the count it retried.
func TestRetryAllCutByTheDatabaseStopping(t *testing.T) {
	t.Parallel()
	c := cutRetryAll(t)
	code := c.exitCode(t)
	msg := c.stderr.String()
	if code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, msg)
	}
	if !saysUnavailable(msg) {
		t.Errorf("stderr does not say the database does not answer, or takes no connections:\n%s", msg)
	}
	for _, want := range []string{"which stay retried", fmt.Sprintf("run the same command again with --limit %d once it answers (pgbus health says when): it retries the rest", c.left(t))} {
		msg := withoutUntil(t, msg)
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q:\n%s", want, msg)
		}
	}
	said := c.saidRetried(t)
	var unrecorded []string
	for line := range strings.Lines(msg) {
		if strings.Contains(line, "could not record this operation in the audit log") {
			unrecorded = append(unrecorded, line)
		}
	}
	if len(unrecorded) != 1 {
		t.Fatalf("stderr has %d lines of an unrecorded audit entry, want one:\n%s", len(unrecorded), msg)
	}
	var line struct {
		Entry struct {
			At     time.Time `json:"at"`
			Client string    `json:"client"`
			Tool   string    `json:"tool"`
			Result struct {
				Retried int    `json:"retried"`
				Error   string `json:"error"`
			} `json:"result"`
			IsError bool `json:"is_error"`
		} `json:"audit_entry"`
	}
	if err := json.Unmarshal([]byte(unrecorded[0]), &line); err != nil {
		t.Fatalf("the unrecorded entry is no JSON line: %v\n%s", err, unrecorded[0])
	}
	if e := line.Entry; e.Tool != "dlq_retry" || e.Client != "cli" || !e.IsError || e.Result.Retried != said ||
		!saysUnavailable(e.Result.Error) || e.At.Before(c.began) {
		t.Errorf("unrecorded entry %s, want the retry's by cli, an error, counting the %d it said it retried", unrecorded[0], said)
	}

	pgtest.StartCluster(t, c.dir)
	if live, dead, distinct := c.counts(t); live != said || live+dead != c.n || distinct != live {
		t.Errorf("after the outage: %d in the queue (%d distinct), %d dead; want the %d it said it retried, and %d in all", live, distinct, dead, said, c.n)
	}
	r := pgbus(t, c.d.env, c.args...)
	if live, dead, distinct := c.counts(t); r.code != 0 || live != c.n || dead != 0 || distinct != c.n {
		t.Errorf("the same command again: exit %d, %d in the queue (%d distinct), %d dead; want all %d retried once\n%s", r.code, live, distinct, dead, c.n, r.stderr)
	}
}

// A dlq retry-all cut off by the database stopping, which starts again
// while the command tries to record what it did, leaves its audit entry in
// the log: the time the retry ended, the count it retried, its error.
func TestRetryAllCutRecordsItsEntryOnceTheDatabaseIsBack(t *testing.T) {
	t.Parallel()
	c := cutRetryAll(t)
	pgtest.Eventually(t, time.Minute, "the command trying to record its audit entry", func() bool {
		return strings.Contains(c.stderr.String(), "not yet recorded in the audit log")
	})
	restarted := time.Now()
	pgtest.StartCluster(t, c.dir)
	if code := c.exitCode(t); code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	if strings.Contains(msg, "could not record this operation") {
		t.Errorf("stderr says the entry could not be recorded, though the database came back:\n%s", msg)
	}
	said := c.saidRetried(t)
	var n, retried int
	var at time.Time
	var client, result string
	var isError bool
	c.d.query(t, `SELECT count(*) OVER (), at, client, (result->>'retried')::int, result->>'error', is_error FROM pgbus.audit_log WHERE tool = 'dlq_retry' AND NOT pending`,
		&n, &at, &client, &retried, &result, &isError)
	if n != 1 || client != "cli" || retried != said || !isError || !saysUnavailable(result) {
		t.Errorf("audit entries of the retry: %d, by %q, retried %d, error %q, is_error %v; want one by cli counting the %d it said it retried, with its error",
			n, client, retried, result, isError, said)
	}
	if at.Before(c.began) || !at.Before(restarted) {
		t.Errorf("the entry is dated %s, want the time the retry ended, between %s and the restart at %s", at, c.began, restarted)
	}
}

// A stop signal while a dlq retry-all cut off by the database stopping
// tries to record what it did ends that wait at once, as a supervisor's
// SIGTERM asks, and prints the entry on stderr saying it was stopped:
// waited out, the supervisor's SIGKILL that follows would leave no record
// at all.
func TestSignalEndsTheWaitToRecordTheAuditEntry(t *testing.T) {
	t.Parallel()
	c := cutRetryAll(t)
	pgtest.Eventually(t, time.Minute, "the command trying to record its audit entry", func() bool {
		return strings.Contains(c.stderr.String(), "not yet recorded in the audit log")
	})
	if err := c.process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.exitCode(t); code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, c.stderr.String())
	}
	var unrecorded string
	for line := range strings.Lines(c.stderr.String()) {
		if strings.Contains(line, "could not record this operation in the audit log") {
			unrecorded = line
		}
	}
	var line struct {
		Err   string `json:"err"`
		Entry struct {
			Result struct {
				Retried int `json:"retried"`
			} `json:"result"`
		} `json:"audit_entry"`
	}
	if err := json.Unmarshal([]byte(unrecorded), &line); err != nil {
		t.Fatalf("no unrecorded entry as a JSON line on stderr (%v):\n%s", err, c.stderr.String())
	}
	if !strings.Contains(line.Err, "stopped before the database took it") || line.Entry.Result.Retried != c.saidRetried(t) {
		t.Errorf("unrecorded entry %s; want it given up for the stop, counting the %d retried", unrecorded, c.saidRetried(t))
	}
}

// With --json, a dlq retry-all cut off by the database stopping ends its
// stderr with its error as a JSON line: the database unavailable, exit 1,
// how many messages it retried, as its words say, of the most it would
// have, and its next steps: pgbus health, which says when the database
// answers, then the same command again, which retries the rest.
func TestRetryAllCutSaysHowMuchItDidInJSON(t *testing.T) {
	t.Parallel()
	c := cutRetryAll(t, "--json")
	code := c.exitCode(t)
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	var e struct {
		Error      string `json:"error"`
		Kind       string `json:"kind"`
		ExitCode   int    `json:"exit_code"`
		PartlyDone *struct {
			Done   int   `json:"done"`
			Limit  int   `json:"limit"`
			Unsure []any `json:"unsure"`
		} `json:"partly_done"`
		Next []struct {
			Command string `json:"command"`
			Why     string `json:"why"`
		} `json:"next"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatalf("the last line of stderr is no JSON error: %v\n%s", err, c.stderr.String())
	}
	said := c.saidRetried(t)
	unsure := c.saidUnsure(t)
	if code != 1 || e.ExitCode != 1 || e.Kind != "unavailable" || e.PartlyDone == nil || e.PartlyDone.Done != said || e.PartlyDone.Limit != 100000 || len(e.PartlyDone.Unsure) != unsure {
		t.Errorf("exit %d, error %s; want exit 1, kind unavailable and partly_done counting the %d it said it retried of up to 100000, and the %d it said may have been", code, lines[len(lines)-1], said, unsure)
	}
	// The messages that may or may not have been retried, if any, are
	// looked at in their DLQ and their queue before the same call again.
	if steps := 2 + 2*min(unsure, 1); len(e.Next) != steps || e.Next[0].Command != "pgbus health" || e.Next[0].Why == "" ||
		!regexp.MustCompile(fmt.Sprintf(`^pgbus dlq retry-all --limit %d --queue outage --until \S+ --yes$`, c.left(t))).MatchString(e.Next[steps-1].Command) || !strings.HasPrefix(e.Next[steps-1].Why, "retries the rest") ||
		unsure > 0 && (e.Next[1].Command != "pgbus dlq list --queue outage" || e.Next[2].Command != "pgbus queues outage") {
		t.Errorf("next %+v; want pgbus health, what to look at of any it may have retried, then the same command again with the limit left, up to where its selection ended, which retries the rest", e.Next)
	}
}

// cutRetry is a dlq retry-all cut off by its database stopping.
type cutRetry struct {
	dir    string
	d      db
	n      int
	args   []string
	began  time.Time
	stderr *pgtest.SyncBuffer
	// exited is closed once the command exited, with waitErr its Wait's.
	exited  chan struct{}
	waitErr error
	process *os.Process
}

// cutRetryAll starts dlq retry-all over 2000 dead messages on a cluster of
// the test's own, with the flags of more, and stops the cluster once the
// command retried some of them and before it retried all.
func cutRetryAll(t *testing.T, more ...string) *cutRetry {
	t.Helper()
	return cutRetryAllVia(t, stopServer, more...)
}

// cut is how a test cuts a dlq retry-all off.
type cut int

const (
	// stopServer stops the cluster once the command retried some of the
	// messages.
	stopServer cut = iota
	// restartBouncer restarts PgBouncer (killed, and started again at
	// once) once the command retried some of the messages.
	restartBouncer
	// killBouncerBeforeAny kills PgBouncer while the command's first
	// moves wait, before any committed, ends those moves on the server,
	// and starts PgBouncer again once the command said it stopped.
	killBouncerBeforeAny
)

// cutRetryAllVia is cutRetryAll, cut off as how says: through PgBouncer
// but for stopServer.
func cutRetryAllVia(t *testing.T, how cut, more ...string) *cutRetry {
	t.Helper()
	ctx := pgtest.Context(t)
	dir, cluster, st := pgtest.PrivateStore(t)
	const queue, n = "outage", 2000
	pgtest.CreateQueue(t, st, queue)
	pgtest.DeadLetterN(t, st, queue, n, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	url := cluster.URL()
	var b *bouncertest.Bouncer
	if how != stopServer {
		b = bouncertest.Start(t, url)
		url = b.URL()
	}
	// Hold the retry: a share lock on the queue's table blocks each move
	// into it, so that the cut comes mid-command.
	hold := func() pgx.Tx {
		tx, err := st.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_outage IN SHARE MODE`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	var tx pgx.Tx
	if how == killBouncerBeforeAny {
		tx = hold()
	}
	c := &cutRetry{dir: dir, d: db{url: cluster.URL(), env: []string{"DATABASE_URL=" + cluster.URL()}}, n: n,
		args: append([]string{"dlq", "retry-all", "--queue", queue, "--limit", "100000", "--yes"}, more...), stderr: &pgtest.SyncBuffer{}, exited: make(chan struct{})}

	cmd := exec.Command(binaryFor(c.args), c.args...)
	cmd.Env = append(baseEnv(), "DATABASE_URL="+url)
	cmd.Stderr = c.stderr
	c.began = time.Now().Truncate(time.Microsecond)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.process = cmd.Process
	go func() { c.waitErr = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	if how == killBouncerBeforeAny {
		// The moves wait for the lock on the server: none has committed.
		moves := `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE '%q_outage%'`
		pgtest.Eventually(t, time.Minute, "the first moves to wait for the lock", func() bool {
			var waiting int
			return st.Pool().QueryRow(ctx, moves).Scan(&waiting) == nil && waiting > 0
		})
		b.Kill(t)
		pgtest.Eventually(t, time.Minute, "the command to stop and hold its audit entry", func() bool {
			return strings.Contains(c.stderr.String(), "could not record an operation in the audit log")
		})
		// Ended on the server, the moves under way commit nothing once
		// the lock is gone.
		if _, err := st.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE '%q_outage%'`); err != nil {
			t.Fatal(err)
		}
		pgtest.Eventually(t, time.Minute, "the moves under way to end", func() bool {
			var waiting int
			return st.Pool().QueryRow(ctx, moves).Scan(&waiting) == nil && waiting == 0
		})
		_ = tx.Rollback(context.Background())
		b.StartAgain(t)
		return c
	}
	pgtest.Eventually(t, time.Minute, "the first messages retried", func() bool { live, _, _ := c.counts(t); return live > 0 })
	// Hold the retry partway, so that the server stops mid-command.
	tx = hold()
	var held int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pgmq.q_outage`).Scan(&held); err != nil || held >= n {
		t.Fatalf("the queue holds %d of %d messages when the retry is held (%v); want it held partway", held, n, err)
	}
	if how == restartBouncer {
		b.Restart(t)
	} else if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(context.Background())
	return c
}

// counts are the messages in the queue, those in its DLQ, and the distinct
// payloads in the queue.
func (c *cutRetry) counts(t *testing.T) (live, dead, distinct int) {
	c.d.query(t, `SELECT (SELECT count(*) FROM pgmq.q_outage), (SELECT count(*) FROM pgmq.q_outage_dlq),
		(SELECT count(DISTINCT message) FROM pgmq.q_outage)`, &live, &dead, &distinct)
	return live, dead, distinct
}

// exitCode waits for the command to exit, at most two minutes.
func (c *cutRetry) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-c.exited:
		if exit, ok := c.waitErr.(*exec.ExitError); ok {
			return exit.ExitCode()
		}
		return 0
	case <-time.After(2 * time.Minute):
		t.Fatal("dlq retry-all has not exited two minutes after the database stopped")
	}
	return -1
}

// saidRetried is how many messages the command said it retried before it
// stopped.
func (c *cutRetry) saidRetried(t *testing.T) int {
	t.Helper()
	m := regexp.MustCompile(`stopped after retrying ([\d,]+) of`).FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("stderr does not say how many it retried:\n%s", c.stderr.String())
	}
	said, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return said
}

// saidUnsure is how many messages the command said may or may not have
// been retried, as the connection broke while they were written: 0 when
// it said none.
func (c *cutRetry) saidUnsure(t *testing.T) int {
	t.Helper()
	m := regexp.MustCompile(`([\d,]+)(?: more)? may or may not have been retried`).FindStringSubmatch(c.stderr.String())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return n
}

// left is the limit the command said to run it again with: its own less
// what it said it retried and what may have been.
func (c *cutRetry) left(t *testing.T) int {
	t.Helper()
	return 100000 - c.saidRetried(t) - c.saidUnsure(t)
}

// saysUnavailable reports whether text says the database was out of reach:
// it does not answer (its connections refused or cut), it ended the call's
// session as it shut down (SQLSTATE 57P01), or it takes no connections now
// (shutting down, SQLSTATE 57P03), whichever the stop showed the call
// first.
func saysUnavailable(text string) bool {
	return strings.Contains(text, "does not answer") || strings.Contains(text, "or the server does when it shuts down") || strings.Contains(text, "takes no connections now")
}

// TestRetryAllCutByABouncerRestart: a dlq retry-all through PgBouncer cut
// off by PgBouncer's restart (killed, and started again at once) says how
// far it went and how to do the rest, as one cut off by PostgreSQL's stop
// does, and its audit entry, recorded once PgBouncer is back, counts what
// it retried. The moves under way when PgBouncer died may have committed
// on the server since, so the queue holds at least what it said.
//
// Cut off before it retried any, it says so too: that none was retried,
// that nothing was lost, that the database is out of reach, and to run
// the same command again once it answers; it used to say only that the
// database did not answer, as if it had not started.
func TestRetryAllCutByABouncerRestart(t *testing.T) {
	t.Parallel()
	t.Run("partway", func(t *testing.T) {
		t.Parallel()
		retryAllCutPartwayByABouncerRestart(t)
	})
	t.Run("before any", func(t *testing.T) {
		t.Parallel()
		c := cutRetryAllVia(t, killBouncerBeforeAny)
		code := c.exitCode(t)
		msg := c.stderr.String()
		if code != 1 {
			t.Errorf("exit code %d, want 1; stderr:\n%s", code, msg)
		}
		wants := []string{
			"stopped before retrying any of up to 100,000 dead messages, so none was retried and nothing was lost: they stay in their DLQ",
			"run the same command again once it answers (pgbus health says when): it retries them",
		}
		unsure := c.saidUnsure(t)
		if unsure > 0 {
			// Moves on their way when PgBouncer was killed: whether they
			// reached the server is not known.
			wants = []string{
				"stopped before retrying any of up to 100,000 dead messages for certain: ",
				"the others stay in their DLQ",
				fmt.Sprintf("run the same command again with --limit %d once it answers (pgbus health says when): it retries the rest once you have looked", 100000-unsure),
			}
		}
		said := msg
		if unsure > 0 {
			// Some may have been retried: the rest ends where its
			// selection ended.
			said = withoutUntil(t, msg)
		}
		for _, want := range wants {
			if !strings.Contains(said, want) {
				t.Errorf("stderr does not say %q:\n%s", want, msg)
			}
		}
		if !saysUnavailable(msg) {
			t.Errorf("stderr does not say the database is out of reach:\n%s", msg)
		}
		var n, retried int
		c.d.query(t, `SELECT count(*) OVER (), (result->>'retried')::int FROM pgbus.audit_log WHERE tool = 'dlq_retry' AND NOT pending`, &n, &retried)
		if n != 1 || retried != 0 {
			t.Errorf("%d audit entries of the retry, counting %d retried; want one counting none", n, retried)
		}
		if live, dead, _ := c.counts(t); live > unsure || live+dead != c.n {
			t.Errorf("after PgBouncer was killed: %d in the queue, %d dead; want none retried but the %d that may have been, and %d in all", live, dead, unsure, c.n)
		}
	})
}

// retryAllCutPartwayByABouncerRestart is TestRetryAllCutByABouncerRestart
// of a retry cut off after it retried some messages.
func retryAllCutPartwayByABouncerRestart(t *testing.T) {
	c := cutRetryAllVia(t, restartBouncer)
	code := c.exitCode(t)
	msg := c.stderr.String()
	if code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, msg)
	}
	said, unsure := c.saidRetried(t), c.saidUnsure(t)
	// "which stays retried" when it retried one.
	if want := fmt.Sprintf("run the same command again with --limit %d", c.left(t)); !regexp.MustCompile(`which stays? retried`).MatchString(msg) || !strings.Contains(withoutUntil(t, msg), want) {
		t.Errorf("stderr does not say what stays retried and %q:\n%s", want, msg)
	}
	var n, retried int
	c.d.query(t, `SELECT count(*) OVER (), (result->>'retried')::int FROM pgbus.audit_log WHERE tool = 'dlq_retry' AND NOT pending`, &n, &retried)
	if n != 1 || retried != said {
		t.Errorf("%d audit entries of the retry, counting %d retried; want one counting the %d it said", n, retried, said)
	}
	if live, dead, _ := c.counts(t); live < said || live > said+unsure || live+dead != c.n {
		t.Errorf("after PgBouncer's restart: %d in the queue, %d dead; want the %d it said it retried, and at most the %d it said may have been besides, and %d in all", live, dead, said, unsure, c.n)
	}
}

// sameAgainUntil is the --until that the command doing the rest of a
// stopped retry-all takes: where the stopped one's selection ended.
var sameAgainUntil = regexp.MustCompile(`(run the same command again with(?: --limit \d+)?) --until (\S+)`)

// withoutUntil is msg, which must name the command doing the rest of a
// stopped retry-all with an --until that is a time, without that --until,
// for the words around it.
func withoutUntil(t *testing.T, msg string) string {
	t.Helper()
	m := sameAgainUntil.FindStringSubmatch(msg)
	if m == nil {
		t.Errorf("stderr names no --until for the command that does the rest, which would retry the messages that died since:\n%s", msg)
		return msg
	}
	if _, err := time.Parse(time.RFC3339Nano, m[2]); err != nil {
		t.Errorf("the --until %q of the command that does the rest is no time: %v", m[2], err)
	}
	return sameAgainUntil.ReplaceAllString(msg, "$1")
}
