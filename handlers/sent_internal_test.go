package handlers

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The help of headers and env, which pgbus help config shows, names every
// header and variable whose value is no secret, that of command the
// programs whose -H gives no header, those after which an assignment is
// read and those that run an argument as a shell command, and each the
// shortest value hidden: it is written out by hand, and must not drift
// from the rules.
func TestSentSecretRulesAreDocumented(t *testing.T) {
	t.Parallel()
	help := func(options any, field string) string {
		f, _ := reflect.TypeOf(options).FieldByName(field)
		return f.Tag.Get("help")
	}
	headers, env, command, u := help(HTTPOptions{}, "Headers"), help(ExecOptions{}, "Env"), help(ExecOptions{}, "Command"), help(HTTPOptions{}, "URL")
	for _, h := range plainHeaders {
		if !strings.Contains(headers, h) {
			t.Errorf("the help of headers does not name %s: %s", h, headers)
		}
	}
	for _, n := range append(append([]string{"LC_*"}, plainEnvNames...), plainEnvSuffixes...) {
		if !strings.Contains(env, n) {
			t.Errorf("the help of env does not name %s: %s", n, env)
		}
	}
	for _, rule := range []string{strconv.Itoa(pathTokenChars) + " characters or more, no dot, with a run of " + strconv.Itoa(tokenRunChars) + " letters and digits or more mixing both",
		"query of " + strconv.Itoa(MinSentSecret) + " characters or more"} {
		if !strings.Contains(u, rule) {
			t.Errorf("the help of url does not say %q: %s", rule, u)
		}
	}
	for _, word := range slices.Concat(searchPrograms, envRunners, declareBuiltins, slices.Collect(maps.Keys(shellRunnerOf))) {
		if !strings.Contains(command, " "+word) {
			t.Errorf("the help of command does not name %s: %s", word, command)
		}
	}
	if rule := "a run of " + strconv.Itoa(tokenRunChars) + " letters and digits or more mixing both"; !strings.Contains(command, rule) {
		t.Errorf("the help of command does not say %q: %s", rule, command)
	}
	for what, doc := range map[string]string{"headers": headers, "env": env, "command": command} {
		if !strings.Contains(doc, "shorter than "+strconv.Itoa(MinSentSecret)+" characters") {
			t.Errorf("the help of %s does not give the shortest value hidden: %s", what, doc)
		}
	}
}

// Which values are secrets: every header value but the plain headers',
// the credential after a scheme too; env values but those of plain names,
// unless the name looks like a secret's; never one shorter than
// MinSentSecret.
func TestSentSecretRules(t *testing.T) {
	t.Parallel()
	for name, plain := range map[string]bool{"PATH": true, "PWD": true, "LC_ALL": true, "LEDGER_DIR": true, "db_host": true,
		"BILLING_MODE": true, "ACME_CRED_VALUE": false, "SESSION_DIR": false, "AUTH_MODE": false, "HOOK_URL": false, "DIRECTOR": false} {
		if plainEnv(name) != plain {
			t.Errorf("plainEnv(%s) = %v, want %v", name, !plain, plain)
		}
	}
	var s sentSecrets
	s.addHeader("Bearer 3f9c2a7be1")
	s.add("päda123")      // 7 characters, 8 bytes
	s.add("short77")      // 7 characters
	s.add("  pädagogik ") // 9 characters, 10 bytes, padded
	got := shownText([]byte("Bearer 3f9c2a7be1 | 3f9c2a7be1 | short77 | päda123 | pädagogik"), false, s)
	if want := "[REDACTED] | [REDACTED] | short77 | päda123 | [REDACTED]"; got != want {
		t.Errorf("hide = %q, want %q", got, want)
	}
}

// Which parts of a url are secrets: its query's values, whatever the key,
// and the segments of its path that look like a token, but no word,
// number, date, version or file name; and which arguments of a command:
// what follows an option named like a secret's key, unless it is an
// option itself, and the secrets of a URL.
func TestURLAndArgumentSecretRules(t *testing.T) {
	t.Parallel()
	for seg, token := range map[string]bool{
		"Xk9pQ2rT7vLm3nB8wZ4yC6dF":             true,  // a Slack webhook's secret
		"3fa85f64-5717-4562-b3fc-2c963f66afa6": true,  // a UUID
		"bot123456:ABC-DEF1234ghIkl-zyx57W2v1": true,  // a Telegram bot's token
		"9f8e7d6c5b4a39281706":                 true,  // hex
		"T0123ABCD":                            false, // too short
		"orders":                               false,
		"2026-11-30":                           false,
		"v1":                                   false,
		"123456789012345678":                   false, // digits alone: an id
		"summer-sale-2026-announcement":        false, // words and a number
		"api-v2-events-endpoint":               false,
		"build-a1b2c3d4e5f6.tar.gz":            false, // a file name
		"abcdefghijklmnopqrstuvwx":             false, // letters alone: a word to this rule
	} {
		if tokenSegment(seg) != token {
			t.Errorf("tokenSegment(%s) = %v, want %v", seg, !token, token)
		}
	}
	if got, want := hidePathTokens("https://hooks.example.com/services/T0123ABCD/B0456EFGH/Xk9pQ2rT7vLm3nB8wZ4yC6dF"),
		"https://hooks.example.com/services/T0123ABCD/B0456EFGH/[REDACTED]"; got != want {
		t.Errorf("hidePathTokens = %s, want %s", got, want)
	}
	if got := hidePathTokens("https://h.example/a%2Fb%20Xk9pQ2rT7vLm3nB8/orders/"); got != "https://h.example/[REDACTED]/orders/" {
		t.Errorf("hidePathTokens of an escaped segment = %s", got)
	}
	u, err := url.Parse("https://svc:pw-Zk4Mn8Qr2@h.example/v1/Xk9pQ2rT7vLm3nB8wZ4yC6dF/orders?sig=9f8e7d6c5b4a39281706&tenant=acme&k=a%2Bb%2Bc%2Bd%2B&Lp3Wq8Zr5Tn2")
	if err != nil {
		t.Fatal(err)
	}
	var s sentSecrets
	s.addURL(u)
	got := s.hideString("pw-Zk4Mn8Qr2 | c3ZjOnB3LVprNE1uOFFyMg== | /v1/Xk9pQ2rT7vLm3nB8wZ4yC6dF/orders | sig 9f8e7d6c5b4a39281706 | tenant acme | k a+b+c+d+ a%2Bb%2Bc%2Bd%2B | Lp3Wq8Zr5Tn2")
	if want := "[REDACTED] | [REDACTED] | /v1/[REDACTED]/orders | sig [REDACTED] | tenant acme | k [REDACTED] [REDACTED] | [REDACTED]"; got != want {
		t.Errorf("the url's secrets hide\n%s, want\n%s", got, want)
	}

	s = nil
	s.addArgs([]string{"--api-key", "ak7Hx2Pq9Wm4Zc6T", "--secret-value=sv3Nb8Kd5Rt1Yw6Q", "-password", "pw3Nb8Kd5Rt1Yw6Q",
		"--no-auth", "--log-level=debugging", "-p", "54329999", "--token", "-tk3Nb8Kd5Rt1Yw6Q", "--author", "Ada Lovelace",
		"--output", "/srv/out/report.json", "https://h.example/hooks/Ux5mR8tY2wQ9pL4nK7vB3cZ6?sig=Qs4Lp8Wz2Nx6"})
	got = s.hideString("ak7Hx2Pq9Wm4Zc6T sv3Nb8Kd5Rt1Yw6Q pw3Nb8Kd5Rt1Yw6Q --log-level=debugging 54329999 -tk3Nb8Kd5Rt1Yw6Q Ada Lovelace /srv/out/report.json Ux5mR8tY2wQ9pL4nK7vB3cZ6 Qs4Lp8Wz2Nx6")
	if want := "[REDACTED] [REDACTED] [REDACTED] --log-level=debugging 54329999 -tk3Nb8Kd5Rt1Yw6Q Ada Lovelace /srv/out/report.json [REDACTED] [REDACTED]"; got != want {
		t.Errorf("the arguments' secrets hide\n%s, want\n%s", got, want)
	}
}

// A downstream says a secret back encoded as it writes its own text: in
// JSON (PHP's json_encode writes / as \/ and every letter outside ASCII
// as \uXXXX, Go's json writes <, > and & as \u003c...), percent-encoded
// (as a query or a path writes it, its hex in either case), in HTML, or in
// base64. Each form is hidden, whole, with what stands around it kept; a
// text that only starts like an encoded secret, or decodes to another
// value, is kept as it is.
func TestSentSecretsAreHiddenEncoded(t *testing.T) {
	t.Parallel()
	const (
		slashy = "Zq9/Wk3+Lm7/Pn2=Xy5v"
		marked = `Ab<7&Cd"9\Ef'2>`
		accent = "pässwört/Kx9😀"
		lines  = "line-one-Kx9\nline-two-Lm2"
	)
	var s sentSecrets
	s.addHeader(slashy)
	s.add(marked)
	s.add(accent)
	s.add(lines)
	goJSON := func(v string) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[1 : len(b)-1])
	}
	forms := []string{
		`Zq9\/Wk3+Lm7\/Pn2=Xy5v`,       // PHP's json_encode
		url.QueryEscape(slashy),        // Zq9%2FWk3%2BLm7%2FPn2%3DXy5v
		`Zq9%2fWk3%2bLm7%2fPn2%3dXy5v`, // its hex in lower case
		url.PathEscape(slashy),         // Zq9%2FWk3+Lm7%2FPn2=Xy5v
		base64.StdEncoding.EncodeToString([]byte(slashy)),
		base64.RawURLEncoding.EncodeToString([]byte(slashy)),
		goJSON(marked), // Ab\u003c7\u0026Cd\"9\\Ef'2\u003e
		`Ab\u003C7\u0026Cd\"9\\Ef\u00272\u003E`,
		html.EscapeString(marked), // Ab&lt;7&amp;Cd&#34;9\Ef&#39;2&gt;
		url.QueryEscape(marked),
		`p\u00e4ssw\u00f6rt\/Kx9\ud83d\ude00`, // PHP's json_encode
		url.QueryEscape(accent),
		"p&#228;ssw&#xF6;rt/Kx9&#128512;",
		goJSON(lines), // line-one-Kx9\nline-two-Lm2
		url.QueryEscape(lines),
	}
	for _, form := range forms {
		in := `{"error":"bad key ` + form + `","hint":"100%25 sure \/ \u00e9"}`
		want := `{"error":"bad key [REDACTED]","hint":"100%25 sure \/ \u00e9"}`
		if got := shownText([]byte(in), false, s); got != want {
			t.Errorf("shownText of %s\n  = %s\nwant %s", form, got, want)
		}
		if got := s.hideString("GET https://h.example/x?k=" + form + ": EOF"); got != "GET https://h.example/x?k=[REDACTED]: EOF" {
			t.Errorf("hideString of %s = %s", form, got)
		}
	}
	for _, kept := range []string{`Zq9\/Wk3+Lm7\/Pn2=Xy5`, `Zq9\/Wk3+Lm7\/Pn2%3Xy5v`, `Zq9\/Wk3+Lm7\/Pn2\u003dXy5w`, `Zq9\\/Wk3+Lm7/Pn2=Xy5v`,
		`p\u00e4ssw\u00f6rt\/Kx9\ud83d`, "Ab&lt7&amp;Cd&#34;9\\Ef&#39;2&gt;", `100% \u12 \ud83d &#; &#x; & %`} {
		if got := s.hideString(kept); got != kept {
			t.Errorf("hideString(%s) = %s, want it kept", kept, got)
		}
	}
}
