// Package basepath checks the path prefix the HTTP server is served
// under behind a reverse proxy (pgbus serve --base-path), and tells the
// paths under it from the others. The proxy forwards requests unchanged:
// the server sees the prefix, and every address it writes must carry it.
package basepath

import (
	"fmt"
	"net/http"
	"strings"
)

// MaxLen bounds a base path: it is written into every link of every page.
const MaxLen = 200

// Clean checks p and returns it as the server uses it: empty for none (the
// server at /), else starting with a slash and ending without one, so that
// "/pgbus/" and "/pgbus" are the same. The error says what to give.
func Clean(p string) (string, error) {
	if p == "" || p == "/" {
		return "", nil
	}
	bad := func(why string) error {
		return fmt.Errorf("base path %q %s; give the path the reverse proxy forwards, such as /pgbus (or leave it out to serve at /)", clip(p), why)
	}
	if len(p) > MaxLen {
		return "", bad(fmt.Sprintf("is %d bytes long, more than %d", len(p), MaxLen))
	}
	if !strings.HasPrefix(p, "/") {
		return "", bad("does not start with /")
	}
	if strings.ContainsAny(p, "?#") {
		return "", bad("contains ? or #, which end a path")
	}
	for _, c := range []byte(p) {
		if !pathChar(c) {
			return "", bad(fmt.Sprintf("contains %q, which is not a character of a URL path (letters, digits, and - . _ ~ ! $ & ' ( ) * + , ; = : @ / only)", c))
		}
	}
	p = strings.TrimSuffix(p, "/")
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return "", bad("has an empty segment (//)")
		case ".", "..":
			return "", bad("has a . or .. segment, which browsers and proxies resolve away")
		}
	}
	return p, nil
}

// pathChar reports whether c may stand in a path segment as it is, without
// percent-encoding (RFC 3986's pchar, less '%': an encoded character would
// be compared with the decoded path the server sees), or is a slash.
func pathChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0
}

// Under reports whether path, a request's, lies under base (base + "/"
// and below), and returns the rest of it: "/" for base+"/", "/x" for
// base+"/x". base itself is not under it: the server redirects it to
// base+"/". With an empty base every path is under it, unchanged.
func Under(base, path string) (rest string, ok bool) {
	if base == "" {
		return path, true
	}
	if rest, ok := strings.CutPrefix(path, base); ok && strings.HasPrefix(rest, "/") {
		return rest, true
	}
	return "", false
}

// Strip returns r as the handlers behind base see it: its URL's path
// without base (which Under reported it has). r itself is not changed.
func Strip(r *http.Request, base string) *http.Request {
	if base == "" {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, _ = Under(base, r.URL.Path)
	// The escaped form starts with base too, unless the client encoded a
	// character of it: then it is left to be computed again from the path.
	if rest, ok := Under(base, r.URL.RawPath); ok && r.URL.RawPath != "" {
		u.RawPath = rest
	} else {
		u.RawPath = ""
	}
	r2.URL = &u
	return r2
}

// clip shortens a long value for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
