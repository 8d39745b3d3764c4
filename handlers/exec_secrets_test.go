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
