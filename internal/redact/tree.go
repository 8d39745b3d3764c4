package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A tree is a JSON value decoded as encoding/json decodes it into an any
// with UseNumber: map[string]any, []any, string, json.Number, bool and
// nil. parseTree and appendTree decode and encode one without the copies
// of the whole text that a json.Decoder's buffer and a json.Encoder's
// make: a payload of megabytes costs its tree and its output, once.

// decodeTree decodes the first JSON value of raw into a tree, as a
// json.Decoder with UseNumber does; ok is false when it cannot.
func decodeTree(raw []byte) (any, bool) {
	if json.Valid(raw) {
		p := treeParser{s: raw}
		return p.value(), true
	}
	// Not one JSON value alone: the decoder, which takes the first value
	// of a text and leaves the rest, says what it is.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

// treeParser reads a text json.Valid accepted.
type treeParser struct {
	s []byte
	i int
}

func (p *treeParser) skip() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *treeParser) value() any {
	p.skip()
	switch c := p.s[p.i]; c {
	case '{':
		p.i++
		m := map[string]any{}
		p.skip()
		if p.s[p.i] == '}' {
			p.i++
			return m
		}
		for {
			p.skip()
			k := p.str()
			p.skip()
			p.i++ // :
			m[k] = p.value()
			p.skip()
			c := p.s[p.i]
			p.i++
			if c == '}' {
				return m
			}
		}
	case '[':
		p.i++
		a := make([]any, 0)
		p.skip()
		if p.s[p.i] == ']' {
			p.i++
			return a
		}
		for {
			a = append(a, p.value())
			p.skip()
			c := p.s[p.i]
			p.i++
			if c == ']' {
				return a
			}
		}
	case '"':
		return p.str()
	case 't':
		p.i += 4
		return true
	case 'f':
		p.i += 5
		return false
	case 'n':
		p.i += 4
		return nil
	default:
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.i]) >= 0 {
			p.i++
		}
		return json.Number(p.s[start:p.i])
	}
}

// str reads a string at p.i, unquoted as encoding/json unquotes it:
// invalid UTF-8 and lone surrogates read as U+FFFD.
func (p *treeParser) str() string {
	p.i++ // "
	start := p.i
	plain := true
	for ; ; p.i++ {
		c := p.s[p.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			p.i++
			continue
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
	}
	raw := p.s[start:p.i]
	p.i++
	if plain || !needsUnquote(raw) {
		return string(raw)
	}
	return unquote(raw)
}

// needsUnquote reports whether raw, a string's text between its quotes,
// holds an escape or a byte that is not valid UTF-8.
func needsUnquote(raw []byte) bool {
	return bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw)
}

func unquote(s []byte) string {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != utf8.RuneError {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r])
			}
			r++
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b)
}

// getu4 decodes \uXXXX at the start of s; -1 when there is none.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendTree appends v's JSON to dst as MarshalPlain writes it; ok is
// false when v holds what a tree does not (MarshalPlain then writes it).
func appendTree(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if x {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return appendString(dst, x), true
	case json.Number:
		if x == "" {
			return append(dst, '0'), true
		}
		if !isValidNumber(string(x)) {
			return dst, false
		}
		return append(dst, x...), true
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendTree(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendTree(dst, x[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes a string without
// HTML escaping.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isValidNumber reports whether s is a JSON number, as encoding/json
// asks of a json.Number it encodes.
func isValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		if s = s[1:]; s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = strings.TrimLeft(s[1:], "0123456789")
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = strings.TrimLeft(s[2:], "0123456789")
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			if s = s[1:]; s == "" {
				return false
			}
		}
		s = strings.TrimLeft(s, "0123456789")
	}
	return s == ""
}

// AppendPlain appends v's JSON to dst as MarshalPlain writes it, for a
// caller that writes a tree (see JSONTree) piece by piece or into a
// buffer it sized.
func AppendPlain(dst []byte, v any) []byte {
	n := len(dst)
	if out, ok := appendTree(dst, v); ok {
		return out
	}
	return append(dst[:n], MarshalPlain(v)...)
}

// Decode decodes the first JSON value of raw as a json.Decoder with
// UseNumber does, without copying raw first; ok is false when raw holds
// none.
func Decode(raw []byte) (v any, ok bool) { return decodeTree(raw) }
