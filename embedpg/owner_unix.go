//go:build linux || darwin

package embedpg

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser is the account initdb and postgres run as: ourselves, or, when
// we are root (which PostgreSQL refuses), an unprivileged system user.
type serverUser struct {
	name     string
	uid, gid int
	switchTo bool // we are root: run the server as uid/gid and hand it the files
}

func currentServerUser() (serverUser, error) {
	if os.Geteuid() != 0 {
		return serverUser{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	if u, err := lookupServerUser(); err == nil {
		return u, nil
	}
	// Another process may be creating the user at the same moment, so a
	// failed useradd is only an error if the user is still missing after it.
	out, cerr := exec.Command("useradd", "--system", "--no-create-home",
		"--shell", "/usr/sbin/nologin", superuser).CombinedOutput()
	u, err := lookupServerUser()
	if err != nil {
		return u, newError("", cerr, func(t Terms) string {
			return fmt.Sprintf("embedpg: PostgreSQL does not run as root and neither user postgres nor %s exists; "+
				"creating %s failed (%v: %s); create one (useradd --system %s) or run %s as a normal user",
				superuser, superuser, cerr, lastLines(out, 3), superuser, t.Program)
		})
	}
	return u, nil
}

func lookupServerUser() (serverUser, error) {
	var err error
	for _, name := range []string{"postgres", superuser} {
		var u *user.User
		if u, err = user.Lookup(name); err != nil {
			continue
		}
		uid, uerr := strconv.Atoi(u.Uid)
		gid, gerr := strconv.Atoi(u.Gid)
		if uerr == nil && gerr == nil && uid != 0 {
			return serverUser{name: name, uid: uid, gid: gid, switchTo: true}, nil
		}
	}
	return serverUser{}, err
}

func (u serverUser) String() string {
	if u.name == "" {
		return strconv.Itoa(u.uid)
	}
	return u.name
}

// procAttr returns the process attributes for initdb (own=false) and postgres
// (own=true). The server gets its own process group so that a Ctrl-C on the
// terminal reaches pgbus, which decides whether to stop it, and not the
// server shared with other processes.
func (u serverUser) procAttr(ownGroup bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: ownGroup}
	if u.switchTo {
		// Groups empty with NoSetGroups false drops root's supplementary groups.
		a.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid)}
	}
	return a
}

func (u serverUser) chown(path string) error {
	if !u.switchTo {
		return nil
	}
	return os.Lchown(path, u.uid, u.gid)
}

// chownTree hands root and everything below it to the server user, touching
// only entries that differ so a restart of a large cluster stays cheap.
func (u serverUser) chownTree(root string) error {
	if !u.switchTo {
		return nil
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == u.uid && int(st.Gid) == u.gid {
			return nil
		}
		return os.Lchown(p, u.uid, u.gid)
	})
}

// checkReachable fails when the server user cannot traverse a parent of dir:
// postgres would then fail with a bare "permission denied" much later.
func (u serverUser) checkReachable(dir string) error {
	if !u.switchTo {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("embedpg: checking %s: %w", p, err)
		}
		if !u.canSearch(st) {
			return newError("DataDir", nil, func(t Terms) string {
				return fmt.Sprintf("embedpg: PostgreSQL runs as user %s, which cannot enter %s (mode %v) on the way to %s; "+
					"choose a data directory it can reach (%s, e.g. under /var/lib) or run %s as a normal user",
					u, p, st.Mode().Perm(), dir, t.DataDir, t.Program)
			})
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canSearch applies the Unix permission rule: owner bits if the user owns
// the directory, else group bits for its (only) group, else other bits.
func (u serverUser) canSearch(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := st.Mode().Perm()
	switch {
	case int(sys.Uid) == u.uid:
		return perm&0o100 != 0
	case int(sys.Gid) == u.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
