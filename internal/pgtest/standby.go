package pgtest

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/embedpg"
)

// Standby starts a private cluster, the primary, and a hot standby that
// streams from it (pg_basebackup -R), each stopped at the end of the test;
// it returns the URLs of database pgbus on each. What the primary commits
// is on the standby once CaughtUp says so.
func Standby(t testing.TB) (primary, standby string) {
	t.Helper()
	_, p := PrivateCluster(t)
	bin, err := embedpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgbus-standby-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out, err := exec.Command(filepath.Join(bin, "pg_basebackup"), "-D", filepath.Join(dir, "pgdata"), "-R", "-X", "stream", "-c", "fast",
		"-h", u.Query().Get("host"), "-p", cmpPort(u.Port()), "-U", u.User.Username()).CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: pg_basebackup of the primary: %v\n%s", err, out)
	}
	s := StartCluster(t, dir)
	return p.URL(), s.URL()
}

func cmpPort(p string) string {
	if p == "" {
		return "5432"
	}
	return p
}

// CaughtUp waits until the standby has replayed everything the primary
// had written when it was called.
func CaughtUp(t testing.TB, primary, standby string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lsn string
	if err := queryOnce(ctx, primary, `SELECT pg_catalog.pg_current_wal_lsn()::text`, &lsn); err != nil {
		t.Fatalf("pgtest: read the primary's position: %v", err)
	}
	conn, err := pgx.Connect(ctx, standby)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var done bool
		if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err != nil {
			t.Fatalf("pgtest: wait for the standby to replay %s: %v", lsn, err)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: the standby did not replay %s within 2 minutes", lsn)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// queryOnce reads one row of sql on its own connection to dbURL.
func queryOnce(ctx context.Context, dbURL, sql string, dest ...any) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
