package redact

import "strings"

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
