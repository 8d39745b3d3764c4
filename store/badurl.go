package store

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/redact"
)

// hideQuery returns err, pgx's error about a database URL it cannot parse,
// with the URL's query hidden as redact.URL hides it, and each value of
// the query that its reason quotes: pgx hides only passwords, and a query
// may carry other credentials (options=-c app.token=..., a proxy's
// signature). A connection string of key=value pairs has its password
// hidden whole, quoted or not.
func hideQuery(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err
	}
	shown := *pe
	if !strings.HasPrefix(pe.ConnString, "postgres://") && !strings.HasPrefix(pe.ConnString, "postgresql://") {
		// pgx hides a password up to its first blank, which leaves the
		// rest of a quoted one that never ends: 'a b c.
		shown.ConnString, _ = redact.Text(pe.ConnString)
		return &hiddenQuery{text: strings.Replace(err.Error(), pe.Error(), shown.Error(), 1), err: err}
	}
	shown.ConnString = redact.URL(pe.ConnString)
	text := strings.Replace(err.Error(), pe.Error(), shown.Error(), 1)
	for _, v := range queryParts(pe.ConnString) {
		text = strings.ReplaceAll(text, strconv.Quote(v), strconv.Quote(redact.Marker))
	}
	return &hiddenQuery{text: text, err: err}
}

// queryParts returns what a reason may quote of a URL's query: each
// parameter as written and each value as read. The query is taken both
// after the password is hidden and as written, since a user name holding
// a ? makes the password part of what the second reads as the query.
func queryParts(raw string) []string {
	var parts []string
	for _, u := range []string{redact.URLPassword(raw, redact.Marker), raw} {
		_, query, _ := strings.Cut(u, "?")
		for param := range strings.SplitSeq(query, "&") {
			_, v, _ := strings.Cut(param, "=")
			parts = append(parts, param, v)
			if unescaped, err := url.QueryUnescape(v); err == nil {
				parts = append(parts, unescaped)
			}
		}
	}
	return slices.DeleteFunc(parts, func(p string) bool { return p == "" })
}

// hiddenQuery is an error whose text had a URL's query hidden; it unwraps
// to the error, so that what it is is still told.
type hiddenQuery struct {
	text string
	err  error
}

func (e *hiddenQuery) Error() string { return e.text }
func (e *hiddenQuery) Unwrap() error { return e.err }
