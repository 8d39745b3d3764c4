package embedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoBinaries is wrapped by the error of FindBinDir (and so of Start) when
// no PostgreSQL server binaries are installed.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries")

// binSearch says where findBinDir looks; tests replace it to simulate a
// machine without PostgreSQL.
type binSearch struct {
	path     string                 // a PATH-style list of directories
	pgConfig func() (string, error) // the output of `pg_config --bindir`
	globs    []string               // fallback patterns; the * is the version
}

var defaultSearch = binSearch{
	pgConfig: pgConfigBinDir,
	globs:    []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"},
}

// FindBinDir returns a directory holding both initdb and postgres. It looks on
// PATH (following symlinks to the real directory, where pg_ctl and friends
// sit too), then at `pg_config --bindir`, then under
// /usr/lib/postgresql/*/bin and /usr/pgsql-*/bin, highest version first.
// Finding none, it fails with an *Error wrapping ErrNoBinaries, whose
// advice is to install them or use a running server (Terms.Server).
func FindBinDir() (string, error) {
	return findBinDir(currentSearch(), "")
}

// currentSearch is defaultSearch on the PATH of the moment.
func currentSearch() binSearch {
	s := defaultSearch
	s.path = os.Getenv("PATH")
	return s
}

// findBinDir returns the first directory of the search that holds a server,
// or, when major is set (the PG_VERSION of an existing cluster), the first
// whose postgres is of that major version, falling back to the first found:
// a machine upgraded to a new major version keeps the old server beside the
// new one, and only the old one runs the old cluster.
func findBinDir(s binSearch, major string) (string, error) {
	dirs := binDirs(s)
	if len(dirs) == 0 {
		return "", newError("", ErrNoBinaries, func(t Terms) string {
			return fmt.Sprintf("embedpg: %v (initdb, postgres) found on PATH, via pg_config --bindir, or under %s; "+
				"install them (Debian/Ubuntu: apt-get install postgresql; Fedora/RHEL: dnf install postgresql-server; "+
				"macOS: brew install postgresql) or %s",
				ErrNoBinaries, strings.Join(s.globs, " or "), t.Server)
		})
	}
	if major != "" {
		for _, d := range dirs {
			if v, err := serverVersion(d); err == nil && majorOf(v) == major {
				return d, nil
			}
		}
	}
	return dirs[0], nil
}

// binDirs lists every directory of the search holding a server, in the
// order of the search, each once.
func binDirs(s binSearch) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, d := range searchPath(s.path) {
		add(d)
	}
	if s.pgConfig != nil {
		if d, err := s.pgConfig(); err == nil && hasServer(d) {
			add(d)
		}
	}
	for _, g := range s.globs {
		for _, d := range byVersionDesc(g) {
			if hasServer(d) {
				add(d)
			}
		}
	}
	return dirs
}

// searchPath returns the real directory of each initdb on path that has
// postgres beside it.
func searchPath(path string) []string {
	var dirs []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry depends on the working directory: not a place to run a server from
		}
		p := filepath.Join(dir, "initdb")
		if !isExecutable(p) {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err == nil && hasServer(filepath.Dir(real)) {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	return dirs
}

// serverVersion returns the version `postgres -V` in dir reports, such as
// "15.18" from "postgres (PostgreSQL) 15.18 (Debian 15.18-1.pgdg120+1)".
func serverVersion(dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "-V").Output()
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return "", fmt.Errorf("unexpected output of %s -V: %q", filepath.Join(dir, "postgres"), out)
	}
	return fields[2], nil
}

// majorOf returns the major version of a server version as PG_VERSION
// writes it: "15" for "15.18" or "16beta1", "9.6" for "9.6.24".
func majorOf(version string) string {
	digits := func(s string) int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return n
	}
	n := digits(version)
	if n == 0 {
		return version
	}
	if major, _ := strconv.Atoi(version[:n]); major < 10 && n < len(version) && version[n] == '.' {
		return version[:n+1+digits(version[n+1:])]
	}
	return version[:n]
}

func pgConfigBinDir() (string, error) {
	exe, err := exec.LookPath("pg_config")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--bindir").Output()
	return strings.TrimSpace(string(out)), err
}

func hasServer(dir string) bool {
	return dir != "" && isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// byVersionDesc expands a pattern with one * and sorts the matches by the
// numeric version in place of the *, highest first ("15" before "9.6").
func byVersionDesc(glob string) []string {
	matches, _ := filepath.Glob(glob)
	prefix, suffix, _ := strings.Cut(glob, "*")
	version := func(m string) []int {
		var v []int
		for _, part := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(m, prefix), suffix), ".") {
			n, err := strconv.Atoi(part)
			if err != nil {
				n = -1
			}
			v = append(v, n)
		}
		return v
	}
	sort.SliceStable(matches, func(i, j int) bool {
		a, b := version(matches[i]), version(matches[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
	return matches
}
