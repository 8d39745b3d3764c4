//go:build !unix

package chaos_test

import "syscall"

// ownGroup returns no attributes: process groups are a Unix notion, and
// the soak runs its cluster only on Unix.
func ownGroup() *syscall.SysProcAttr { return nil }

// asOwnerOf returns no attributes: running as another user by id is a Unix
// notion.
func asOwnerOf(string) (*syscall.SysProcAttr, error) { return nil, nil }
