package cli_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/cli"
)

// DATABASE_URL_FILE names a file holding the URL, as Docker and
// Kubernetes mount secrets: its final newline is left out, and every way
// it can be wrong stops the command before anything starts, saying what
// to fix, rather than leaving pgbus without a URL (the embedded
// PostgreSQL) or with the newline in it.
func TestDatabaseURLFromFile(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("url", d.url+"\r\n")
	env := []string{"DATABASE_URL_FILE=" + good}
	if r := pgbus(t, env, "queue", "create", "from_file"); r.code != 0 {
		t.Fatalf("queue create with DATABASE_URL_FILE: exit %d, %s", r.code, r.stderr)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.meta WHERE queue_name = 'from_file'`); n != 1 {
		t.Fatalf("queue from_file in the database the file names: %d rows, want 1", n)
	}

	dataDir := t.TempDir()
	unreadable := write("unreadable", d.url)
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"both", []string{"DATABASE_URL=" + d.url, "DATABASE_URL_FILE=" + good}, "environment variables DATABASE_URL and DATABASE_URL_FILE are both set: keep one"},
		{"both, the variable empty", []string{"DATABASE_URL=", "DATABASE_URL_FILE=" + good}, "DATABASE_URL is set but empty"},
		{"no such file", []string{"DATABASE_URL_FILE=" + filepath.Join(dir, "missing")}, "no such file: mount the secret there"},
		{"empty file", []string{"DATABASE_URL_FILE=" + write("empty", "\n\n")}, "the file is empty"},
		{"blank path", []string{"DATABASE_URL_FILE= "}, "DATABASE_URL_FILE is set but empty"},
		{"a directory", []string{"DATABASE_URL_FILE=" + dir}, "is it a regular file?"},
		{"too large", []string{"DATABASE_URL_FILE=" + write("large", strings.Repeat("x", 65<<10))}, "larger than 64 KiB"},
	} {
		r := pgbus(t, append(c.env, "PGBUS_DATA_DIR="+dataDir), "queue", "create", "lost")
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", c.name, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	if os.Geteuid() != 0 { // root reads any file
		r := pgbus(t, []string{"DATABASE_URL_FILE=" + unreadable, "PGBUS_DATA_DIR=" + dataDir}, "queue", "create", "lost")
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "give pgbus's user read access") {
			t.Errorf("unreadable file: exit %d, stderr %q", r.code, r.stderr)
		}
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory holds %v (%v); want nothing started", entries, err)
	}
	if n := d.count(t, `SELECT count(*) FROM pgmq.meta WHERE queue_name = 'lost'`); n != 0 {
		t.Fatalf("queue lost was created %d times; want never", n)
	}
	// The flag comes first, as for every setting: a broken file is not in
	// its way.
	if r := pgbus(t, []string{"DATABASE_URL_FILE=" + filepath.Join(dir, "missing")}, "queues", "--database-url", d.url); r.code != 0 || !strings.Contains(r.stdout, "from_file") {
		t.Errorf("--database-url beside a broken DATABASE_URL_FILE: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
}

// PGBUS_MCP_TOKEN_FILE gives the token of the HTTP transports and the
// dashboard from a file, its final newline left out: read as it was with
// $(cat), such a token was refused for its white space.
func TestAuthTokenFromFile(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	const token = "file-token-0123456789abcdefghijklmnop"
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "dashboard", "--addr", "0.0.0.0:0", "--database-url", d.url, "--log-format", "json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "PGBUS_MCP_TOKEN_FILE=" + path}
	base, _ := startListening(t, cmd, "pgbus dashboard listening", "url")
	defer func() { _ = cmd.Process.Kill() }()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	get := getter(t, "http://127.0.0.1:"+u.Port())
	if code, page, _ := get("/", token); code != http.StatusOK || !strings.Contains(page, "<h1>Overview</h1>") {
		t.Errorf("GET / with the file's token: %d\n%s", code, page)
	}
	if code, _, _ := get("/", token+"x"); code == http.StatusOK {
		t.Errorf("GET / with another token: %d; want it refused", code)
	}
	r := pgbus(t, []string{"PGBUS_MCP_TOKEN=" + token, "PGBUS_MCP_TOKEN_FILE=" + path}, "dashboard", "--addr", "127.0.0.1:0", "--database-url", d.url)
	if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "PGBUS_MCP_TOKEN and PGBUS_MCP_TOKEN_FILE are both set") {
		t.Errorf("both token variables: exit %d, stderr %q; want a usage error naming both", r.code, r.stderr)
	}
}
