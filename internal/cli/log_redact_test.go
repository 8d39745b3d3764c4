package cli_test

import (
	"strings"
	"testing"
)

// A job whose command prints a credential to stderr fails with that text
// as its error, and the worker logs the failure at debug level: the log
// line says the job failed and hides the credential.
func TestWorkLogHidesSecretsInJobErrors(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	const token = "sk_live_LOGLEAK1234567890abcdef"
	cfg := execQueue(t, d, "leaky", 1, "echo 'upstream said: Authorization: Bearer "+token+" password=hunter2-log' >&2\nexit 1\n")
	d.ok(t, "send", "leaky", `{"n": 1}`)
	r := pgbus(t, d.env, "work", "--config", cfg, "--until-idle", "--log-level", "debug", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("work: exit %d: %s", r.code, r.stderr)
	}
	if st := d.stats(t, "leaky"); st.DLQDepth != 1 {
		t.Fatalf("want the job dead-lettered by its command's failure: %+v\nlog:\n%s", st, r.stderr)
	}
	if !strings.Contains(r.stderr, "job failed") || !strings.Contains(r.stderr, "[REDACTED]") {
		t.Fatalf("want the failure logged with the credential redacted; log:\n%s", r.stderr)
	}
	for _, secret := range []string{token, "hunter2-log"} {
		if strings.Contains(r.stderr, secret) {
			t.Errorf("the log shows %q:\n%s", secret, r.stderr)
		}
	}
}
