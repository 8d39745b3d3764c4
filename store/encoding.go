package store

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// textFit makes pgbus's own texts (a failure's error message, class,
// backtrace and output, a breaker's last error) fit a database whose
// encoding cannot hold every character: PostgreSQL refuses a whole
// statement over one character it cannot convert, and a worker would
// retry the write of such a job's outcome for ever. It is nil where every
// character fits (UTF8, and SQL_ASCII, which stores bytes as they come).
// Payloads and headers are never changed: a send of what the database
// cannot hold is refused instead.
type textFit func(string) string

// fitFor returns the fit of texts for a server encoding: LATIN1 keeps the
// first 256 code points, any other encoding keeps ASCII (pgbus cannot
// tell each one's characters apart); the others are written as escapes
// (\u00e9), and the ellipsis that marks a cut as three dots.
func fitFor(encoding string) textFit {
	limit := rune(utf8.RuneSelf - 1)
	switch strings.ToUpper(encoding) {
	case "", "UTF8", "SQL_ASCII":
		return nil
	case "LATIN1":
		limit = 0xFF
	}
	return func(s string) string {
		if !needsFit(s, limit) {
			return s
		}
		var b strings.Builder
		for _, r := range s {
			switch {
			case r <= limit:
				b.WriteRune(r)
			case r == '…':
				b.WriteString("...")
			case r > 0xFFFF:
				fmt.Fprintf(&b, `\U%08x`, r)
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		}
		return b.String()
	}
}

func needsFit(s string, limit rune) bool {
	for _, r := range s {
		if r > limit {
			return true
		}
	}
	return false
}

func (f textFit) apply(s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// fitOf is the fit of texts for the database conn is on, as the server
// told it on connecting.
func fitOf(conn *pgx.Conn) textFit {
	return fitFor(conn.PgConn().ParameterStatus("server_encoding"))
}

// textFit is the fit of texts for the store's database, learned from its
// first connection. Where no connection can be had, texts are left as
// they are, and the write that needs one fails as it would.
func (s *Store) textFit(ctx context.Context) textFit {
	if enc := s.encoding.Load(); enc != nil {
		return fitFor(*enc)
	}
	if s.pool == nil {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil
	}
	defer conn.Release()
	enc := conn.Conn().PgConn().ParameterStatus("server_encoding")
	s.encoding.Store(&enc)
	return fitFor(enc)
}

// TextShown returns what reads a text pgbus stored fitted to the
// database's encoding (textFit) as it was written, for a reader whose
// output is UTF-8 (a Go string): each escape of a character the encoding
// lacks (\u041e, \U0001f600) read back as that character. An escape
// textFit would not write (\u0041 in LATIN1, whose A the encoding holds)
// is left as it is: the text had it. It returns nil where texts are stored
// as written (UTF8, SQL_ASCII), or while the encoding is not known yet:
// the reads of dead messages, which compare texts as stored, learn it.
// What groups texts (their keys, their patterns as compared) is left
// as stored: only what is shown changes.
func (s *Store) TextShown() func(string) string {
	enc := s.encoding.Load()
	if enc == nil || fitFor(*enc) == nil {
		return nil
	}
	limit := rune(utf8.RuneSelf - 1)
	if strings.EqualFold(*enc, "LATIN1") {
		limit = 0xFF
	}
	return func(t string) string { return unfit(t, limit) }
}

// unfit reads back the escapes fitFor wrote of characters past limit.
func unfit(t string, limit rune) string {
	if !strings.Contains(t, `\u`) && !strings.Contains(t, `\U`) {
		return t
	}
	var b strings.Builder
	for i := 0; i < len(t); {
		if t[i] == '\\' && i+1 < len(t) {
			n := 0
			switch t[i+1] {
			case 'u':
				n = 4
			case 'U':
				n = 8
			}
			if r, ok := escapedRune(t[i+2:], n); ok && r > limit && (n == 4) == (r <= 0xFFFF) {
				b.WriteRune(r)
				i += 2 + n
				continue
			}
		}
		b.WriteByte(t[i])
		i++
	}
	return b.String()
}

// escapedRune reads the n lower-case hex digits fitFor writes at the
// start of s as a character that UTF-8 can hold.
func escapedRune(s string, n int) (rune, bool) {
	if n == 0 || len(s) < n {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:n]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			return 0, false
		}
	}
	return r, utf8.ValidRune(r)
}
