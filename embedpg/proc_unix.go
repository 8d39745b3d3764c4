//go:build linux || darwin

package embedpg

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const pollInterval = 25 * time.Millisecond

// lockFD is a raw descriptor holding a flock. Unlike *os.File it has no
// finalizer: a caller that drops the *Cluster but keeps using its URL must
// not lose its share of the server to a garbage collection.
type lockFD int

func openLock(path string, u serverUser) (lockFD, error) {
	// O_CLOEXEC keeps the descriptor (and so the lock) out of postgres: the
	// lock must die with the pgbus process, not live on in the server.
	// O_NOFOLLOW: as root, a link the server's user planted in its directory
	// would have us create the file it names anywhere.
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := u.chown(path); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return lockFD(fd), nil
}

// lock opens path and takes flock(how), polling with LOCK_NB so that ctx can
// end the wait.
func lock(ctx context.Context, path string, how int, u serverUser) (lockFD, error) {
	fd, err := openLock(path, u)
	if err != nil {
		return -1, err
	}
	for {
		ok, err := fd.try(how)
		if ok {
			return fd, nil
		}
		if err == nil {
			err = sleepCtx(ctx, pollInterval)
		}
		if err != nil {
			fd.close()
			return -1, err
		}
	}
}

// try takes flock(how) without blocking and reports whether it got it.
func (fd lockFD) try(how int) (bool, error) {
	for {
		err := syscall.Flock(int(fd), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		default:
			return false, &os.PathError{Op: "flock", Path: "fd " + strconv.Itoa(int(fd)), Err: err}
		}
	}
}

func (fd lockFD) close() {
	if fd >= 0 {
		_ = syscall.Close(int(fd))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// readPID returns the postmaster pid from pgdata/postmaster.pid and whether
// the file exists. An unreadable or half-written file yields pid 0, which
// counts as not alive.
func readPID(pgdata string) (pid int, found bool) {
	pid, _, found = readPIDFile(pgdata)
	return pid, found
}

// readPIDFile also returns the server status the postmaster records in the
// file's eighth line (PostgreSQL 10+): "starting", "ready", "stopping", ...
func readPIDFile(pgdata string) (pid int, status string, found bool) {
	lines, found := pidFileLines(pgdata)
	if len(lines) > 0 {
		pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	}
	if len(lines) > 7 {
		status = strings.TrimSpace(lines[7])
	}
	return pid, status, found
}

// pidFileLines returns the lines of pgdata/postmaster.pid and whether the
// file exists.
func pidFileLines(pgdata string) (lines []string, found bool) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return nil, !errors.Is(err, fs.ErrNotExist)
	}
	return strings.Split(string(b), "\n"), true
}

// socketDirOf returns the Unix socket directory the server of pgdata
// records in the fifth line of postmaster.pid, or "" before it wrote one.
func socketDirOf(pgdata string) string {
	lines, _ := pidFileLines(pgdata)
	if len(lines) > 4 && filepath.IsAbs(strings.TrimSpace(lines[4])) {
		return strings.TrimSpace(lines[4])
	}
	return ""
}

// starting reports whether the server of pgdata says it is still starting
// up: connecting then would only fill the log with "the database system is
// starting up".
func starting(pgdata string) bool {
	_, status, _ := readPIDFile(pgdata)
	return status == "starting"
}

// processAlive reports whether pid runs. A zombie (exited, not yet reaped by
// a parent that may never reap it) counts as gone.
func processAlive(pid int) bool {
	if pid <= 0 { // kill(0) and kill(-1) address groups, not a process
		return false
	}
	if !signalable(pid) || isZombie(pid) {
		return false
	}
	// Reaped between the two looks, its /proc entry was gone and it read
	// as no zombie: a stop just waited for took it for still running.
	return signalable(pid)
}

// signalable reports whether a process of that pid exists, a zombie
// included.
func signalable(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// isPostgresFor reports whether pid is a postgres process (postmaster or
// backend) of the cluster in pgdata: its command line names postgres and it
// works in pgdata (the postmaster chdirs there; children inherit it).
func isPostgresFor(pid int, pgdata string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil {
		// Without /proc (macOS) we cannot tell: say yes, so that callers wait
		// rather than delete the files of a live server.
		_, perr := os.Stat("/proc/self")
		return perr != nil
	}
	if !bytes.Contains(cmdline, []byte("postgres")) {
		return false
	}
	if sameFile(proc+"/cwd", pgdata) {
		return true
	}
	return bytes.Contains(cmdline, []byte("\x00"+pgdata+"\x00"))
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// processesUsing lists live postgres processes of the cluster in pgdata.
func processesUsing(pgdata string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if isPostgresFor(pid, pgdata) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// lockHolders lists the processes holding a flock on path, from
// /proc/locks ("1: FLOCK  ADVISORY  WRITE 1234 fe:00:56789 0 EOF"), where
// the file is named by its device, in hexadecimal, and inode. Without
// /proc (macOS) it finds none.
func lockHolders(path string) []int {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	dev := uint64(sys.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	var pids []int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" { // "->" marks a waiter, not a holder
			continue
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(id[0], 16, 64)
		mnr, err2 := strconv.ParseUint(id[1], 16, 64)
		ino, err3 := strconv.ParseUint(id[2], 10, 64)
		pid, err4 := strconv.Atoi(f[4])
		if err1 == nil && err2 == nil && err3 == nil && err4 == nil &&
			maj == major && mnr == minor && ino == uint64(sys.Ino) {
			pids = append(pids, pid)
		}
	}
	return pids
}
