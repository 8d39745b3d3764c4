//go:build linux || darwin

package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A dlq retry-all cut off by the database stopping exits 1 saying the
// database does not answer, how many messages it retried, which stay
// retried, and to run the same command again once it answers; each dead
// message is then in the queue or in the DLQ, none in both, none lost, and
// the same command run again retries the rest.
func TestRetryAllCutByTheDatabaseStopping(t *testing.T) {
	ctx := pgtest.Context(t)
	dir, err := os.MkdirTemp("", "pgbus-cli-outage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cluster := startPrivateCluster(t, dir)
	st, err := store.Open(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const queue, n = "outage", 2000
	pgtest.CreateQueue(t, st, queue)
	pgtest.DeadLetterN(t, st, queue, n, pgtest.DeadSpec{Kind: "charge", Message: "bank down"})
	d := db{url: cluster.URL(), env: []string{"DATABASE_URL=" + cluster.URL()}}
	counts := func() (live, dead, distinct int) {
		d.query(t, `SELECT (SELECT count(*) FROM pgmq.q_outage), (SELECT count(*) FROM pgmq.q_outage_dlq),
			(SELECT count(DISTINCT message) FROM pgmq.q_outage)`, &live, &dead, &distinct)
		return live, dead, distinct
	}

	args := []string{"dlq", "retry-all", "--queue", queue, "--limit", "100000", "--yes"}
	cmd := exec.Command(binaryFor(args), args...)
	cmd.Env = append(baseEnv(), d.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	pgtest.Eventually(t, time.Minute, "the first messages retried", func() bool { live, _, _ := counts(); return live > 0 })
	// Hold the retry partway: a share lock on the queue's table blocks
	// the next move into it, so that the server stops mid-command.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_outage IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pgmq.q_outage`).Scan(&held); err != nil || held >= n {
		t.Fatalf("the queue holds %d of %d messages when the retry is held (%v); want it held partway", held, n, err)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(context.Background())
	var code int
	select {
	case err := <-exited:
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
	case <-time.After(time.Minute):
		t.Fatal("dlq retry-all has not exited a minute after the database stopped")
	}
	msg := stderr.String()
	if code != 1 {
		t.Errorf("exit code %d, want 1; stderr:\n%s", code, msg)
	}
	for _, want := range []string{"the database does not answer", "which stay retried", "run the same command again once it answers (pgbus health says when): it retries the rest"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q:\n%s", want, msg)
		}
	}
	m := regexp.MustCompile(`stopped after retrying ([\d,]+) of`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("stderr does not say how many it retried:\n%s", msg)
	}
	said, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))

	startPrivateCluster(t, dir)
	if live, dead, distinct := counts(); live != said || live+dead != n || distinct != live {
		t.Errorf("after the outage: %d in the queue (%d distinct), %d dead; want the %d it said it retried, and %d in all", live, distinct, dead, said, n)
	}
	r := pgbus(t, d.env, args...)
	if live, dead, distinct := counts(); r.code != 0 || live != n || dead != 0 || distinct != n {
		t.Errorf("the same command again: exit %d, %d in the queue (%d distinct), %d dead; want all %d retried once\n%s", r.code, live, distinct, dead, n, r.stderr)
	}
}

// startPrivateCluster starts (or starts again) a cluster of the test's own
// in dir, never the shared one, since the test stops it.
func startPrivateCluster(t *testing.T, dir string) *embedpg.Cluster {
	t.Helper()
	c, err := embedpg.Start(context.Background(), embedpg.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}
