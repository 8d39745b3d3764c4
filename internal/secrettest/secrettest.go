// Package secrettest holds a corpus of secrets as they turn up in dead
// messages (under secret-looking keys of a payload or of headers, at any
// depth, and in free text: error messages, backtraces, string values, job
// kinds), for
// the tests of every package that shows messages: whatever a front end
// prints, no corpus Value may appear in it.
//
// Use it as
//
//	for _, sec := range secrettest.Corpus { ... put sec where sec.Where says ... }
//	out := render(...)
//	secrettest.AssertHidden(t, out)
package secrettest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Where a secret of the corpus is put.
const (
	Payload   = "payload"   // Secret.JSON is a payload
	Header    = "header"    // Secret.JSON is a headers object
	Error     = "error"     // Secret.Text is an error message
	Backtrace = "backtrace" // Secret.Text is a backtrace
	Kind      = "kind"      // Secret.Text is a job kind (the pgbus_kind header)
)

// Secret is one secret of the corpus.
type Secret struct {
	// Name says what it is, for failure messages.
	Name string
	// Where is Payload, Header, Error, Backtrace or Kind.
	Where string
	// JSON is a JSON object carrying the secret (Payload and Header).
	JSON string
	// Text is free text carrying the secret (Error, Backtrace and Kind).
	Text string
	// Value is the secret itself: it must never appear in output.
	Value string
}

// SecretKeys are the keys whose values are hidden wherever they are in a
// JSON payload or in headers.
var SecretKeys = []string{
	"password", "passwd", "pwd", "passphrase", "secret", "token", "api_key", "apikey", "access_key",
	"authorization", "credential", "private_key", "cookie", "session", "jwt", "signature", "cvv", "ssn",
	"card_number", "db_pass", "passcode", "social_security_number",
}

// Neighbours are non-secret fields that sit next to the secrets in every
// Payload and Header item of the corpus; redaction must keep them.
var Neighbours = map[string]any{"author": "ada", "order_id": 42}

// NeighbourTexts are how Neighbours read in JSON output, to check they were
// kept.
var NeighbourTexts = []string{`"author":"ada"`, `"order_id":42`}

// Text secrets: free text holding one secret each.
var textSecrets = []struct{ name, text, value string }{
	{"password=", "login failed for user app: password=hunter2 rejected", "hunter2"},
	{"bearer header", "upstream said 401 to Authorization: Bearer sk-live-ABCDEF123456 (expired?)", "sk-live-ABCDEF123456"},
	{"stripe key", "charge failed with key sk_live_abcdef123456 in test mode", "sk_live_abcdef123456"},
	{"aws key id", "AccessDenied for AKIAIOSFODNN7EXAMPLE on s3://bucket/key", "AKIAIOSFODNN7EXAMPLE"},
	{"dsn password", "dial postgres://app:s3cret@db/app: connection refused", "s3cret"},
	{"jwt", "token rejected: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c is expired",
		"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
	{"pem private key", "cannot parse key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7BFUpkGp3XQmZ3mKJ8c0PnR1fKz\nT9wYl2XbVdQnHcR4sUe8MvJkPa0LfGi3OyWtZxE5bN7q\n-----END RSA PRIVATE KEY-----\nend of key",
		"MIIEowIBAAKCAQEAq7BFUpkGp3XQmZ3mKJ8c0PnR1fKz"},
	{"github token", "git clone failed with ghp_16C7e42F292c6912E7710c838347Ae178B4a", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
	{"slack token", "slack post failed: invalid_auth for xoxb-2048-4096-AbCdEfGhIjKlMnOp", "xoxb-2048-4096-AbCdEfGhIjKlMnOp"},
	{"api_key:", "config error near api_key: abc123 in settings.yml", "abc123"},
	// Variants seen in real error text.
	{"authorization scheme", "GET /v1/orders: 401 with Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"},
	{"quoted passphrase", `unlock failed: passphrase="correct horse battery staple" rejected`, "horse battery staple"},
	{"JSON quoted in text", fmt.Sprintf("POST /login: 400, body %q", `{"user":"ada","password":"s3cr3t-body","order_id":42}`), "s3cr3t-body"},
	{"github fine-grained token", "clone failed with github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123"},
	{"google api key", "maps: key AIzaSyA-1234567890abcdefghijklmnopqrstu was rejected", "AIzaSyA-1234567890abcdefghijklmnopqrstu"},
	{"card number in groups", "payment declined: card_number=4111 1111 1111 1234 (expired)", "1111 1111 1234"},
	// Separators with spaces, of more than one character, and passwords
	// holding an @ that was not escaped (the host follows the last one).
	{"password = with spaces", "cannot parse `host=db port=bad user=app password = HunterPW9x`: invalid port", "HunterPW9x"},
	{"key => value", `config {:password => "Hash3dRocket", :user => "app"} rejected`, "Hash3dRocket"},
	{"secret_key = with spaces", "boto: secret_key = wJalrXUtnFEMIK7MDENG was refused", "wJalrXUtnFEMIK7MDENG"},
	{"URL password holding @", "dial postgres://app:Pa@ssW0rd1@db.internal/app: connection refused", "ssW0rd1"},
	// Secrets next to what redaction lets through as no secret: a key
	// that a queue or job is named after, a value followed by an error
	// chain's ": ", a number, a short password, a value that starts with
	// an error's word, a JSON number.
	{"refresh_token: value", "grant refused: refresh_token: rt-Kp29xQ expired", "rt-Kp29xQ"},
	{"api_key before an error's colon", "GET https://api.example.com/v1/items?api_key=QkY8rT2vNw: 500", "QkY8rT2vNw"},
	{"all-digit token", "refresh failed: refresh_token: 7359026148 was revoked", "7359026148"},
	{"short password", "login as ada failed, password: Xq7# wrong", "Xq7#"},
	{"password starting with an error word", "login failed: password: timeout99 rejected", "timeout99"},
	{"JSON number under a key in text", `verify failed, body {"otp_token": 481920735, "user": "ada"}`, "481920735"},
	// In a sentence, with no separator: a downstream's prose, or a
	// command line quoted in an error.
	{"password in a sentence", "login failed for user bob with password Hunter2x9 at 10:02", "Hunter2x9"},
	{"secret is, quoted", "vault: the secret is 'open sesame 42' and it was refused", "open sesame 42"},
	{"mysql -p", "exec mysql -h db -u root -pR00tPw9 orders failed: exit status 1", "R00tPw9"},
	{"api key with a space", "config error: api key: ak-9Zq3v is not valid", "ak-9Zq3v"},
	// Keys that hold a secret word with more around it (plurals, a
	// prefix or suffix, camel case), and pass as a word of its own.
	{"pass:", "login failed for user bob using pass: Hunt3r2!", "Hunt3r2!"},
	{"credentials=", "auth error, credentials=user:PlainPass99 refused", "PlainPass99"},
	{"secret_key_base:", "boot failed: secret_key_base: 0123abcdef4567 is too short", "0123abcdef4567"},
	{"tokenValue=", "refresh failed tokenValue=tv-8812kq", "tv-8812kq"},
	{"X-Auth-Token-Old:", "proxy sent X-Auth-Token-Old: oldTok991 upstream", "oldTok991"},
	{"DB_PASS=", "env: DB_PASS=dbPw-771 HOST=db", "dbPw-771"},
	{"smtp_pass=", "mailer: smtp_pass=Sm7pSecret rejected", "Sm7pSecret"},
	{"social_security_number=", "kyc failed: social_security_number=078-05-1122 mismatch", "078-05-1122"},
	{"password%3D in a URL's query", "redirect to /login?next=%2Fapp%3Fpassword%3DPctEnc0ded9%26x%3D1 refused", "PctEnc0ded9"},
	// Next to what redaction lets through as prose or an empty value: a
	// signature's value after a certificate error's words, a key= with
	// its value after empty ones in an environment printed.
	{"signature: after a certificate error", "x509: invalid signature: sig-9f8e7d6c5b4a (parent certificate) rejected", "sig-9f8e7d6c5b4a"},
	{"key= among empty ones", "env: TOKEN= DB_PASSWORD=Dbpw4471x LOG_LEVEL= HOME=/app", "Dbpw4471x"},
	// In JSON as PHP's json_encode writes it, quoted in an error: / as \/
	// and every letter outside ASCII as \uXXXX.
	{"token= in JSON as PHP writes it", `401 Unauthorized: {"error":"bad login token=Zq9\/Wk3+Lm7\/Pn2=Xy5vQ8"}`, "Pn2=Xy5vQ8"},
	{"password= in JSON as PHP writes it", `401 Unauthorized: {"error":"login failed: password=p\u00e4ssw\u00f6rtPw9917"}`, "rtPw9917"},
	{"bearer in JSON as PHP writes it", `403 Forbidden: {"error":"refused Authorization: Bearer Bt7\/Qw2+Er5\/Ty8=Ui9oP3"}`, "Ty8=Ui9oP3"},
	{"DSN password in JSON as PHP writes it", `500: {"error":"dial postgres:\/\/app:DsnPw4471x@db.internal\/app refused"}`, "DsnPw4471x"},
	{"slack webhook in JSON as PHP writes it", `500: {"error":"post to https:\/\/hooks.slack.com\/services\/T0AB12\/B0CD34\/XyZ987abcPHP failed"}`, "XyZ987abcPHP"},
	// Tokens recognisable by their shape.
	{"gitlab token", "clone failed with glpat-AbCdEfGhIjKlMnOpQrSt12", "glpat-AbCdEfGhIjKlMnOpQrSt12"},
	{"npm token", "publish failed with npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	{"webhook signing secret", "verify failed with whsec_AbCdEfGhIjKlMnOpQrSt99", "whsec_AbCdEfGhIjKlMnOpQrSt99"},
	{"sendgrid key", "mail failed with SG.AbCdEfGhIjKlMnOpQr.StUvWxYz0123456789ab", "StUvWxYz0123456789ab"},
	{"slack webhook", "post to https://hooks.slack.com/services/T0AB12/B0CD34/XyZ987abcDEF failed: 404", "XyZ987abcDEF"},
	// A request body echoed in an error, under the keys a payload hides
	// (card, pan): as JSON, in JSON quoted in a JSON string, with single
	// quotes; and a card number after a bare key for one.
	{"card in an echoed body", `POST /charge: 422 Unprocessable Entity: {"error": "card declined", "request": {"card": "5500005555555559", "order_id": 2}}`, "5500005555555559"},
	{"card in JSON quoted in JSON", `charge failed: {"body": "{\"card\": \"5105105105105100\", \"n\": 2}"}`, "5105105105105100"},
	{"pan with single quotes", `charge failed: {'pan': '4012888888881881', 'n': 2}`, "4012888888881881"},
	{"pan as a JSON number", `charge failed: {"pan": 4222222222222, "n": 2}`, "4222222222222"},
	{"cc=", "charge failed: cc=4000056655665556 declined", "4000056655665556"},
	{"card= in groups", "charge failed: card=4242 4242 4242 4242 declined", "4242 4242 4242"},
}

// kindSecrets are job kinds holding a secret: a kind is whatever its
// sender wrote, a command line or a URL included.
var kindSecrets = []struct{ name, kind, value string }{
	{"password= in a kind", "sync password=Hunter2Hunter2", "Hunter2Hunter2"},
	{"token in a kind's URL", "fetch https://api.example.com/v1?access_token=kindTok8812", "kindTok8812"},
	{"stripe key in a kind", "charge sk_live_kindKey4471", "sk_live_kindKey4471"},
}

// Corpus is every secret, in every place it is tested.
var Corpus = build()

func build() []Secret {
	var out []Secret
	obj := func(m map[string]any) string {
		for k, v := range Neighbours {
			m[k] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	for i, k := range SecretKeys {
		v := fmt.Sprintf("v-%s-%c7Q", strings.ReplaceAll(k, "_", ""), 'a'+rune(i))
		// At the top, in an object, and in an object in an array.
		out = append(out,
			Secret{Name: k + " at the top of a payload", Where: Payload, JSON: obj(map[string]any{k: v + "0"}), Value: v + "0"},
			Secret{Name: k + " in an object of a payload", Where: Payload, JSON: obj(map[string]any{"customer": map[string]any{"name": "Ada", k: v + "1"}}), Value: v + "1"},
			Secret{Name: k + " in an array of a payload", Where: Payload, JSON: obj(map[string]any{"items": []any{map[string]any{"sku": "A-1", "meta": map[string]any{k: v + "2"}}}}), Value: v + "2"},
			Secret{Name: k + " in headers", Where: Header, JSON: obj(map[string]any{k: v + "3"}), Value: v + "3"},
		)
	}
	// Keys in other spellings, and values that are not strings.
	more := []struct {
		name, where string
		m           map[string]any
		value       string
	}{
		{"Authorization header", Header, map[string]any{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}, "dXNlcjpwYXNzd29yZA=="},
		{"X-Api-Key header", Header, map[string]any{"X-Api-Key": "k-9f8e7d6c5b4a"}, "k-9f8e7d6c5b4a"},
		{"Set-Cookie header", Header, map[string]any{"Set-Cookie": "sid=c00k1e-5e55; HttpOnly"}, "c00k1e-5e55"},
		{"nested header object", Header, map[string]any{"x-upstream": map[string]any{"auth": map[string]any{"token": "t-nested-77"}}}, "t-nested-77"},
		{"camelCase apiKey", Payload, map[string]any{"config": map[string]any{"apiKey": "ak-camel-31"}}, "ak-camel-31"},
		{"card number as a number", Payload, map[string]any{"payment": map[string]any{"card_number": json.Number("4111111111111111")}}, "4111111111111111"},
		{"ssn as text", Payload, map[string]any{"person": map[string]any{"ssn": "078-05-1120"}}, "078-05-1120"},
		{"secret object", Payload, map[string]any{"client_secret": map[string]any{"value": "cs-obj-58"}}, "cs-obj-58"},
		{"password list", Payload, map[string]any{"old_passwords": []any{"pw-list-1a", "pw-list-2b"}}, "pw-list-2b"},
		// Keys and values as pairs: a Kubernetes env, a form's fields, a
		// list of settings or headers.
		{"name and value pair", Payload, map[string]any{"env": []any{map[string]any{"name": "LOG_LEVEL", "value": "debug"}, map[string]any{"name": "DB_PASSWORD", "value": "k8spw1234"}}}, "k8spw1234"},
		{"field and val pair", Payload, map[string]any{"form": []any{map[string]any{"field": "secret", "val": "formpw123"}}}, "formpw123"},
		{"Key and Value pair", Payload, map[string]any{"Parameters": []any{map[string]any{"Key": "ApiToken", "Value": "awsTok-5521"}}}, "awsTok-5521"},
		{"key and value array", Payload, map[string]any{"kv": []any{[]any{"user", "ada"}, []any{"password", "arrpw1234"}}}, "arrpw1234"},
		{"header pair in headers", Header, map[string]any{"x-forwarded": []any{[]any{"Authorization", "fwdTok-8812"}}}, "fwdTok-8812"},
		{"card", Payload, map[string]any{"payment": map[string]any{"card": "5555555555554444"}}, "5555555555554444"},
		{"pan as a number", Payload, map[string]any{"pan": json.Number("6011111111111117")}, "6011111111111117"},
		{"social security number spelled out", Payload, map[string]any{"person": map[string]any{"SocialSecurityNumber": "078-05-1121"}}, "078-05-1121"},
	}
	for _, m := range more {
		out = append(out, Secret{Name: m.name, Where: m.where, JSON: obj(m.m), Value: m.value})
	}
	for _, s := range kindSecrets {
		out = append(out, Secret{Name: s.name, Where: Kind, Text: s.kind, Value: s.value})
	}
	for _, s := range textSecrets {
		out = append(out,
			Secret{Name: s.name + " in an error message", Where: Error, Text: s.text, Value: s.value},
			Secret{Name: s.name + " in a backtrace", Where: Backtrace, Text: "goroutine 7 [running]:\nmain.call()\n\t/app/main.go:42\n" + s.text + "\n\t/app/worker.go:17", Value: s.value},
			Secret{Name: s.name + " in a string of a payload", Where: Payload, JSON: obj(map[string]any{"note": s.text}), Value: s.value},
			Secret{Name: s.name + " in a header value", Where: Header, JSON: obj(map[string]any{"x-debug": s.text}), Value: s.value},
		)
	}
	return out
}

// Texts returns the Text of every corpus item put at where (Error,
// Backtrace or Kind).
func Texts(where string) []string {
	var out []string
	for _, s := range Corpus {
		if s.Where == where {
			out = append(out, s.Text)
		}
	}
	return out
}

// AssertHidden fails t, naming each, when any corpus Value appears in
// output, as written or as escaped in a JSON string.
func AssertHidden(t testing.TB, output string) {
	t.Helper()
	var values []string
	items := map[string][]string{}
	for _, s := range Corpus {
		if items[s.Value] == nil {
			values = append(values, s.Value)
		}
		items[s.Value] = append(items[s.Value], s.Name)
	}
	for _, v := range values {
		if leaked(output, v) {
			t.Errorf("secret %q appears in the output (corpus items: %s)", v, strings.Join(items[v], "; "))
		}
	}
}

func leaked(output, value string) bool {
	if strings.Contains(output, value) {
		return true
	}
	b, _ := json.Marshal(value)
	escaped := string(b[1 : len(b)-1])
	return escaped != value && strings.Contains(output, escaped)
}

// LargeExport is a JSON document of about size bytes as a batch export
// carries it: many records of short strings, numbers, nested objects and
// lists, each with a secret under a secret key (password: hunterN) and one
// in its text (sk_live_...), for tests of what redacting and viewing a
// payload of megabytes costs.
func LargeExport(size int) string {
	var b strings.Builder
	b.WriteString(`{"batch": "export-2026-12-06", "records": [`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "Customer %d", "email": "customer%d@example.com", "amount": %d.%02d, "active": %t, `+
			`"address": {"street": "%d Long Road", "city": "Springfield", "zip": "%05d"}, "tags": ["a", "b", "vip", "Tier-%d"], `+
			`"password": "hunter%d", "note": "Called the Support line; said the API key was sk_live_%010d and asked for a refund."}`,
			i, i, i, i%1000, i%100, i%2 == 0, i, i%100000, i%5, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}
