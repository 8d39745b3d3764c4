//go:build unix

package exectest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the user and group id of user nobody, the user without
// privileges that a test running as root runs a process as.
const Nobody = 65534

// RunAsNobody runs the running test binary again as user nobody, with args
// and env (PATH is added, and HOME and TMPDIR set to a directory nobody
// owns, removed at the end of the test), and returns what it printed and
// how it exited. Only root can start a process as another user, so it
// fails the test unless it runs as root: a test that needs another user
// checks its own rights as any user but root, and through RunAsNobody as
// root, so that it runs in both.
func RunAsNobody(t testing.TB, env []string, args ...string) ([]byte, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("RunAsNobody: only root can run a process as another user")
	}
	home, err := os.MkdirTemp("", "nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.Chown(home, Nobody, Nobody); err != nil {
		t.Fatal(err)
	}
	// A copy where nobody may run it: the test binary's own directory is
	// root's own.
	exe := filepath.Join(home, filepath.Base(os.Args[0]))
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	WriteFile(t, exe, string(b), 0o755)
	cmd := exec.Command(exe, args...)
	cmd.Dir = home
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	return cmd.CombinedOutput()
}
