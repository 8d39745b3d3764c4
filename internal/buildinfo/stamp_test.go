package buildinfo_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built without the toolchain's record of its commit (go build
// -buildvcs=false, a container build without .git) said "pgbus dev",
// whatever it was released as: the version and commit set at link time
// (-ldflags -X), as a release's image build sets them, name it.
func TestLinkerSetsVersionAndCommit(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "pgbus")
	const pkg = "github.com/pgbus/pgbus/internal/buildinfo"
	const commit = "0123456789abcdef0123456789abcdef01234567"
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin,
		"-ldflags", "-X "+pkg+".version=v9.8.7 -X "+pkg+".commit="+commit, "github.com/pgbus/pgbus")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("pgbus version: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != "pgbus v9.8.7 commit 0123456789ab" {
		t.Errorf("pgbus version = %q; want the version and commit set at link time", got)
	}
	out, err = exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("pgbus version --json: %v", err)
	}
	var v struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version != "v9.8.7" || v.Commit != commit {
		t.Errorf("pgbus version --json = %s (%v); want version v9.8.7, commit %s", out, err, commit)
	}
}
