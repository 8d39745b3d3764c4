package config_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/ops"
)

// The errors about a bad configuration file quote what they could not
// use, but no secret in it: a handler url's password, query, fragment and
// token-like path segments, the arguments a command gives to options
// named like a secret's key, header and env values written where a
// mapping goes. Each still names its key and says what is wrong.
func TestConfigErrorsKeepSecrets(t *testing.T) {
	handler := func(h string) string { return "queues:\n  orders:\n    handler: " + h + "\n" }
	for _, c := range []struct {
		name, text, secret, key, says string
	}{
		{"http url query", handler(`{type: http, url: "https://billing.internal:99999/charge?sig=Zq8SigQ1abcdef"}`),
			"Zq8SigQ1abcdef", "queues.orders.handler.url", `"https://billing.internal:99999/charge?[REDACTED]": port 99999 is out of range 1..65535`},
		{"http url path token", handler(`{type: http, url: "https://hooks.example.com:0/services/T0123ABCD/Xk9pQ2rT7vLm3nB8wZ4yC6dF"}`),
			"Xk9pQ2rT7vLm3nB8wZ4yC6dF", "queues.orders.handler.url", `"https://hooks.example.com:0/services/T0123ABCD/[REDACTED]": port 0 is out of range`},
		{"http url fragment", handler(`{type: http, url: "https://h:70000/x#Zq8FragQ1abcdef"}`),
			"Zq8FragQ1abcdef", "queues.orders.handler.url", `"https://h:70000/x#[REDACTED]": port 70000 is out of range`},
		{"http url password and query, bad scheme", handler(`{type: http, url: "ftp://app:Zq8PwQ1xyzab@h/x?token=Zq8TokQ1abcdef"}`),
			"Zq8", "queues.orders.handler.url", `"ftp://app:[REDACTED]@h/x?[REDACTED]": scheme "ftp" is not supported`},
		{"http url without scheme", handler(`{type: http, url: "//h/x?api_key=Zq8KeyQ1abcdef"}`),
			"Zq8KeyQ1abcdef", "queues.orders.handler.url", `"//h/x?[REDACTED]" has no scheme`},
		{"exec command as a string, option and value", handler(`{type: exec, command: "/usr/local/bin/charge --token Zq8TokQ1ab --live"}`),
			"Zq8TokQ1ab", "queues.orders.handler.command", `is a string; give the program and its arguments as a list, such as ["/usr/local/bin/charge", "--token", "[REDACTED]", "--live"]`},
		{"exec command as a string, short value", handler(`{type: exec, command: "charge --password=hunter2"}`),
			"hunter2", "queues.orders.handler.command", `["charge", "--password=[REDACTED]"]`},
		{"exec command as a string, url", handler(`{type: exec, command: "curl https://u:Zq8PwQ1xyzab@h/x?sig=Zq8SigQ1abcdef"}`),
			"Zq8", "queues.orders.handler.command", `["curl", "https://u:[REDACTED]@h/x?[REDACTED]"]`},
		{"http headers as a plain value", handler(`{type: http, url: "https://h/x", headers: Zq8HdrQ1ab}`),
			"Zq8", "queues.orders.handler.headers", "expected a mapping (key: value lines), got a plain value"},
		{"exec env as a plain value", handler(`{type: exec, command: [/bin/true], env: hunter2}`),
			"hunter2", "queues.orders.handler.env", "expected a mapping (key: value lines), got a plain value"},
		{"http header as a list", handler(`{type: http, url: "https://h/x", headers: {X-Api-Key: [Zq8HdrQ1ab]}}`),
			"Zq8", "queues.orders.handler.headers", "in header X-Api-Key, expected text, got a list"},
		{"exec variable as a list", handler(`{type: exec, command: [/bin/true], env: {API_TOKEN: [hunter2]}}`),
			"hunter2", "queues.orders.handler.env", "in variable API_TOKEN, expected text, got a list"},
		{"alerts headers as a plain value", "alerts:\n  url: https://h/x\n  headers: Zq8HdrQ1ab\n",
			"Zq8", "alerts.headers", "expected a mapping (key: value lines), got a plain value"},
		{"alerts header as a list", "alerts:\n  url: https://h/x\n  headers: {X-Api-Key: [Zq8HdrQ1ab]}\n",
			"Zq8", "alerts.headers", "in header X-Api-Key, expected text, got a list"},
		{"unknown key next to alerts headers", "alerts:\n  url: https://h/x\n  headers: {X-Api-Key: Zq8HdrQ1ab}\n  bogus: 1\n",
			"Zq8", "alerts.bogus", `unknown key "bogus"`},
		{"unknown option next to http headers", handler(`{type: http, url: "https://u:Zq8PwQ1xyzab@h/x?sig=Zq8SigQ1abcdef", headers: {Authorization: Bearer Zq8HdrQ1ab}, bogus: 1}`),
			"Zq8", "queues.orders.handler.bogus", "unknown option"},
		{"unknown key next to a database url", "database_url: postgres://app:Zq8PwQ1xyzab@db/app?sslpassword=Zq8SslQ1ab\nbogus: 1\n",
			"Zq8", "bogus", `unknown key "bogus"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := config.Parse("pgbus.yaml", []byte(c.text))
			if err == nil {
				err = f.CheckHandlers()
			}
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if strings.Contains(msg, c.secret) {
				t.Errorf("error shows %q: %s", c.secret, msg)
			}
			if !strings.Contains(msg, ": "+c.key+": ") || !strings.Contains(msg, c.says) {
				t.Errorf("error %q\nwant it to name %s and say %q", msg, c.key, c.says)
			}
		})
	}
}

// An error about a header's or a variable's value, shown redacted as
// every error is, keeps its words: after "...headers.X-Api-Key: " the
// reason read as the header's value, and its first word was redacted
// ("[REDACTED] value holds a control character").
func TestHandlerValueErrorsKeepTheirWords(t *testing.T) {
	handler := func(h string) string { return "queues:\n  orders:\n    handler: " + h + "\n" }
	for _, c := range []struct{ name, text, says string }{
		{"header control character", handler(`{type: http, url: "https://h/x", headers: {X-Api-Key: "Zq8\nHdrQ1ab"}}`),
			"queues.orders.handler.headers: in header X-Api-Key, the value holds a control character"},
		{"header twice", handler(`{type: http, url: "https://h/x", headers: {Authorization: Bearer Zq8HdrQ1ab, authorization: Bearer Zq8HdrQ1cd}}`),
			`queues.orders.handler.headers: in header authorization, the header is given twice (also as "Authorization")`},
		{"variable NUL", handler(`{type: exec, command: [/bin/true], env: {API_TOKEN: "Zq8\x00TokQ1ab"}}`),
			"queues.orders.handler.env: in variable API_TOKEN, the value holds a NUL character"},
	} {
		f, err := config.Parse("pgbus.yaml", []byte(c.text))
		if err == nil {
			err = f.CheckHandlers()
		}
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		shown, _ := ops.RedactText(err.Error())
		if !strings.Contains(shown, c.says) || strings.Contains(shown, "Zq8") {
			t.Errorf("%s: shown as %q; want it to say %q, without the value", c.name, shown, c.says)
		}
	}
}
