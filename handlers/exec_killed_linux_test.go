package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// envKilledDir tells the test binary to act as the worker of
// TestExecCommandDiesWithAKilledWorker, its command writing its pid there.
const envKilledDir = "PGBUS_TEST_EXEC_KILLED_DIR"

func init() { helperProcesses[envKilledDir] = killedWorker }

// killedWorker is the worker a test kills: it runs an exec job that sleeps
// until killed.
func killedWorker(dir string) int {
	fn, _, err := handlers.Build(handlers.Spec{Type: handlers.TypeExec, Timeout: handlers.Duration(10 * time.Minute),
		Options: map[string]any{"command": []any{"/bin/sh", "-c", "echo $$ > '" + filepath.Join(dir, "pid") + "'; exec sleep 600"}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "killed worker:", err)
		return 1
	}
	job := &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: json.RawMessage(`{}`), IdempotencyKey: "q:1"}
	_ = fn(context.Background(), job)
	return 0
}

// A worker process killed with SIGKILL, which runs no code of its own to
// stop its jobs, takes its exec jobs' commands with it on Linux, where they
// ran on for as long as they liked beside the next attempt of their job.
func TestExecCommandDiesWithAKilledWorker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	worker := exec.Command(os.Args[0])
	worker.Env = append(os.Environ(), envKilledDir+"="+dir)
	var out pgtest.SyncBuffer
	worker.Stdout, worker.Stderr = &out, &out
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })
	var pid int
	pgtest.Eventually(t, 30*time.Second, "the command to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
		return pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("the command (pid %d) is not running; the worker said:\n%s", pid, out.String())
	}
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	pgtest.Eventually(t, 20*time.Second, "the command to die with its worker", func() bool { return !alive(pid) })
}

// alive reports whether process pid runs: it exists and is no zombie
// waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
