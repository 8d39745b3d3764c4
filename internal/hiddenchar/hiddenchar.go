// Package hiddenchar tells the characters that a terminal or a page must
// not show as they are: controls, which a terminal acts on, and the
// characters that reorder the text around them or hide themselves, which
// make text read otherwise than it is written.
package hiddenchar

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Is reports whether r is one to show escaped: a C0 control other than tab
// and newline, a C1 control, a bidirectional control, or an invisible
// character that makes two names that read alike differ or carries text
// unseen (a zero-width space, a word joiner, a byte order mark, a soft
// hyphen, the Mongolian vowel separator, the invisible operators
// U+2061–U+2064, the variation selectors U+FE00–U+FE0F and
// U+E0100–U+E01EF, the tag characters U+E0000–U+E007F, in which text
// can be spelled that a model reads and a person does not see). The
// zero-width joiner of emoji is none; the emoji presentation selector
// (U+FE0F) is, as every variation selector: a run of them spells bytes.
func Is(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t' && r != '\n'
	case r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x00ad:
		return false
	}
	return r == 0x00ad || r == 0x061c || r == 0x180e || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x2066 && r <= 0x2069) || r == 0x200b || (r >= 0x2060 && r <= 0x2064) || r == 0xfeff ||
		(r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0000 && r <= 0xe007f) || (r >= 0xe0100 && r <= 0xe01ef)
}

// AppendEscape appends r's \u escape to b: \u202e, or for a character
// above U+FFFF its UTF-16 surrogate pair, \udb40\udc41 for U+E0041, as
// JSON writes it, so that a JSON reader reads the escape back as r.
func AppendEscape(b []byte, r rune) []byte {
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		return fmt.Appendf(b, `\u%04x\u%04x`, hi, lo)
	}
	return fmt.Appendf(b, `\u%04x`, r)
}

// Escape is s with each character Is reports written as a \u escape
// (\u202e; \udb40\udc41 above U+FFFF, AppendEscape), which a JSON reader
// reads back as the character: text that reads as it is written wherever
// it is shown.
func Escape(s string) string {
	if !strings.ContainsFunc(s, Is) {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	for _, r := range s {
		if Is(r) {
			b = AppendEscape(b, r)
			continue
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
