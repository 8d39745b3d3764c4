package cli_test

import (
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
