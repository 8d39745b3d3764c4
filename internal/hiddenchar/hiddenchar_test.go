package hiddenchar_test

import (
	"testing"

	"github.com/pgbus/pgbus/internal/hiddenchar"
)

// Controls, bidirectional controls and invisible characters are to be
// escaped; text, tab, newline and the emoji joiner are not.
func TestIs(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{0x1b, 0x07, 0x7f, 0x9b, 0x202e, 0x2066, 0x200f, 0x061c, 0x200b, 0x2060, 0xfeff} {
		if !hiddenchar.Is(r) {
			t.Errorf("Is(%U) = false, want true", r)
		}
	}
	for _, r := range []rune{'a', 'é', '\t', '\n', ' ', 0x200d, 0x05d0, '😀'} {
		if hiddenchar.Is(r) {
			t.Errorf("Is(%U) = true, want false", r)
		}
	}
}
