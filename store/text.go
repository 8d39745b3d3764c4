package store

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckJSONText reports why PostgreSQL's jsonb would refuse JSON that
// encoding/json accepts, or "" when it would not: bytes that are not UTF-8,
// a \u0000 escape, or a \u escape of half a surrogate pair. b must already
// be valid JSON.
func CheckJSONText(b []byte) string {
	if !utf8.Valid(b) {
		return "it is not valid UTF-8"
	}
	// In valid JSON a backslash only appears inside a string, as an escape.
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		i++
		if b[i] != 'u' {
			continue
		}
		r, ok := hex4(b, i+1)
		if !ok {
			continue
		}
		i += 4
		switch {
		case r == 0:
			return `it holds a \u0000 escape (a NUL character), which PostgreSQL cannot store`
		case r >= 0xDC00 && r <= 0xDFFF:
			return `it holds a \u escape of a lone low surrogate (\uDC00 to \uDFFF)`
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if lo, ok := hex4(b, i+3); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return `it holds a \u escape of a high surrogate (\uD800 to \uDBFF) not followed by a low one`
		}
	}
	return ""
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// CheckText reports why a string cannot be stored in PostgreSQL as text or
// inside jsonb, or "" when it can: it is not valid UTF-8 or holds a NUL.
func CheckText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "it is not valid UTF-8"
	case strings.ContainsRune(s, 0):
		return "it holds a NUL character, which PostgreSQL cannot store"
	}
	return ""
}

// CheckValueText reports why a JSON-able value (maps, slices and strings as
// from encoding/json, nested) holds a string or key CheckText refuses, or "".
func CheckValueText(v any) string {
	switch x := v.(type) {
	case string:
		return CheckText(x)
	case map[string]any:
		for k, e := range x {
			if why := CheckText(k); why != "" {
				return "a key " + why[3:]
			}
			if why := CheckValueText(e); why != "" {
				return why
			}
		}
	case []any:
		for _, e := range x {
			if why := CheckValueText(e); why != "" {
				return why
			}
		}
	case []string:
		for _, e := range x {
			if why := CheckText(e); why != "" {
				return why
			}
		}
	case map[string]string:
		for k, e := range x {
			if why := CheckText(k); why != "" {
				return "a key " + why[3:]
			}
			if why := CheckText(e); why != "" {
				return why
			}
		}
	}
	return ""
}

// jsonbText is JSON text b as pgbus hands it to PostgreSQL: every \u escape
// of a character past ASCII written as the character itself, in UTF-8, a
// surrogate pair as the one character it encodes. The JSON is the same
// value, and the same jsonb in every database, but a database in
// SQL_ASCII reads no such escape (PostgreSQL has no conversion to it and
// refuses the whole statement), while it stores a character's bytes as
// they come; encoding/json escapes U+2028 and U+2029 in every text it
// writes. Escapes PostgreSQL refuses anyway (\u0000, half a surrogate
// pair; CheckJSONText) are left as they are, as are the other escapes.
func jsonbText(b []byte) string {
	if !bytes.Contains(b, []byte(`\u`)) {
		return string(b)
	}
	// From the first backslash: the first \u may be the end of an escaped
	// backslash.
	i := bytes.IndexByte(b, '\\')
	out := make([]byte, 0, len(b))
	out = append(out, b[:i]...)
	for ; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		if b[i+1] != 'u' {
			// Another escape, such as \\ before a u that escapes nothing.
			out = append(out, c, b[i+1])
			i++
			continue
		}
		r, ok := hex4(b, i+2)
		n := 6
		if ok && utf16.IsSurrogate(r) {
			lo, isLow := rune(0), false
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				lo, isLow = hex4(b, i+8)
			}
			r, n = utf16.DecodeRune(r, lo), 12
			if !isLow || r == utf8.RuneError {
				ok = false
			}
		}
		if !ok || r < utf8.RuneSelf {
			out = append(out, c, b[i+1])
			i++
			continue
		}
		out = utf8.AppendRune(out, r)
		i += n - 1
	}
	return string(out)
}
