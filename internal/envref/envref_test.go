package envref_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/envref"
)

// ${NAME} takes the variable's value, $${NAME} stays a literal ${NAME},
// and a lone $ or $$ is left as written (a password may hold them).
func TestExpand(t *testing.T) {
	t.Setenv("PGBUS_TEST_A", "alpha")
	t.Setenv("PGBUS_TEST_EMPTY", "")
	out, vars, err := envref.Expand("x ${PGBUS_TEST_A} $${PGBUS_TEST_A} pa$$w$rd ${PGBUS_TEST_A}")
	if err != nil || out != "x alpha ${PGBUS_TEST_A} pa$$w$rd alpha" || len(vars) != 1 || vars[0] != (envref.Var{Name: "PGBUS_TEST_A", Value: "alpha"}) {
		t.Fatalf("Expand: %q %v %v", out, vars, err)
	}
	for in, unset := range map[string]bool{"${PGBUS_TEST_NEVER_SET}": true, "${PGBUS_TEST_EMPTY}": true, "${1X}": false, "${a b}": false} {
		_, _, err := envref.Expand(in)
		if err == nil || envref.IsUnset(err) != unset {
			t.Errorf("Expand(%q): %v; want an error, unset %v", in, err, unset)
		}
		if err := envref.Check(in); (err == nil) != unset {
			t.Errorf("Check(%q): %v; want an error only for a malformed reference", in, err)
		}
	}
	if got := envref.Hide("bad port :alpha in host", vars); got != "bad port :${PGBUS_TEST_A} in host" {
		t.Fatalf("Hide: %q", got)
	}
}

// Refs names each reference Expand replaces, where it stands, and not an
// escaped one nor one that is not a variable's name.
func TestRefs(t *testing.T) {
	s := "a${X}b$${Y}c${1Z}d${X}"
	refs := envref.Refs(s)
	want := []envref.Ref{{Name: "X", Start: 1, End: 5}, {Name: "X", Start: 18, End: 22}}
	if len(refs) != len(want) || refs[0] != want[0] || refs[1] != want[1] {
		t.Fatalf("Refs(%q) = %+v; want %+v", s, refs, want)
	}
	for _, r := range refs {
		if s[r.Start:r.End] != "${X}" {
			t.Errorf("%+v stands at %q", r, s[r.Start:r.End])
		}
	}
}

// A ${ without its closing } is refused, not passed on as written: the
// header "Bearer ${SECRET_TOKEN" would send its name for the token. The
// error quotes the name it starts, or only where it stands when what
// follows is no name, which may be a secret; $${ is a literal ${, closed
// or not.
func TestUnclosedReference(t *testing.T) {
	t.Setenv("PGBUS_TEST_A", "alpha")
	for in, want := range map[string]string{
		"Bearer ${SECRET_TOKEN":  "${SECRET_TOKEN has no closing }",
		"${PGBUS_TEST_A} and ${": "the ${ at character 21 has no closing }",
		"pa${ss-w0rd-Kx93":       "the ${ at character 3 has no closing }",
	} {
		for what, err := range map[string]error{"Check": envref.Check(in), "Expand": func() error { _, _, err := envref.Expand(in); return err }()} {
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "$${") || envref.IsUnset(err) {
				t.Errorf("%s(%q): %v; want it refused saying %q and how to write a literal ${", what, in, err, want)
			}
			if err != nil && strings.Contains(err.Error(), "Kx93") {
				t.Errorf("%s(%q): %v quotes what follows the ${", what, in, err)
			}
		}
	}
	for in, want := range map[string]string{"pa$${x": "pa${x", "$${PGBUS_TEST_A} ${PGBUS_TEST_A} $${": "${PGBUS_TEST_A} alpha ${"} {
		if out, _, err := envref.Expand(in); err != nil || out != want {
			t.Errorf("Expand(%q): %q, %v; want %q, $${ a literal ${", in, out, err, want)
		}
	}
}
