package redact_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/secrettest"
)

// A text cut at its start shows neither what the cut left of its first
// line nor a private key whose BEGIN line the cut took; whole lines after
// it are redacted as any text.
func TestClipped(t *testing.T) {
	for in, want := range map[string]string{
		"word=MsgCutSecret22 rest\nnext line":                                           "next line",
		"d = MsgCutSecret22\npassword = Hunter2x then":                                  "password = [REDACTED] then",
		"ve_51ExecSecretABCDEF failed":                                                  "",
		"AAAApartial\nBBBBwhole\n-----END RSA PRIVATE KEY-----\nafter":                  "[REDACTED]\nafter",
		"IN RSA PRIVATE KEY-----\nBBBBwhole\n-----END RSA PRIVATE KEY-----\nafter":      "[REDACTED]\nafter",
		"cut\n-----BEGIN PRIVATE KEY-----\nBBBBwhole\n-----END PRIVATE KEY-----\nafter": "-----BEGIN PRIVATE KEY-----[REDACTED]\nafter",
		"cut\nplain line\n\tat main.go:42":                                              "plain line\n\tat main.go:42",
	} {
		if got, _ := redact.Clipped(in); got != want {
			t.Errorf("Clipped(%q)\n  = %q\nwant %q", in, got, want)
		}
	}
}

// Text in any script hides what the same text in ASCII hides: every error
// text of the corpus, written after and before words outside ASCII, and a
// key spelled with ſ, which a case-insensitive pattern reads as s.
func TestTextOutsideASCII(t *testing.T) {
	for _, text := range secrettest.Texts(secrettest.Error) {
		for _, in := range []string{"Ошибка запроса: " + text, text + " — échec 注文", "ſ " + text} {
			out, n := redact.Text(in)
			if n == 0 {
				t.Errorf("Text(%q) hid nothing", in)
			}
			secrettest.AssertHidden(t, out)
		}
	}
	if out, _ := redact.Text("échec: paſſword=hunter2 \u212Aey"); strings.Contains(out, "hunter2") {
		t.Errorf("a key spelled with ſ is not recognised: %q", out)
	}
}

// BenchmarkText compares text without a secret in ASCII and in another
// script: the second skips the patterns its hints rule out, as the first
// does.
func BenchmarkText(b *testing.B) {
	for name, word := range map[string]string{"ascii": "failed ", "accented": "échoué ", "cyrillic": "ошибка "} {
		text := strings.Repeat(word, 2000)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				redact.Text(text)
			}
		})
	}
}

// Text that reads as what happened rather than as a secret's value stays,
// next to keys that queues, job kinds and URLs are named after; a value
// that might be a secret is still hidden.
func TestTextKeepsWhatIsNoSecret(t *testing.T) {
	for in, want := range map[string]string{
		// The colon of an error chain ends the value before it.
		"GET https://api.example.com/v1/items?api_key=abcd1234efgh: 500": "GET https://api.example.com/v1/items?api_key=[REDACTED]: 500",
		"login with password=hunter2: denied":                            "login with password=[REDACTED]: denied",
		"password=hunter2:x rejected":                                    "password=[REDACTED] rejected",
		"password=hunter2:":                                              "password=[REDACTED]",
		"password=: rejected":                                            "password=[REDACTED] rejected",
		// After a name and ": ", the start of an error or a sentence.
		"enqueue to refresh_token: connection refused":                       "enqueue to refresh_token: connection refused",
		"handler reset_password: timeout after 30s":                          "handler reset_password: timeout after 30s",
		"kind session: EOF":                                                  "kind session: EOF",
		`store: inspect queue "api_key": ERROR: relation does not exist`:     `store: inspect queue "api_key": ERROR: relation does not exist`,
		`queue "refresh_token": the oldest ready message has waited 5m`:      `queue "refresh_token": the oldest ready message has waited 5m`,
		`send to "reset_password": a batch holds 1 to 100 messages`:          `send to "reset_password": a batch holds 1 to 100 messages`,
		"refresh_token: connection refused; refresh_token: rt-Kp29xQ denied": "refresh_token: connection refused; refresh_token: [REDACTED] denied",
		// A small count of what follows.
		"queue refresh_token: 3 messages":                                       "queue refresh_token: 3 messages",
		`queue "refresh_token": 0 messages ready, 120 waiting to retry`:         `queue "refresh_token": 0 messages ready, 120 waiting to retry`,
		"enqueue to refresh_token: 503 Service Unavailable":                     "enqueue to refresh_token: 503 Service Unavailable",
		"password: 3 attempts left":                                             "password: 3 attempts left",
		"queue refresh_token: 3 messages; refresh_token: 481920735 was revoked": "queue refresh_token: 3 messages; refresh_token: [REDACTED] was revoked",
		// A longer number, a number with a leading zero, one not
		// followed by a word, or one after a key of card data or a
		// social security number may be a secret.
		"token: 4819 expired":              "token: [REDACTED] expired",
		"token: 048 expired":               "token: [REDACTED] expired",
		"refresh_token: 3":                 "refresh_token: [REDACTED]",
		"refresh_token: 3, then":           "refresh_token: [REDACTED], then",
		`{"refresh_token": 12 }`:           `{"refresh_token": [REDACTED] }`,
		"refresh_token: 3rd attempt":       "refresh_token: [REDACTED] attempt",
		"cvv: 123 declined":                "cvv: [REDACTED] declined",
		"card_cvc: 123 declined":           "card_cvc: [REDACTED] declined",
		"ssn: 078 is not valid":            "ssn: [REDACTED] is not valid",
		"ssn: 123 is not valid":            "ssn: [REDACTED] is not valid",
		"card_number: 411 is too short":    "card_number: [REDACTED] is too short",
		"password=3 attempts":              "password=[REDACTED] attempts",
		"Authorization: Token 123 expired": "Authorization: Token [REDACTED] expired",
		// Anything else there, or an error word written as a value, or
		// after a scheme, is hidden.
		"refresh_token: timeout99 rejected":        "refresh_token: [REDACTED] rejected",
		"password=timeout then":                    "password=[REDACTED] then",
		"passphrase: the quick brown fox":          "passphrase: [REDACTED] quick brown fox",
		"queue refresh_token: the oldest":          "queue refresh_token: [REDACTED] oldest",
		"password:timeout then":                    "password:[REDACTED] then",
		"Authorization: Token EOF":                 "Authorization: Token [REDACTED]",
		"refresh_token: connection-refused-9 then": "refresh_token: [REDACTED] then",
		// In a sentence, a key's next word is kept unless it is quoted or
		// holds a digit or a symbol, as secrets do and words do not.
		`password authentication failed for user "bob"`: `password authentication failed for user "bob"`,
		"password reset email sent to ada":              "password reset email sent to ada",
		"secret manager timeout":                        "secret manager timeout",
		"Unexpected token u in JSON at position 0":      "Unexpected token u in JSON at position 0",
		"mkdir -p /var/lib/pgbus: permission denied":    "mkdir -p /var/lib/pgbus: permission denied",
		"login with password Hunter2x9 refused":         "login with password [REDACTED] refused",
		"the secret was \"a b c\", refused":             "the secret was [REDACTED], refused",
		// pass is a key only as a word of its own.
		"bypass: true":     "bypass: true",
		"tests passed: 42": "tests passed: 42",
		"compass: north":   "compass: north",
		// A key= followed by a blank has an empty value, as a command
		// printing its environment writes it; the next word is another
		// variable's. With blanks on both sides, = still gives a value.
		"token= db= pw=":                "token= db= pw=",
		"DB_PASSWORD=\nLOG_LEVEL=debug": "DB_PASSWORD=\nLOG_LEVEL=debug",
		"api_key=\tregion=eu":           "api_key=\tregion=eu",
		"password = hunter2 then":       "password = [REDACTED] then",
		"password =hunter2 then":        "password =[REDACTED] then",
		"token := abc123 then":          "token := [REDACTED] then",
		`token= "a quoted value" then`:  `token= "[REDACTED]" then`,
		// Prose after a signature's or a cookie's name and ": ", a word
		// of letters, which no signature nor cookie value is: Go's
		// certificate errors, gorilla's securecookie.
		"x509: invalid signature: parent certificate cannot sign this kind of certificate": "x509: invalid signature: parent certificate cannot sign this kind of certificate",
		"x509: cannot verify signature: insecure algorithm SHA1-RSA":                       "x509: cannot verify signature: insecure algorithm SHA1-RSA",
		"securecookie: the value is not valid":                                             "securecookie: the value is not valid",
		"Signature: Parent certificate":                                                    "Signature: Parent certificate",
		// A value that holds a digit or a symbol is one; so is any after
		// a password's, a token's or a secret's name, or without the
		// blank.
		"signature: 3f9c2a7be1d4 rejected":         "signature: [REDACTED] rejected",
		"X-Hub-Signature: sha256=9f8e7d6c then":    "X-Hub-Signature: [REDACTED] then",
		"signature:parent certificate":             "signature:[REDACTED] certificate",
		"signature=parent certificate":             "signature=[REDACTED] certificate",
		"Cookie: session=abc123; theme=dark":       "Cookie: [REDACTED]; theme=dark",
		"password: parent certificate":             "password: [REDACTED] certificate",
		"signature_value: parent certificate":      "signature_value: [REDACTED] certificate",
		"signature: AbCdEfGhIjKlMnOpQrSt rejected": "signature: [REDACTED] rejected",
	} {
		got, _ := redact.Text(in)
		if got != want {
			t.Errorf("Text(%q)\n  = %q\nwant %q", in, got, want)
		}
		if again, n := redact.Text(got); again != got || n != 0 {
			t.Errorf("Text(%q), redacted again, = %q (%d hidden)", got, again, n)
		}
	}
}

// FuzzText puts each free-text secret of the corpus between any two texts:
// its value stays hidden, whatever comes before and after it (a path, a
// quoted name, an error chain's colon, a count), and the output, redacted
// again, is as it was.
func FuzzText(f *testing.F) {
	var texts, values []string
	for _, sec := range secrettest.Corpus {
		if sec.Text != "" {
			texts, values = append(texts, sec.Text), append(values, sec.Value)
		}
	}
	for i, seed := range [][2]string{
		{"", ""},
		{"queue refresh_token: 3 messages; ", ": 500"},
		{`send to "reset_password": `, " a batch"},
		{"GET https://x.example/oauth/", ": connection refused"},
		{"enqueue to refresh_token: ", " EOF"},
		{"token: ", ": timeout"},
	} {
		f.Add(uint(i), seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, i uint, before, after string) {
		k := int(i % uint(len(texts)))
		value := values[k]
		if strings.Contains(before, value) || strings.Contains(after, value) {
			t.Skip()
		}
		in := before + texts[k] + after
		out, _ := redact.Text(in)
		if strings.Contains(out, value) {
			t.Fatalf("Text(%q)\n  = %q\nshows %q", in, out, value)
		}
		if again, n := redact.Text(out); again != out || n != 0 {
			t.Fatalf("Text(%q) = %q, redacted again = %q (%d hidden)", in, out, again, n)
		}
	})
}

// BenchmarkTextHinted measures long text holding secret-looking words:
// each pattern they let in is tried where they stand, not over the whole
// text (which took seconds a megabyte).
func BenchmarkTextHinted(b *testing.B) {
	filler := strings.Repeat("upstream answered 503 Service Unavailable after 30s; ", 270) // 14 KB
	for _, c := range []struct{ name, text string }{
		{"password", filler + "password=hunter2"},
		{"bearer", filler + "Authorization: Bearer abcdef123456"},
		{"url", filler + "postgres://app:pw@db/x"},
		{"sk_live", filler + "sk_live_abcdefghijkl"},
		{"mentions", strings.Repeat("the password of the session token expired; ", 330)},
		{"megabyte", strings.Repeat(filler, 70) + "password=hunter2"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				if out, n := redact.Text(c.text); n == 0 && c.name != "mentions" {
					b.Fatalf("nothing hidden in %.40q...", out)
				}
			}
		})
	}
}

// A boolean under a secret-looking key is shown: it holds no secret, and
// hiding "bad_auth": true hid why a job failed. Every other value there
// is hidden, numbers too (a numeric password or card number).
func TestJSONShowsBooleansUnderSecretKeys(t *testing.T) {
	t.Parallel()
	out, n, ok := redact.JSON([]byte(`{"bad_auth": true, "password_set": false, "token": "abc123", "password": 1234, "auth": {"ok": true}, "secret": null}`))
	want := `{"auth":"` + redact.Marker + `","bad_auth":true,"password":"` + redact.Marker + `","password_set":false,"secret":null,"token":"` + redact.Marker + `"}`
	if !ok || n != 3 || string(out) != want {
		t.Errorf("redact.JSON = %s, %d hidden, %v; want %s, 3 hidden", out, n, ok, want)
	}
}

// A key and its value given as a pair, as Kubernetes env lists, AWS
// parameter lists and lists of headers hold them, is hidden as the value of
// that key is; the pairs of other keys are kept.
func TestJSONHidesSecretPairs(t *testing.T) {
	t.Parallel()
	in := `{"env":[{"name":"DB_PASSWORD","value":"k8spw1234"},{"name":"LOG_LEVEL","value":"debug"}],` +
		`"form":[{"field":"secret","val":"formpw123"}],"kv":[["password","arrpw1234"],["user","bob"]],` +
		`"tags":[{"Key":"ApiToken","Value":{"v":"nested9"}},{"Key":"Team","Value":"ops"}],"flags":[{"name":"auth","value":true}]}`
	out, n, ok := redact.JSON([]byte(in))
	want := `{"env":[{"name":"DB_PASSWORD","value":"[REDACTED]"},{"name":"LOG_LEVEL","value":"debug"}],` +
		`"flags":[{"name":"auth","value":true}],"form":[{"field":"secret","val":"[REDACTED]"}],` +
		`"kv":[["password","[REDACTED]"],["user","bob"]],"tags":[{"Key":"ApiToken","Value":"[REDACTED]"},{"Key":"Team","Value":"ops"}]}`
	if !ok || n != 4 || string(out) != want {
		t.Errorf("redact.JSON = %s, %d hidden, %v;\nwant %s, 4 hidden", out, n, ok, want)
	}
}

// In the start of a JSON text closed where it was cut, an object or array
// the cut left open (it holds the cut mark) hides what a pair's name
// could have hidden, as the name may be what the cut took; a closed one
// is redacted as JSON is.
func TestJSONCutHidesPairsTheCutLeftOpen(t *testing.T) {
	t.Parallel()
	const cut = "…cut"
	in := `{"env": [{"value": "debug", "name": "LOG_LEVEL"}, {"value": "k8spw1234", "…": "…cut"}, "…cut"], "kv": ["password", "arrpw1234", "…cut"], "…": "…cut"}`
	out, n, ok := redact.JSONCut([]byte(in), cut)
	want := `{"env":[{"name":"LOG_LEVEL","value":"debug"},{"value":"[REDACTED]","…":"…cut"},"…cut"],"kv":["password","[REDACTED]","…cut"],"…":"…cut"}`
	if !ok || n != 2 || string(out) != want {
		t.Errorf("redact.JSONCut = %s, %d hidden, %v;\nwant %s, 2 hidden", out, n, ok, want)
	}
}

// Cut hides a secret the cut went through, which Text, without its end,
// shows; what it keeps of a text without secrets is the text.
func TestCutHidesSecretsWithoutTheirEnd(t *testing.T) {
	long := strings.Repeat("S3cr", 100)
	for _, s := range []string{
		"retry postgres://app:" + long,
		`headers {"Cookie":["sid=` + long,
		"the password is '" + strings.Repeat("S3cr ", 10),
	} {
		if got, n := redact.Cut(s); strings.Contains(got, "S3cr") || n == 0 {
			t.Errorf("Cut(%.30q…) = %q, %d; want the secret hidden", s, got, n)
		}
	}
	for _, s := range []string{"a plain text, cut", `ends in quotes "'`, "a list [1, 2"} {
		if got, n := redact.Cut(s); got != s || n != 0 {
			t.Errorf("Cut(%q) = %q, %d; want it as it is", s, got, n)
		}
	}
}

// A quoted key and its value in text, as JSON, a Python dict or a Ruby
// hash writes them, and JSON quoted in a JSON string, hides the value of
// every key IsSecretKey hides in a payload; a card number after a bare key
// for one is hidden too. Words after those keys, counts, flags and keys
// that only hold their letters stay.
func TestTextHidesWhatPayloadsHide(t *testing.T) {
	for in, want := range map[string]string{
		`422 Unprocessable Entity: {"error": "card declined", "request": {"cvv": "[REDACTED]", "card": "5500005555555559", "order_id": 2}}`: `422 Unprocessable Entity: {"error": "card declined", "request": {"cvv": "[REDACTED]", "card": "[REDACTED]", "order_id": 2}}`,
		`body "{\"card\": \"4111111111111111\", \"order_id\": 2}"`:                                                                          `body "{\"card\": \"[REDACTED]\", \"order_id\": 2}"`,
		`body "{\"pan\":\"4111111111111111\",\"order_id\":2}"`:                                                                              `body "{\"pan\":\"[REDACTED]\",\"order_id\":2}"`,
		`outer "{\"inner\": \"{\\\"card\\\": \\\"4111111111111111\\\"}\"}"`:                                                                 `outer "{\"inner\": \"{\\\"card\\\": \\\"[REDACTED]\\\"}\"}"`,
		`{'card': '4111111111111111', 'order_id': 2}`:                                                                                       `{'card': '[REDACTED]', 'order_id': 2}`,
		`{"pan": 4111111111111111, "order_id": 2}`:                                                                                          `{"pan": [REDACTED], "order_id": 2}`,
		`{"card"=>"4111111111111111", "order_id"=>2}`:                                                                                       `{"card"=>"[REDACTED]", "order_id"=>2}`,
		`{"user_password_v2": "hunter2", "iban": "DE89370400440532013000", "bearer": "abc"}`:                                                `{"user_password_v2": "[REDACTED]", "iban": "[REDACTED]", "bearer": "[REDACTED]"}`,
		`{"card": {"number": "4111111111111111", "exp": "12/30"}, "n": 1}`:                                                                  `{"card": [REDACTED], "n": 1}`,
		`{"card": ["4111111111111111"], "n": 1}`:                                                                                            `{"card": [REDACTED], "n": 1}`,
		`{"session_count": 2000}`:                                                                                                           `{"session_count": [REDACTED]}`,
		`{"cvv": 123}`:                                                                                                                      `{"cvv": [REDACTED]}`,
		`{"pan": 12}`:                                                                                                                       `{"pan": [REDACTED]}`,
		// A card number after a bare key for one.
		"charge failed: cc=4111111111111111 declined":            "charge failed: cc=[REDACTED] declined",
		"charge failed: card=4111-1111-1111-1111, retry":         "charge failed: card=[REDACTED], retry",
		"charge failed: pan: 4111 1111 1111 1111 expired":        "charge failed: pan: [REDACTED] expired",
		`charge failed: credit_card="4111111111111111" declined`: `charge failed: credit_card="[REDACTED]" declined`,
		// Kept: prose, flags, counts, keys that are not secret ones.
		"card declined":                "card declined",
		"the pan was hot":              "the pan was hot",
		"card: declined, pan: hot":     "card: declined, pan: hot",
		"card=visa cc=bob@example.com": "card=visa cc=bob@example.com",
		"account=4111111111111111":     "account=4111111111111111",
		"scorecard: 4111111111111111":  "scorecard: 4111111111111111",
		"card 4111 ending in 1111":     "card 4111 ending in 1111",
		`{"card_holder": "Ada", "company": "Acme", "author": "ada"}`:    `{"card_holder": "Ada", "company": "Acme", "author": "ada"}`,
		`{"password_set": true, "card": null, "tokens": 5}`:             `{"password_set": true, "card": null, "tokens": 5}`,
		`{"author": "ada", "tokens": 5, "session_count": 2, "pwd": ""}`: `{"author": "ada", "tokens": 5, "session_count": 2, "pwd": ""}`,
		`queue "reset_password": a batch holds 1 to 100 messages`:       `queue "reset_password": a batch holds 1 to 100 messages`,
		`send to "card": the queue is paused`:                           `send to "card": the queue is paused`,
	} {
		got, _ := redact.Text(in)
		if got != want {
			t.Errorf("Text(%q)\n  = %q\nwant %q", in, got, want)
		}
		if again, n := redact.Text(got); again != got || n != 0 {
			t.Errorf("Text(%q), redacted again, = %q (%d hidden)", got, again, n)
		}
	}
}

// A value in JSON as PHP's json_encode writes it (/ as \/, a letter
// outside ASCII as \u00e9), quoted in an error, is hidden whole, as the
// same text unescaped is; an escape that stands for what ends a value
// (\u0026 for &, \" for a quote) ends it there too.
func TestTextHidesJSONEscapedValues(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"error":"token=Zq9\/Wk3+Lm7\/Pn2=Xy5v rejected"}`:                        `{"error":"token=[REDACTED] rejected"}`,
		`{"error":"password: p\u00e4ssw\u00f6rt99, try again"}`:                    `{"error":"password: [REDACTED], try again"}`,
		`{"error":"Authorization: Bearer Bt7\/Qw2+Er5\/Ty8=Ui9o refused"}`:         `{"error":"Authorization: Bearer [REDACTED] refused"}`,
		`{"error":"dial postgres:\/\/app:DsnPw4471x@db\/app refused"}`:             `{"error":"dial postgres:\/\/app:[REDACTED]@db\/app refused"}`,
		`{"url":"https:\/\/hooks.slack.com\/services\/T0AB12\/B0CD34\/XyZ987abc"}`: `{"url":"https:\/\/hooks.slack.com\/services\/[REDACTED]"}`,
		`{"query":"api_key=ak9Zq3v\u0026region=eu"}`:                               `{"query":"api_key=[REDACTED]\u0026region=eu"}`,
		`{"query":"api_key=ak9Zq3v\"}`:                                             `{"query":"api_key=[REDACTED]\"}`,
		`{"path":"C:\\tokens\\api_key=ak9Zq3v"}`:                                   `{"path":"C:\\tokens\\api_key=[REDACTED]"}`,
	} {
		got, _ := redact.Text(in)
		if got != want {
			t.Errorf("Text(%s)\n  = %s\nwant %s", in, got, want)
		}
		if again, n := redact.Text(got); again != got || n != 0 {
			t.Errorf("Text(%s), redacted again, = %s (%d hidden)", got, again, n)
		}
	}
}
