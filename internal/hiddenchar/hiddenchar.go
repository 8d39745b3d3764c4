// Package hiddenchar tells the characters that a terminal or a page must
// not show as they are: controls, which a terminal acts on, and the
// characters that reorder the text around them or hide themselves, which
// make text read otherwise than it is written.
package hiddenchar

import (
	"fmt"
	"strings"
)

// Is reports whether r is one to show escaped: a C0 control other than tab
// and newline, a C1 control, a bidirectional control, or an invisible
// character that makes two names that read alike differ (a zero-width
// space, a word joiner, a byte order mark). The zero-width joiner of emoji
// is none.
func Is(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n'
	case r >= 0x7f && r <= 0x9f:
		return true
	}
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200b || r == 0x2060 || r == 0xfeff
}

// Escape is s with each character Is reports written as a \u escape
// (\u202e), which a JSON reader reads back as the character: text that
// reads as it is written wherever it is shown.
func Escape(s string) string {
	if !strings.ContainsFunc(s, Is) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if Is(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
