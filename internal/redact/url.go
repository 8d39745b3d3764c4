package redact

import (
	"net/url"
	"slices"
	"strings"
)

// URL returns raw, a URL as a message quotes it, parsed or not, with what
// of it may be a credential hidden: the password of its user info (see
// URLPassword), and its query and fragment (?token=...&sig=...), each
// replaced by Marker after its ? or #. A URL that does not parse (an
// invalid port, an @ of the password left unescaped) is what the errors
// about it quote, so raw is read as text, not parsed.
func URL(raw string) string {
	s := URLPassword(raw, Marker)
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i+1] + Marker
	}
	return s
}

// URLPassword returns raw, a URL as written, with what may be the
// password of its user info replaced by password: what follows the first
// colon up to the last @ (a password may hold one). A URL whose scheme is
// missing or malformed is quoted in errors as it is, and neither
// url.URL.Redacted nor Text, which look for a scheme, would find its
// password.
func URLPassword(raw, password string) string {
	prefix, rest := "", raw
	if i := strings.Index(raw, "//"); i >= 0 {
		prefix, rest = raw[:i+2], raw[i+2:]
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	colon := strings.IndexByte(rest[:at], ':')
	if colon < 0 {
		return raw
	}
	return prefix + rest[:colon+1] + password + rest[at:]
}

// connSettings are the query parameters of a database URL (and the keys
// of a keyword/value string) that hold no credential and decide which
// database it reaches and how.
var connSettings = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true, "sslnegotiation": true,
	"channel_binding": true, "gssencmode": true, "passfile": true, "sslcertmode": true, "sslsni": true,
	"require_auth": true, "min_protocol_version": true, "max_protocol_version": true,
	"application_name": true, "connect_timeout": true, "target_session_attrs": true,
	"default_query_exec_mode": true, "statement_cache_capacity": true, "description_cache_capacity": true,
	"pool_max_conns": true, "pool_min_conns": true, "pool_max_conn_lifetime": true,
	"pool_max_conn_lifetime_jitter": true, "pool_max_conn_idle_time": true, "pool_health_check_period": true,
}

// IsConnSetting reports whether key, a query parameter of a database URL
// or a key of a keyword/value string, is a setting that holds no
// credential (sslmode, pool_max_conns, application_name, ...), whose
// value DatabaseURL shows.
func IsConnSetting(key string) bool { return connSettings[key] }

// DatabaseURL is URL for a database URL that a command line shows again
// to be copied: its password hidden, and of its query only the settings
// that hold no credential kept (host, port, sslmode, ...), so that a copy
// still names the same database; every other parameter, and the
// fragment, is Marker.
//
// A keyword/value string (host=db password=secret) keeps the settings
// as written and has every other key's value (password's, options', ...)
// Marker, keys kept: it says what to fill in.
func DatabaseURL(raw string) string {
	if isKeywordValue(raw) {
		return keywordValue(raw)
	}
	s := URLPassword(raw, Marker)
	base, query, hasQuery := strings.Cut(s, "?")
	if !hasQuery || strings.ContainsAny(base, "#") {
		return URL(raw)
	}
	query, _, hasFragment := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		key, _, hasValue := strings.Cut(p, "=")
		if name, err := url.QueryUnescape(key); err != nil || !hasValue || !connSettings[name] {
			params[i] = Marker // its name too: what is not a setting may be a token
		}
	}
	out := base + "?" + strings.Join(params, "&")
	if hasFragment {
		out += "#" + Marker
	}
	return out
}

// connector are the keys and parameters of a connection string that say
// who connects, not where.
var connector = map[string]bool{"user": true, "password": true}

// DatabaseAddress is DatabaseURL without who connects: a URL's user and
// password, and its user and password parameters (or keys, in a
// keyword/value string), are left out. A copy reaches the same database
// as whoever runs it, with their own role (PGUSER, PGPASSWORD, or a user
// they add): a command relayed for another person to run. A URL that does
// not parse is DatabaseURL's.
func DatabaseAddress(raw string) string {
	if isKeywordValue(raw) {
		return keywordValueWithout(raw, connector)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return DatabaseURL(raw)
	}
	u.User = nil
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		u.RawQuery = strings.Join(slices.DeleteFunc(params, func(p string) bool {
			key, _, _ := strings.Cut(p, "=")
			name, err := url.QueryUnescape(key)
			return err == nil && connector[name]
		}), "&")
	}
	return DatabaseURL(u.String())
}

// isKeywordValue tells a keyword/value connection string from a URL, as
// pgx does: a URL starts with its scheme.
func isKeywordValue(raw string) bool {
	return !strings.HasPrefix(raw, "postgres://") && !strings.HasPrefix(raw, "postgresql://") && strings.Contains(raw, "=")
}

// keywordValue is DatabaseURL for a keyword/value string: each pair
// key = value, the value bare or in single quotes (backslash escaping a
// quote or a backslash), as libpq reads it. What does not read as a pair
// is Marker, and so is the rest once a quote is left open.
func keywordValue(raw string) string { return keywordValueWithout(raw, nil) }

// keywordValueWithout is keywordValue with the pairs of the keys in drop
// left out.
func keywordValueWithout(raw string, drop map[string]bool) string {
	var out []string
	rest := strings.TrimSpace(raw)
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || strings.ContainsAny(strings.TrimSpace(rest[:eq]), " \t\n'") {
			return strings.Join(append(out, Marker), " ")
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t\n")
		value, after, ok := keywordValueOf(rest)
		if !ok {
			return strings.Join(append(out, key+"="+Marker), " ")
		}
		if !connSettings[key] {
			value = Marker
		}
		if !drop[key] {
			out = append(out, key+"="+value)
		}
		rest = strings.TrimLeft(after, " \t\n")
	}
	return strings.Join(out, " ")
}

// keywordValueOf splits s into the value it starts with, as written
// (quotes included), and what follows; ok is false for a quote left open.
func keywordValueOf(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, "'") {
		end := strings.IndexAny(s, " \t\n")
		if end < 0 {
			return s, "", true
		}
		return s[:end], s[end:], true
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return s[:i+1], s[i+1:], true
		}
	}
	return "", "", false
}
