//go:build linux

package embedpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/exectest"
)

// helperEnv makes the test binary act as a separate pgbus process (see
// TestMain) so a test can SIGKILL it.
const helperEnv = "EMBEDPG_TEST_HELPER_DATA_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelper(dir))
	}
	if dir := os.Getenv(startErrEnv); dir != "" {
		_, err := Start(context.Background(), Options{DataDir: dir})
		fmt.Println(err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runHelper starts a cluster, commits a row, says "ready" and waits to be
// killed; it exits by itself after a while in case its parent died.
func runHelper(dir string) int {
	ctx := context.Background()
	c, err := Start(ctx, Options{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	conn, err := pgx.Connect(ctx, c.URL())
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('from helper')")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Println("ready")
	time.Sleep(2 * time.Minute)
	return 0
}

// tempDataDir makes a fresh data directory, removed at the end of the test
// (after the Stop cleanups registered later, which run first).
func tempDataDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp(os.TempDir(), pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// opts are a test's options: a start may take minutes on a shared machine
// whose other tests start clusters of their own (an initdb ran past the
// default minute), and how long it takes is no test's assertion.
func opts(t *testing.T, dir string) Options {
	return Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), StartTimeout: 5 * time.Minute}
}

func start(t *testing.T, dir string) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts(t, dir))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func stop(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func connect(t *testing.T, c *Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.URL())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.URL(), err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func exec1(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryString(t *testing.T, c *Cluster, sql string) string {
	t.Helper()
	var s string
	if err := connect(t, c).QueryRow(context.Background(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func serverPID(t *testing.T, dir string) int {
	t.Helper()
	pid, found := readPID(filepath.Join(dir, "pgdata"))
	if !found || pid <= 0 {
		t.Fatalf("no postmaster.pid in %s", dir)
	}
	return pid
}

// assertStopped checks that the server of dir is gone, pid and pid file.
func assertStopped(t *testing.T, dir string, pid int) {
	t.Helper()
	if processAlive(pid) {
		t.Errorf("postmaster %d still running", pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("postmaster.pid still there after the last Stop (err %v)", err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	cfg, err := pgx.ParseConfig(c.URL())
	if err != nil {
		t.Fatalf("ParseConfig(%q): %v", c.URL(), err)
	}
	if cfg.Host != dir || cfg.Database != "pgbus" || cfg.User != "pgbus" {
		t.Errorf("URL %q parses to host %q db %q user %q", c.URL(), cfg.Host, cfg.Database, cfg.User)
	}
	if c.DataDir() != dir {
		t.Errorf("DataDir() = %q, want %q", c.DataDir(), dir)
	}
	exec1(t, connect(t, c), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
	sysID := queryString(t, c, "SELECT system_identifier::text FROM pg_control_system()")
	pid := serverPID(t, dir)
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("server process group = %d, %v; want its own (%d) so a terminal Ctrl-C misses it", pgid, err, pid)
	}
	stop(t, c)
	assertStopped(t, dir, pid)

	c = start(t, dir)
	if got := queryString(t, c, "SELECT v FROM t"); got != "kept" {
		t.Errorf("row after restart = %q, want kept", got)
	}
	if got := queryString(t, c, "SELECT system_identifier::text FROM pg_control_system()"); got != sysID {
		t.Errorf("system identifier changed from %s to %s: cluster was re-initialised", sysID, got)
	}
	pid = serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestSharedBetweenClusters(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	var cs [2]*Cluster
	errs := make(chan error, 2)
	for i := range cs {
		go func() {
			var err error
			cs[i], err = Start(context.Background(), opts(t, dir))
			errs <- err
		}()
	}
	for range cs {
		if err := <-errs; err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	for _, c := range cs {
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
	}
	if cs[0].URL() != cs[1].URL() {
		t.Fatalf("URLs differ: %q, %q", cs[0].URL(), cs[1].URL())
	}
	conn := connect(t, cs[1])
	pid := serverPID(t, dir)

	stop(t, cs[0])
	if !processAlive(pid) {
		t.Fatal("first Stop stopped the server under the second cluster")
	}
	exec1(t, conn, "CREATE TABLE still_up (v int)")
	if got := queryString(t, cs[1], "SELECT 'fresh connection'"); got != "fresh connection" {
		t.Fatalf("got %q", got)
	}

	stop(t, cs[1])
	assertStopped(t, dir, pid)
}

// The last Stop stops the server though a process being started at that
// moment holds a copy of the share's descriptor (a job's command forked by
// another goroutine, until its program starts): the copy goes a moment
// later, and the server was left running for it.
func TestLastStopWhileAProcessStarts(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	pid := serverPID(t, dir)
	// The copy a forked process holds, closed on exec as the share is:
	// under the fork lock, so that no child of a parallel test (a
	// pg_ctl, a postgres) inherits it and keeps it for its whole life,
	// which left the server running for it.
	syscall.ForkLock.RLock()
	held, err := syscall.Dup(int(c.users))
	if err == nil {
		syscall.CloseOnExec(held)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond) // its program starts: the copy closes
		_ = syscall.Close(held)
	}()
	stop(t, c)
	assertStopped(t, dir, pid)
}

func TestAdoptAfterClientKilled(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	helper.Stderr = t.Output()
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("helper exited before it was ready")
		}
	case <-time.After(90 * time.Second):
		t.Fatal("helper not ready after 90s")
	}
	pid := serverPID(t, dir)
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if !processAlive(pid) {
		t.Fatal("server died with the killed client")
	}

	c := start(t, dir)
	if got := serverPID(t, dir); got != pid {
		t.Errorf("server pid %d, want adopted %d", got, pid)
	}
	if got := queryString(t, c, "SELECT v FROM t"); got != "from helper" {
		t.Errorf("row = %q", got)
	}
	stop(t, c)
	assertStopped(t, dir, pid)
}

func TestRecoverAfterServerKilled(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	c := start(t, dir)
	conn, err := pgx.Connect(context.Background(), c.URL())
	if err != nil {
		t.Fatal(err)
	}
	exec1(t, conn, "CREATE TABLE t (v text); INSERT INTO t VALUES ('committed')")
	_ = conn.Close(context.Background())
	c.stopWatch() // the stale postmaster.pid is for the next Start to clear, not the watch
	pid := serverPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "killed postmaster to go", func() bool { return !processAlive(pid) })
	stop(t, c) // nothing left to stop: must not fail
	if _, found := readPID(filepath.Join(dir, "pgdata")); !found {
		t.Fatal("want a stale postmaster.pid after SIGKILL")
	}

	c = start(t, dir)
	if got := queryString(t, c, "SELECT v FROM t"); got != "committed" {
		t.Errorf("row after crash recovery = %q", got)
	}
	pid = serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)

	// A stale postmaster.pid naming a live unrelated process (pid reuse),
	// which postgres alone would refuse to start over.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
	content := fmt.Sprintf("%d\n%s\n", sleeper.Process.Pid, filepath.Join(dir, "pgdata"))
	if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	c = start(t, dir)
	if got := queryString(t, c, "SELECT v FROM t"); got != "committed" {
		t.Errorf("row after stale pid file = %q", got)
	}
	pid = serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)
}

func TestLongDataDir(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-"+strings.Repeat("x", 100)+"-")
	if len(filepath.Join(dir, socketName)) <= maxSocketPath {
		t.Fatalf("test dir %s is not long enough", dir)
	}
	c := start(t, dir)
	cfg, err := pgx.ParseConfig(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if sock := filepath.Join(cfg.Host, socketName); len(sock) > maxSocketPath {
		t.Errorf("socket path %s is %d bytes", sock, len(sock))
	}
	if got := queryString(t, c, "SELECT current_database()"); got != "pgbus" {
		t.Errorf("current_database() = %q", got)
	}
	pid := serverPID(t, dir)
	stop(t, c)
	assertStopped(t, dir, pid)
	if _, err := os.Stat(cfg.Host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s left behind (err %v)", cfg.Host, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeBinDir makes a binary directory, reachable by the server user, with
// the real initdb unless initdb is given, and the given postgres script.
func fakeBinDir(t *testing.T, initdb, postgres string) (bin, dataDir string) {
	t.Helper()
	root := tempDataDir(t, "ep-")
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if initdb == "" {
		real, err := FindBinDir()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(real, "initdb"), filepath.Join(bin, "initdb")); err != nil {
			t.Fatal(err)
		}
	} else {
		exectest.WriteFile(t, filepath.Join(bin, "initdb"), initdb, 0o755)
	}
	exectest.WriteFile(t, filepath.Join(bin, "postgres"), postgres, 0o755)
	return bin, filepath.Join(root, "data")
}

func TestServerExitsDuringStartup(t *testing.T) {
	t.Parallel()
	bin, dir := fakeBinDir(t, "", "#!/bin/sh\necho 'FATAL:  boom from fake postgres' >&2\nexit 1\n")
	o := opts(t, dir)
	o.BinDir = bin
	c, err := Start(context.Background(), o)
	if err == nil {
		_ = c.Stop(context.Background())
		t.Fatal("Start succeeded with a postgres that exits")
	}
	t.Logf("error: %v", err)
	for _, want := range []string{"exited during start-up", "boom from fake postgres", "postgres.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestInitdbFails(t *testing.T) {
	t.Parallel()
	bin, dir := fakeBinDir(t, "#!/bin/sh\necho 'initdb: boom' >&2\nexit 1\n", "#!/bin/sh\nexit 1\n")
	o := opts(t, dir)
	o.BinDir = bin
	_, err := Start(context.Background(), o)
	if err == nil {
		t.Fatal("Start succeeded with a failing initdb")
	}
	checkGoTerms(t, err, "DataDir")
	for _, want := range []string{"initdb in " + filepath.Join(dir, "pgdata") + " failed", "initdb: boom", "or set Options.DataDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed initdb left pgdata behind (err %v)", err)
	}
}

// initdb failing for want of disk space says to free some, not to remove
// the directory it could not fill.
func TestInitdbDiskFull(t *testing.T) {
	t.Parallel()
	bin, dir := fakeBinDir(t, "#!/bin/sh\necho 'FATAL:  could not write to file \"pg_wal/xlogtemp.1\": No space left on device' >&2\nexit 1\n",
		"#!/bin/sh\nexit 1\n")
	o := opts(t, dir)
	o.BinDir = bin
	_, err := Start(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "free space on the disk of "+dir) || !strings.Contains(err.Error(), "set Options.DataDir to a directory on another disk") {
		t.Fatalf("err = %v, want one saying to free space on the disk of %s or set Options.DataDir", err, dir)
	}
	checkGoTerms(t, err, "DataDir")
}

func TestUnreachableDataDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the data directory to another user")
	}
	dir := filepath.Join(tempDataDir(t, "ep-"), "data") // parent is 0700 root
	_, err := Start(context.Background(), opts(t, dir))
	if err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Fatalf("err = %v, want one saying the server user cannot enter the parent", err)
	}
	checkGoTerms(t, err, "DataDir")
}

func TestStartWaitsForLockWithinContext(t *testing.T) {
	t.Parallel()
	dir := tempDataDir(t, "ep-")
	owner, err := currentServerUser()
	if err != nil {
		t.Fatal(err)
	}
	// Hold pgbus.lock as a starting or stopping process would.
	held, err := lock(context.Background(), filepath.Join(dir, lockFile), syscall.LOCK_EX, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer held.close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Start(ctx, opts(t, dir))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), lockFile) {
		t.Fatalf("err = %v, want a deadline error naming %s", err, lockFile)
	}
	t.Logf("error: %v", err)
	// The holder, for whoever must decide whether it hangs.
	if want := "held by pid " + strconv.Itoa(os.Getpid()) + " "; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

// A server still starting up when Start gives up, as one replaying a long
// write-ahead log after a crash, is left running for the next start, not
// stopped: stopping it would throw the replay away, and every start after
// would begin it again.
func TestServerStillStartingIsLeftRunning(t *testing.T) {
	t.Parallel()
	// A postgres that records itself as starting and stays so.
	bin, dir := fakeBinDir(t, "", `#!/bin/sh
[ "$1" = "-V" ] && exit 1 # no version: Start checks none
printf '%s\n%s\n0\n5432\n\n\n0 0\nstarting\n' $$ "$2" > "$2/postmaster.pid"
sleep 300 &
wait
`)
	stop(t, start(t, dir)) // the cluster, made with the real binaries and no deadline
	o := opts(t, dir)
	o.BinDir = bin
	o.StartTimeout = 3 * time.Second
	_, err := Start(context.Background(), o)
	pid, _ := readPID(filepath.Join(dir, "pgdata"))
	if pid > 0 {
		t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // its own process group
	}
	if !errors.Is(err, errStillStarting) || !strings.Contains(err.Error(), "left running: start this program again") {
		t.Fatalf("err = %v, want one saying the server is still starting and left running", err)
	}
	checkGoTerms(t, err, "")
	if !processAlive(pid) {
		t.Errorf("the starting server (pid %d) was stopped", pid)
	}

	// The next start waits for it, and leaves it running too.
	_, err = Start(context.Background(), o)
	if !errors.Is(err, errStillStarting) || !processAlive(pid) {
		t.Errorf("second start: %v, server alive %v; want it still starting and left running", err, processAlive(pid))
	}
}
