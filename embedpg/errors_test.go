package embedpg

import (
	"errors"
	"strings"
	"testing"
)

// frontTerms stand for a front end's words, to see that In uses them all.
var frontTerms = Terms{DataDir: "--dir-flag", Server: "set THE_URL to use a running server", Program: "front"}

// frontWords are words of a command line that an Error's own message,
// read by a Go program, must not hold.
var frontWords = []string{"--data-dir", "--database-url", "PGBUS_", "DATABASE_URL", "pgbus as", "pgbus again", "stop pgbus", "another pgbus"}

// checkGoTerms fails unless err is an *Error for field (empty for none)
// whose message names the field as an Options field and no flag or
// variable of a command line, and whose In says it in the terms given.
func checkGoTerms(t *testing.T, err error, field string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T); want an *Error", err, err)
	}
	t.Logf("error: %v", err)
	if e.Field != field {
		t.Errorf("Field = %q; want %q", e.Field, field)
	}
	msg := err.Error()
	if field != "" && !strings.Contains(msg, "Options."+field) {
		t.Errorf("error %q does not name Options.%s", msg, field)
	}
	for _, w := range frontWords {
		if strings.Contains(msg, w) {
			t.Errorf("error %q says %q, words of a command line", msg, w)
		}
	}
	front := e.In(frontTerms)
	if strings.Contains(front, "Options.") || strings.Contains(front, goTerms.Server) || strings.Contains(front, goTerms.Program) {
		t.Errorf("In(front end's terms) = %q; still says Go's", front)
	}
	if field == "DataDir" && !strings.Contains(front, frontTerms.DataDir) {
		t.Errorf("In(front end's terms) = %q; does not name %s", front, frontTerms.DataDir)
	}
	return e
}

// On a system without the embedded server, Start says to use a running
// one in a Go program's terms; a front end says how in its own.
func TestUnsupportedSaysGoTerms(t *testing.T) {
	t.Parallel()
	e := checkGoTerms(t, unsupported("plan9"), "")
	if msg := e.Error(); !strings.Contains(msg, "not plan9") || !strings.Contains(msg, goTerms.Server) {
		t.Errorf("error %q; want the system and to connect to a running server", msg)
	}
	if front := e.In(frontTerms); !strings.Contains(front, frontTerms.Server) {
		t.Errorf("In = %q; want %q", front, frontTerms.Server)
	}
}

// A term a front end leaves empty is said as a Go program's.
func TestInFillsEmptyTerms(t *testing.T) {
	t.Parallel()
	e := unsupported("plan9")
	if got := e.In(Terms{Program: "x"}); got != e.Error() {
		t.Errorf("In with no Server = %q; want %q", got, e.Error())
	}
}
