//go:build unix

package handlers

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup makes the command the leader of a new process group.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group that p leads: p and everything it
// started that stayed in its group.
func killGroup(p *os.Process) error {
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// killLeftovers kills what is left of the group of a leader that exited
// but whose output was still held open. A pid is not reused while a
// process still has it as its group id, so while members are left the
// signal reaches only them; an empty group gets nothing (ESRCH).
func killLeftovers(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
