package dashboard

import (
	"strings"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/hiddenchar"
)

// visible is s with every character that would reorder or hide what a page
// shows written as its \uXXXX escape (a surrogate pair above U+FFFF,
// hiddenchar.AppendEscape), as the command line writes it: the
// bidirectional controls (U+202E, the right-to-left override, shows the
// text after it reversed, "1_tixe.cexe"), the invisible characters that
// make two names that read alike differ, and the control characters but
// tab and line feed. Text from messages (error messages, backtraces,
// kinds, payloads) is whatever another program wrote; <bdi> keeps such a
// character from reordering what follows its element, not the rest of the
// text it is in. Within a JSON string the escape means the same
// character, so JSON shown keeps its data.
func visible(s string) string {
	i := strings.IndexFunc(s, unsafeOnPage)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if unsafeOnPage(r) {
			b.Write(hiddenchar.AppendEscape(nil, r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeOnPage reports whether visible escapes r: invalid UTF-8 is left
// to the template's own escaping.
func unsafeOnPage(r rune) bool { return r != utf8.RuneError && hiddenchar.Is(r) }
