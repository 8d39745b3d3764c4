package basepath_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/basepath"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "/pgbus": "/pgbus", "/pgbus/": "/pgbus", "/ops/pgbus-1_x.y~": "/ops/pgbus-1_x.y~", "/a:b@c": "/a:b@c"} {
		if got, err := basepath.Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"pgbus":                        "does not start with /",
		"/pgbus?x":                     "? or #",
		"/pgbus#x":                     "? or #",
		"/a/../b":                      ". or .. segment",
		"/a/./b":                       ". or .. segment",
		"/..":                          ". or .. segment",
		"/a//b":                        "empty segment",
		"//":                           "empty segment",
		"/a b":                         "not a character of a URL path",
		"/a%2fb":                       "not a character of a URL path",
		"/a\\b":                        "not a character of a URL path",
		"/é":                           "not a character of a URL path",
		"/" + strings.Repeat("a", 200): "more than 200",
	} {
		_, err := basepath.Clean(in)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "such as /pgbus") {
			t.Errorf("Clean(%q): %v; want an error saying %q and what to give", in, err, why)
		}
	}
}

func TestUnderAndStrip(t *testing.T) {
	for _, c := range []struct {
		base, path, rest string
		ok               bool
	}{
		{"", "/x", "/x", true},
		{"/pgbus", "/pgbus/", "/", true},
		{"/pgbus", "/pgbus/dlq/message", "/dlq/message", true},
		{"/pgbus", "/pgbus", "", false},
		{"/pgbus", "/pgbusx/", "", false},
		{"/pgbus", "/", "", false},
		{"/pgbus", "/other/pgbus/", "", false},
	} {
		if rest, ok := basepath.Under(c.base, c.path); rest != c.rest || ok != c.ok {
			t.Errorf("Under(%q, %q) = %q, %v; want %q, %v", c.base, c.path, rest, ok, c.rest, c.ok)
		}
	}
	r := httptest.NewRequest("GET", "/pgbus/dlq/a%2Fb?queue=x", nil)
	s := basepath.Strip(r, "/pgbus")
	if s.URL.Path != "/dlq/a/b" || s.URL.EscapedPath() != "/dlq/a%2Fb" || s.URL.RawQuery != "queue=x" || r.URL.Path != "/pgbus/dlq/a/b" {
		t.Errorf("Strip: path %q escaped %q query %q; the original's path is now %q", s.URL.Path, s.URL.EscapedPath(), s.URL.RawQuery, r.URL.Path)
	}
}
