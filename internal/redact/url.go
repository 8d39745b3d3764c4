package redact

import (
	"net/url"
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

// connSettings are the query parameters of a database URL that hold no
// credential and decide which database it reaches and how.
var connSettings = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true,
	"application_name": true, "connect_timeout": true, "target_session_attrs": true,
	"pool_max_conns": true, "pool_min_conns": true,
}

// DatabaseURL is URL for a database URL that a command line shows again
// to be copied: its password hidden, and of its query only the settings
// that hold no credential kept (host, port, sslmode, ...), so that a copy
// still names the same database; every other parameter, and the
// fragment, is Marker.
func DatabaseURL(raw string) string {
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
