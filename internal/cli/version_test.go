package cli_test

import (
	"regexp"
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
	if r := pgbus(t, nil, "version", "extra"); r.code != 2 {
		t.Fatalf("pgbus version extra: exit %d, want 2", r.code)
	}
}
