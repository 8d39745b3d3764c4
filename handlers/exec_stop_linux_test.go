package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// detachScript starts a child in a session of its own that holds the
// command's output, waits until it has detached, and exits with the code
// it is given. The child writes its pid to child once detached, and the
// file gone once the command was waited for (its pid is gone); it then
// holds the output for half a minute.
const detachScript = `parent=$$
setsid /bin/sh -c 'echo $$ > "$1/child.tmp" && mv "$1/child.tmp" "$1/child"
while kill -0 "$2" 2>/dev/null; do sleep 0.02; done
: > "$1/gone"
exec sleep 30' sh "$OUT_DIR" "$parent" &
while [ ! -e "$OUT_DIR/child" ]; do sleep 0.01; done
echo "done with $1" >&2
exit $1
`

// A command that exited on its own before the worker stopped gets the
// outcome of its exit code, though what it left running outside its
// group still held its output when the stop came: it ran to its end, and
// giving its job back would run it again.
func TestExecHandlerExitBeforeStopCounts(t *testing.T) {
	t.Parallel()
	for i, code := range []int{0, 3} {
		dir := t.TempDir()
		script := writeScript(t, dir, "detach.sh", detachScript)
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec, Timeout: handlers.Duration(time.Minute),
			Options: map[string]any{"command": []any{"/bin/sh", script, strconv.Itoa(code)}, "env": map[string]any{"OUT_DIR": dir}}})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- fn(ctx, execJob(int64(i+1), `{}`)) }()
		pgtest.Eventually(t, time.Minute, "the command to be waited for", func() bool {
			_, err := os.Stat(filepath.Join(dir, "gone"))
			return err == nil
		})
		if b, err := os.ReadFile(filepath.Join(dir, "child")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
		}
		cancel() // the worker stops while the child holds the output
		err := <-errc
		var ee *handlers.ExitError
		switch {
		case code == 0 && err != nil:
			t.Errorf("exit 0 before the stop: %v; want success", err)
		case code != 0 && (!errors.As(err, &ee) || ee.ExitCode != code || ee.Output != fmt.Sprintf("done with %d", code)):
			t.Errorf("exit %d before the stop: %v (%T); want an ExitError with its code and stderr", code, err, err)
		}
	}
}

// The way the documentation gives to start a program that outlives its
// job, setsid -w with a shell that starts it in the background, has it
// out of the command's group before the command exits, every time: the
// command's leftovers, killed once it exits, do not include it.
func TestExecHandlerDetachedProgramOutlivesItsJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const line = `setsid -w /bin/sh -c 'sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$OUT_DIR/$PGBUS_MSG_ID.pid"'; exit 0`
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": []any{"/bin/sh", "-c", line}, "env": map[string]any{"OUT_DIR": dir}}})
	for id := int64(1); id <= 8; id++ {
		if err := fn(context.Background(), execJob(id, `{}`)); err != nil {
			t.Fatalf("job %d: %v", id, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.pid", id)))
		if err != nil {
			t.Fatalf("job %d wrote no pid: %v", id, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("job %d: pid %q", id, b)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if !alive(pid) {
			t.Errorf("job %d: the program it detached (pid %d) was killed with the command's leftovers", id, pid)
		}
	}
}
