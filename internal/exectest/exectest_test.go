package exectest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestWriteFileRunsAndKeepsPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "hello")
	WriteFile(t, script, "#!/bin/sh\necho \"hello $1\"\n", 0o755)
	out, err := exec.Command(script, "world").Output()
	if err != nil || string(out) != "hello world\n" {
		t.Fatalf("the written script said %q, %v; want \"hello world\\n\"", out, err)
	}
	data := filepath.Join(dir, "data")
	WriteFile(t, data, "a\x00b", 0o640)
	st, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v; want -rw-r-----", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(data); string(b) != "a\x00b" {
		t.Fatalf("content %q; want the bytes written, NUL included", b)
	}
}
