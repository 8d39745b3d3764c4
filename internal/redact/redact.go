// Package redact finds secrets in free text and in JSON and hides them. It
// is the one implementation of pgbus's redaction: ops shows it to every
// front end (ops.RedactText, ops.RedactJSON, ops.IsSecretKey), and the
// packages below ops, which may not import it (handlers), hide with it the
// secrets of a downstream's output before they cut that output short.
package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marker replaces every secret hidden.
const Marker = "[REDACTED]"

// secretKeyWords are the parts of an object key (or of a key=value pair in
// text) whose value is never shown. A key matches when, lower-cased, it
// contains one of them.
var secretKeyWords = []string{
	"password", "passwd", "passphrase", "pwd", "secret", "token", "apikey", "api_key", "api-key",
	"accesskey", "access_key", "access-key", "authorization", "credential", "privatekey", "private_key",
	"private-key", "cookie", "session", "bearer", "jwt", "signature", "cvv", "cvc", "ssn",
	"card_number", "cardnumber", "card-number", "credit_card", "creditcard", "iban",
	// Spelled out: a key holds the words, not their initials.
	"social_security", "socialsecurity", "social-security", "social security",
}

// IsSecretKey reports whether the value under key is hidden.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretKeyWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	// auth, x-auth, auth_header; not author.
	if i := strings.Index(k, "auth"); i >= 0 && !strings.HasPrefix(k[i:], "author") {
		return true
	}
	if k == "card" || k == "pan" || strings.Contains(k, "passcode") {
		return true
	}
	// pass as a word of its own: db_pass, smtp-pass, pass; not passenger.
	for from := 0; ; {
		i := strings.Index(k[from:], "pass")
		if i < 0 {
			return false
		}
		i += from
		if (i == 0 || isKeySeparator(k[i-1])) && (i+4 == len(k) || isKeySeparator(k[i+4])) {
			return true
		}
		from = i + 1
	}
}

// isKeySeparator reports whether c separates the words of a key.
func isKeySeparator(c byte) bool { return c == '_' || c == '-' || c == '.' || c == ' ' }

// secretPattern finds one kind of secret in free text: the match loses
// everything after its first group (the key, scheme or prefix that says
// what it is), which is replaced by Marker and then by tail.
//
// Every match starts where one of hints stands in the text, in lower case
// (or, for a URL, at the scheme before it: see schemeStart). The search
// tries the pattern, anchored, only there: a text without any of them
// skips the pattern, and a long text holding one costs what its few
// candidates cost, not a run of the case-blind pattern over all of it,
// which takes seconds over a megabyte of error text.
type secretPattern struct {
	re    *regexp.Regexp
	tail  string
	hints []string
	// keyed: the match starts with a bare key (password=, token: ...),
	// which is no key when it ends a path (see inPath).
	keyed bool
	// start, when set, returns where a match that reaches the hint at i
	// starts, at or after from; -1 when none can.
	start func(s string, i, from int) int
	// accept, when set, reports whether the match m (its submatch
	// indexes in s) holds a secret; one it refuses is kept.
	accept func(s string, m []int) bool

	// Set by init from re.
	anchored  *regexp.Regexp // re, matching only at the start of its input
	wordStart bool           // re starts with \b
	hintNums  []int          // the numbers of hints
	hintIDs   []bool         // by the number of a hint: whether hints has it
}

func init() {
	for i := range secretText {
		p := &secretText[i]
		src := p.re.String()
		p.anchored = regexp.MustCompile(`^(?:` + src + `)`)
		p.wordStart = strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(src, "(?i)"), "()"), `\b`)
		for _, h := range p.hints {
			if len(h) < 2 {
				panic("redact: a hint is at least two bytes long: " + h) // see places
			}
			id := slices.Index(hints, h)
			if id < 0 {
				id = len(hints)
				hints = append(hints, h)
				hintsByFirst[h[0]] = append(hintsByFirst[h[0]], id)
			}
			p.hintNums = append(p.hintNums, id)
		}
	}
	for i := range secretText {
		p := &secretText[i]
		p.hintIDs = make([]bool, len(hints))
		for _, id := range p.hintNums {
			p.hintIDs[id] = true
		}
	}
}

// secretKeyHints are parts of every key secretTextKey matches.
var secretKeyHints = []string{"pass", "pwd", "secret", "token", "api", "access", "auth", "credential", "private",
	"cookie", "session", "jwt", "signature", "cvv", "cvc", "ssn", "card", "social"}

// Parts of the key=value patterns of secretText: a secret-looking key, what
// separates it from its value (its closing quote, maybe escaped, then :, =,
// :=, => or == with or without spaces around, or = percent-encoded, as in
// a URL carried in another's query), and an authorization scheme that may
// open the value.
const (
	secretTextKey = `(?:(?:password|passwd|passphrase|secret|credential|api[ _-]?key|access[ _-]?key|private[ _-]?key|cookie)s?|pwd|secret[ _-]?key|token|authorization|auth|session(?:[_-]?id)?|jwt|signature|cvv|cvc|ssn|social[ _-]?security(?:[ _-]?(?:number|num|no))?|card[_-]?number|pass(?:code)?)` + secretTextSuffix
	// secretTextSuffix ends a key that says how a secret is kept:
	// password_hash, tokenValue, secret_key_base, X-Auth-Token-Old. Other
	// words after a key's (tokens, session_count, author) name counts
	// and people, not secrets.
	secretTextSuffix = `(?:[_-]?(?:value|hash|base|old|new|b64|base64|enc|encrypted|digest|plain))?`
	secretTextSep    = `\\?["']?\s*(?::=|=>|==|[:=]|%3[Dd])\s*`
	// secretTextBareSep is secretTextSep before a value not quoted: an =
	// (:=, => ...) followed by a blank gives one only with a blank
	// before it too (password = hunter2); key= and a blank is an empty
	// value, as a command printing its environment writes one (token=
	// db=), and the next word is no secret of its. A colon takes blanks
	// after it (password: hunter2).
	secretTextBareSep = `\\?["']?(?:\s*:\s*|\s+(?::=|=>|==|=|%3[Dd])\s*|(?::=|=>|==|=|%3[Dd]))`
	secretTextScheme  = `(?:(?:bearer|basic|token|digest|bot|apikey|negotiate|oauth)\s+)?`
	// jsonEscapedChar is a character of a value as JSON may escape it
	// and a value not quoted, which ends at a backslash, does not: / as
	// \/ (PHP's json_encode writes it so), a letter outside ASCII as
	// \u00e9. Other escapes stand for what ends such a value (\", \n,
	// \u0026 for &) and end it.
	jsonEscapedChar = `\\/|\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})`
)

// secretText finds secrets in free text: error messages, backtraces,
// header values and string values of payloads.
var secretText = []secretPattern{
	// A list under a key, all of it: "X-Api-Key":["k1","k2"] as a Go
	// http.Header marshals to JSON (a downstream echoing the request's
	// headers in its error), X-Api-Key:[k1 k2] as fmt prints one. The
	// patterns below would hide only its first item; it goes first, as
	// their markers would end the list early.
	{re: regexp.MustCompile(`(?i)(` + secretTextKey + secretTextSep + `)\[[^\]]*\]`), hints: secretKeyHints},
	// Private key blocks.
	{re: regexp.MustCompile(`(-----BEGIN [A-Z ]*PRIVATE KEY-----)[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`), hints: []string{"-----begin "}},
	// Passwords in URLs and DSNs: scheme://user:password@host. A password
	// may hold an @ that was not escaped: the host follows the last one.
	// In JSON as PHP writes it, :// is :\/\/.
	{re: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*:(?://|\\/\\/)[^/\s:@]*:)[^\s/]+@`), tail: "@", hints: []string{"://", `:\/\/`}, start: schemeStart},
	// Bearer and basic credentials.
	{re: regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)(?:[A-Za-z0-9._~+/=-]|\\/){6,}`), hints: []string{"bearer", "basic"}},
	// "key": "value", key="a value with spaces", and JSON quoted in text
	// (\"key\":\"value\", as %q writes a request body into an error):
	// everything up to the closing quote.
	{re: regexp.MustCompile(`(?i)(` + secretTextKey + secretTextSep + `\\?"` + secretTextScheme + `)(?:[^"\\]|\\[^"])+`), hints: secretKeyHints},
	{re: regexp.MustCompile(`(?i)(` + secretTextKey + secretTextSep + `'` + secretTextScheme + `)[^']+`), hints: secretKeyHints},
	// A quoted key and its value, as JSON, a Python dict or a Ruby hash
	// written into text holds them ("card": "5500...", 'pan': 4111...,
	// \"card\": \"...\" in JSON quoted in a JSON string): the value of
	// every key IsSecretKey hides in a payload is hidden here too, so that
	// an error echoing a request body shows what its payload shows. The
	// patterns above hide those of the keys they know first.
	{re: regexp.MustCompile(`(?i)(` + quotedKey + quotedKeySep + `\\*"` + secretTextScheme + `)(?:[^"\\]|\\+[^"\\])+`), hints: quotedKeyHints, start: quoteStart, accept: quotedSecret},
	{re: regexp.MustCompile(`(?i)(` + quotedKey + quotedKeySep + `'` + secretTextScheme + `)[^'\n]+`), hints: quotedKeyHints, start: quoteStart, accept: quotedSecret},
	// Its value not quoted: a JSON number, array or object (flat). true,
	// false and null are no secrets, as in a payload; neither is a small
	// count (see quotedSecret).
	{re: regexp.MustCompile(`(?i)(` + quotedKey + quotedKeySep + `)(?:-?\d(?:[\d.eE+]|[ -]\d)*|\[[^\[\]]*\]|\{[^{}]*\})`), hints: quotedKeyHints, start: quoteStart, accept: quotedNumber},
	// A card number after a bare key for it: card=4111..., pan: 4111
	// 1111 ..., cc=..., credit_card="...". Only a number of 12 to 19
	// digits, maybe in groups, is taken for one: "card declined" and
	// "pan: hot" are words.
	{re: regexp.MustCompile(`(?i)((?:card|pan|cc)(?:[_-]?(?:number|num|no))?\\*["']?\s*(?:[:=]|=>)\s*\\*["']?)\d(?:[ -]?\d){11,18}\b`), hints: []string{"card", "pan", "cc"}, accept: cardKey},
	// key=value, key: value; a scheme (Authorization: Token t) is kept and
	// what follows it hidden; a number may be written in groups (card
	// numbers). A value does not start with = or >, the rest of a
	// separator (=> "quoted", hidden by the patterns above).
	{re: regexp.MustCompile(`(?i)(` + secretTextKey + secretTextBareSep + secretTextScheme + `)(?:\d+(?:[ -]\d+)+\b|(?:[^\s"',;&)}\]\\=>]|` + jsonEscapedChar + `)(?:[^\s"',;&)}\]\\]|` + jsonEscapedChar + `)*)`), hints: secretKeyHints, keyed: true},
	// In a sentence: "with password hunter2", "the secret is 'a b'": a
	// password's or secret's key, blanks (maybe "is" or "was"), then a
	// value that is quoted or holds a digit or a symbol, as a secret does
	// and a word of the sentence does not ("password authentication
	// failed for user" keeps its words). A value does not start with the
	// separator of key = value, which the pattern above hides.
	{re: regexp.MustCompile(`(?i)((?:password|passwd|passphrase|pwd|secret|api[ _-]?key|access[ _-]?key|private[ _-]?key)\s+(?:(?:is|was)\s+)?)(?:'[^'\s][^']*'|"[^"\s][^"]*"|(?:[0-9!#$%&*+?@^~|]|[^\s"',;)}\]=:>][^\s"',;)}\]]*[0-9!#$%&*+/=?@^~|-])[^\s"',;)}\]]*)`), hints: secretKeyHints},
	// A MySQL client's password, given as -pPASSWORD.
	{re: regexp.MustCompile(`(\bmysql[a-z]*\s(?:[^\s]+\s)*?-p)[^\s]+`), hints: []string{"mysql"}},
	// Tokens recognisable by their shape.
	{re: regexp.MustCompile(`()\b(?:sk|pk|rk)[-_](?:live|test)[-_][A-Za-z0-9]{6,}`), hints: []string{"sk_", "sk-", "pk_", "pk-", "rk_", "rk-"}},
	{re: regexp.MustCompile(`()\bsk-[A-Za-z0-9_-]{16,}`), hints: []string{"sk-"}},
	{re: regexp.MustCompile(`()\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), hints: []string{"akia", "asia"}},
	{re: regexp.MustCompile(`()\bgh[pousr]_[A-Za-z0-9]{20,}`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{re: regexp.MustCompile(`()\bgithub_pat_[A-Za-z0-9_]{20,}`), hints: []string{"github_pat_"}},
	{re: regexp.MustCompile(`()\bAIza[0-9A-Za-z_-]{35}`), hints: []string{"aiza"}},
	{re: regexp.MustCompile(`()\bxox[abprs]-[A-Za-z0-9-]{10,}`), hints: []string{"xox"}},
	{re: regexp.MustCompile(`()\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}`), hints: []string{"eyj"}},
	{re: regexp.MustCompile(`()\bglpat-[A-Za-z0-9_-]{20,}`), hints: []string{"glpat-"}},
	{re: regexp.MustCompile(`()\bnpm_[A-Za-z0-9]{36}`), hints: []string{"npm_"}},
	{re: regexp.MustCompile(`()\bwhsec_[A-Za-z0-9+/=]{20,}`), hints: []string{"whsec_"}},
	{re: regexp.MustCompile(`()\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}`), hints: []string{"sg."}},
	// A Slack webhook's URL is its secret: everything after services/.
	{re: regexp.MustCompile(`(hooks\.slack\.com\\?/(?:services|workflows)\\?/)(?:[A-Za-z0-9/_-]|\\/)+`), hints: []string{"hooks.slack.com/", `hooks.slack.com\/`}},
}

// Parts of the patterns of a quoted key: its quote (maybe escaped, as in
// JSON quoted in a JSON string, at any depth), its name, which holds one
// of quotedKeyHints and quotedSecret checks with IsSecretKey, and what
// separates it from its value.
var (
	quotedKey = `\\*["']([^"'\\\n]{0,` + strconv.Itoa(quotedKeyReach) + `}?(?:` + strings.Join(quotedKeyHints, "|") +
		`)[^"'\\\n]{0,` + strconv.Itoa(quotedKeyReach) + `})\\*["']`
	quotedKeySep = `\s*(?::|=>|=)\s*`
)

// quotedKeyReach bounds, in characters, the name of a quoted key before
// and after the word of quotedKeyHints it holds.
const quotedKeyReach = 60

// quotedKeyHints are the words one of which every key IsSecretKey hides
// holds.
var quotedKeyHints = []string{"pass", "pwd", "secret", "token", "api", "access", "auth", "credential", "private",
	"cookie", "session", "bearer", "jwt", "signature", "cvv", "cvc", "ssn", "card", "iban", "social", "pan"}

// quoteStart returns where a quoted key holding the hint at i starts, at
// or after from: at the nearest quote before the hint, with the
// backslashes that escape it. -1: there is none within the reach of
// quotedKey, or a backslash or a line's end comes first.
func quoteStart(s string, i, from int) int {
	// A character is at most 4 bytes; the pattern checks the reach.
	for j := i; j > from && i-j <= 4*quotedKeyReach; j-- {
		switch s[j-1] {
		case '"', '\'':
			q := j - 1
			for q > from && s[q-1] == '\\' {
				q--
			}
			return q
		case '\\', '\n':
			return -1
		}
	}
	return -1
}

// quotedSecret reports whether the match m of a quoted key's pattern
// holds a secret: its key, the second group, is one IsSecretKey hides (ſ
// and the Kelvin sign read as s and k, as the pattern reads them).
func quotedSecret(s string, m []int) bool {
	return IsSecretKey(quotedName(s, m))
}

func quotedName(s string, m []int) string {
	return strings.ToLower(strings.NewReplacer("ſ", "s", "\u212a", "k").Replace(s[m[4]:m[5]]))
}

// quotedNumber is quotedSecret for a value not quoted, which is no secret
// when it is a small count, a number of one to three digits without a
// leading zero ("tokens": 5, "session_count": 2), but under a key of card
// data or its codes.
func quotedNumber(s string, m []int) bool {
	key := quotedName(s, m)
	if !IsSecretKey(key) {
		return false
	}
	v := s[m[3]:m[1]]
	if len(v) > 3 || v[0] == '0' && len(v) > 1 || strings.Trim(v, "0123456789") != "" {
		return true
	}
	return key == "pan" || containsAny(key, digitKeys)
}

// cardKey reports whether the match m of the card number pattern starts
// a key of its own: not the end of a longer word (scorecard, japan,
// account).
func cardKey(s string, m []int) bool {
	return m[0] == 0 || !isAlnum(s[m[0]-1])
}

// Text hides secrets in free text and returns how many it hid.
func Text(s string) (string, int) {
	n := 0
	f := fold(s)
	for _, p := range secretText {
		before := n
		s = p.replace(s, f, &n)
		if n != before {
			f = fold(s)
		}
	}
	return s, n
}

// replace hides the matches of p in s, but those hidden already and, for
// a keyed pattern, those whose key ends a path, and adds how many it hid
// to n. After a key that ends a path, the search goes on from its value,
// which may hold a secret of its own ("/auth: token=...").
func (p secretPattern) replace(s string, f *folded, n *int) string {
	c := newHintCursor(f, p.hintIDs)
	if c == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for pos := 0; pos < len(s); {
		m := p.find(s, c, pos)
		if m == nil {
			break
		}
		start, end, keep := m[0], m[1], m[3] // the kept first group starts the match
		if p.keyed {
			end = valueEnd(s, keep, end)
		}
		switch {
		case strings.HasPrefix(s[keep:], Marker[:len(Marker)-1]):
			pos = end
			continue
		case p.keyed && p.letThrough(s, start, keep, end):
			pos = keep
			continue
		case p.accept != nil && !p.accept(s, m):
			pos = start + 1
			continue
		}
		b.WriteString(s[last:keep])
		b.WriteString(Marker)
		b.WriteString(p.tail)
		last, pos = end, end
		*n++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// find returns the submatch indexes, in s, of the first match at or after
// pos, or nil: it tries the pattern at each hint from pos on.
func (p secretPattern) find(s string, c *hintCursor, pos int) []int {
	if c == nil {
		return nil
	}
	for {
		i := c.next(pos)
		if i < 0 {
			return nil
		}
		pos = i + 1
		start := i
		if p.start != nil {
			if start = p.start(s, i, c.from); start < 0 {
				continue
			}
		}
		if p.wordStart && start > 0 && isWordByte(s[start-1]) {
			continue
		}
		m := p.anchored.FindStringSubmatchIndex(s[start:])
		if m == nil {
			continue
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += start
			}
		}
		return m
	}
}

// schemeStart returns where the URL whose :// is at s[i:] starts, at or
// after from: its scheme is the run of letters, digits, +, . and - before
// the ://, from its first letter on. -1: there is no scheme.
func schemeStart(s string, i, from int) int {
	j := i
	for j > from && isSchemeByte(s[j-1]) {
		j--
	}
	for ; j < i; j++ {
		if isLetter(s[j]) {
			return j
		}
	}
	return -1
}

func isSchemeByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

func isWordByte(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '_' }

// valueEnd returns where the bare value s[keep:end] ends: before a colon
// that ends it and is followed by a space. That colon joins the errors of
// a chain, as Go's "%s: %w" writes them ("GET /items?api_key=...: 500"),
// and hidden with the value it would leave the next error hanging; a
// secret is rarely written with a colon at its end.
func valueEnd(s string, keep, end int) int {
	if end-keep > 1 && s[end-1] == ':' && end < len(s) && s[end] == ' ' {
		return end - 1
	}
	return end
}

// letThrough reports whether the keyed match s[start:end], its value at
// keep, is no key and value but a name followed by what happened to it:
// the key ends a path (see inPath), or it ends a name that an error
// chain's ": " follows, as queues and job kinds are named
// ("enqueue to refresh_token: connection refused"), and the value is what
// such a chain goes on with (see afterName), or, after a signature's or a
// cookie's name and ": ", the first word of a sentence (see startsProse).
// A key=value, a key:value
// without the space and a value after an authorization scheme
// ("Authorization: Token ...") are a secret's whatever the value. Whether
// the key also names a queue is not asked: a queue named refresh_token is
// where a refresh_token: value turns up.
func (p secretPattern) letThrough(s string, start, keep, end int) bool {
	if start > 0 && isAlnum(s[start-1]) && bareWord(s[start:keep], "pass", "passcode") {
		return true // bypass: true, compass: north
	}
	value := s[keep:end]
	if inPath(s, start) {
		return notSecret(value) || p.startsWithKey(value)
	}
	key := s[start:keep]
	return strings.HasSuffix(key, ": ") && (afterName(key, value) || isCount(key, value, s[end:]) || startsProse(key, value))
}

// proseKeys name what prose speaks of as often as a secret: after one of
// them and ": ", a word of letters alone starts a sentence (x509: invalid
// signature: parent certificate cannot sign this kind of certificate;
// securecookie: the value is not valid), which no signature or cookie is.
// The names of passwords, tokens and secrets are not among them: a
// password may be a word.
var proseKeys = []string{"signature", "cookie", "cookies"}

// startsProse reports whether value, after key (a key of its own, then
// ": "), is the word that starts a sentence rather than a secret: the key
// is one of proseKeys and the value a word of small letters, its first
// maybe a capital.
func startsProse(key, value string) bool {
	if !slices.Contains(proseKeys, strings.ToLower(strings.TrimRight(key, " \t\"':\\"))) {
		return false
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < 'a' || c > 'z') && (i > 0 || c < 'A' || c > 'Z') {
			return false
		}
	}
	return value != ""
}

// bareWord reports whether key, a match's key and separator, is one of
// words, which are secret only as a word of their own (DB_PASS= but not
// bypass=).
func bareWord(key string, words ...string) bool {
	k := strings.ToLower(strings.TrimRight(key, " \t\"':=>"))
	return slices.Contains(words, k)
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// afterName reports whether value, after key (a key outside a path and
// ": "), is what follows a name in an error: one of errorWords or, after
// a quoted name, an article, as pgbus's own messages quote a queue's name
// (`send to "reset_password": a batch holds ...`). An unquoted key before
// an article may start a passphrase of words.
func afterName(key, value string) bool {
	v := strings.ToLower(value)
	if slices.Contains(errorWords, v) {
		return true
	}
	quoted := strings.HasSuffix(key, `": `) || strings.HasSuffix(key, `': `)
	return quoted && slices.Contains(articles, v)
}

// articles open the sentences that follow a quoted name.
var articles = []string{"the", "a", "an"}

// digitKeys are the parts of keys whose secret may be a short number: a
// card's verification code has three digits, a social security number
// starts with three.
var digitKeys = []string{"cvv", "cvc", "ssn", "social", "card"}

// isCount reports whether value, after key and followed by rest, counts
// what the word after it names ("refresh_token: 3 messages ready"): a
// number of one to three digits, without a leading zero, then a space and
// a letter. A longer number may be a one-time code or a PIN, and none is
// let through after a key for card numbers, their codes and social
// security numbers.
func isCount(key, value, rest string) bool {
	if len(value) > 3 || value[0] == '0' && len(value) > 1 || strings.Trim(value, "0123456789") != "" {
		return false
	}
	if len(rest) < 2 || rest[0] != ' ' || !isLetter(rest[1]) {
		return false
	}
	return !containsAny(strings.ToLower(key), digitKeys)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// inPath reports whether the key at s[i:] is (the end of) a segment of a
// path, such as the token of "POST https://idp.example/oauth/token: 503" or
// "exec /opt/bin/rotate-token: exit code 3": what follows it is what
// happened there (a status, an exit code), no secret. The segment of a
// key in a query (?access_token=...) or an option (--password=...) starts
// with another character.
func inPath(s string, i int) bool {
	for i > 0 {
		c := s[i-1]
		switch {
		case c == '/':
			return true
		case c == '.' || c == '_' || c == '-' || c == '~' || c == '%' ||
			c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			i--
		default:
			return false
		}
	}
	return false
}

// startsWithKey reports whether value opens with a key and value of its
// own ("auth: token=..."), which the search, going on from there, hides.
func (p secretPattern) startsWithKey(value string) bool {
	return p.anchored.MatchString(value)
}

// notSecret reports whether the value after a key that ends a path is
// what happened there rather than a secret: an HTTP status, or a word
// that starts a Go, network or process error ("token: 503", "token\":
// dial tcp", "rotate-token: exit status 3"). Anything else stays hidden:
// a key ending a path may still be followed by its secret, as in a
// secret store's "kv/app/password: hunter2".
func notSecret(value string) bool {
	v := strings.ToLower(strings.TrimSuffix(value, ":"))
	if len(v) == 3 && v[0] >= '1' && v[0] <= '5' && strings.Trim(v, "0123456789") == "" {
		return true
	}
	return slices.Contains(errorWords, v)
}

// errorWords start the errors that follow a path or a name in Go,
// network, process and PostgreSQL failures. Each is a common word: a
// secret that is one is no secret.
var errorWords = []string{"exit", "signal", "dial", "read", "write", "eof", "context", "unexpected", "net/http",
	"tls", "x509", "remote", "http2", "stream", "no", "permission", "connection", "timeout", "i/o", "status",
	"not", "file", "lookup", "killed", "broken", "request", "response", "server", "client",
	"error", "fatal", "panic", "failed", "invalid", "expired", "missing", "refused", "denied", "unauthorized",
	"forbidden", "cannot", "unknown"}

// Private key blocks whose BEGIN line a cut took away.
var (
	keyBegin = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)
	keyEnd   = regexp.MustCompile(`-----END [A-Z ]*PRIVATE KEY-----`)
)

// Clipped hides the secrets of s, the end of a longer text cut off at an
// arbitrary point, and drops what the cut left of its first line: that may
// be the rest of a secret whose key, scheme or prefix was cut off
// (word=..., ve_51...), which no pattern recognises any more. A private
// key whose BEGIN line was cut off is hidden through its END line. A text
// of one line, cut, comes back empty: secrets do not span lines, but
// nothing bounds where one ends within a line.
func Clipped(s string) (string, int) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return "", 0
	}
	s, n := s[i+1:], 0
	if end := keyEnd.FindStringIndex(s); end != nil && !keyBegin.MatchString(s[:end[0]]) {
		s, n = Marker+s[end[1]:], 1
	}
	out, m := Text(s)
	return out, n + m
}

// cutCloser ends a text cut in its middle with what a pattern needs to
// see after a secret to know it for one: the quote of a quoted value, the
// ] of a list of header values, the @ after a URL's password.
const cutCloser = `'"]@`

// Cut hides the secrets of s, the start of a longer text cut off at an
// arbitrary point. What the cut left open is closed for the patterns
// first (cutCloser): a secret the cut went through, a URL's password or
// a list of cookies, was otherwise shown for want of its end, however far
// before the cut it started. What is left of the closer, when it went
// into a hidden secret, ends the text.
func Cut(s string) (string, int) {
	out, n := Text(s + cutCloser)
	if t, ok := strings.CutSuffix(out, cutCloser); ok {
		return t, n
	}
	return out, n
}

// folded is a text in lower case, as hints are written, with the two
// letters outside ASCII that a case-insensitive pattern reads as ASCII ones
// written as those: ſ (s) and the Kelvin sign (k). Every other byte is as
// in the text, so that text in any script offers the patterns only the
// places where a hint stands, as ASCII text does.
type folded struct {
	text string
	// orig[j] is the offset in the text of byte j of folded text, and
	// orig[len(text)] the text's length; nil when the offsets are the same
	// (a text without ſ or K).
	orig    []int
	at      []hintPlace // see places
	scanned bool
}

func fold(s string) *folded {
	if !strings.Contains(s, "ſ") && !strings.Contains(s, "\u212a") {
		i := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' })
		if i < 0 {
			return &folded{text: s}
		}
		var b strings.Builder // one copy, not a []byte and its string
		b.Grow(len(s))
		b.WriteString(s[:i])
		for ; i < len(s); i++ {
			c := s[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		return &folded{text: b.String()}
	}
	b := make([]byte, 0, len(s))
	orig := make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 'ſ':
			b, orig = append(b, 's'), append(orig, i)
		case r == '\u212a':
			b, orig = append(b, 'k'), append(orig, i)
		default:
			for k := range size {
				c := s[i+k]
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				b, orig = append(b, c), append(orig, i+k)
			}
		}
		i += size
	}
	return &folded{text: string(b), orig: append(orig, len(s))}
}

// Every hint of secretText, numbered, and the numbers of those that start
// with each byte; set by init.
var (
	hints        []string
	hintsByFirst [256][]int
)

// hintPlace is where one hint stands in a folded text.
type hintPlace struct {
	hint int32 // its number
	at   int32 // its offset in the folded text
}

// places returns where the hints stand in the folded text, overlaps
// included, in order of their offsets; nil when none does. The patterns
// of a text share one pass over it.
func (f *folded) places() []hintPlace {
	if f.scanned {
		return f.at
	}
	f.scanned = true
	t := f.text
	for i := 0; i < len(t); i++ {
		for _, h := range hintsByFirst[t[i]] {
			// The second byte first: it rules out most places cheaply.
			if hint := hints[h]; i+len(hint) <= len(t) && t[i+1] == hint[1] && t[i:i+len(hint)] == hint {
				f.at = append(f.at, hintPlace{hint: int32(h), at: int32(i)})
			}
		}
	}
	return f.at
}

// hintCursor walks the places where the hints of one pattern stand in a
// folded text, in order.
type hintCursor struct {
	f      *folded
	places []hintPlace // where every hint stands
	mine   []bool      // by hint number: whether the pattern has it
	ahead  int         // the first of places not passed yet
	from   int         // the offset asked for last, in the text
}

// newHintCursor returns a cursor over the places of the hints a pattern
// has (mine, by hint number), nil when none of them stands in the text:
// the pattern cannot match.
func newHintCursor(f *folded, mine []bool) *hintCursor {
	all := f.places()
	if !slices.ContainsFunc(all, func(p hintPlace) bool { return mine[p.hint] }) {
		return nil
	}
	return &hintCursor{f: f, places: all, mine: mine}
}

// next returns the offset in the text of the first hint at or after pos
// (which does not go back from one call to the next), or -1.
func (c *hintCursor) next(pos int) int {
	c.from = pos
	fp := pos
	if c.f.orig != nil {
		fp, _ = slices.BinarySearch(c.f.orig, pos)
	}
	for ; c.ahead < len(c.places); c.ahead++ {
		if p := c.places[c.ahead]; int(p.at) >= fp && c.mine[p.hint] {
			if c.f.orig != nil {
				return c.f.orig[p.at]
			}
			return int(p.at)
		}
	}
	return -1
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// JSON returns raw with the values under secret-looking keys hidden, at
// any depth, and secrets in string values hidden as in Text; n counts what
// was hidden. ok is false when raw is not JSON.
func JSON(raw json.RawMessage) (out json.RawMessage, n int, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw, 0, true
	}
	v, n, ok := JSONTree(raw)
	if !ok {
		return nil, 0, false
	}
	return marshalSized(v, len(raw)), n, true
}

// JSONTree is JSON for a caller that goes on with the redacted value, as
// encoding/json decodes it into an any with UseNumber (map[string]any,
// []any, string, json.Number, bool, nil), rather than its text:
// MarshalPlain writes it as JSON writes it. raw holds a value.
func JSONTree(raw json.RawMessage) (tree any, n int, ok bool) {
	v, ok := decodeTree(raw)
	if !ok {
		return nil, 0, false
	}
	v, n = value(v, "")
	return v, n, true
}

// JSONCut is JSON for raw, the start of a longer JSON text closed where
// it was cut, in which every container the cut left open holds the
// string cut: as a member's value in an object, as the last item in an
// array. Such an object may have lost the member that names its value
// secret ({"value": "...", "name": "DB_PASSWORD"}, in the order jsonb
// writes keys: shorter first), and such an array the end that made it a
// pair (["password", "..."]): in them, what a pair's name would hide is
// hidden whatever the rest says.
func JSONCut(raw json.RawMessage, cut string) (out json.RawMessage, n int, ok bool) {
	v, ok := decodeTree(raw)
	if !ok {
		return nil, 0, false
	}
	v, n = value(v, cut)
	return marshalSized(v, len(raw)), n, true
}

// value redacts v; containers that hold cut (JSONCut) are open, "" for
// none.
func value(v any, cut string) (any, int) {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		named := pairValues(x)
		if cut != "" && holds(x, cut) {
			if named == nil {
				named = map[string]bool{}
			}
			for k := range x {
				if slices.Contains(pairValueMembers, pairMember(k)) {
					named[k] = true
				}
			}
		}
		for k, val := range x {
			if IsSecretKey(k) || named[k] {
				if hide(&val) {
					x[k] = val
					n++
				}
				continue
			}
			var m int
			x[k], m = value(val, cut)
			n += m
		}
	case []any:
		// A pair: ["password", "..."], as a list of headers or of
		// settings holds its keys and values; an open one may have been
		// one before its cut.
		if len(x) == 2 || len(x) == 3 && cut != "" && x[2] == cut {
			if k, ok := x[0].(string); ok && IsSecretKey(k) {
				if hide(&x[1]) {
					n++
				}
				return x, n
			}
		}
		for i, val := range x {
			var m int
			x[i], m = value(val, cut)
			n += m
		}
	case string:
		return Text(x)
	}
	return v, n
}

// holds reports whether a member of x has the value cut.
func holds(x map[string]any, cut string) bool {
	for _, v := range x {
		if v == cut {
			return true
		}
	}
	return false
}

// hide replaces *val, a value under a secret-looking key, with Marker and
// reports whether it did. A boolean holds no secret ("password_set": true,
// and "bad_auth": true read as a secret left a triage blind); null and
// Marker hold none either.
func hide(val *any) bool {
	if _, flag := (*val).(bool); flag || *val == nil || *val == Marker {
		return false
	}
	*val = Marker
	return true
}

// Members of an object that holds one key and value of a list (a
// Kubernetes env, AWS parameters, a list of headers or of form fields):
// pairNames name the key, pairValueMembers hold its value. They are
// compared in lower case, without _ and -: Name, ParameterValue.
var (
	pairNames        = []string{"name", "key", "field", "header", "param", "parameter", "parametername", "parameterkey"}
	pairValueMembers = []string{"value", "val", "values", "parametervalue"}
)

// pairValues returns the members of x that hold the value of a key and
// value pair whose key is secret-looking: {"name": "DB_PASSWORD",
// "value": "..."} is a password, as {"DB_PASSWORD": "..."} is.
func pairValues(x map[string]any) map[string]bool {
	if len(x) < 2 {
		return nil
	}
	secret := false
	for k, val := range x {
		if s, ok := val.(string); ok && slices.Contains(pairNames, pairMember(k)) && IsSecretKey(s) {
			secret = true
			break
		}
	}
	if !secret {
		return nil
	}
	out := map[string]bool{}
	for k := range x {
		if slices.Contains(pairValueMembers, pairMember(k)) {
			out[k] = true
		}
	}
	return out
}

// pairMember is a member's name as pairNames and pairValueMembers write it.
func pairMember(k string) string {
	return memberReplacer.Replace(strings.ToLower(k))
}

// memberReplacer drops the _ and - of a member's name; built once, as a
// Replacer costs its tables at its first use.
var memberReplacer = strings.NewReplacer("_", "", "-", "")

// MarshalPlain marshals without HTML escaping, so text reads as it was
// sent.
func MarshalPlain(v any) json.RawMessage { return marshalSized(v, 0) }

// marshalSized is MarshalPlain with room for size bytes made at once: a
// redacted payload is about as long as the payload.
func marshalSized(v any, size int) json.RawMessage {
	if out, ok := appendTree(make([]byte, 0, size+size/16+64), v); ok {
		return out
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
