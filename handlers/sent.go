package handlers

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/redact"
)

// MinSentSecret is the length, in characters, from which a secret value a
// handler sends is hidden where its downstream says it back: a shorter
// value would hide common words and numbers too, and is left as it is.
//
// Redaction recognises a secret by the name of its key or by its own
// shape; a downstream that echoes a value without either (an error body
// "bad key 3f9c...", a command printing its environment) would have it
// stored in the dead-letter block and the failure history, logged and
// shown, were the handler not to hide the values it knows it sent. Which
// values those are, HTTPOptions and ExecOptions say. Each exact
// occurrence is replaced by the redaction marker in the response body, a
// redirect's location, a transport error, or the command's stderr or
// stdout, before anything is stored, logged or shown.
const MinSentSecret = 8

// plainHeaders are the headers whose values describe the request's body
// or what the sender accepts, never who sends it; the values of all other
// configured headers are secrets.
var plainHeaders = []string{"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language", "Cache-Control",
	"Content-Encoding", "Content-Language", "Content-Type", "Origin", "Pragma", "User-Agent"}

// plainEnvNames and plainEnvSuffixes name the env variables whose values
// are places and settings (paths, hosts, ports, modes), not secrets:
// hiding them would hide the path or host an error names, which is what
// the error is about. Any other value is a secret.
var (
	plainEnvNames    = []string{"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP", "USER", "LOGNAME", "SHELL", "PWD"}
	plainEnvSuffixes = []string{"_DIR", "_PATH", "_HOME", "_FILE", "_MODE", "_ENV", "_LEVEL", "_HOST", "_PORT", "_REGION", "_TIMEOUT"}
)

// plainHeader reports whether a configured header's value is no secret.
func plainHeader(canonical string) bool { return slices.Contains(plainHeaders, canonical) }

// plainEnv reports whether the value of the env variable name is no
// secret. A name that looks like a secret's key (SESSION_DIR, AUTH_MODE)
// is never plain, whatever it ends with; the system's own names are,
// though PWD reads as a password's key.
func plainEnv(name string) bool {
	n := strings.ToUpper(name)
	if slices.Contains(plainEnvNames, n) || strings.HasPrefix(n, "LC_") {
		return true
	}
	return !redact.IsSecretKey(n) && slices.ContainsFunc(plainEnvSuffixes, func(s string) bool { return strings.HasSuffix(n, s) })
}

// sentSecrets are the secret values a handler sends, longest first, so
// that a value holding another is hidden whole.
type sentSecrets [][]byte

// add takes v as a secret, without the blanks around it (a header is sent
// without them, and a command printing a value may pad it), unless it is
// shorter than MinSentSecret.
func (s *sentSecrets) add(v string) {
	v = strings.TrimSpace(v)
	if utf8.RuneCountInString(v) < MinSentSecret || slices.ContainsFunc(*s, func(b []byte) bool { return string(b) == v }) {
		return
	}
	*s = append(*s, []byte(v))
	slices.SortStableFunc(*s, func(a, b []byte) int { return len(b) - len(a) })
}

// addHeader takes a header's value as a secret and, when it is a scheme
// and a credential (Bearer 3f9c...), the credential alone, which a
// downstream refusing it may quote without its scheme.
func (s *sentSecrets) addHeader(v string) {
	s.add(v)
	if f := strings.Fields(v); len(f) == 2 {
		s.add(f[1])
	}
}

// sentMark stands for a hidden secret in a downstream's output until
// redaction has run over it (unmark): the marker's brackets would end
// early a list that redaction hides whole ("X-Api-Key":["k1","k2"]),
// leaving the rest of it shown, whereas this reads as a word. Its
// characters are of Unicode's private use area, which printable keeps and
// no output holds.
const sentMark = "\uE000sent\uE000"

// mark returns b with every occurrence of a secret replaced by sentMark;
// b itself when it holds none.
func (s sentSecrets) mark(b []byte) []byte {
	for _, v := range s {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(sentMark))
		}
	}
	return b
}

// unmark turns the marks of mark into redact.Marker.
func unmark(t string) string { return strings.ReplaceAll(t, sentMark, redact.Marker) }

// hideString returns t with every occurrence of a secret replaced by
// redact.Marker: for text that is not a downstream's output, which
// shownText hides them in, but may quote it.
func (s sentSecrets) hideString(t string) string {
	for _, v := range s {
		t = strings.ReplaceAll(t, string(v), redact.Marker)
	}
	return t
}

// hiddenError is an error whose text had sent secrets hidden; it unwraps
// to the error, so that what it is (a timeout, a certificate error) is
// still told.
type hiddenError struct {
	text string
	err  error
}

func (e *hiddenError) Error() string { return e.text }
func (e *hiddenError) Unwrap() error { return e.err }

// hideErr returns err with the sent secrets its text holds hidden.
func (s sentSecrets) hideErr(err error) error {
	if err == nil || len(s) == 0 {
		return err
	}
	if text := s.hideString(err.Error()); text != err.Error() {
		return &hiddenError{text: text, err: err}
	}
	return err
}
