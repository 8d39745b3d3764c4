package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/cli"
)

// A PGBUS_ variable set but empty stops the command before anything
// starts, as an empty DATABASE_URL does: read as unset, an empty
// PGBUS_MCP_TOKEN served a loopback address (a reverse proxy's sidecar)
// without a token, and an empty PGBUS_QUEUES worked every queue of the
// file. The flag, which comes first, is not in the way of it.
func TestEmptySettingVariableStartsNothing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	file := filepath.Join(t.TempDir(), "pgbus.yaml")
	if err := os.WriteFile(file, []byte("queues:\n  orders: {handler: {type: demo}}\n  emails: {handler: {type: demo}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"PGBUS_DATA_DIR=" + dataDir, "PGBUS_CONFIG=" + file}
	for _, c := range []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"token", "PGBUS_MCP_TOKEN=", []string{"dashboard", "--addr", "127.0.0.1:0"}, "environment variable PGBUS_MCP_TOKEN is set but empty"},
		{"token blank", "PGBUS_MCP_TOKEN= ", []string{"serve", "--transport", "http", "--addr", "127.0.0.1:0", "--no-workers"}, "environment variable PGBUS_MCP_TOKEN is set but empty"},
		{"queues", "PGBUS_QUEUES=", []string{"work", "--for", "1s"}, "environment variable PGBUS_QUEUES is set but empty"},
		{"handler", "PGBUS_HANDLER=", []string{"serve", "--queue", "orders"}, "environment variable PGBUS_HANDLER is set but empty"},
		{"safe fields", "PGBUS_SAFE_FIELDS=", []string{"dashboard", "--addr", "127.0.0.1:0"}, "environment variable PGBUS_SAFE_FIELDS is set but empty"},
		{"poll interval", "PGBUS_POLL_INTERVAL=", []string{"work", "--for", "1s"}, "environment variable PGBUS_POLL_INTERVAL is set but empty"},
		{"log level", "PGBUS_LOG_LEVEL=", []string{"queues"}, "environment variable PGBUS_LOG_LEVEL is set but empty"},
	} {
		r := usageRun(t, append(base, c.env), c.args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "unset "+strings.Fields(c.want)[2]) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q and to unset it", c.name, r.code, r.stderr, cli.ExitUsage, c.want)
		}
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Fatalf("data directory holds %v (%v); want nothing started", entries, err)
	}
	// The flag comes first: the empty variable is not read, and the
	// command goes on to the flag's own checks.
	r := usageRun(t, append(base, "PGBUS_MCP_TOKEN="), "dashboard", "--addr", "0.0.0.0:0", "--auth-token", "short")
	if r.code != cli.ExitUsage || strings.Contains(r.stderr, "set but empty") || !strings.Contains(r.stderr, "too few") {
		t.Errorf("--auth-token beside an empty PGBUS_MCP_TOKEN: exit %d, stderr %q; want the short token refused", r.code, r.stderr)
	}
	r = usageRun(t, append(base, "PGBUS_QUEUES="), "work", "--queue", "Bad")
	if r.code != cli.ExitUsage || strings.Contains(r.stderr, "set but empty") || !strings.Contains(r.stderr, `--queue "Bad"`) {
		t.Errorf("--queue beside an empty PGBUS_QUEUES: exit %d, stderr %q; want the queue's name refused", r.code, r.stderr)
	}
}
