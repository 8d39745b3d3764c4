package cli_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A bad value that reads as a secret's key (token, password, api_key) is
// quoted without a colon after it: the printed line is redacted, and a
// value followed by one took the advice after it for its secret, hiding
// what to give.
func TestSecretLookingValuesKeepTheirAdvice(t *testing.T) {
	t.Parallel()
	nowhere := "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"
	for _, v := range []string{"token", "password", "api_key"} {
		for _, c := range []struct {
			args []string
			says string
		}{
			{[]string{"dlq", "list", "--since", v}, "give an RFC 3339 time"},
			{[]string{"dlq", "summary", "--until", v}, "give an RFC 3339 time"},
			{[]string{"audit", "--since", v}, "give an RFC 3339 time"},
			{[]string{"send", "orders", "{}", "--deadline", v}, "give an RFC 3339 time"},
			{[]string{"health", "--fail-on", v}, "give degraded or stalled"},
			{[]string{"dlq", "show", v}, "ids are positive whole numbers"},
			{[]string{"bench", "--workload", v}, "use a comma list of"},
			{[]string{"help", v}, "see pgbus help for the commands and topics"},
		} {
			r := usageRun(t, nil, append(c.args, "--database-url", nowhere)...)
			if r.code != 2 || strings.Contains(r.stderr, ops.Redacted) || !strings.Contains(r.stderr, `"`+v+`"`) || !strings.Contains(r.stderr, c.says) {
				t.Errorf("pgbus %s: exit %d, stderr %q; want 2 naming %q and saying %q", strings.Join(c.args, " "), r.code, r.stderr, v, c.says)
			}
		}
	}
}
