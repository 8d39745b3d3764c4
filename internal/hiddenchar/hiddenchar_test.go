package hiddenchar_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/hiddenchar"
)

// Controls, bidirectional controls and invisible characters are to be
// escaped; text, tab, newline and the emoji joiner are not.
func TestIs(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x1b, 0x07, 0x7f, 0x9b, 0x202e, 0x2066, 0x200f, 0x061c, 0x200b, 0x2060, 0xfeff,
		0x00ad, 0x180e, 0x2061, 0x2064, 0xfe00, 0xfe0f, 0xe0000, 0xe0001, 0xe0041, 0xe007f, 0xe0100, 0xe01ef} {
		if !hiddenchar.Is(r) {
			t.Errorf("Is(%U) = false, want true", r)
		}
	}
	for _, r := range []rune{'a', 'é', '\t', '\n', ' ', 0x200d, 0x05d0, '😀', 0x2065, 0xfe10, 0xe0080, 0xe01f0} {
		if hiddenchar.Is(r) {
			t.Errorf("Is(%U) = true, want false", r)
		}
	}
}

// Escape writes a character above U+FFFF as a JSON reader reads it back:
// the two \u escapes of its UTF-16 surrogate pair (U+E0041, a tag
// character, as \udb40\udc41), never \ue0041, which JSON reads as
// U+E004 and a "1".
func TestEscapeReadsBackAsJSON(t *testing.T) {
	t.Parallel()
	in := "pay\U000E0041\U000E0042 now\u00ad\u202e \U000E0100 ok"
	got := hiddenchar.Escape(in)
	if want := `pay\udb40\udc41\udb40\udc42 now\u00ad\u202e \udb40\udd00 ok`; got != want {
		t.Fatalf("Escape(%q) = %q, want %q", in, got, want)
	}
	var back string
	if err := json.Unmarshal([]byte(`"`+got+`"`), &back); err != nil || back != in {
		t.Fatalf("%q reads back from JSON as %q, %v; want %q", got, back, err, in)
	}
}
