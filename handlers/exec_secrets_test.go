//go:build unix

package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/ops"
)

// A command's stderr whose last line holds a secret, with as much after it
// as puts the cut of the failure message (its last 700 bytes) or of the
// failure history (its last 2,000 characters) inside the secret's key:
// neither shows the secret, though the cut takes the key that marked it.
func TestExecOutputCutKeepsNoSecret(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		line, secret string
		after        int // bytes after the secret and a space
	}{
		// "…word=MsgCutSecret22 zzz…": 697 bytes from "word" on.
		"message, key=value": {"connecting with password=MsgCutSecret22", "MsgCutSecret22", 697 - len("word=MsgCutSecret22 ")},
		// "…rd = MsgCutSpaced33 zzz…": 1,999 characters from "rd" on.
		"history, key = value": {"connecting with password = MsgCutSpaced33", "MsgCutSpaced33", 1999 - len("rd = MsgCutSpaced33 ")},
		// "…ve_51ExecSecretABCDEF zzz…": 697 bytes from "ve" on.
		"message, in the value": {"charge failed with sk_live_51ExecSecretABCDEF", "51ExecSecretABCDEF", 697 - len("ve_51ExecSecretABCDEF ")},
	} {
		t.Run(name, func(t *testing.T) {
			script := fmt.Sprintf("printf 'filler line\\n' >&2\nprintf '%%s ' '%s' >&2\nprintf '%%*s\\n' %d '' | tr ' ' z >&2\nexit 3\n", c.line, c.after)
			fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
				Options: map[string]any{"command": []any{"/bin/sh", writeScript(t, t.TempDir(), "leak.sh", script)}}})
			err := fn(context.Background(), execJob(1, `{}`))
			var ee *handlers.ExitError
			if !errors.As(err, &ee) || ee.ExitCode != 3 {
				t.Fatalf("error %v; want exit code 3", err)
			}
			var oe engine.OutputError
			if !errors.As(err, &oe) || oe.FailureOutput().Source != "stderr" || !strings.HasSuffix(oe.FailureOutput().Text, "zzz") {
				t.Fatalf("failure output %+v; want the end of stderr", oe)
			}
			for what, text := range map[string]string{"message": err.Error(), "failure history": oe.FailureOutput().Text} {
				// As every view shows it, redacted again.
				if shown, _ := ops.RedactText(text); strings.Contains(shown, c.secret) {
					t.Errorf("the %s shows %s:\n%s", what, c.secret, shown)
				}
			}
		})
	}
}

// What a command inherits from the worker under a secret's name (the
// worker's own keys, such as its alerts' token) is hidden where the
// command prints it, as its env option's values are; other variables
// (PWD, a path an error must be able to name) stay shown, and the worker's
// DATABASE_URL_FILE is not inherited, as its DATABASE_URL is not.
// Sequential: it sets the process's environment.
func TestExecHidesInheritedSecrets(t *testing.T) {
	const token = "pagertoken123456789"
	t.Setenv("PAGER_TOKEN", token)
	// Names that hold secrets by convention without a secret's word.
	conventional := map[string]string{"STRIPE_KEY": "aZq7xK9mP2vL4nR8t", "WEBHOOK_HMAC": "hmacvalue0123456", "MY_PW": "pw-value-98765",
		"SENTRY_DSN": "https://f00dbabe1234@o1.ingest.example.com/1", "REDIS_PASS": "redispass4242"}
	for name, value := range conventional {
		t.Setenv(name, value)
	}
	t.Setenv("DATABASE_URL_FILE", "/run/secrets/database-url")
	dir := t.TempDir()
	script := "printf 'paging with %s failed in %s; url file %s\\n' \"$PAGER_TOKEN\" \"$PWD\" \"${DATABASE_URL_FILE:-withheld}\" >&2\nprintf '%s %s %s %s %s\\n' \"$STRIPE_KEY\" \"$WEBHOOK_HMAC\" \"$MY_PW\" \"$SENTRY_DSN\" \"$REDIS_PASS\" >&2\nexit 3\n"
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": []any{"/bin/sh", writeScript(t, dir, "env.sh", script)}, "dir": dir}})
	err := fn(context.Background(), execJob(1, `{}`))
	var oe engine.OutputError
	if err == nil || !errors.As(err, &oe) {
		t.Fatalf("error %v; want the command's failure with its output", err)
	}
	for what, text := range map[string]string{"message": err.Error(), "failure output": oe.FailureOutput().Text} {
		if strings.Contains(text, token) || !strings.Contains(text, "paging with [REDACTED] failed in "+dir+"; url file withheld") {
			t.Errorf("the %s: %q; want the token hidden, the directory shown and DATABASE_URL_FILE withheld", what, text)
		}
		for name, value := range conventional {
			if strings.Contains(text, value) {
				t.Errorf("the %s shows %s's value: %q", what, name, text)
			}
		}
	}
}

// A command whose stderr ends in one line longer than what is kept of it
// (a JSON log line of 70 KB) fails saying why its output is not shown,
// rather than with an empty quote, and the line's end, whose start with
// any secret's name was cut off, stays unshown.
func TestExecLongLastLineSaysWhyItIsNotShown(t *testing.T) {
	t.Parallel()
	script := "printf '{\"token\":\"LongLineSecret77' >&2\nhead -c 70000 /dev/zero | tr '\\0' x >&2\nprintf '\",\"msg\":\"ValidationError: field phone is required\"}\\n' >&2\nexit 1\n"
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeExec,
		Options: map[string]any{"command": []any{"/bin/sh", writeScript(t, t.TempDir(), "long.sh", script)}}})
	err := fn(context.Background(), execJob(1, `{}`))
	var ee *handlers.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 1 {
		t.Fatalf("error %v; want exit code 1", err)
	}
	var oe engine.OutputError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v carries no failure output", err)
	}
	for what, text := range map[string]string{"message": err.Error(), "failure history": oe.FailureOutput().Text} {
		if !strings.Contains(text, "a line too long to keep whole, not shown") || strings.Contains(text, "xxxx") || strings.Contains(text, "LongLineSecret77") {
			t.Errorf("the %s does not say why the long line is not shown, or shows part of it:\n%.400s", what, text)
		}
	}
}
