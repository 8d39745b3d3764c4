package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbus/pgbus/embedpg"
	"github.com/pgbus/pgbus/store"
)

// PrivateCluster starts an embedded PostgreSQL of the test's own, never the
// shared one, in a new temporary directory removed at the end of the test:
// a test that stops, restarts or fills its server leaves the other tests
// theirs. It returns the directory, for StartCluster to start the same
// data again after a Stop.
func PrivateCluster(t testing.TB) (string, *embedpg.Cluster) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgbus-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir, StartCluster(t, dir)
}

// StartCluster starts (or starts again) the embedded cluster in dir and
// stops it at the end of the test; it returns once the server accepts
// connections.
func StartCluster(t testing.TB, dir string) *embedpg.Cluster {
	t.Helper()
	// Longer than the default minute, as the shared cluster gets: an initdb
	// on a machine busy with the test packages side by side can take more.
	c, err := embedpg.Start(context.Background(), embedpg.Options{DataDir: dir, StartTimeout: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// PrivateStore is PrivateCluster with a store opened on it, migrated, and
// closed at the end of the test.
func PrivateStore(t testing.TB) (string, *embedpg.Cluster, *store.Store) {
	t.Helper()
	dir, c := PrivateCluster(t)
	return dir, c, migratedStore(t, c.URL())
}

// migratedStore opens a store on url, migrates it, and closes it at the
// end of the test.
func migratedStore(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(Context(t), url)
	if err != nil {
		t.Fatal(err)
	}
	UpLongAgo(st)
	t.Cleanup(st.Close)
	if _, err := st.Migrate(Context(t)); err != nil {
		t.Fatal(err)
	}
	return st
}

// libfaketime is where the library that sets a process's clock off, for
// SkewedStore, is: Debian's faketime package, of any architecture.
const libfaketime = "/usr/lib/*/faketime/libfaketime.so.1"

// SkewedStore is PrivateStore on a server whose clock is set off from
// this process's by offset, in libfaketime's words ("-3h", "+10m"), as a
// database host whose time synchronization broke, or the other hosts'
// did. It needs libfaketime (Debian: apt-get install faketime).
func SkewedStore(t testing.TB, offset string) *store.Store {
	t.Helper()
	return skewedStore(t, "FAKETIME="+offset)
}

// ShiftingSkewedStore is SkewedStore on a server whose clock can be set
// off anew while it runs: shift sets its offset, in the same words, which
// the server takes within a second or so (a caller waits on a measure of
// its clock, such as Store.SyncClock, to see it taken). The server's
// monotonic clock is left as it is, so that its timers do not jump.
func ShiftingSkewedStore(t testing.TB, offset string) (st *store.Store, shift func(offset string)) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgbus-faketime-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// Readable by the server's user, another than root's when tests run
	// as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "faketime")
	shift = func(offset string) {
		t.Helper()
		// Written whole under another name, then renamed over the file:
		// the server never reads half of it.
		next := file + ".next"
		if err := os.WriteFile(next, []byte(offset+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, file); err != nil {
			t.Fatal(err)
		}
	}
	shift(offset)
	return skewedStore(t, "FAKETIME_TIMESTAMP_FILE="+file, "FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"), shift
}

// skewedStore is SkewedStore with libfaketime set by env.
func skewedStore(t testing.TB, env ...string) *store.Store {
	t.Helper()
	libs, _ := filepath.Glob(libfaketime)
	if len(libs) == 0 {
		t.Fatalf("pgtest: a server with its clock set off needs libfaketime, %s (Debian: apt-get install faketime; .ci/run installs it)", libfaketime)
	}
	lib := libs[0]
	dir, err := os.MkdirTemp("", "pgbus-skewed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c, err := embedpg.Start(context.Background(), embedpg.Options{DataDir: dir, StartTimeout: 3 * time.Minute,
		Env: append([]string{"LD_PRELOAD=" + lib, "FAKETIME_DONT_RESET=1"}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return migratedStore(t, c.URL())
}

// PasswordCluster is PrivateCluster whose server asks every role but its
// superuser for its password (scram-sha-256), as a production server
// does, where the test server trusts every local login: a role's password
// changed then refuses the logins that give the old one. It returns the
// superuser's URL.
func PasswordCluster(t testing.TB) string {
	t.Helper()
	_, c := PrivateCluster(t)
	hba := filepath.Join(c.DataDir(), "pgdata", "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all pgbus trust\nlocal all all scram-sha-256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	Exec(t, c.URL(), "SELECT pg_reload_conf()")
	return c.URL()
}
