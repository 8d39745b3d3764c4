package ops

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/store"
)

// A bulk call stopped partway by a database that takes no connections
// (shutting down: SQLSTATE 57P03) keeps its own error, which counts what it
// did, its cause said so; its next steps are the health check, then the
// same call again. Wrapped in an error of its own, it lost the health
// check, which a slow machine's shutdown showed.
func TestPartlyDoneRefusedConnectionNamesTheHealthCheck(t *testing.T) {
	t.Parallel()
	again := hint(OpDLQRetry, "retries the rest", "queue", "cut", "limit", 1000)
	refused := &pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is shutting down"}
	err := resourceError(partlyDone(refused, "retrying", 3, 1000, nil, again), writesInSteps)
	var pd *PartlyDone
	if !errors.As(err, &pd) || ErrorKind(err) != KindUnavailable || !strings.Contains(err.Error(), "takes no connections") {
		t.Fatalf("error %v (kind %s); want the partly done call, unavailable, saying the database takes no connections", err, ErrorKind(err))
	}
	next := NextSteps(err)
	if len(next) != 2 || next[0].Op != OpHealth || next[1].Op != OpDLQRetry {
		t.Fatalf("next steps %+v; want the health check, then the same retry", next)
	}
}

// A session ended for sitting idle is told by the setting that ended it:
// the advice for idle_in_transaction_session_timeout named
// idle_session_timeout, whose change does nothing for it.
func TestIdleTimeoutsAreToldApart(t *testing.T) {
	t.Parallel()
	for code, setting := range map[string]string{"25P03": "idle_in_transaction_session_timeout", "57P05": "idle_session_timeout"} {
		ended := &pgconn.PgError{Severity: "FATAL", Code: code, Message: "terminating connection due to idle timeout"}
		what, todo := limitAdvice(store.LimitOf(ended), "app", callFewer)
		if !strings.Contains(what, setting) || !strings.Contains(todo, `ALTER ROLE "app" SET `+setting) {
			t.Errorf("SQLSTATE %s: advice %q; %q; want %s named and altered", code, what, todo, setting)
		}
	}
}

// The same call again takes the limit that is left, so that the two calls
// keep to the limit asked for; one that did all its limit allowed has no
// rest, and no call to name.
func TestPartlyDoneAgainTakesTheLimitLeft(t *testing.T) {
	t.Parallel()
	req := DLQRetryRequest{Filter: DeadFilter{Queue: "orders"}, Limit: 1000}
	var p *PartlyDone
	if err := partlyDone(context.Canceled, "retrying", 171, 1000, nil, req.Hint("")); !errors.As(err, &p) || p.Again.Args["limit"] != 829 || p.Left() != 829 ||
		!strings.HasSuffix(err.Error(), "the same call again with limit 829 retries the rest") {
		t.Fatalf("stopped after 171 of 1000: %v, again %+v; want the same call with limit 829", err, p.Again)
	}
	if err := partlyDone(context.Canceled, "retrying", 1000, 1000, nil, req.Hint("")); !errors.As(err, &p) || p.Again.Op != "" || len(NextSteps(err)) != 0 ||
		strings.Contains(err.Error(), "again") {
		t.Fatalf("stopped after all 1000: %v, next %v; want no call again", err, NextSteps(err))
	}
	if err := partlyDone(context.Canceled, "purging", 5, 0, nil, hint(OpDLQPurge, "")); !errors.As(err, &p) || p.Again.Op != OpDLQPurge || p.Left() != 0 {
		t.Fatalf("stopped purge: %v, again %+v; want the same call", err, p.Again)
	}
}
