package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// pgbus version and pgbus --version print the same line, whatever the
// configuration says.
func TestVersion(t *testing.T) {
	t.Parallel()
	line := regexp.MustCompile(`^pgbus \S+( commit [0-9a-f]{12}( \(modified\))?)?\n$`)
	env := []string{"PGBUS_CONFIG=/nonexistent/pgbus.yaml"}
	var outputs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := pgbus(t, env, args...)
		if r.code != 0 || r.stderr != "" || !line.MatchString(r.stdout) {
			t.Fatalf("pgbus %v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		outputs = append(outputs, r.stdout)
	}
	if outputs[0] != outputs[1] {
		t.Fatalf("version %q but --version %q", outputs[0], outputs[1])
	}
	var v struct {
		Version       string `json:"version"`
		Commit        string `json:"commit"`
		GoVersion     string `json:"go_version"`
		SchemaVersion int    `json:"schema_version"`
	}
	r := pgbus(t, env, "version", "--json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&v); err != nil || r.code != 0 || v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || v.SchemaVersion < 1 ||
		strings.Contains(outputs[0], " commit ") != (v.Commit != "") || v.Commit != "" && !strings.Contains(outputs[0], " commit "+v.Commit[:min(len(v.Commit), 12)]) {
		t.Fatalf("pgbus version --json: exit %d, %v, %+v\n%s", r.code, err, v, r.stdout)
	}
	// One word for the version everywhere: the line's is the JSON's (and
	// the metrics' and the MCP server's), "dev" for a build from a checkout.
	if !strings.HasPrefix(outputs[0], "pgbus "+v.Version+" ") && outputs[0] != "pgbus "+v.Version+"\n" {
		t.Errorf("pgbus version says %q; --json says version %q", outputs[0], v.Version)
	}
	if r := pgbus(t, nil, "version", "extra"); r.code != 2 {
		t.Fatalf("pgbus version extra: exit %d, want 2", r.code)
	}
}
