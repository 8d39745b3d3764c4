package store

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/redact"
)

// urlError is the error of OpenLazyAs for raw, a database URL pgx could
// not parse (err): the URL as hideQuery shows it, pgx's reason, and what
// to do about that reason (urlAdvice).
func urlError(raw string, err error) error {
	return badURL{fmt.Errorf("store: parse database URL: %w; %s", hideQuery(err), urlAdvice(raw, err))}
}

// userinfoAdvice is how to write a database URL, its user info included:
// the advice for a URL whose user info is at fault, or whose form is.
const userinfoAdvice = "write it as postgres://USER@HOST:PORT/DATABASE, a password after the user and a colon (USER:PASSWORD@HOST), with its @, : and / percent-encoded (%40, %3A, %2F)"

// sslmodes are the values sslmode takes.
const sslmodes = "disable, allow, prefer, require, verify-ca or verify-full"

// urlAdvice says what to do about raw, a database URL (or keyword/value
// string) pgx could not parse, for the reason err gives: a scheme other
// than postgres:// or postgresql:// is named as such; a parameter pgx
// could not use is named with its value, when it holds no credential
// (redact.IsConnSetting), and what it takes; a port that is not a number,
// or a password's bytes that cannot be read, get the advice on the user
// info, as does a string that is neither a URL nor keyword/value pairs.
func urlAdvice(raw string, err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return userinfoAdvice
	}
	reason := pe.Error()
	if _, r, ok := strings.Cut(reason, "`: "); ok {
		reason = r
	}
	if scheme, ok := urlScheme(raw); ok && !isPostgresURL(raw) {
		if strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql") {
			return "a database URL starts with postgres:// or postgresql://, in lower case: write it as postgres://USER@HOST:PORT/DATABASE"
		}
		if len(scheme) > 20 {
			scheme = scheme[:20] + "..."
		}
		return "its scheme is " + scheme + "://, not postgres:// or postgresql://: pgbus keeps its queues in PostgreSQL only; give a PostgreSQL URL, postgres://USER@HOST:PORT/DATABASE"
	}
	var inner string
	if cause := errors.Unwrap(pe); cause != nil {
		inner = cause.Error()
	}
	switch {
	case strings.HasPrefix(reason, "failed to parse as keyword/value"):
		return userinfoAdvice + ", or as key=value pairs separated by spaces (host=HOST port=PORT dbname=DATABASE user=USER), a value that holds spaces in single quotes"
	case strings.HasPrefix(reason, "failed to parse as URL"):
		switch {
		case strings.Contains(inner, "in password"):
			return "the password cannot be read: " + userinfoAdvice + ", and a % in it as %25"
		case strings.Contains(inner, "query parameter"):
			return "write each parameter of its query as key=value, joined by &, with an & or = in a value percent-encoded (%26, %3D)"
		case strings.Contains(inner, "percent-encoded"):
			return "a % in a database URL starts a percent-encoded byte (%XX): write a % itself as %25"
		case strings.Contains(inner, "IPv6"):
			return "write it as postgres://USER@HOST:PORT/DATABASE with an IPv6 HOST in brackets, its ] included: postgres://USER@[::1]:5432/DATABASE"
		}
		return userinfoAdvice
	case strings.HasPrefix(reason, "invalid port"):
		if passwordHoldsSlash(raw) {
			// postgres://u:pa/ss@h/db: what comes before the / is read
			// as HOST:PORT.
			return "the password seems to hold a / or ?, which ends the host: " + userinfoAdvice + ", a ? as %3F"
		}
		return "give each host's port as a number, postgres://USER@HOST:5432/DATABASE"
	case strings.HasPrefix(reason, "could not match"):
		return "give one port for every host, postgres://USER@HOST1:PORT1,HOST2:PORT2/DATABASE, or one port after the last host for them all"
	}
	key, what := badParam(reason, inner)
	if key == "" {
		return "fix what pgx names in the database URL, or leave that parameter out"
	}
	return paramAdvice(raw, key, what)
}

// badParam is the parameter pgx names in reason (and inner, its cause) as
// one it could not use, and what it takes, "" for a reason that names
// none.
func badParam(reason, inner string) (key, what string) {
	if strings.HasPrefix(reason, "failed to configure TLS") {
		switch {
		case strings.Contains(inner, "sslmode is invalid"):
			return "sslmode", "sslmode takes " + sslmodes
		case strings.Contains(inner, `both "sslcert" and "sslkey"`):
			return "sslcert", "give both sslcert and sslkey, the client's certificate and its key, or neither"
		case strings.Contains(inner, "CA file"), strings.Contains(inner, "CA to cert pool"):
			return "sslrootcert", "sslrootcert names a file of PEM certificates of the authorities that sign the server's: check that it exists and this process may read it"
		case strings.Contains(inner, "sslkey"), strings.Contains(inner, "decrypt key"), strings.Contains(inner, "sslpassword"):
			return "sslkey", "sslkey names the file of the client certificate's key, in PEM: check that it exists, this process may read it, and (encrypted) sslpassword"
		case strings.Contains(inner, "cert"):
			return "sslcert", "sslcert names the file of the client's certificate, in PEM: check that it exists and this process may read it"
		}
		return "sslmode", "sslmode takes " + sslmodes
	}
	for _, p := range []struct{ key, what string }{
		{"pool_max_conns", "a whole number, 1 or more"},
		{"pool_min_conns", "a whole number, at most pool_max_conns"},
		{"pool_min_idle_conns", "a whole number"},
		{"pool_max_conn_lifetime_jitter", "a duration, such as 1m"},
		{"pool_max_conn_lifetime", "a duration, such as 1h"},
		{"pool_max_conn_idle_time", "a duration, such as 30m"},
		{"pool_health_check_period", "a duration, such as 1m"},
		{"connect_timeout", "seconds, a whole number (0 waits as long as the network does)"},
		{"target_session_attrs", "any, read-write, read-only, primary, standby or prefer-standby"},
		{"channel_binding", "disable, prefer or require"},
		{"require_auth", "a comma list of password, md5, scram-sha-256, gss, sspi or none, each with ! before it to refuse it"},
		{"sslcertmode", "disable, allow or require"},
		{"min_protocol_version", "3.0, 3.2 or latest"},
		{"max_protocol_version", "3.0, 3.2 or latest"},
		{"default_query_exec_mode", "cache_statement, cache_describe, describe_exec, exec or simple_protocol"},
		{"statement_cache_capacity", "a whole number"},
		{"description_cache_capacity", "a whole number"},
		{"service", "a service of the service file"},
	} {
		if strings.Contains(reason, p.key) {
			return p.key, p.key + " takes " + p.what
		}
	}
	return "", ""
}

// paramAdvice says to fix or leave out parameter key of raw, whose value
// is shown unless it may hold a credential, or the environment variable
// that set it, when raw does not; what says what it takes.
func paramAdvice(raw, key, what string) string {
	value, inURL := paramValue(raw, key)
	named := "the parameter " + key
	switch {
	case inURL && redact.IsConnSetting(key):
		shown, _, hash := strings.Cut(value, "#")
		named += "=" + shown
		if hash && isPostgresURL(raw) {
			// postgres://h/db?sslmode=disable#frag: pgx reads the #
			// and what follows as part of the value.
			what += "; a database URL has no fragment: the # and what follows it are read as part of the value of " + key + ", so leave them out, or percent-encode a # in a value as %23"
		}
	case !inURL:
		if env := pgEnv[key]; env != "" && os.Getenv(env) != "" {
			return fmt.Sprintf("the environment variable %s sets %s, which the database URL does not: %s; fix %s or unset it", env, key, what, env)
		}
	}
	return "fix " + named + " of the database URL, or leave it out: " + what
}

// pgEnv are the environment variables pgx reads the settings of a
// database URL from, by the setting, for those paramAdvice names.
var pgEnv = map[string]string{
	"sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
	"sslcertmode": "PGSSLCERTMODE", "connect_timeout": "PGCONNECT_TIMEOUT", "target_session_attrs": "PGTARGETSESSIONATTRS",
	"channel_binding": "PGCHANNELBINDING", "require_auth": "PGREQUIREAUTH", "service": "PGSERVICE",
	"min_protocol_version": "PGMINPROTOCOLVERSION", "max_protocol_version": "PGMAXPROTOCOLVERSION",
}

// paramValue is the value of key in raw, a URL's query or a keyword/value
// string, as written (the last, as pgx reads it), and whether raw sets it.
func paramValue(raw, key string) (string, bool) {
	var value string
	var found bool
	if isPostgresURL(raw) {
		_, query, _ := strings.Cut(raw, "?")
		for param := range strings.SplitSeq(query, "&") {
			k, v, _ := strings.Cut(param, "=")
			if name, err := url.QueryUnescape(k); err == nil && name == key {
				if unescaped, err := url.QueryUnescape(v); err == nil {
					v = unescaped
				}
				value, found = v, true
			}
		}
		return value, found
	}
	for _, field := range strings.Fields(raw) {
		if k, v, ok := strings.Cut(field, "="); ok && k == key {
			value, found = strings.Trim(v, "'"), true
		}
	}
	return value, found
}

// isPostgresURL reports whether raw is read as a URL, as pgx reads it.
func isPostgresURL(raw string) bool {
	return strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://")
}

// urlScheme is the scheme raw starts with when it is written as a URL
// (letters, digits, +, - and . before a colon and a slash): "mysql" of
// mysql://h/db, "postgres" of postgres:/h/db.
func urlScheme(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok || scheme == "" || !strings.HasPrefix(rest, "/") {
		return "", false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return scheme, true
}

// passwordHoldsSlash reports whether raw, a URL pgx found a bad port in,
// has an @ after the first / or ? of its authority: a password holding
// one of them, unescaped, ends the host there, and what came before is
// read as HOST:PORT.
func passwordHoldsSlash(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return false
	}
	end := strings.IndexAny(rest, "/?")
	return end >= 0 && strings.Contains(rest[end:], "@")
}

// hideQuery returns err, pgx's error about a database URL it cannot parse,
// with the URL shown as redact.DatabaseURL shows it (its password hidden,
// and of its query the settings that hold no credential kept), and each
// value of the query's other parameters that its reason quotes hidden:
// pgx hides only passwords, and a query may carry other credentials
// (options=-c app.token=..., a proxy's signature). A connection string of
// key=value pairs has its password hidden whole, quoted or not.
func hideQuery(err error) error {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return err
	}
	shown := *pe
	if !isPostgresURL(pe.ConnString) {
		// pgx hides a password up to its first blank, which leaves the
		// rest of a quoted one that never ends: 'a b c.
		shown.ConnString, _ = redact.Text(pe.ConnString)
		return &hiddenQuery{text: strings.Replace(err.Error(), pe.Error(), shown.Error(), 1), err: err}
	}
	shown.ConnString = redact.DatabaseURL(pe.ConnString)
	text := strings.Replace(err.Error(), pe.Error(), shown.Error(), 1)
	for _, v := range queryParts(pe.ConnString) {
		text = strings.ReplaceAll(text, strconv.Quote(v), strconv.Quote(redact.Marker))
	}
	return &hiddenQuery{text: text, err: err}
}

// queryParts returns what a reason may quote of a URL's query that may
// be a credential: each parameter as written and each value as read, but
// those of the settings that hold none (redact.IsConnSetting). The query
// is taken both after the password is hidden and as written, since a user
// name holding a ? makes the password part of what the second reads as
// the query.
func queryParts(raw string) []string {
	var parts []string
	for _, u := range []string{redact.URLPassword(raw, redact.Marker), raw} {
		_, query, _ := strings.Cut(u, "?")
		for param := range strings.SplitSeq(query, "&") {
			k, v, hasValue := strings.Cut(param, "=")
			if name, err := url.QueryUnescape(k); err == nil && hasValue && redact.IsConnSetting(name) && !strings.Contains(v, "#") {
				continue
			}
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
