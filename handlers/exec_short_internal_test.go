//go:build unix

package handlers

import (
	"context"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A command that could not start because the worker had no file
// descriptor or process left (EMFILE, ENFILE, EAGAIN, ENOMEM) is the
// worker's lack, not the job's: on a queue allowing one attempt, the job
// goes back without using it, again and again, and runs once the worker
// can start commands, instead of being dead-lettered as good jobs were;
// the worker's log says why, and what to raise.
func TestWorkerShortOfResourcesUsesNoAttempt(t *testing.T) {
	t.Parallel()
	h, _, err := newExecHandler(Spec{Type: TypeExec, Options: map[string]any{"command": []any{"/bin/sh", "-c", "cat >/dev/null"}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	s := pgtest.Store(t)
	q := pgtest.NewFastQueue(t, s, "hq", func(set *store.QueueSettings) { set.MaxRetries = 1 })
	var logs pgtest.SyncBuffer
	c := pgtest.NewClient(t, s, q, func(cfg *engine.Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	lacks := []syscall.Errno{syscall.EMFILE, syscall.EAGAIN}
	var calls atomic.Int32
	c.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		if n := int(calls.Add(1)); n <= len(lacks) {
			return h.startError(&fs.PathError{Op: "fork/exec", Path: h.path, Err: lacks[n-1]})
		}
		return h.handle(ctx, job)
	})
	pgtest.Start(t, c)
	id := pgtest.Send(t, c, q, map[string]int{"n": 1}, engine.SendOptions{})
	pgtest.Eventually(t, time.Minute, "the job to be archived or dead-lettered", func() bool {
		return pgtest.Archived(t, s, q) == 1 || pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`) > 0
	})
	if pgtest.Archived(t, s, q) != 1 || calls.Load() != 3 {
		t.Fatalf("after %d calls, %d archived; want the job run on its third call, without using its one attempt", calls.Load(), pgtest.Archived(t, s, q))
	}
	if n := pgtest.Int(t, s, `SELECT read_ct FROM pgmq."a_`+q+`" WHERE msg_id = $1`, id); n != 1 {
		t.Errorf("archived read_ct = %d, want 1: the calls that could not start used no attempt", n)
	}
	if got := logs.String(); !strings.Contains(got, "no file descriptor left") || !strings.Contains(got, "ulimit -n") {
		t.Errorf("the worker's log does not say what it lacked and what to raise:\n%s", got)
	}
}
