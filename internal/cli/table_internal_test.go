package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// A table cell is cut to maxCell runes, marked: a kind of 100,000
// characters another producer wrote into a queue widened its column, and
// so every row of the table, past reading.
func TestTableCellsAreBounded(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	tb := newTable(&out, "ID", "KIND", "COUNT")
	tb.row(1, strings.Repeat("Zé", 50_000), 3)
	tb.row(2, "short", 4)
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%.500s", len(lines), out.String())
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > maxCell+20 {
			t.Errorf("a line of %d runes, want the long cell cut to %d: %.200s", n, maxCell, l)
		}
	}
	if !strings.Contains(lines[1], "ZéZé") || !strings.Contains(lines[1], "…") || !strings.HasSuffix(lines[1], "3") {
		t.Errorf("the long row %.300q, want its kind cut and marked, and the count after it", lines[1])
	}
}
