//go:build unix && !linux

package handlers

import "syscall"

// dieWithWorker does nothing where the system cannot tie a child's life to
// its parent's: a worker killed by SIGKILL leaves its command running.
func dieWithWorker(*syscall.SysProcAttr) (release func()) { return func() {} }
