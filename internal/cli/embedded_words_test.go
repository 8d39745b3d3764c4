package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The embedded PostgreSQL's advice names, on the command line, the flag and
// variable that choose its data directory, not the Go field they set.
func TestEmbeddedErrorNamesDataDirFlag(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not pgbus's"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"foreign by flag", nil, []string{"queues", "--data-dir", dir}, "choose an empty or new directory with --data-dir or PGBUS_DATA_DIR"},
		{"foreign by variable", []string{"PGBUS_DATA_DIR=" + dir}, []string{"migrate"}, "choose an empty or new directory with --data-dir or PGBUS_DATA_DIR"},
		{"a file", nil, []string{"migrate", "--data-dir", file}, "is not a directory; choose another with --data-dir or PGBUS_DATA_DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := pgbus(t, tc.env, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.says) || strings.Contains(r.stderr, "Options.") {
				t.Errorf("exit %d stderr %q; want 1 and %q, without a Go field", r.code, r.stderr, tc.says)
			}
		})
	}
}

// Without a database URL, a data directory that cannot be made (here its
// parent is a file; a read-only file system in a container fails alike)
// was said to be the database unavailable, with pgbus health as the next
// step, which can only fail the same way. It is a setting to change: the
// error says which (a database URL, by variable or file, a writable data
// directory, or never starting the embedded PostgreSQL), of kind failed.
func TestUnwritableDataDirSaysWhatToSet(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := pgbus(t, nil, "queues", "--json", "--data-dir", filepath.Join(file, "data"))
	var got struct {
		Error string `json:"error"`
		Kind  string `json:"kind"`
		Next  []struct {
			Command string `json:"command"`
		} `json:"next"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &got); err != nil {
		t.Fatalf("stderr %q: %v", r.stderr, err)
	}
	if r.code != 1 || got.Kind != "failed" || len(got.Next) != 0 || strings.Contains(r.stderr, "pgbus health") {
		t.Errorf("exit %d, stderr %s; want exit 1, kind failed, and no next step (pgbus health would fail the same way)", r.code, r.stderr)
	}
	for _, want := range []string{"creating data directory", "DATABASE_URL", "DATABASE_URL_FILE", "--data-dir", "writable", "PGBUS_NO_EMBEDDED=1"} {
		if !strings.Contains(got.Error, want) {
			t.Errorf("the error %q does not say %q", got.Error, want)
		}
	}
}
