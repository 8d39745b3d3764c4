package ops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/ops"
)

// RedactText hides every free-text secret of the corpus and keeps the text
// around it.
func TestRedactTextCorpus(t *testing.T) {
	t.Parallel()
	for _, sec := range secrettest.Corpus {
		if sec.Text == "" {
			continue
		}
		out, n := ops.RedactText(sec.Text)
		if n == 0 || !strings.Contains(out, ops.Redacted) {
			t.Errorf("%s: %q -> %q (%d hidden); want the secret hidden", sec.Name, sec.Text, out, n)
		}
		secrettest.AssertHidden(t, out)
		// Redacting again changes nothing and counts nothing.
		if again, m := ops.RedactText(out); again != out || m != 0 {
			t.Errorf("%s: second pass %q -> %q (%d)", sec.Name, out, again, m)
		}
	}
}

// RedactJSON hides every payload and header secret of the corpus at any
// depth and keeps the neighbours; secrets in string values are hidden as
// in text.
func TestRedactJSONCorpus(t *testing.T) {
	t.Parallel()
	for _, sec := range secrettest.Corpus {
		if sec.JSON == "" {
			continue
		}
		out, n, ok := ops.RedactJSON(json.RawMessage(sec.JSON))
		if !ok || n == 0 || !json.Valid(out) {
			t.Errorf("%s: %s -> %s (%d hidden, ok %v)", sec.Name, sec.JSON, out, n, ok)
		}
		secrettest.AssertHidden(t, string(out))
		for _, nb := range secrettest.NeighbourTexts {
			if !strings.Contains(string(out), nb) {
				t.Errorf("%s: %s lost %s", sec.Name, out, nb)
			}
		}
	}
}

// Text around secrets, and look-alikes that are not secrets, stay.
func TestRedactTextKeepsTheRest(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`password=hunter2 user=ada`:                                     `password=[REDACTED] user=ada`,
		`Authorization: Token 9944b0919 from 10.0.0.1`:                  `Authorization: Token [REDACTED] from 10.0.0.1`,
		`"Authorization": "Basic dXNlcjpwYXNz", "author": "ada"`:        `"Authorization": "Basic [REDACTED]", "author": "ada"`,
		`passphrase='open sesame now' then`:                             `passphrase='[REDACTED]' then`,
		`card_number=4111-1111-1111-1111; retry`:                        `card_number=[REDACTED]; retry`,
		`https://x.io/cb?access_token=abc123&state=1`:                   `https://x.io/cb?access_token=[REDACTED]&state=1`,
		`dial postgres://app:s3cret@db:5432/app`:                        `dial postgres://app:[REDACTED]@db:5432/app`,
		`{"author": "ada", "tokens": 5, "session_count": 2, "pwd": ""}`: `{"author": "ada", "tokens": 5, "session_count": 2, "pwd": ""}`,
		`order 42 failed after 3 attempts`:                              `order 42 failed after 3 attempts`,
		// Separators with spaces around them, or of two characters.
		`host=db user=app password = HunterPW9x sslmode=off`: `host=db user=app password = [REDACTED] sslmode=off`,
		`password := x1 then`:                                `password := [REDACTED] then`,
		`{:api_token => "a b", :user => "ada"}`:              `{:api_token => "[REDACTED]", :user => "ada"}`,
		`if password == hunter2 {`:                           `if password == [REDACTED] {`,
		`secret_key = AbC123 region=eu`:                      `secret_key = [REDACTED] region=eu`,
		`if order == 42 {`:                                   `if order == 42 {`,
		// A password holding an @: the host follows the last one, also
		// after pgx masked the part before the first.
		`postgres://u:Pa@ssW0rd1@h:bad/db`:                   `postgres://u:[REDACTED]@h:bad/db`,
		"cannot parse `postgres://u:xxxxx@ssW0rd1@h:bad/db`": "cannot parse `postgres://u:[REDACTED]@h:bad/db`",
		`mail ada@example.com via smtp://relay:25 from a@b`:  `mail ada@example.com via smtp://relay:25 from a@b`,
		// A key that ends a path is no key: what follows is what happened
		// there. A secret after it is still one.
		`POST https://idp.example/oauth/token: 503 Service Unavailable`:  `POST https://idp.example/oauth/token: 503 Service Unavailable`,
		`exec /opt/bin/rotate-token: exit code 3`:                        `exec /opt/bin/rotate-token: exit code 3`,
		`POST https://x.example/api/auth: 401 Unauthorized: token=t0k3n`: `POST https://x.example/api/auth: 401 Unauthorized: token=[REDACTED]`,
		`POST https://x.example/auth: token=t0k3n`:                       `POST https://x.example/auth: token=[REDACTED]`,
		`/usr/bin/app --password=hunter2 -v`:                             `/usr/bin/app --password=[REDACTED] -v`,
		// A key ending a path is followed by its secret in a secret
		// store's listing: only a status or an error's first word is
		// taken for what happened there.
		`kv/app/password: hunter2`:                                  `kv/app/password: [REDACTED]`,
		`read /vault/secret/token: s.Xy12ab34 (kv v2)`:              `read /vault/secret/token: [REDACTED] (kv v2)`,
		`Post "https://idp.example/oauth/token": dial tcp: refused`: `Post "https://idp.example/oauth/token": dial tcp: refused`,
		// A list under a key goes whole: request headers echoed as Go
		// marshals them, or prints them.
		`{"X-Api-Key":["k1-Secret","k2-Secret"],"Accept":["*/*"]}`: `{"X-Api-Key":[REDACTED],"Accept":["*/*"]}`,
		`map[Accept:[*/*] Cookie:[sid=1 sid=2]]`:                   `map[Accept:[*/*] Cookie:[REDACTED]]`,
	} {
		if got, _ := ops.RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n  = %q\nwant %q", in, got, want)
		}
	}
	body := fmt.Sprintf("body %q", `{"user":"ada","password":"pw1","order_id":42}`)
	got, n := ops.RedactText(body)
	if n != 1 || !strings.Contains(got, `\"user\":\"ada\"`) || !strings.Contains(got, `\"order_id\":42`) || strings.Contains(got, "pw1") {
		t.Errorf("RedactText(%s) = %s (%d)", body, got, n)
	}
}

func TestIsSecretKey(t *testing.T) {
	t.Parallel()
	for _, k := range secrettest.SecretKeys {
		for _, key := range []string{k, strings.ToUpper(k), "x-" + k, "user_" + k + "_v2"} {
			if !ops.IsSecretKey(key) {
				t.Errorf("IsSecretKey(%q) = false", key)
			}
		}
	}
	for _, k := range []string{"auth", "X-Auth-Token", "apiKey", "privateKey", "Set-Cookie", "Proxy-Authorization"} {
		if !ops.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false", k)
		}
	}
	for _, k := range []string{"author", "authored_by", "order_id", "amount", "kind", "name"} {
		if ops.IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true; it is not secret", k)
		}
	}
}

// Texts are only searched for the secrets their words could hold; a word
// spelled with a letter that folds to ASCII (ſ is s, the Kelvin sign is k)
// is still one.
func TestRedactTextFoldedLetters(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"paſsword=hunter2", "api_\u212Aey=hunter2", "ToKeN: hunter2", "BEARER hunter2hunter2"} {
		out, n := ops.RedactText(in)
		if n != 1 || strings.Contains(out, "hunter2") {
			t.Errorf("%q -> %q (%d hidden), want hunter2 hidden", in, out, n)
		}
	}
}
