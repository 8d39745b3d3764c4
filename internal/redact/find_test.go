package redact

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
)

// findTexts are texts holding every kind of secret the patterns know, in
// several spellings and scripts.
func findTexts() []string {
	texts := append(secrettest.Texts(secrettest.Error), secrettest.Texts(secrettest.Backtrace)...)
	keys := []string{"password", "passwd", "passphrase", "pwd", "secret", "secret_key", "secret-key", "secretkey",
		"token", "api_key", "api-key", "apikey", "access_key", "accesskey", "authorization", "auth", "credential",
		"private_key", "privatekey", "cookie", "session", "session_id", "sessionid", "jwt", "signature", "cvv", "cvc",
		"ssn", "card_number", "cardnumber", "PASSWORD", "Api-Key", "TOKEN", "paſsword", "to\u212aen", "cooKie"}
	for _, k := range keys {
		texts = append(texts,
			"call failed: "+k+"=v4lue-9 then "+k+": 'quoted v4lue' and \""+k+"\": \"json v4lue\"",
			"x"+k+"=[a b] /oauth/"+k+": 503 ¿"+k+" => Bearer abcdefgh1234?",
		)
	}
	return append(texts,
		"dial postgres://app:s3cr3t@db:5432/x and HTTPS://u:p@h/ and 9ab+c.d://u:p@host",
		"keys sk_live_abcdefgh1234 xsk_test_abcdefgh1234 pk-test-abcdefgh rk_live_x sk-abcdefghijklmnopqrst",
		"AKIAABCDEFGHIJKLMNOP ASIAABCDEFGHIJKLMNOP ghp_abcdefghijklmnopqrstuv github_pat_abcdefghijklmnopqrstuv",
		"AIzaSyA-abcdefghijklmnopqrstuvwxyz012345 xoxb-1234567890-abc eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- -----BEGIN CERTIFICATE-----",
		"Authorization: Basic dXNlcjpwYXNz basicx abasic bearerabc BEARER  tok.en~123",
		"Ошибка: passwort=geheim пароль token=абв ſession=ſecret ſk_live_abcdefgh",
	)
}

// A pattern tried only where its hints stand finds what it finds run over
// the whole text, from every place a search may go on from (the start,
// and after each match found: its end, its kept group's end, the byte
// after its start): no match starts where no hint stands.
func TestFindTriesEveryMatch(t *testing.T) {
	t.Parallel()
	for _, s := range findTexts() {
		checkFind(t, s)
	}
}

// FuzzFind checks the same of any text.
func FuzzFind(f *testing.F) {
	for _, s := range findTexts() {
		f.Add(s)
	}
	f.Fuzz(checkFind)
}

func checkFind(t *testing.T, s string) {
	f := fold(s)
	for pi, p := range secretText {
		tried := map[int]bool{}
		for from := []int{0}; len(from) > 0; {
			pos := from[0]
			from = from[1:]
			if tried[pos] || pos > len(s) {
				continue
			}
			tried[pos] = true
			want := p.re.FindStringSubmatchIndex(s[pos:])
			for k := range want {
				if want[k] >= 0 {
					want[k] += pos
				}
			}
			if want != nil {
				from = append(from, want[0]+1, want[1], want[3])
				// Run on s[pos:], \b reads pos as the start of the text.
				if p.wordStart && want[0] == pos && pos > 0 && isWordByte(s[pos-1]) {
					continue
				}
			}
			got := p.find(s, newHintCursor(f, p.hintIDs), pos)
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %d (%s) from %d in %q:\n got %v\nwant %v", pi, p.re, pos, s, got, want)
			}
		}
	}
}

// Case-insensitive patterns read ſ as s and the Kelvin sign as k; no other
// letter outside ASCII is an ASCII letter to them, so the fold need not
// know any other.
func TestFoldKnowsEveryLetterThatMatchesASCII(t *testing.T) {
	t.Parallel()
	in := "Paſſ \u212Aey ÄÖ İı TOKEN"
	f := fold(in)
	if want := "pass key ÄÖ İı token"; f.text != want {
		t.Errorf("fold(%q) = %q, want %q", in, f.text, want)
	}
	for j := range len(f.text) {
		if f.orig[j] >= len(in) || f.orig[j] > f.orig[j+1] {
			t.Fatalf("orig[%d] = %d out of order in %v", j, f.orig[j], f.orig)
		}
	}
	if got := in[f.orig[strings.Index(f.text, "key")]:]; !strings.HasPrefix(got, "\u212Aey") {
		t.Errorf("the folded key maps back to %q", got)
	}
}
