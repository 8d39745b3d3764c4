package embedpg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/exectest"
)

func noPgConfig() (string, error) { return "", errors.New("pg_config: not found") }

func fakeServer(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		exectest.WriteFile(t, filepath.Join(dir, name), "#!/bin/sh\n", 0o755)
	}
}

func TestFindBinDirNone(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	_, err := findBinDir(binSearch{pgConfig: noPgConfig, globs: []string{filepath.Join(empty, "*", "bin")}}, "")
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("err = %v, want ErrNoBinaries", err)
	}
	e := checkGoTerms(t, err, "")
	for _, want := range []string{"running PostgreSQL server", "apt-get install postgresql", "pg_config --bindir", "PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if front := e.In(frontTerms); !strings.Contains(front, frontTerms.Server) {
		t.Errorf("In = %q; want %q", front, frontTerms.Server)
	}
}

func TestFindBinDirHighestVersion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "14", "16beta"} {
		fakeServer(t, filepath.Join(root, v, "bin"))
	}
	got, err := findBinDir(binSearch{pgConfig: noPgConfig, globs: []string{filepath.Join(root, "*", "bin")}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "15", "bin"); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestFindBinDirPathSymlink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	fakeServer(t, real)
	onPath := filepath.Join(root, "bin")
	if err := os.Mkdir(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "initdb"), filepath.Join(onPath, "initdb")); err != nil {
		t.Fatal(err)
	}
	got, err := findBinDir(binSearch{path: "relative" + string(os.PathListSeparator) + onPath, pgConfig: noPgConfig}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got != real {
		t.Errorf("got %s, want the symlink target's directory %s", got, real)
	}
}

func TestFindBinDirPgConfig(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pg")
	fakeServer(t, dir)
	got, err := findBinDir(binSearch{pgConfig: func() (string, error) { return dir, nil }}, "")
	if err != nil || got != dir {
		t.Errorf("got %q, %v; want %s", got, err, dir)
	}
}
