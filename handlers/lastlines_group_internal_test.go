package handlers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// A command's stderr longer than what is kept, the same for every job but
// the job's id on its last line: the kept lines start at the same place
// whatever the id's digits, so the failures fall into one dead-letter
// group (the database's error pattern). Cut at a byte counted from the
// end, the kept text started a character later for each digit more, and
// 150 such failures made three groups.
func TestLastLinesOfOneFailureGroupAsOne(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for i := range 30 {
		fmt.Fprintf(&body, "step %02d of the nightly report: reading the ledger partition and its indexes\n", i)
	}
	var msgs []string
	for _, id := range []int64{7, 42, 4242, 123456789} {
		text := shownText([]byte(body.String()+fmt.Sprintf("fatal: report for message %d failed\n", id)), false, nil)
		msgs = append(msgs, (&ExitError{Command: "report.sh", ExitCode: 1, OutputName: "stderr",
			Output: lastLines(text, outputLines, outputBytes), StderrBytes: int64(len(text))}).Error())
	}
	patterns, err := pgtest.Store(t).ErrorPatterns(pgtest.Context(t), msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range patterns[1:] {
		if p != patterns[0] {
			t.Errorf("the failure of a job with a longer id has the pattern\n%q\nwant that of the first\n%q\n(messages %q and %q)", p, patterns[0], msgs[i+1], msgs[0])
		}
	}
}

// The lines kept of an output longer than the limit are the same whatever
// the digits of an id on its last line: the limit is counted with each
// run of digits as one byte, so a longer id does not push out a line (or
// keep one more) that a shorter one keeps.
func TestLastLinesKeepTheSameLinesWhateverTheDigits(t *testing.T) {
	t.Parallel()
	first := func(id string) string {
		got := lastLines("AAAAAAAAAA\nBBBBBBBBBB\nCCCCCCCCCC\njob "+id+" failed", 10, 38)
		if len(got) > 38 {
			t.Errorf("lastLines kept %d bytes, over the limit 38: %q", len(got), got)
		}
		line, _, _ := strings.Cut(got, "\n")
		return line
	}
	for _, id := range []string{"10", "100", "123456"} {
		if got, want := first(id), first("9"); got != want {
			t.Errorf("with job %s the kept lines start %q; with job 9 %q", id, got, want)
		}
	}
}
