package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Start-up errors quote the settings they could not use: the line pgbus
// prints hides the passwords in them, the rest of it kept.
func TestStartErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(cfg, []byte("queues:\n  orders:\n    handler:\n      type: http\n      url: \"http://u:CfgPW20@h:badport/x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		env    []string
		args   []string
		secret string
		want   string
	}{
		"key=value DSN, password = with spaces": {[]string{"DATABASE_URL=host=127.0.0.1 port=bad user=postgres password = HunterPW9x"}, []string{"queues"},
			"HunterPW9x", "password = [REDACTED]"},
		"URL with an @ in its password": {[]string{"DATABASE_URL=postgres://u:Pa@ssW0rd1@h:bad/db"}, []string{"queues"},
			"ssW0rd1", "postgres://u:[REDACTED]@h:bad/db"},
		"URL with an @ in its password, parsed": {[]string{"DATABASE_URL=postgres://u:Pa@ssW0rd1@127.0.0.1:1/db"}, []string{"queues"},
			"ssW0rd1", "percent-encode an @ in the password as %40"},
		"handler URL in the configuration file": {[]string{"DATABASE_URL=postgres://x@127.0.0.1:1/x"}, []string{"--config", cfg, "work"},
			"CfgPW20", `"http://u:[REDACTED]@h:badport/x" is not a URL`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := pgbusIn(t, c.env, "", c.args...)
			if r.code == 0 || !strings.HasPrefix(r.stderr, "pgbus: ") || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant a failure saying %s", r.code, r.stderr, c.want)
			}
			if strings.Contains(r.stderr, c.secret) {
				t.Errorf("stderr shows %s:\n%s", c.secret, r.stderr)
			}
		})
	}
}
