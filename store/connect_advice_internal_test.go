package store

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// PgBouncer refuses clients for a while after its own login to PostgreSQL
// failed (server_login_retry), as during a restart of PostgreSQL: the
// advice is to try again shortly, where it was to check DATABASE_URL. Other
// protocol errors keep the general advice.
func TestConnectAdviceOfAPoolerRetryingItsLogin(t *testing.T) {
	t.Parallel()
	retry := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "server login has been failing, try again later (server_login_retry)"}
	if got := connectAdvice(retry); !strings.Contains(got, "try again shortly") || strings.Contains(got, "check DATABASE_URL") {
		t.Errorf("advice for PgBouncer's server_login_retry: %q", got)
	}
	other := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: foo"}
	if got := connectAdvice(other); !strings.Contains(got, "check DATABASE_URL") {
		t.Errorf("advice for another protocol error: %q", got)
	}
}
