//go:build !unix

package bouncertest

import (
	"os"
	"syscall"
)

// ownGroup returns no attributes: process groups are a Unix notion, and
// PgBouncer runs here only on Unix.
func ownGroup() *syscall.SysProcAttr { return nil }

// ownerUID reports no owner: file owners by user id are a Unix notion.
func ownerUID(os.FileInfo) (uint32, bool) { return 0, false }
