package bouncertest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/bouncertest"
	"github.com/pgbus/pgbus/internal/pgtest"
)

// TestStatementModeIsRefusedWithWhatToSet runs the pgbus command through
// PgBouncer in statement mode, which refuses every transaction of more
// than one statement: each command, the long-running ones included, stops
// at once saying which pool mode to use, rather than taking the refusal
// for a database that does not answer and waiting for it, or sending the
// user to a health check that fails alike. (pgbus serve serves agents
// meanwhile, its health tool saying the same.)
func TestStatementModeIsRefusedWithWhatToSet(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	b := bouncertest.StartWith(t, dbURL, bouncertest.Options{PoolMode: "statement"})
	for _, args := range [][]string{
		{"migrate"},
		{"queue", "create", "orders"},
		{"send", "orders", `{"a":1}`},
		{"dlq", "list"},
		{"work", "--queue", "orders", "--handler", "demo"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
			"GORACE=atexit_sleep_ms=0", "DATABASE_URL=" + b.URL()}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		waited := ctx.Err()
		cancel()
		var exit *exec.ExitError
		switch {
		case waited != nil:
			t.Errorf("pgbus %s through PgBouncer in statement mode was still running after 2 minutes; want it to stop at once saying which pool mode to use\n%s", strings.Join(args, " "), out.String())
		case !errors.As(err, &exit) || exit.ExitCode() == 0:
			t.Errorf("pgbus %s through PgBouncer in statement mode: %v; want it to fail\n%s", strings.Join(args, " "), err, out.String())
		case !strings.Contains(out.String(), "statement mode (pool_mode = statement)") || !strings.Contains(out.String(), "pool_mode = transaction"):
			t.Errorf("pgbus %s through PgBouncer in statement mode says:\n%s\nwant it to name statement mode and the pool mode to use", strings.Join(args, " "), out.String())
		case strings.Contains(out.String(), "see pgbus health"), strings.Contains(out.String(), "before the database answered"):
			t.Errorf("pgbus %s through PgBouncer in statement mode says:\n%s\nwant no health check, which fails alike, nor a database that does not answer", strings.Join(args, " "), out.String())
		}
	}
}
