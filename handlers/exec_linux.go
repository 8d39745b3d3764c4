package handlers

import (
	"runtime"
	"syscall"
)

// dieWithWorker has Linux kill the command (SIGKILL) when the worker dies,
// even by SIGKILL, which runs no code that could kill it: without this,
// the command ran on beside its job's next attempt. What the command
// started in turn is not reached, unless it too asks for it.
//
// Linux sends the signal when the thread that started the command ends,
// not the process: the goroutine is locked to its thread until release,
// called once the command was waited for, so that Go neither runs
// another goroutine there, which could end the thread (a goroutine that
// exits locked to its thread ends it), nor ends it itself.
func dieWithWorker(attr *syscall.SysProcAttr) (release func()) {
	attr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
