package pgtest_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgbus/pgbus/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestURLConnects(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if pgtest.URL(t) != pgtest.URL(t) {
		t.Error("URL changes between calls")
	}
}

// The embedded test cluster runs without fsync (tests run about a third
// faster) and still with synchronous commits, whose WAL is written before
// a commit returns, so that a test killing PostgreSQL loses nothing.
func TestEmbeddedClusterSkipsFsyncButNotCommits(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("the server of " + pgtest.EnvURL + " is left as it is")
	}
	ctx := context.Background()
	show := func(name string) string {
		conn, err := pgx.Connect(ctx, pgtest.URL(t))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The reload that turned fsync off reaches new sessions soon after.
	pgtest.Eventually(t, time.Minute, "fsync and full_page_writes off", func() bool {
		return show("fsync") == "off" && show("full_page_writes") == "off"
	})
	if v := show("synchronous_commit"); v != "on" {
		t.Fatalf("synchronous_commit = %s; want on, so that a killed server keeps every commit", v)
	}
}

// Main raises the number of parallel tests to pgtest.Parallel unless the
// command line gave -parallel, which it leaves as given.
func TestMainRaisesParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	if f == nil {
		t.Fatal("no test.parallel flag")
	}
	want := fmt.Sprint(pgtest.Parallel)
	for _, arg := range os.Args[1:] {
		if v, ok := strings.CutPrefix(arg, "-test.parallel="); ok {
			want = v
		}
	}
	if f.Value.String() != want {
		t.Fatalf("test.parallel = %s, want %s (command line %q)", f.Value, want, os.Args[1:])
	}
}
