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
