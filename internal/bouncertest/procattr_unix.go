//go:build unix

package bouncertest

import (
	"os"
	"syscall"
)

// ownGroup starts a process in a process group of its own.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// ownerUID returns the user id that owns the file fi describes.
func ownerUID(fi os.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
