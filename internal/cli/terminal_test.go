package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestTerminalSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text\tand\na line\n":                "plain text\tand\na line\n",
		"red \x1b[31mtext":                         `red \u001b[31mtext`,
		"over\rwrite":                              `over\u000dwrite`,
		"bell\a del\x7f nul\x00":                   `bell\u0007 del\u007f nul\u0000`,
		"csi \u009b2J and \u0085 next line":        `csi \u009b2J and \u0085 next line`,
		"é ü \u00a0 ✓ \ufffd":                      "é ü \u00a0 ✓ \ufffd",
		`{"kind":"k` + "\u009b" + `"}`:             `{"kind":"k\u009b"}`,
		"not UTF-8 \xff\xfe, a lone \xc2 there":    "not UTF-8 \xff\xfe, a lone \xc2 there",
		"8-bit csi \x9b2J, nel \x85, \xa0 kept":    `8-bit csi \x9b2J, nel \x85, ` + "\xa0 kept",
		"kind k\u202eY | 42":                       `kind k\u202eY | 42`,
		"\u2066isolates\u2069 \u200e\u200f \u061c": `\u2066isolates\u2069 \u200e\u200f \u061c`,
		"emoji 👍🏽 and \u200d joiner, עברית":        "emoji 👍🏽 and \u200d joiner, עברית",
		"or\u200bders \u2060 \ufeff":               `or\u200bders \u2060 \ufeff`,
		// Tag characters, which carry text unseen to a model, and the other
		// invisible ones; above U+FFFF as a surrogate pair, as JSON reads it.
		"tag \U000E0041\U000E0042 \U000E007F end":          `tag \udb40\udc41\udb40\udc42 \udb40\udc7f end`,
		"soft\u00adhyphen \u2062 \u180e \ufe0f \U000E0100": `soft\u00adhyphen \u2062 \u180e \ufe0f \udb40\udd00`,
	} {
		if got := string(terminalSafe([]byte(in))); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// A control whose bytes come in several writes (a C1 control's two, the
// right-to-left override's three) is escaped too; a write that ends within
// a character holds its start until the next, or until the command's end.
func TestStdoutWriterEscapesAcrossWrites(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	_, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	w := &stdoutWriter{w: &buf, cancel: cancel}
	for _, p := range []string{"a\xc2", "\x9bb \xc2", "\xa9 \xe2", "\x80", "\xae \xe2\x9c", "\x93 end\xc2"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	w.flush()
	if got, want := buf.String(), `a\u009bb `+"\u00a9 "+`\u202e `+"✓ end\xc2"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// The error line of --json goes to stderr, a terminal as often as not: a
// C1 control in it is escaped there too, and the JSON reads back the same.
func TestJSONErrorLineCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	line := "kind \"k\u009b2J\" \x1b[31mfailed"
	var buf bytes.Buffer
	(&app{}).printError(&buf, true, line, 1, errors.New(line), "pgbus queues")
	if bytes.ContainsAny(buf.Bytes(), "\u009b\x1b") {
		t.Fatalf("--json error line holds a raw control: %q", buf.String())
	}
	var got errorJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || got.Error != line {
		t.Fatalf("--json error line %q reads back as %q, %v; want %q", buf.String(), got.Error, err, line)
	}
}

// A worker's queues that do not fit in a table cell are counted, not cut
// off in the middle of a name.
func TestQueueListSaysHowManyMore(t *testing.T) {
	t.Parallel()
	var qs []string
	for i := range 100 {
		qs = append(qs, fmt.Sprintf("orders_%03d", i))
	}
	got := queueList(qs, 0)
	if !strings.HasPrefix(got, "orders_000,orders_001,") || !strings.HasSuffix(got, " more (--json lists them)") || len([]rune(got)) > maxCell ||
		strings.Count(got, "orders_")+mustAtoi(t, got[strings.LastIndex(got, "+")+1:strings.LastIndex(got, " more")]) != 100 {
		t.Fatalf("queueList of 100 queues = %q; want the first ones whole and how many more, within %d characters", got, maxCell)
	}
	if got := queueList([]string{"a", "b"}, 0); got != "a,b" {
		t.Fatalf("queueList of two = %q", got)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
