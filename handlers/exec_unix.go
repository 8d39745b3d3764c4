//go:build unix

package handlers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup makes the command the leader of a new process group
// and, where the system can, ties its life to the worker's (dieWithWorker);
// release is called once the command was waited for.
func ownProcessGroup(cmd *exec.Cmd) (release func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return dieWithWorker(cmd.SysProcAttr)
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

// killLeftovers kills what is left of the group of a leader that exited.
// A pid is not reused while a
// process still has it as its group id, so while members are left the
// signal reaches only them; an empty group gets nothing (ESRCH).
func killLeftovers(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// exitedItself reports whether the command exited, with an exit code of
// its own, rather than being killed by a signal.
func exitedItself(state *os.ProcessState) bool {
	if state == nil {
		return false
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	return ok && ws.Exited()
}

// executable reports whether this process may execute the file at path
// (or search the directory): its execute bits for this user, the
// directories above it, and (on Linux) a filesystem mounted noexec.
func executable(path string) bool {
	const xOK = 1 // X_OK
	return syscall.Access(path, xOK) == nil
}

// startProblem says what kept the program at path from starting in dir
// (dir empty: the worker's), for the error that reports it, and whether
// it is permanent: the system cannot execute the program as it is, so no
// retry can start it. The system reports a missing or forbidden dir, or
// interpreter of a #! line, as the program's error.
func startProblem(err error, path, dir string) (problem string, permanent bool) {
	const retried = "retried, as a deploy may be replacing it"
	interp := shebang(path)
	switch {
	case errors.Is(err, syscall.ENOEXEC):
		if interp != "" {
			return fmt.Sprintf("the interpreter its #! line names, %s, is not a program this system can run (or the #! line is too long): fix the #! line of %s; no retry can fix this", interp, path), true
		}
		return fmt.Sprintf("%s is neither a script starting with a #! line nor a binary for this system: add a #! line naming its interpreter, such as #!/bin/sh, as its first line, or run it through one (command: [/bin/sh, %s, ...]); no retry can fix this", path, path), true
	case errors.Is(err, syscall.EACCES):
		switch {
		case !executable(path):
			return fmt.Sprintf("%s is not executable by this user (%s): chmod +x it, or check that its filesystem is not mounted noexec; no retry can fix this", path, whoAmI()), true
		case dir != "" && !executable(dir):
			return fmt.Sprintf("this user (%s) may not enter the directory %q (dir): chmod +x it and its parents, or fix dir; no retry can fix this", whoAmI(), dir), true
		case interp != "" && !executable(interp):
			return fmt.Sprintf("the interpreter its #! line names, %s, is not executable by this user (%s): chmod +x it, or fix the #! line of %s; no retry can fix this", interp, whoAmI(), path), true
		}
		return fmt.Sprintf("the system does not let this user (%s) run %s (a security policy such as SELinux or AppArmor?); no retry can fix this", whoAmI(), path), true
	case errors.Is(err, syscall.ENOENT):
		switch {
		case missing(path):
			return fmt.Sprintf("%s does not exist any more (it did when the worker started): install it again, or fix the path in command; %s", path, retried), false
		case dir != "" && missing(dir):
			return fmt.Sprintf("the directory %q (dir) does not exist any more: create it, or fix dir; %s", dir, retried), false
		case interp != "":
			return fmt.Sprintf("the interpreter its #! line names, %s, does not exist: install it, or fix the #! line of %s; %s", interp, path, retried), false
		}
		return fmt.Sprintf("a file it needs does not exist, such as the dynamic loader of a binary built for another system; %s", retried), false
	case errors.Is(err, syscall.ETXTBSY):
		return fmt.Sprintf("%s is open for writing: %s", path, retried), false
	}
	return "", false
}

// workerShort says what the worker lacked to start a command, when that is
// why it did not start: file descriptors, processes or memory, which the
// next attempts lack as well until other commands end or the limits are
// raised.
func workerShort(err error) (string, bool) {
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "this worker has no file descriptor left to start it: raise its limit (ulimit -n, LimitNOFILE=) or lower the queue's concurrency; the job goes back without using an attempt", true
	case errors.Is(err, syscall.EAGAIN):
		return "this worker's user may start no more processes: raise its limit (ulimit -u, LimitNPROC=, a container's pids limit) or lower the queue's concurrency; the job goes back without using an attempt", true
	case errors.Is(err, syscall.ENOMEM):
		return "the system has no memory left to start it: give the worker more, or lower the queue's concurrency; the job goes back without using an attempt", true
	}
	return "", false
}

// missing reports whether nothing is at path.
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// shebang returns the interpreter the #! line of the file at path names,
// or "" when it has none (or cannot be read).
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256) // what Linux reads of it
	n, _ := io.ReadFull(f, head)
	line, ok := bytes.CutPrefix(head[:n], []byte("#!"))
	if !ok {
		return ""
	}
	line, _, _ = bytes.Cut(line, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return ""
	}
	return string(fields[0])
}
