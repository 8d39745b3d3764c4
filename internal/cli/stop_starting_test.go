package cli_test

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// SIGTERM while a command that runs until stopped (pgbus work, serve and
// dashboard) still waits for its database is a stop like any other: exit 0,
// and no "context canceled" or "run the command again" for the supervisor
// to report.
func TestStoppedWhileStarting(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"work", "--queue", "orders", "--handler", "demo"},
		{"serve", "--transport", "http", "--addr", "127.0.0.1:0"},
		{"dashboard", "--addr", "127.0.0.1:0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			addr := pgtest.RefusingPort(t).Addr() // nothing listens there
			cmd := exec.Command(binary, args...)
			cmd.Env = append(baseEnv(), "DATABASE_URL=postgres://nobody@"+addr+"/none?sslmode=disable")
			var stderr pgtest.SyncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgtest.Eventually(t, time.Minute, args[0]+" to wait for its database", func() bool {
				return strings.Contains(stderr.String(), "not reachable yet")
			})
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if errors.As(err, &exit) || err != nil {
				t.Fatalf("%s stopped while starting: %v\nstderr:\n%s", args[0], err, stderr.String())
			}
			if strings.Contains(stderr.String(), "context canceled") || strings.Contains(stderr.String(), "run the command again") {
				t.Errorf("the stop was reported as a failure:\n%s", stderr.String())
			}
		})
	}
}
