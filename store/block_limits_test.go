package store_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// The limits of the dead-letter block as README.md documents them
// ("error_message up to 1,000 characters, backtrace up to 10 lines and
// 2,000 characters"), written out rather than taken from the code, so that
// raising a limit in the code fails here until the documentation changes.
const (
	docErrorMessageChars = 1000
	docBacktraceLines    = 10
	docBacktraceChars    = 2000
)

// The block keeps an error message of up to 1,000 characters (characters,
// not bytes) whole and cuts a longer one to exactly 1,000, the last an
// ellipsis; a backtrace to its first 10 lines and 2,000 characters.
func TestBlockLimitsAreTheDocumentedOnes(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	q := newQueue(t, s)
	long := func(n int) string { return strings.Repeat("é", n) }
	frames := func(n, width int) string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("%-*s", width, fmt.Sprintf("frame %d", i))
		}
		return strings.Join(lines, "\n")
	}
	cases := []struct {
		message, trace     string
		wantMsg, wantTrace string
	}{
		{long(docErrorMessageChars - 1), frames(docBacktraceLines, 10), long(docErrorMessageChars - 1), frames(docBacktraceLines, 10)},
		{long(docErrorMessageChars), frames(docBacktraceLines+1, 10), long(docErrorMessageChars), frames(docBacktraceLines, 10)},
		{long(docErrorMessageChars + 1), frames(3, 700), long(docErrorMessageChars-1) + "…", frames(3, 700)[:docBacktraceChars-1] + "…"},
		{long(5 * docErrorMessageChars), frames(50, 300), long(docErrorMessageChars-1) + "…", frames(docBacktraceLines, 300)[:docBacktraceChars-1] + "…"},
	}
	specs := make([]pgtest.DeadSpec, len(cases))
	for i, c := range cases {
		specs[i] = pgtest.DeadSpec{Kind: "k", Message: c.message, Trace: c.trace}
	}
	ids := pgtest.DeadLetter(t, s, q, specs...)
	for i, c := range cases {
		_, block := dlBlock(t, s, store.DLQName(q), ids[i])
		msg, trace := dlString(t, block, "error_message"), dlString(t, block, "backtrace")
		if msg != c.wantMsg {
			t.Errorf("a message of %d characters: the block keeps %d characters, want %d", utf8.RuneCountInString(c.message),
				utf8.RuneCountInString(msg), utf8.RuneCountInString(c.wantMsg))
		}
		if trace != c.wantTrace {
			t.Errorf("a backtrace of %d lines and %d characters: the block keeps %d lines and %d characters, want %d and %d",
				strings.Count(c.trace, "\n")+1, len(c.trace), strings.Count(trace, "\n")+1, utf8.RuneCountInString(trace),
				strings.Count(c.wantTrace, "\n")+1, utf8.RuneCountInString(c.wantTrace))
		}
	}
}
