//go:build unix

package chaos_test

import (
	"os"
	"syscall"
)

// ownGroup starts a process in a process group of its own, so that a
// Ctrl-C meant for the test does not reach it.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// asOwnerOf runs a command as the owner of path (the server user: pg_ctl
// refuses root) in a process group of its own, so that signals meant for
// the test do not reach the server it starts.
func asOwnerOf(path string) (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Setpgid: true}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && os.Geteuid() == 0 && st.Uid != 0 {
		a.Credential = &syscall.Credential{Uid: st.Uid, Gid: st.Gid}
	}
	return a, nil
}
