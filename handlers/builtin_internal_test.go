package handlers

import (
	"strings"
	"testing"
)

func TestTextBounds(t *testing.T) {
	t.Parallel()
	if got := snippet(shownText([]byte(strings.Repeat("é", 1000)), false, nil), 101); len(got) > 101 || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "éé") {
		t.Errorf("snippet %q (%d bytes)", got, len(got))
	}
	if got := snippet(shownText([]byte("a\x00b\r\nc\xff\x1b[31m\x7f\uFFFD"), false, nil), 100); got != `a\x00b`+"\n"+`c\xff\x1b[31m\x7f`+"\uFFFD" {
		t.Errorf("snippet %q", got)
	}
	if got := snippet(shownText([]byte("amount is missing\r\n \n"), false, nil), 100); got != "amount is missing" {
		t.Errorf("snippet %q keeps the body's trailing blanks", got)
	}
	var lines []string
	for i := range 50 {
		lines = append(lines, strings.Repeat("x", i))
	}
	got := lastLines(shownText([]byte(strings.Join(lines, "\n")+"\n\n"), false, nil), 10, 1000)
	if n := strings.Count(got, "\n"); n != 9 || !strings.HasSuffix(got, strings.Repeat("x", 49)) {
		t.Errorf("lastLines kept %d lines: %q", n+1, got)
	}
	if got := lastLines(shownText([]byte(strings.Repeat("ü", 2000)), false, nil), 10, 100); len(got) > 100 || !strings.HasPrefix(got, "üü") || !strings.HasSuffix(got, "ü…") {
		t.Errorf("lastLines %q (%d bytes)", got, len(got))
	}
	// One long last line keeps its start, and the line before it that
	// says why stays.
	why := "fatal: the ledger refused entry 42"
	got = lastLines(shownText([]byte("starting\n"+why+"\ndump: "+strings.Repeat("{}", 10_000)+"\n"), false, nil), 10, 700)
	if !strings.HasPrefix(got, "starting\n"+why+"\ndump: {}") || !strings.HasSuffix(got, "…") || len(got) > 700 {
		t.Errorf("lastLines with a long last line: %q (%d bytes)", got, len(got))
	}
	// Many long lines still end with the last ones, cut at the front.
	got = lastLines(shownText([]byte(strings.Repeat(strings.Repeat("y", 400)+"\n", 5)+why), false, nil), 10, 700)
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…\n"+why) || len(got) > 700 {
		t.Errorf("lastLines of long lines: %q (%d bytes)", got, len(got))
	}
}

func TestCapture(t *testing.T) {
	t.Parallel()
	var c capture
	chunk := []byte(strings.Repeat("0123456789", 3277)) // 32770 bytes
	for range 100 {
		if n, err := c.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	_, _ = c.Write([]byte("\nthe end"))
	if c.total != 100*32770+8 || len(c.head) != MaxCapture || string(c.head[:10]) != "0123456789" {
		t.Errorf("total %d, head %d bytes", c.total, len(c.head))
	}
	if last := c.last(); len(last) < tailKeep || len(last) > 2*tailKeep || !strings.HasSuffix(string(last), "\nthe end") {
		t.Errorf("last %d bytes ending %q", len(last), last[max(0, len(last)-20):])
	}
	var small capture
	_, _ = small.Write([]byte("short"))
	if string(small.last()) != "short" {
		t.Errorf("last %q", small.last())
	}
}
