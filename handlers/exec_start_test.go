//go:build unix

package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/exectest"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// A command file the system cannot execute is a configuration error no
// retry fixes: a script without a #! line (exec format error) and one that
// lost its execute permission after the worker started (permission denied)
// dead-letter their message at the first attempt, with an error saying
// what to fix, instead of being retried until they die of max retries.
func TestExecCommandThatCannotRunIsDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	dir := t.TempDir()
	// Executable, but no #! line: Go's exec, unlike a shell, does not run
	// it with /bin/sh, and the kernel refuses it (ENOEXEC).
	noShebang := writeScript(t, dir, "no-shebang.sh", "echo never runs\nexit 0\n")
	if err := os.Chmod(noShebang, 0o755); err != nil {
		t.Fatal(err)
	}
	// Executable when the handler is built, as Build requires; its
	// execute bits are taken away afterwards (EACCES, even for root).
	lostX := writeScript(t, dir, "lost-x.sh", "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(lostX, 0o755); err != nil {
		t.Fatal(err)
	}

	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 3 })
	c := quickClient(t, s, q, 2)
	for kind, path := range map[string]string{"no-shebang": noShebang, "lost-x": lostX} {
		breaker := randomName("exec_start")
		forgetBreaker(t, s, breaker)
		fn, opts := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
			Options: map[string]any{"command": []any{path}, "breaker": map[string]any{"name": breaker}}})
		c.Handle(kind, fn, opts)
	}
	if err := os.Chmod(lostX, 0o644); err != nil {
		t.Fatal(err)
	}
	pgtest.Start(t, c)
	ids := map[string]int64{}
	for _, kind := range []string{"no-shebang", "lost-x"} {
		ids[kind] = pgtest.Send(t, c, q, map[string]string{"case": kind}, engine.SendOptions{Kind: kind})
	}
	pgtest.Eventually(t, 30*time.Second, "both messages to settle", func() bool { return pgtest.Live(t, s, q) == 0 })

	blocks, _ := deadBlocksOf(t, s, q)
	for kind, want := range map[string][]string{
		"no-shebang": {noShebang, "exec format error", "add a #! line", "#!/bin/sh"},
		"lost-x":     {lostX, "permission denied", "chmod +x"},
	} {
		checkDeadBlock(t, blocks[ids[kind]], kind, store.ReasonNonRetryable, 1, handlers.ClassExecStart)
		msg, _ := blocks[ids[kind]]["error_message"].(string)
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: message %q; want it to say %q", kind, msg, w)
			}
		}
	}
}

// A program that is gone when a job runs (Build found it when the worker
// started) is most likely being replaced by a deploy: the attempt is
// retried, as before, and the message says what is missing. So is a
// missing interpreter of a #! line, which Build does not check.
func TestExecMissingProgramIsRetried(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gone := writeScript(t, dir, "gone.sh", "#!/bin/sh\nexit 0\n")
	interp := writeScript(t, dir, "interp.sh", "#!/nonexistent/bin/interpreter\nexit 0\n")
	for _, p := range []string{gone, interp} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"program removed", gone, []string{gone, "does not exist", "the path"}},
		{"interpreter missing", interp, []string{interp, "#! line", "does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": []any{tc.path}}})
			if tc.path == gone {
				if err := os.Remove(gone); err != nil {
					t.Fatal(err)
				}
			}
			err := fn(context.Background(), execJob(1, `{}`))
			var se *handlers.StartError
			if _, plain := err.(*handlers.StartError); !plain || !errors.As(err, &se) || !errors.Is(err, syscall.ENOENT) ||
				engine.ErrorClass(err) != handlers.ClassExecStart {
				t.Fatalf("error %v (%T); want a plain (retryable) StartError of ENOENT", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q; want it to say %q", err.Error(), w)
				}
			}
		})
	}
}

// The directory the command runs in, removed or made unreadable after
// Build checked it, is named as the cause: the system reports it as the
// program's error.
func TestExecStartErrorNamesTheDirectory(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": []any{"/bin/sh", "-c", "exit 0"}, "dir": work}})
	if err := os.Remove(work); err != nil {
		t.Fatal(err)
	}
	err := fn(context.Background(), execJob(1, `{}`))
	if _, plain := err.(*handlers.StartError); !plain || !strings.Contains(err.Error(), fmt.Sprintf("directory %q", work)) ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("error %v (%T); want a plain (retryable) StartError naming the missing directory", err, err)
	}
}

// Build refuses a program that has an execute bit, but not one for the
// user the worker runs as (here another user's), since every job would
// find it so: permission denied. Root may execute a file with any execute
// bit, so the test needs another user.
func TestExecBuildChecksExecuteForThisUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		// Root may execute a file with any execute bit set: the test runs
		// again as a user whose rights the bits decide.
		out, err := exectest.RunAsNobody(t, nil, "-test.run=^TestExecBuildChecksExecuteForThisUser$", "-test.v")
		if err != nil || !strings.Contains(string(out), "--- PASS: TestExecBuildChecksExecuteForThisUser") {
			t.Fatalf("as user nobody: %v\n%s", err, out)
		}
		return
	}
	p := writeScript(t, t.TempDir(), "others-only.sh", "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(p, 0o601); err != nil { // rw for its owner, x for others only
		t.Fatal(err)
	}
	_, _, err := handlers.Build(handlers.Spec{Type: handlers.TypeExec, Options: map[string]any{"command": []any{p}}})
	if err == nil || !strings.HasPrefix(err.Error(), "handler type exec: command:") || !strings.Contains(err.Error(), "not executable by this user") {
		t.Errorf("error %v; want command: not executable by this user", err)
	}
}
