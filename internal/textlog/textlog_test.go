package textlog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/hiddenchar"
	"github.com/pgbus/pgbus/internal/textlog"
)

var at = time.Date(2026, 12, 4, 3, 44, 19, 60_000_000, time.UTC)

// line logs one record at the time at through h and returns what h wrote.
func line(t *testing.T, h slog.Handler, buf *bytes.Buffer, level slog.Level, msg string, attrs ...slog.Attr) string {
	t.Helper()
	buf.Reset()
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false)
	got := line(t, h, &buf, slog.LevelInfo, "pgbus: job dead-lettered",
		slog.String("queue", "orders"), slog.Int64("msg_id", 42), slog.Duration("took", 1500*time.Millisecond),
		slog.Bool("ok", true), slog.Float64("ratio", 0.5), slog.Time("at", at), slog.String("note", "two words"),
		slog.String("empty", ""), slog.String("eq", "a=b"), slog.String("quote", `say "hi"`),
		slog.Any("err", errors.New("card declined")), slog.Any("addr", net.IPv4(10, 0, 0, 1)), slog.Any("ids", []int{1, 2}))
	want := `2026-12-04 03:44:19.060Z INF pgbus: job dead-lettered queue=orders msg_id=42 took=1.5s ok=true ratio=0.5 ` +
		`at=2026-12-04T03:44:19.06Z note="two words" empty="" eq="a=b" quote="say \"hi\"" err="card declined" addr=10.0.0.1 ids="[1 2]"` + "\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A value holding what a downstream's error text may hold (a replacement
// character, a NUL, bytes that are not UTF-8, an escape sequence, a line
// break) is written whole, with each of them escaped: nothing after them
// is lost, and nothing reaches the terminal raw.
func TestValueWholeAndEscaped(t *testing.T) {
	t.Parallel()
	value := "exec: stderr:\nbad \ufffd nul \x00 \xff\xfe bytes\x1b[31m red\r\a end"
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		h := textlog.New(&buf, slog.LevelInfo, color)
		got := line(t, h, &buf, slog.LevelInfo, "m\x1b[2Jmsg", slog.String("error", value), slog.String("key\x1b", "v"), slog.String("bytes", "a\xffb"))
		for _, want := range []string{`"exec: stderr:\nbad ` + "\ufffd" + ` nul \x00 \xff\xfe bytes\x1b[31m red\r\a end"`, `"m\x1b[2Jmsg"`, `"key\x1b"`, `"a\xffb"`} {
			if !strings.Contains(got, want) {
				t.Errorf("color %v: the line does not hold %s:\n%q", color, want, got)
			}
		}
		own := strings.NewReplacer("\x1b[2m", "", "\x1b[22m", "", "\x1b[0m", "", "\x1b[91m", "", "\x1b[92m", "", "\x1b[93m", "")
		rest := strings.TrimSuffix(own.Replace(got), "\n")
		if i := strings.IndexFunc(rest, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
			t.Errorf("color %v: a raw control character at %d beyond the handler's own colors:\n%q", color, i, got)
		}
	}
}

// The characters the other outputs show escaped (hiddenchar: bidirectional
// controls, invisible ones, variation selectors, tag characters), which
// Go counts printable in part, are escaped too, in a message, a key and a
// value alike, each quoted value reading back as it was.
func TestHiddenCharactersEscaped(t *testing.T) {
	t.Parallel()
	value := "pay\ufe0f now\U000E0100 \U000E0041\U000E0042 \u202eevil\u2066 zero\u200bwidth soft\u00adhyphen \u061c\u180e\u2061\ufeff end"
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false)
	got := line(t, h, &buf, slog.LevelInfo, "ok\ufe0f", slog.String("error", value), slog.String("key\U000E0100", "v"), slog.String("plain", "café ok"))
	if i := strings.IndexFunc(got, func(r rune) bool { return hiddenchar.Is(r) && r != '\n' }); i >= 0 {
		t.Fatalf("a raw hidden character at %d:\n%q", i, got)
	}
	for _, want := range []string{`"ok\ufe0f"`, `"key\U000e0100"=v`, `plain="café ok"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the line does not hold %s:\n%q", want, got)
		}
	}
	_, quoted, ok := strings.Cut(got, "error=")
	quoted, _, _ = strings.Cut(quoted, ` "key`)
	if back, err := strconv.Unquote(quoted); !ok || err != nil || back != value {
		t.Errorf("the value %s reads back as %q, %v; want %q", quoted, back, err, value)
	}
}

// A line's time, and a time among its values, are written in UTC with
// the year and a Z, whatever the zone of the record's time: never the
// process's local time without its zone.
func TestTimesInUTC(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false)
	pst := time.FixedZone("PST", -8*60*60)
	buf.Reset()
	local := time.Date(2026, 12, 6, 18, 14, 13, 141_000_000, pst)
	r := slog.NewRecord(local, slog.LevelInfo, "m", 0)
	r.AddAttrs(slog.Time("at", local))
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	want := "2026-12-07 02:14:13.141Z INF m at=2026-12-07T02:14:13.141Z\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestGroupsAndWithAttrs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false).WithAttrs([]slog.Attr{slog.String("worker", "w1")}).
		WithGroup("http").WithAttrs([]slog.Attr{slog.Int("status", 503)})
	got := line(t, h, &buf, slog.LevelWarn, "retrying",
		slog.Group("req", slog.String("path", "/x"), slog.Group("empty")), slog.Attr{}, slog.Group("", slog.Int("inline", 1)))
	want := "2026-12-04 03:44:19.060Z WRN retrying worker=w1 http.status=503 http.req.path=/x http.inline=1\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestLevels(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false)
	if h.Enabled(context.Background(), slog.LevelDebug) || !h.Enabled(context.Background(), slog.LevelInfo) {
		t.Errorf("at level info: debug enabled %v, info enabled %v", h.Enabled(context.Background(), slog.LevelDebug), h.Enabled(context.Background(), slog.LevelInfo))
	}
	for level, want := range map[slog.Level]string{
		slog.LevelDebug: "DBG", slog.LevelDebug - 4: "DBG-4", slog.LevelInfo: "INF", slog.LevelInfo + 2: "INF+2",
		slog.LevelWarn: "WRN", slog.LevelError: "ERR", slog.LevelError + 4: "ERR+4",
	} {
		if got := line(t, h, &buf, level, "m"); got != "2026-12-04 03:44:19.060Z "+want+" m\n" {
			t.Errorf("level %d: %q, want %s", level, got, want)
		}
	}
}

func TestColor(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, true)
	got := line(t, h, &buf, slog.LevelError, "failed", slog.String("queue", "q"), slog.Any("cause", errors.New("boom")))
	want := "2026-12-04 03:44:19.060Z \x1b[91mERR\x1b[0m failed \x1b[2mqueue=\x1b[22mq \x1b[2mcause=\x1b[22m\x1b[91mboom\x1b[0m\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

type nilStringer struct{ s string }

func (n *nilStringer) String() string { return n.s }

// A nil pointer whose method does not expect one is <nil>, not a panic.
func TestNilPointer(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := textlog.New(&buf, slog.LevelInfo, false)
	var p *nilStringer
	if got := line(t, h, &buf, slog.LevelInfo, "m", slog.Any("p", p), slog.Any("none", nil)); !strings.HasSuffix(got, " m p=<nil> none=<nil>\n") {
		t.Errorf("got %q", got)
	}
}

// Handlers derived from one New write whole lines, however many write at
// once.
func TestConcurrentLinesStayWhole(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	root := textlog.New(&buf, slog.LevelInfo, false)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		h := root.WithAttrs([]slog.Attr{slog.Int("writer", w)})
		wg.Go(func() {
			for i := range each {
				r := slog.NewRecord(at, slog.LevelInfo, "m", 0)
				r.AddAttrs(slog.String("text", strings.Repeat("x", 100)), slog.Int("i", i))
				if err := h.Handle(context.Background(), r); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(l, "2026-12-04 03:44:19.060Z INF m writer=%d text="+strings.Repeat("x", 100)+" i=%d", &w, &i); err != nil {
			t.Fatalf("a line mixed with another: %q (%v)", l, err)
		}
	}
}
