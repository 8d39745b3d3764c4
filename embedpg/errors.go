package embedpg

import "fmt"

// Terms are the words an Error uses for what its advice refers to. A Go
// program sets the data directory in Options.DataDir, and those are the
// words of Error's own message; a front end that sets it by other
// means, such as a command-line flag, renders the same error in its own
// words with Error.In.
type Terms struct {
	// DataDir names where the data directory is chosen, as in "choose
	// another with Options.DataDir".
	DataDir string
	// Server says, as an instruction, how to use a PostgreSQL server that
	// runs already instead of the embedded one, as in "install them, or
	// pass the URL of a running PostgreSQL server to store.Open instead of
	// calling Start".
	Server string
	// Program names the program that calls Start, as in "run this
	// program as root".
	Program string
	// NoEmbedded says, as an instruction, how never to start the embedded
	// PostgreSQL, for a program that starts it unless told otherwise,
	// as in "set PGBUS_NO_EMBEDDED=1"; empty (a Go program's words) for a
	// program that calls Start only when it means to.
	NoEmbedded string
}

// goTerms are the words of an Error's own message: those of a Go program
// calling Start, as in the comments of Terms.
var goTerms = Terms{
	DataDir: "Options.DataDir",
	Server:  "pass the URL of a running PostgreSQL server to store.Open instead of calling Start",
	Program: "this program",
}

// An Error is an error of Start or FindBinDir whose advice names a
// setting of the caller's, or the caller itself: Error says it in a Go
// program's words (Options.DataDir, store.Open, "this program"), In in
// those of a front end.
type Error struct {
	// Field is the Options field whose change avoids the error, such as
	// "DataDir"; empty when none does.
	Field string
	err   error // the cause, for errors.Is and errors.As; may be nil
	text  func(Terms) string
}

// newError is an Error caused by err (nil for none) and avoided by another
// value of the Options field (empty for none), saying text in the terms
// given.
func newError(field string, err error, text func(Terms) string) *Error {
	return &Error{Field: field, err: err, text: text}
}

// Error returns the message in a Go program's words.
func (e *Error) Error() string { return e.text(goTerms) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// In returns the message in the terms given; a term left empty is said as
// in Error's own message.
func (e *Error) In(t Terms) string {
	if t.DataDir == "" {
		t.DataDir = goTerms.DataDir
	}
	if t.Server == "" {
		t.Server = goTerms.Server
	}
	if t.Program == "" {
		t.Program = goTerms.Program
	}
	return e.text(t)
}

// unsupported is the error of Start on a system other than Linux or
// macOS, such as goos.
func unsupported(goos string) *Error {
	return newError("", nil, func(t Terms) string {
		return fmt.Sprintf("embedpg: the embedded PostgreSQL needs Linux or macOS (not %s); %s", goos, t.Server)
	})
}
