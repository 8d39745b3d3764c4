package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A corrected payload that is valid JSON PostgreSQL cannot store (a
// number past what jsonb's numeric holds) is refused as the caller's to
// change, in a dry run as in the retry itself, as a send of it is: not a
// failure of the database to look into. The message stays dead.
func TestCorrectedPayloadPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: `{"a": 1}`})
	for _, dry := range []bool{true, false} {
		_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`{"a":1e200000}`), DryRun: dry})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "PostgreSQL cannot store the corrected payload") || !strings.Contains(err.Error(), "as a string") {
			t.Errorf("dry run %v: %v; want an invalid argument saying PostgreSQL cannot store the payload", dry, err)
		}
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 1 {
		t.Errorf("%d messages left dead; want the one refused", n)
	}
}
