//go:build !unix

package handlers

import (
	"os"
	"os/exec"
)

// ownProcessGroup does nothing where there are no Unix process groups.
func ownProcessGroup(*exec.Cmd) (release func()) { return func() {} }

// killGroup kills the process itself where there are no process groups.
func killGroup(p *os.Process) error { return p.Kill() }

// killLeftovers cannot find the leftovers without process groups.
func killLeftovers(int) {}

// exitedItself cannot tell an exit from a kill (which ends the process
// with exit code 1): a command pgbus killed counts as killed, whatever
// its exit.
func exitedItself(*os.ProcessState) bool { return false }

// executable leaves the check to the execute bits Build looked at.
func executable(string) bool { return true }

// startProblem cannot tell why a program did not start: every such
// failure is retried.
func startProblem(error, string, string) (string, bool) { return "", false }

// workerShort cannot tell what the worker lacked where there are no Unix
// error numbers: every such failure is retried.
func workerShort(error) (string, bool) { return "", false }
