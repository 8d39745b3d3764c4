package handlers

import (
	"bytes"
	"encoding/base64"
	"net/textproto"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
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
// values those are, HTTPOptions and ExecOptions say. Each occurrence is
// replaced by the redaction marker in the response body, a redirect's
// location, a transport error, or the command's stderr or stdout, before
// anything is stored, logged or shown: written as it was sent, in base64,
// or in the escapes a downstream writes text in (JSON's \/, \" and
// \u00e9, percent-encoding's %2F in either case and + for a blank, HTML's
// &amp; and &#39;), any of them mixed.
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

// A url's path may carry its secret, as a webhook's does
// (https://hooks.example.com/services/T0123ABCD/B0456EFGH/Xk9pQ2rT7vLm3nB8wZ4yC6dF):
// a segment is taken for a token when it has pathTokenChars characters or
// more (percent-decoded), no dot, and a run of tokenRunChars letters and
// digits or more that mixes both. Words, numbers, dates and versions
// (orders, 123456789012345678, 2026-11-30, v1, api-v2-events) have no such
// run, and file and host names have a dot. A UUID has one and is taken:
// the url is the same for every job, so a UUID in it names no order or
// customer of one message but the endpoint, which is often all a
// webhook's secret is (the shorter T0123ABCD of the example stays shown).
const (
	pathTokenChars = 16
	tokenRunChars  = 8
)

// tokenSegment reports whether seg, a percent-decoded segment of a url's
// path, looks like a token.
func tokenSegment(seg string) bool {
	return utf8.RuneCountInString(seg) >= pathTokenChars && !strings.Contains(seg, ".") && tokenRun(seg)
}

// tokenRun reports whether s has a run of tokenRunChars letters and
// digits or more that mixes both, as a token has and words, numbers,
// dates and versions have not.
func tokenRun(s string) bool {
	isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
	isLetter := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
	runs := strings.FieldsFunc(s, func(r rune) bool { return !isDigit(r) && !isLetter(r) })
	return slices.ContainsFunc(runs, func(run string) bool {
		return len(run) >= tokenRunChars && strings.IndexFunc(run, isDigit) >= 0 && strings.IndexFunc(run, isLetter) >= 0
	})
}

// pathUnescaped is a segment of an escaped path decoded, or as it is when
// it is no valid escape.
func pathUnescaped(seg string) string {
	if d, err := url.PathUnescape(seg); err == nil {
		return d
	}
	return seg
}

// hidePathTokens returns shown, a url as messages quote it
// (scheme://host/path, without credentials and query), with each segment
// of its path that looks like a token replaced by redact.Marker: the rest
// of the path stays readable, which tells endpoints apart.
func hidePathTokens(shown string) string {
	_, rest, ok := strings.Cut(shown, "://")
	slash := strings.IndexByte(rest, '/')
	if !ok || slash < 0 {
		return shown
	}
	start := len(shown) - len(rest) + slash
	segs := strings.Split(shown[start:], "/")
	for i, seg := range segs {
		if tokenSegment(pathUnescaped(seg)) {
			segs[i] = redact.Marker
		}
	}
	return shown[:start] + strings.Join(segs, "/")
}

// sentSecrets are the secret values a handler sends, longest first, so
// that a value holding another is hidden whole.
type sentSecrets [][]byte

// add takes v as a secret, without the blanks around it (a header is sent
// without them, and a command printing a value may pad it), unless it is
// shorter than MinSentSecret; and v in base64, as a downstream may quote
// a value it decodes or logs encoded (standard, with its padding and
// without, and URL-safe): 12 characters or more of a value's own, which
// no other text holds by chance. The other encodings of v are found where
// it is hidden (see encodedEnd).
func (s *sentSecrets) add(v string) {
	v = strings.TrimSpace(v)
	if utf8.RuneCountInString(v) < MinSentSecret {
		return
	}
	s.put(v)
	s.put(base64.StdEncoding.EncodeToString([]byte(v)))
	s.put(base64.RawStdEncoding.EncodeToString([]byte(v)))
	s.put(base64.RawURLEncoding.EncodeToString([]byte(v)))
}

// put takes v as a secret as it is, unless it has it already.
func (s *sentSecrets) put(v string) {
	if slices.ContainsFunc(*s, func(b []byte) bool { return string(b) == v }) {
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

// addNamedHeader is addHeader for the header name, which takes the value
// of each cookie of a Cookie header (session=3f9c...; theme=dark) too: a
// downstream refusing a session names its value alone.
func (s *sentSecrets) addNamedHeader(name, v string) {
	s.addHeader(v)
	if !strings.EqualFold(name, "Cookie") {
		return
	}
	for _, c := range strings.Split(v, ";") {
		if _, value, ok := strings.Cut(c, "="); ok {
			s.add(value)
		}
	}
}

// addURL takes as secrets what of u may be a credential: its password
// (as written, as a URL carries it percent-encoded, and as a request's
// Basic credential, user:password in base64), every value of its query
// (?token=...&sig=..., and a part without =, ?3f9c...), whatever its key,
// and the segments of its path that look like a token (tokenSegment), each
// as written and decoded.
func (s *sentSecrets) addURL(u *url.URL) {
	if p, ok := u.User.Password(); ok {
		s.add(p)
		_, escaped, _ := strings.Cut(u.User.String(), ":")
		s.add(escaped)
		s.add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p)))
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if decoded := pathUnescaped(seg); tokenSegment(decoded) {
			s.add(seg)
			s.add(decoded)
		}
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		_, v, found := strings.Cut(part, "=")
		if !found {
			v = part
		}
		s.add(v)
		if decoded, err := url.QueryUnescape(v); err == nil {
			s.add(decoded)
		}
	}
}

// addEnv takes the value an environment variable name is given as a
// secret, unless the name is a plain setting's (plainEnv): one rule for
// the exec handler's env and for the assignments of its command.
func (s *sentSecrets) addEnv(name, value string) {
	if !plainEnv(name) {
		s.add(value)
	}
}

// addInherited takes as secrets the values of the variables of env
// (KEY=value pairs) that a command inherits from the worker and whose
// names are a secret's (PAGER_TOKEN, AWS_SECRET_ACCESS_KEY, but not PWD):
// the worker's own keys, such as those of its alerts, which a command
// printing its environment when it fails would have stored in the DLQ and
// shown to every reader. Others (HOSTNAME, LANG) stay shown.
func (s *sentSecrets) addInherited(env []string) {
	for _, kv := range env {
		if name, value, ok := strings.Cut(kv, "="); ok && secretEnvName(name) && !plainEnv(name) {
			s.add(value)
		}
	}
}

// secretEnvSuffixes end the names of variables that hold secrets by
// convention, beyond the words of redact.IsSecretKey, which also judges
// the keys of payloads, where "key" alone names an object key, not a
// secret: STRIPE_KEY, SIGNING_KEY, DB_PW, REDIS_PASS, SENTRY_DSN.
var secretEnvSuffixes = []string{"_KEY", "_PW", "_PASS", "_DSN", "_SALT"}

// secretEnvName reports whether an environment variable's name is a
// secret's.
func secretEnvName(name string) bool {
	n := strings.ToUpper(name)
	return redact.IsSecretKey(n) || strings.Contains(n, "HMAC") ||
		slices.ContainsFunc(secretEnvSuffixes, func(s string) bool { return strings.HasSuffix(n, s) })
}

// addArgs takes as secrets what a command (its program and arguments)
// gives to options named like a secret's key, as redaction names them
// (redact.IsSecretKey: --token, --password, --api-key, --secret, --auth,
// -access-key, ...; not -p, which many programs take for a port): the
// value of --token=VALUE, and the argument after --token unless it is an
// option itself (starts with -). An argument that is a URL
// (scheme://host...) is one as the http handler's url is (addURL). A
// header (Name: value) is one as the http handler's headers are when it
// follows -H or --header (curl's and wget's option), or is given to
// --header=; any other argument of that form only when its name looks
// like a secret's key (Authorization, Proxy-Authorization, Cookie,
// X-Api-Key); the -H of grep and its kin (searchFlag) gives none. An
// assignment at a command position (commandWords: TOKEN=... deliver, env
// TOKEN=... deliver, export TOKEN=...) is one as the exec handler's env
// is (addEnv).
//
// An argument that a program before it runs as a shell command (shellArgs:
// what follows the -c of sh, bash, dash, zsh, ksh, ash and the other
// shells, of su, runuser, flock and script, sudo's -s or -i, env's -S,
// ssh's remote command, the words of watch and eval) is read as one
// ([sh, -c, "curl -H 'Authorization: Bearer 3f9c...' ..."]), whether it
// holds blanks or not: its simple commands (shellCommands) are commands
// to these rules too. So is any other argument holding blanks, which may
// be a command a program runs in ways no list names (a wrapper's
// argument); but it is more often a message (--message "msg=Deployment
// done", "status=Deployment finished"), whose words hiding would make the
// failure harder to read: an assignment at a command position in it is a
// secret only when its name is not a plain setting's (plainEnv) and
// either looks like a secret's key (API_TOKEN=...) or gives a value that
// looks like a token (tokenRun: ACME_CRED=Cr5Kd8Lw2Mq4). The other rules
// read it as they read a shell command. A shell command in such an
// argument (sh -c '...' within a wrapper's argument) is read as one.
func (s *sentSecrets) addArgs(args []string) { s.addWords(args, 0, false) }

// maxShellDepth is how many shell commands within one another addArgs
// reads (sh -c "ssh host 'curl -H ...'" is two): enough for commands
// written by hand, and it bounds the work a long quoted argument makes.
const maxShellDepth = 4

// addWords is addArgs for the words of a simple command depth deep in
// another; loose says they are the words of an argument no program is
// known to run as a shell command (see addArgs).
func (s *sentSecrets) addWords(args []string, depth int, loose bool) {
	for _, a := range secretArgs(args, loose) {
		switch {
		case a.url != nil:
			s.addURL(a.url)
		case a.header != "":
			s.addNamedHeader(a.header, a.value)
		default:
			s.add(a.value)
		}
	}
	for i, run := range shellArgs(args) {
		if readsCommand(args[i], run, depth) {
			for _, words := range shellCommands(args[i][max(run, 0):]) {
				s.addWords(words, depth+1, run < 0)
			}
		}
	}
}

// readsCommand reports whether arg, a word of a simple command depth deep
// in another, is read as a shell command (see addArgs): one a program
// runs, from run (shellArgs), or else one holding blanks, run being -1.
func readsCommand(arg string, run, depth int) bool {
	return depth < maxShellDepth && (run >= 0 || strings.ContainsAny(arg, shellBlanks))
}

// secretAssignment reports whether an assignment name=value at a command
// position gives a secret: as the env option's value does (addEnv), or,
// loose, only when the name or the value also looks like a secret's (see
// addArgs).
func secretAssignment(name, value string, loose bool) bool {
	return !plainEnv(name) && (!loose || redact.IsSecretKey(name) || tokenRun(value))
}

// urlArg is arg read as a URL (scheme://host...), or nil when it is none.
func urlArg(arg string) *url.URL {
	if u, err := url.Parse(arg); err == nil && u.Scheme != "" && u.Host != "" {
		return u
	}
	return nil
}

// secretArg is an argument of a command that is or holds a secret: an
// option's value, a URL, a header or an assignment (see addArgs).
type secretArg struct {
	i int // its index
	// value is the secret: the whole argument, or what follows the = of
	// --name=value and NAME=value, or the : of a header.
	value string
	// url is the argument read as a URL, parts of which may be secrets;
	// nil for the others.
	url *url.URL
	// header is the name of the header whose value is value; "" for the
	// others.
	header string
}

// secretArgs lists the arguments of a simple command that are a URL, a
// header, an assignment or the value of an option named like a secret's
// key, whose value is a secret (see addArgs); loose is addWords'.
func secretArgs(args []string, loose bool) []secretArg {
	program, assigns := commandWords(args)
	var out []secretArg
	for _, i := range assigns {
		if name, value, _ := strings.Cut(args[i], "="); secretAssignment(name, value, loose) {
			out = append(out, secretArg{i: i, value: value})
		}
	}
	for i, a := range args {
		if u := urlArg(a); u != nil {
			out = append(out, secretArg{i: i, value: a, url: u})
			continue
		}
		if h, ok := headerArg(args, i, program); ok {
			out = append(out, h)
		}
		name, value, inline := secretOption(a)
		switch {
		case name == "":
		case inline:
			out = append(out, secretArg{i: i, value: value})
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			out = append(out, secretArg{i: i + 1, value: args[i+1]})
		}
	}
	return out
}

// quotedArgs is a simple command as errors quote it: the secrets addArgs
// takes hidden, whatever their length, a value by redact.Marker (of an
// option, a header, an assignment) and a URL as quotedURL quotes it.
// Where two hide parts of one argument (an option's value that is also a
// URL or a header), the one that hides more is shown. An empty value
// (--token=) hides nothing, nor does a lone $, what a command
// substitution leaves of the value it gives (TOKEN=$(cat file), whose
// command is read on its own). loose is addWords'.
func quotedArgs(args []string, loose bool) []string {
	out := slices.Clone(args)
	for _, a := range secretArgs(args, loose) {
		q := quotedURL(args[a.i])
		switch {
		case a.url != nil:
		case a.value == "" || a.value == "$":
			continue
		default:
			q = strings.TrimSuffix(args[a.i], a.value) + redact.Marker
		}
		if out[a.i] == args[a.i] || len(q) < len(out[a.i]) {
			out[a.i] = q
		}
	}
	return out
}

// shellEdits are the edits that make command, a shell command depth deep
// in the handler's, read as errors quote it: the words of each simple
// command as quotedArgs quotes them, and the shell commands within them
// alike, however deep addArgs reads them, each secret hidden where it is
// whatever its length; the rest stays as it was written, quotes and all.
// loose is addWords'.
func shellEdits(command string, depth int, loose bool) []edit {
	var edits []edit
	for _, c := range splitShell(command).commands {
		args := wordTexts(c)
		quoted, runs := quotedArgs(args, loose), shellArgs(args)
		for i, w := range c {
			changed, kept := quoted[i] != w.text, len(w.text)
			if changed {
				kept = commonPrefix(w.text, quoted[i])
				edits = append(edits, w.replaceFrom(kept, quoted[i][kept:]))
			}
			if !readsCommand(w.text, runs[i], depth) {
				continue
			}
			start := max(runs[i], 0)
			for _, e := range shellEdits(w.text[start:], depth+1, runs[i] < 0) {
				e.start, e.end = e.start+start, e.end+start
				if !changed || e.end <= kept && e.start < kept {
					edits = append(edits, w.within(e))
				}
			}
		}
	}
	return edits
}

// argAt is args[i], or "" where there is none.
func argAt(args []string, i int) string {
	if i < 0 || i >= len(args) {
		return ""
	}
	return args[i]
}

// headerFlag reports whether arg is the option that gives a header (-H,
// --header), and the header it gives itself (--header=Name: value,
// -HName: value), if any.
func headerFlag(arg string) (header string, given, ok bool) {
	for _, flag := range []string{"--header=", "--header", "-H"} {
		if rest, found := strings.CutPrefix(arg, flag); found && (rest == "" || flag != "--header") {
			return rest, rest != "", true
		}
	}
	return "", false, false
}

// headerArg reads args[i] of a simple command whose program is
// args[program] as a header (Name: value) whose value is a secret: one
// named like a secret's key or, when given to -H or --header, one whose
// value is a secret as a configured header's is (all but plainHeaders).
func headerArg(args []string, i, program int) (secretArg, bool) {
	arg, toH := args[i], false
	if h, given, ok := headerFlag(arg); ok && given {
		arg, toH = h, true
	} else if _, given, ok := headerFlag(argAt(args, i-1)); ok && !given {
		toH = !searchFlag(args, i-1, program)
	}
	name, value, ok := strings.Cut(arg, ":")
	if !ok || !headerName(name) {
		return secretArg{}, false
	}
	if !redact.IsSecretKey(name) && (!toH || plainHeader(textproto.CanonicalMIMEHeaderKey(name))) {
		return secretArg{}, false
	}
	return secretArg{i: i, value: strings.TrimLeft(value, " \t"), header: name}, true
}

// searchPrograms take -H for "name the file of each match", not for a
// header: grep -H 'Error: disk full' app.log searches the log for no
// secret.
var searchPrograms = []string{"grep", "egrep", "fgrep", "zgrep", "rg", "ack"}

// searchFlag reports whether args[h], -H, is an option of a search
// program (searchPrograms) rather than a header's: args[program] is one,
// and only options come between them. Wherever it is not sure (grep -e
// pattern -H ..., a grep run by xargs or sudo), -H gives a header, whose
// value is hidden: hiding a pattern is safe, showing a credential is not.
func searchFlag(args []string, h, program int) bool {
	if args[h] != "-H" || program >= h || !slices.Contains(searchPrograms, path.Base(args[program])) {
		return false
	}
	return !slices.ContainsFunc(args[program+1:h], func(a string) bool { return !strings.HasPrefix(a, "-") })
}

// headerName reports whether name reads as a header's name: a letter,
// then letters, digits, - and _. Not the scheme of a URL, which addArgs
// reads before, nor a time (10:30).
func headerName(name string) bool {
	isLetter := func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }
	first, _ := utf8.DecodeRuneInString(name)
	return isLetter(first) && strings.IndexFunc(name, func(r rune) bool {
		return !isLetter(r) && (r < '0' || r > '9') && r != '-' && r != '_'
	}) < 0
}

// secretOption returns the name of arg when it is an option (-name,
// --name, --name=value) named like a secret's key, and the value it gives
// itself, if any; "" for any other argument.
func secretOption(arg string) (name, value string, inline bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", "", false
	}
	name, value, inline = strings.Cut(strings.TrimLeft(arg, "-"), "=")
	isName := name != "" && strings.Trim(strings.ToLower(name), "abcdefghijklmnopqrstuvwxyz0123456789-_") == ""
	if !isName || !redact.IsSecretKey(name) {
		return "", "", false
	}
	return name, value, inline
}

// sentMark stands for a hidden secret in a downstream's output until
// redaction has run over it (unmark): the marker's brackets would end
// early a list that redaction hides whole ("X-Api-Key":["k1","k2"]),
// leaving the rest of it shown, whereas this reads as a word. Its
// characters are of Unicode's private use area, which printable keeps and
// no output holds.
const sentMark = "\uE000sent\uE000"

// mark returns b with every occurrence of a secret, as written or encoded
// (see encodedEnd), replaced by sentMark; b itself when it holds none.
func (s sentSecrets) mark(b []byte) []byte {
	for _, v := range s {
		b = replaceEncoded(b, v, []byte(sentMark))
	}
	return b
}

// unmark turns the marks of mark into redact.Marker.
func unmark(t string) string { return strings.ReplaceAll(t, sentMark, redact.Marker) }

// hideString returns t with every occurrence of a secret, as written or
// encoded, replaced by redact.Marker: for text that is not a downstream's
// output, which shownText hides them in, but may quote it.
func (s sentSecrets) hideString(t string) string {
	b := []byte(t)
	for _, v := range s {
		b = replaceEncoded(b, v, []byte(redact.Marker))
	}
	return string(b)
}

// replaceEncoded returns b with every occurrence of v in it, as written
// or encoded (see encodedEnd), replaced by with; b itself when it holds
// none.
func replaceEncoded(b, v, with []byte) []byte {
	var out []byte
	var at [][]int // encodedEnd's, made at its first use
	last, found := 0, false
	for i := 0; i < len(b); i++ {
		if !mayStart(b[i], v[0]) {
			continue
		}
		end := encodedEnd(b, i, v, &at)
		if end < 0 {
			continue
		}
		out = append(append(out, b[last:i]...), with...)
		last, found = end, true
		i = end - 1
	}
	if !found {
		return b
	}
	return append(out, b[last:]...)
}

// mayStart reports whether the byte c of a text may start a value whose
// first byte is first: as itself or as an escape's first byte.
func mayStart(c, first byte) bool {
	return c == first || c == '%' || c == '\\' || c == '&'
}

// encodedEnd returns where an occurrence of v that starts at t[i] ends,
// the furthest one, or -1 when none starts there. Each character of v may
// be written as itself or in one of the escapes of the text a downstream
// writes (decodedAt): JSON's (\/, \", \\, \n, \u00e9 and a pair of
// surrogates for a character beyond them, its hex in either case),
// percent-encoding's (%2F, %c3%a9, + for a blank) and HTML's (&amp;, &lt;,
// &#39;, &#xE9;), one character in one, the next in another. Only text
// that decodes to v is taken for it, so no other text is hidden. at is
// room for the search, kept from one call to the next.
func encodedEnd(t []byte, i int, v []byte, at *[][]int) int {
	first, n := decodedAt(t, i)
	if !slices.ContainsFunc(first[:n], func(u decodedUnit) bool { return bytes.HasPrefix(v, u.b[:u.n]) }) {
		return -1 // most places: no search
	}
	// reach[k] are the offsets in t after which v[:k] has been read from
	// i.
	if *at == nil {
		*at = make([][]int, len(v)+1)
	}
	reach := *at
	for k := range reach {
		reach[k] = reach[k][:0]
	}
	reach[0] = append(reach[0], i)
	for k, furthest := 0, 0; k < len(v) && k <= furthest; k++ {
		for _, j := range reach[k] {
			units, n := decodedAt(t, j)
			for _, u := range units[:n] {
				if next := k + u.n; next <= len(v) && bytes.Equal(u.b[:u.n], v[k:next]) && len(reach[next]) < maxReach &&
					!slices.Contains(reach[next], j+u.size) {
					reach[next] = append(reach[next], j+u.size)
					furthest = max(furthest, next)
				}
			}
		}
	}
	if len(reach[len(v)]) == 0 {
		return -1
	}
	return slices.Max(reach[len(v)])
}

// maxReach bounds how many ends of a start of a value encodedEnd follows
// at once. Text reads as a start of a value in more than one way only
// where the value holds a byte that starts an escape (\, %, &), written
// both as it is and escaped: a value of many backslashes in a text of
// many would otherwise be followed in as many ways.
const maxReach = 4

// decodedUnit is what size bytes of a text stand for: the bytes b[:n].
type decodedUnit struct {
	b       [utf8.UTFMax]byte
	n, size int
}

// decodedAt returns the ways t[j:] starts: its byte as it is and, where
// an escape starts there, what the escape stands for.
func decodedAt(t []byte, j int) (units [2]decodedUnit, n int) {
	if j >= len(t) {
		return units, 0
	}
	units[0] = decodedUnit{b: [utf8.UTFMax]byte{t[j]}, n: 1, size: 1}
	n = 1
	rest := t[j:]
	var r rune = -1
	size := 0
	switch rest[0] {
	case '+':
		r, size = ' ', 1
	case '%':
		if len(rest) >= 3 {
			if c, ok := hexValue(rest[1:3]); ok {
				units[1] = decodedUnit{b: [utf8.UTFMax]byte{byte(c)}, n: 1, size: 3}
				return units, 2
			}
		}
	case '\\':
		r, size = jsonEscape(rest)
	case '&':
		r, size = htmlEscape(rest)
	}
	if size > 0 && r >= 0 {
		u := decodedUnit{size: size}
		u.n = utf8.EncodeRune(u.b[:], r)
		units[1], n = u, 2
	}
	return units, n
}

// jsonEscaped returns the character JSON writes as a backslash and c (\'
// is JavaScript's), or -1 when there is none.
func jsonEscaped(c byte) rune {
	switch c {
	case '"', '\\', '/', '\'':
		return rune(c)
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return -1
}

// jsonEscape reads the JSON escape s starts with (\n, \/, \u00e9, or two
// of \uXXXX for a surrogate pair) and returns the character it stands
// for and its length; 0 when s starts with none.
func jsonEscape(s []byte) (rune, int) {
	if len(s) < 2 {
		return 0, 0
	}
	if r := jsonEscaped(s[1]); r >= 0 {
		return r, 2
	}
	if s[1] != 'u' || len(s) < 6 {
		return 0, 0
	}
	r, ok := hexValue(s[2:6])
	switch {
	case !ok:
		return 0, 0
	case !utf16.IsSurrogate(rune(r)):
		return rune(r), 6
	case len(s) >= 12 && s[6] == '\\' && s[7] == 'u':
		if low, ok := hexValue(s[8:12]); ok {
			if pair := utf16.DecodeRune(rune(r), rune(low)); pair != utf8.RuneError {
				return pair, 12
			}
		}
	}
	return 0, 0
}

// htmlEntities are the named entities HTML escapes write.
var htmlEntities = map[string]rune{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\''}

// htmlEscape reads the HTML entity s starts with (&amp;, &#39;, &#xE9;)
// and returns the character it stands for and its length; 0 when s
// starts with none.
func htmlEscape(s []byte) (rune, int) {
	end := bytes.IndexByte(s[:min(len(s), 10)], ';')
	if end < 2 {
		return 0, 0
	}
	name := string(s[1:end])
	if r, ok := htmlEntities[name]; ok {
		return r, end + 1
	}
	base, digits := 10, strings.TrimPrefix(name, "#")
	if digits == name {
		return 0, 0
	}
	if hex, ok := strings.CutPrefix(strings.ToLower(digits), "x"); ok {
		base, digits = 16, hex
	}
	r, err := strconv.ParseUint(digits, base, 21)
	if err != nil || digits == "" || digits[0] == '+' || !utf8.ValidRune(rune(r)) {
		return 0, 0
	}
	return rune(r), end + 1
}

// hexValue is the value of the hex digits h, in either case.
func hexValue(h []byte) (int, bool) {
	v := 0
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
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
