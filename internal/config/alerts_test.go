package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/ops"
)

// An alerts block with ${NAME} in the URL and headers gives the notifier
// their values from the environment, and its own thresholds.
func TestAlertsExpandEnvironment(t *testing.T) {
	t.Setenv("PGBUS_TEST_PAGER_TOKEN", "tk_123")
	t.Setenv("PGBUS_TEST_HOOK", "T0/B1/x")
	f, err := config.Parse("pgbus.yaml", []byte(`
alerts:
  url: https://hooks.example.com/services/${PGBUS_TEST_HOOK}
  headers:
    Authorization: Bearer ${PGBUS_TEST_PAGER_TOKEN}
    X-Team: ops
  format: slack
  check_interval: 5s
  growth_threshold: 20
  growth_window: 2m
  timeout: 3s
`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Alerts.On() {
		t.Fatal("alerts with a url are off")
	}
	c := f.Alerts.Config()
	if c.URL != "https://hooks.example.com/services/T0/B1/x" || c.Headers["Authorization"] != "Bearer tk_123" || c.Headers["X-Team"] != "ops" ||
		c.Format != alerts.FormatSlack || c.CheckInterval != 5*time.Second || c.GrowthThreshold != 20 || c.GrowthWindow != 2*time.Minute || c.Timeout != 3*time.Second {
		t.Fatalf("notifier config: %+v", c)
	}
	if f.Alerts.Headers["Authorization"] != "Bearer ${PGBUS_TEST_PAGER_TOKEN}" {
		t.Fatalf("the file's own value was replaced: %q", f.Alerts.Headers["Authorization"])
	}
}

// No block, and a block turned off, are alerts off; a block turned off
// may keep references to variables that are not set.
func TestAlertsOff(t *testing.T) {
	for _, text := range []string{"log_level: info\n", "alerts:\n  enabled: false\n  url: https://h.example.com/${PGBUS_TEST_NOT_SET_EVER}\n"} {
		f, err := config.Parse("pgbus.yaml", []byte(text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if f.Alerts.On() {
			t.Fatalf("%q: alerts are on", text)
		}
	}
}

// A bad alerts block stops pgbus with the line, the key and what to do.
func TestAlertsBadInput(t *testing.T) {
	t.Setenv("PGBUS_TEST_EMPTY", "")
	t.Setenv("PGBUS_TEST_DEL", "a\x7fb")
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"relative url", "  url: hooks.example.com/pgbus\n", []string{"pgbus.yaml:3: alerts.url:", "absolute http:// or https:// URL", "full address"}},
		{"not http", "  url: ftp://hooks.example.com/pgbus\n", []string{"alerts.url:", "absolute http:// or https:// URL"}},
		{"unknown format", "  url: https://h.example.com\n  format: xml\n", []string{"pgbus.yaml:4: alerts.format:", `"xml" is not a format; use json`, "slack"}},
		{"bad reference", "  url: https://h.example.com/${not a name}\n", []string{"alerts.url:", "${not a name} is not a variable reference"}},
		{"no url", "  format: slack\n", []string{"alerts.url:", "missing; give the webhook's URL, or set alerts.enabled: false"}},
		{"unknown key", "  url: https://h.example.com\n  threshold: 5\n", []string{`unknown key "threshold"`, "growth_threshold"}},
		{"fractional threshold", "  url: https://h.example.com\n  growth_threshold: 1.5\n", []string{"alerts.growth_threshold:", "whole number"}},
		{"zero threshold", "  url: https://h.example.com\n  growth_threshold: 0\n", []string{"alerts.growth_threshold:", "out of range 1.."}},
		{"fast checks", "  url: https://h.example.com\n  check_interval: 10ms\n", []string{"alerts.check_interval:", "out of range 1s..1h"}},
		{"bad header name", "  url: https://h.example.com\n  headers:\n    \"Bad Name\": x\n", []string{"alerts.headers.Bad Name:", "not a header name"}},
		{"header line break", "  url: https://h.example.com\n  headers:\n    X-Team: \"a\\nb\"\n", []string{"alerts.headers:", "in header X-Team", "control character"}},
		{"header escape", "  url: https://h.example.com\n  headers:\n    X-Team: \"a\\x1bb\"\n", []string{"alerts.headers:", "in header X-Team", "control character"}},
		{"header DEL from a variable", "  url: https://h.example.com\n  headers:\n    X-Team: ${PGBUS_TEST_DEL}\n", []string{"alerts.headers:", "in header X-Team", "control character"}},
	} {
		_, err := config.Parse("pgbus.yaml", []byte("\nalerts:\n"+c.body))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
}

// A ${NAME} whose variable is not set does not stop the commands that only
// read the file (they send no alerts): Ready says it to those that do, in
// words redaction leaves whole (a header's name is not followed by a
// colon, which would make the next word look like its credential).
func TestAlertsUnsetVariables(t *testing.T) {
	t.Setenv("PGBUS_TEST_EMPTY", "")
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"unset variable", "  url: https://h.example.com\n  headers:\n    Authorization: Bearer ${PGBUS_TEST_NOT_SET_EVER}\n",
			[]string{"pgbus.yaml:4: alerts.headers: header Authorization uses ${PGBUS_TEST_NOT_SET_EVER}, but the environment variable PGBUS_TEST_NOT_SET_EVER is not set", "export PGBUS_TEST_NOT_SET_EVER"}},
		{"unset variable in url", "  url: https://h.example.com/${PGBUS_TEST_NOT_SET_EVER}\n", []string{"alerts.url:", "PGBUS_TEST_NOT_SET_EVER is not set"}},
		{"empty variable", "  url: https://h.example.com\n  headers:\n    X-Token: ${PGBUS_TEST_EMPTY}\n", []string{"header X-Token uses", "is empty"}},
	} {
		f, err := config.Parse("pgbus.yaml", []byte("\nalerts:\n"+c.body))
		if err != nil {
			t.Errorf("%s: parse: %v; want the file read, the alerts not ready", c.name, err)
			continue
		}
		err = f.Alerts.Ready()
		if err == nil {
			t.Errorf("%s: ready", c.name)
			continue
		}
		shown, _ := ops.RedactText(err.Error())
		for _, w := range c.want {
			if !strings.Contains(shown, w) {
				t.Errorf("%s: error as shown %q lacks %q", c.name, shown, w)
			}
		}
	}
}

// The webhook's url takes a variable's value as it is, as a handler's url
// does: a value that would change the url's structure (cut it at a #,
// start its query at a ? before the rest of it, split a parameter at a &)
// is refused, naming the variable without showing its value; so is a ${
// without its closing }, even beside a variable that is not set. A value
// that changes nothing the file wrote (a whole url, a whole query) passes.
func TestAlertsURLVariablesKeepTheURLsStructure(t *testing.T) {
	t.Setenv("PGBUS_TEST_HASHY", "abc123#def456")
	t.Setenv("PGBUS_TEST_AMP", "abc123&admin=true")
	t.Setenv("PGBUS_TEST_QM", "abc123?def456")
	for _, c := range []struct{ url, want string }{
		{"https://h.example.com/hook?token=${PGBUS_TEST_HASHY}&team=ops", "${PGBUS_TEST_HASHY} brings a #"},
		{"https://h.example.com/hook?token=${PGBUS_TEST_AMP}&team=ops", "${PGBUS_TEST_AMP} brings a &"},
		{"https://h.example.com/${PGBUS_TEST_QM}/hook", "${PGBUS_TEST_QM} brings a ?"},
		{"https://h.example.com/hook?token=${PGBUS_TEST_AMP", "${PGBUS_TEST_AMP has no closing }"},
		{"https://h.example.com/${PGBUS_TEST_NOT_SET_EVER}/hook?token=${PGBUS_TEST_AMP", "${PGBUS_TEST_AMP has no closing }"},
	} {
		_, err := config.Parse("pgbus.yaml", []byte("\nalerts:\n  url: "+c.url+"\n"))
		if err == nil {
			t.Errorf("%s: accepted", c.url)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "pgbus.yaml:3: alerts.url: ") || !strings.Contains(msg, c.want) ||
			strings.Contains(msg, "abc123") || strings.Contains(msg, "def456") {
			t.Errorf("%s: error %q; want it to say %q without the value", c.url, msg, c.want)
		}
	}
	t.Setenv("PGBUS_TEST_WHOLE", "https://h.example.com/hook?a=1&b=2")
	t.Setenv("PGBUS_TEST_QUERY", "a=1&b=2")
	for url, want := range map[string]string{
		"${PGBUS_TEST_WHOLE}":                            "https://h.example.com/hook?a=1&b=2",
		"https://h.example.com/hook?${PGBUS_TEST_QUERY}": "https://h.example.com/hook?a=1&b=2",
	} {
		f, err := config.Parse("pgbus.yaml", []byte("\nalerts:\n  url: "+url+"\n"))
		if err != nil {
			t.Errorf("%s: %v", url, err)
			continue
		}
		if got := f.Alerts.Config().URL; got != want {
			t.Errorf("%s: the notifier's url is %q; want %q", url, got, want)
		}
	}
}

// A header's ${ without its closing } is refused beside a variable that is
// not set, as it is alone.
func TestAlertsHeaderUnclosedBesideUnset(t *testing.T) {
	_, err := config.Parse("pgbus.yaml", []byte("\nalerts:\n  url: https://h.example.com\n  headers:\n    Authorization: ${PGBUS_TEST_NOT_SET_EVER} ${PGBUS_TEST_X\n"))
	if err == nil || !strings.Contains(err.Error(), "in header Authorization, ${PGBUS_TEST_X has no closing }") {
		t.Fatalf("error %v; want the unclosed ${ refused", err)
	}
}
