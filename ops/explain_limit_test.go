package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// ExplainLimit says of an error a role's setting caused (here the server's
// own statement_timeout refusal) which setting and the statement that
// raises it, for errors met before any operation (the schema check of a
// command's start); other errors pass as they are.
func TestExplainLimit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SET statement_timeout = '50ms'`); err != nil {
		t.Fatal(err)
	}
	_, cut := conn.Exec(ctx, `SELECT pg_sleep(2)`)
	got := ops.ExplainLimit(cut, "app")
	if got == cut || !errors.Is(got, cut) || !strings.Contains(got.Error(), "statement_timeout") || !strings.Contains(got.Error(), `ALTER ROLE "app" SET statement_timeout`) {
		t.Fatalf("ExplainLimit of %v: %v; want the setting and the statement that raises it", cut, got)
	}
	other := errors.New("connection refused")
	if got := ops.ExplainLimit(other, "app"); got != other {
		t.Fatalf("ExplainLimit of an error no setting caused: %v; want it as it is", got)
	}
}
