//go:build linux

package embedpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A server that dies under a process using it (the out-of-memory killer, a
// kill by hand) is started again by that process, with its data and on the
// socket its URL names: a pgbus serve up for days does not fail from then
// on until someone restarts it.
func TestServerKilledUnderClusterIsStartedAgain(t *testing.T) {
	old := watchInterval
	watchInterval = 20 * time.Millisecond
	t.Cleanup(func() { watchInterval = old })
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	pid := serverPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var newPID int
	waitFor(t, "the server to be started again", func() bool {
		newPID, _ = readPID(filepath.Join(dir, "pgdata"))
		return newPID != pid && processAlive(newPID) && c.ping(context.Background()) == nil
	})
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row after the server was started again = %q, want kept", got)
	}
	stop(t, c)
	assertStopped(t, dir, newPID)
}

// A server gone with its whole data directory (removed by mistake) is not
// started again on a new empty cluster, and the error says why.
func TestGoneDataDirNotRecreated(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	c.stopWatch()
	pid := serverPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "killed postmaster to go", func() bool { return !processAlive(pid) })
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	err := c.revive(context.Background())
	if !errors.Is(err, errClusterGone) || !strings.Contains(err.Error(), "restore the directory") {
		t.Errorf("revive: %v, want an error saying the cluster is gone and what to do", err)
	}
	checkGoTerms(t, err, "")
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("revive made %s again", dir)
	}
}

// shortWatch makes the watch look every 20ms and wait at most maxWait
// between tries to start a server that could not be started again.
func shortWatch(t *testing.T, maxWait time.Duration) {
	oldEvery, oldMax := watchInterval, maxReviveWait
	watchInterval, maxReviveWait = 20*time.Millisecond, maxWait
	t.Cleanup(func() { watchInterval, maxReviveWait = oldEvery, oldMax })
}

// logRecorder is a slog.Handler keeping what a Cluster logs, for tests to
// assert; it also writes it to the test's output.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
	text    slog.Handler
	// onRecord, when set, is called with each record once kept, in the
	// goroutine that logs it, which it may hold up.
	onRecord func(slog.Record)
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.records = append(r.records, rec.Clone())
	r.mu.Unlock()
	err := r.text.Handle(ctx, rec)
	if r.onRecord != nil {
		r.onRecord(rec)
	}
	return err
}

// WithAttrs drops the attributes: the tests look at messages and the
// attributes of each record.
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// find returns the records at level whose message holds msg.
func (r *logRecorder) find(level slog.Level, msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(r.records), func(rec slog.Record) bool {
		return rec.Level != level || !strings.Contains(rec.Message, msg)
	})
}

// attr returns the value of rec's attribute key as a string.
func attr(rec slog.Record, key string) string {
	var v string
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// startLogged starts a Cluster on dir whose log the returned recorder keeps.
func startLogged(t *testing.T, dir string) (*Cluster, *logRecorder) {
	t.Helper()
	rec := newLogRecorder(t)
	return startRecorded(t, dir, rec), rec
}

// newLogRecorder returns a recorder writing to the test's output.
func newLogRecorder(t *testing.T) *logRecorder {
	return &logRecorder{text: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})}
}

// startRecorded starts a Cluster on dir whose log rec keeps.
func startRecorded(t *testing.T, dir string, rec *logRecorder) *Cluster {
	t.Helper()
	o := opts(t, dir)
	o.Logger = slog.New(rec)
	c, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// A data directory deleted under a running pgbus (moved away here) stays
// gone until somebody acts: the watch tries to start the server again less
// and less often, logs the failure as an error once, saying what to do,
// and at debug level after that; once the directory is back, the server
// runs again and the log says so.
func TestGoneDataDirBacksOff(t *testing.T) {
	shortWatch(t, 160*time.Millisecond)
	dir := tempDataDir(t, "ep-")
	c, rec := startLogged(t, dir)
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	pid := serverPID(t, dir)
	// Moved first: the server gone with its directory in place would be
	// started again, as it is when killed.
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "killed postmaster to go", func() bool { return !processAlive(pid) })
	const tries = 6
	waitFor(t, "tries to start the server again", func() bool {
		return len(rec.find(slog.LevelError, "could not be started again"))+
			len(rec.find(slog.LevelDebug, "could not be started again")) >= tries
	})
	errs := rec.find(slog.LevelError, "could not be started again")
	if len(errs) != 1 {
		t.Fatalf("%d errors logged for one data directory gone, want 1", len(errs))
	}
	for _, want := range []string{"deleted or moved", "restore the directory", "stop this program and start it again"} {
		if e := attr(errs[0], "err"); !strings.Contains(e, want) {
			t.Errorf("error logged %q does not say %q", e, want)
		}
	}
	var waits []string
	for _, r := range append(errs, rec.find(slog.LevelDebug, "could not be started again")...)[:tries] {
		waits = append(waits, attr(r, "next_try_in"))
	}
	if want := []string{"40ms", "80ms", "160ms", "160ms", "160ms", "160ms"}; !slices.Equal(waits, want) {
		t.Errorf("waits between tries %v, want %v: doubling up to the bound", waits, want)
	}

	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to be started again", func() bool { return c.ping(context.Background()) == nil })
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row after the directory came back = %q, want kept", got)
	}
	waitFor(t, "the log to say the server runs again", func() bool {
		return len(rec.find(slog.LevelInfo, "runs again")) == 1
	})
}

// A server whose Unix socket was deleted, as a cleaner of temporary files
// does on a machine up for long, runs on but takes no new connection: the
// watch restarts it, which makes the socket again, and says why. With a long
// data directory the socket has a directory of its own under the temporary
// directory, which such a cleaner removes whole.
func TestDeletedSocketIsMadeAgain(t *testing.T) {
	for _, tc := range []struct {
		name, pattern string
		remove        func(sockDir string) error
	}{
		{"socket", "ep-", func(d string) error { return os.Remove(filepath.Join(d, socketName)) }},
		{"socket directory", "ep-" + strings.Repeat("x", 100) + "-", os.RemoveAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shortWatch(t, maxReviveWait)
			dir := tempDataDir(t, tc.pattern)
			c, rec := startLogged(t, dir)
			exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
			pid := serverPID(t, dir)
			if err := tc.remove(c.sockDir); err != nil {
				t.Fatal(err)
			}
			var newPID int
			waitFor(t, "the server to take connections again", func() bool {
				newPID, _ = readPID(filepath.Join(dir, "pgdata"))
				return c.ping(context.Background()) == nil
			})
			if newPID == pid {
				t.Errorf("the server (pid %d) was not restarted", pid)
			}
			if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
				t.Errorf("row after the restart = %q, want kept", got)
			}
			if len(rec.find(slog.LevelWarn, "socket of embedded PostgreSQL was deleted")) != 1 {
				t.Errorf("the log does not say once that the server restarts because its socket was deleted")
			}
			stop(t, c)
			assertStopped(t, dir, newPID)
		})
	}
}

// A server shut down by hand while pgbus uses it, as pg_ctl stop does, is
// started again, since the pgbus processes using it need it; the log says
// so, and how to stop it for good.
func TestStoppedServerComesBackSayingWhy(t *testing.T) {
	shortWatch(t, maxReviveWait)
	dir := tempDataDir(t, "ep-")
	c, rec := startLogged(t, dir)
	pid := serverPID(t, dir)
	// What pg_ctl stop sends (a fast shutdown); pg_ctl itself refuses root.
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var newPID int
	waitFor(t, "the server to be started again", func() bool {
		newPID, _ = readPID(filepath.Join(dir, "pgdata"))
		return newPID != pid && c.ping(context.Background()) == nil
	})
	said := rec.find(slog.LevelWarn, "was shut down")
	if len(said) != 1 {
		t.Fatalf("%d warnings say the server was shut down, want 1", len(said))
	}
	if msg := said[0].Message; !strings.Contains(msg, "to stop it for good, stop them") {
		t.Errorf("warning %q does not say how to stop the server for good", msg)
	}
	if users := attr(said[0], "used_by"); !strings.Contains(" "+users+" ", fmt.Sprintf(" %d ", os.Getpid())) {
		t.Errorf("used_by = %q, want the pid of this process, %d", users, os.Getpid())
	}
	stop(t, c)
	assertStopped(t, dir, newPID)
}

// Stopping pgbus while the watch restarts a server whose socket was
// deleted waits for the restart, and then stops the server with a fast
// shutdown, as any Stop does: cut short, the restart escalated to an
// immediate shutdown, and the next start recovered from a crash.
func TestStopDuringSocketRestartIsClean(t *testing.T) {
	shortWatch(t, maxReviveWait)
	dir := tempDataDir(t, "ep-")
	rec := newLogRecorder(t)
	started, stopped := stopWhenLogged(rec, "socket of embedded PostgreSQL was deleted", nil)
	c := startRecorded(t, dir, rec)
	started.Store(c)
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	log := filepath.Join(dir, logFile)
	if err := os.Remove(filepath.Join(c.sockDir, socketName)); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop during the restart: %v", err)
	}
	text := serverLogOnceGone(t, c, log)
	assertFastShutdownLast(t, text)
	assertNextStartClean(t, dir, log, len(text))
}

// Stopping pgbus while the watch starts again a server that died waits for
// that start, and then stops the server with a fast shutdown: cut short,
// it left no server, while it waited for the killed server's processes to
// end, or shut the new one down immediately, before it said it was
// starting; and the next start recovered from a crash. The start that
// brings a killed server back recovers from its crash; the shutdown after
// it is what is checked.
func TestStopDuringReviveIsClean(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(c *Cluster) // run before Stop, in the watch
	}{
		{"at once", nil},
		{"once the killed server's processes ended", func(c *Cluster) {
			waitFor(t, "the killed server's processes to end", func() bool { return len(processesUsing(c.pgData)) == 0 })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shortWatch(t, maxReviveWait)
			dir := tempDataDir(t, "ep-")
			rec := newLogRecorder(t)
			started, stopped := stopWhenLogged(rec, "embedded PostgreSQL is gone", tc.before)
			c := startRecorded(t, dir, rec)
			started.Store(c)
			exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
			log := filepath.Join(dir, logFile)
			if err := syscall.Kill(serverPID(t, dir), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := <-stopped; err != nil {
				t.Fatalf("Stop while the server is started again: %v", err)
			}
			text := serverLogOnceGone(t, c, log)
			if n := strings.Count(text, "database system is ready to accept connections"); n != 2 {
				t.Errorf("the server was ready %d times, want 2: at the start, and once started again; its log:\n%s", n, text)
			}
			assertFastShutdownLast(t, text)
			assertNextStartClean(t, dir, log, len(text))
		})
	}
}

// stopWhenLogged calls Stop on the Cluster stored in the returned pointer
// as soon as rec gets a record whose message holds msg, after before when
// set, and holds up the goroutine logging it until Stop is under way;
// Stop's error goes to the returned channel. The pointer is set once Start
// returned, as the watch reads it.
func stopWhenLogged(rec *logRecorder, msg string, before func(*Cluster)) (*atomic.Pointer[Cluster], <-chan error) {
	var started atomic.Pointer[Cluster]
	stopped := make(chan error, 1)
	rec.onRecord = func(r slog.Record) {
		if !strings.Contains(r.Message, msg) {
			return
		}
		c := started.Load()
		if before != nil {
			before(c)
		}
		go func() { stopped <- c.Stop(context.Background()) }()
		for c.mu.TryLock() {
			c.mu.Unlock()
			runtime.Gosched()
		}
	}
	return &started, stopped
}

// assertFastShutdownLast checks that the server log text has no immediate
// shutdown, which needs crash recovery, and ends with a fast shutdown done.
func assertFastShutdownLast(t *testing.T, text string) {
	t.Helper()
	if strings.Contains(text, "immediate shutdown request") {
		t.Errorf("the server was shut down immediately, which needs crash recovery; its log:\n%s", text)
	}
	last := strings.LastIndex(text, "shutdown request")
	if last < 0 || !strings.Contains(text[last:], "database system is shut down") ||
		!strings.HasSuffix(text[:last], "fast ") {
		t.Errorf("the log does not end with a fast shutdown done; its log:\n%s", text)
	}
}

// assertNextStartClean starts and stops a Cluster on dir, whose table t
// holds the row kept, and checks that the server log at p after its first
// before bytes says the last shutdown was clean: no crash recovery.
func assertNextStartClean(t *testing.T, dir, p string, before int) {
	t.Helper()
	c := start(t, dir)
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row after the restart and stop = %q, want kept", got)
	}
	stop(t, c)
	next := serverLogOnceGone(t, c, p)[before:]
	if strings.Contains(next, "not properly shut down") || strings.Contains(next, "was interrupted") {
		t.Errorf("the next start recovered from a crash; its log:\n%s", next)
	}
	if !strings.Contains(next, "database system was shut down at") {
		t.Errorf("the next start does not say the server was shut down cleanly; its log:\n%s", next)
	}
}

// serverLogOnceGone returns the server log at p once no process of c's
// server remains: its logging collector, the last to end, wrote it all.
func serverLogOnceGone(t *testing.T, c *Cluster, p string) string {
	t.Helper()
	waitFor(t, "the processes of the server to end", func() bool { return len(processesUsing(c.pgData)) == 0 })
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
