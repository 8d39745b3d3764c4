package ops_test

import (
	"errors"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// NameFields names the field a message starts with and the fields it
// names as words, but not a word that is only part of one, nor a value
// quoted as given.
func TestNameFields(t *testing.T) {
	t.Parallel()
	err := &ops.Error{Msg: `expect "drop expect" is refused: drop expect, or dry_run; expected or expect_x stay`, Field: "expect", Names: []string{"expect", "dry_run"}, Err: ops.ErrInvalid}
	named := ops.NameFields(err, func(f string) (string, bool) { return "<" + f + ">", f != "dry_run" })
	want := `<expect> "drop expect" is refused: drop <expect>, or dry_run; expected or expect_x stay`
	if named.Error() != want || !errors.Is(named, ops.ErrInvalid) {
		t.Fatalf("named %q (%v); want %q, still invalid", named, named, want)
	}
	if again := ops.NameFields(named, func(f string) (string, bool) { return "<" + f + ">", true }); again.Error() != want {
		t.Fatalf("named twice: %q; want %q", again, want)
	}
}
