package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// deadIDs dead-letters n messages into q's DLQ and keeps their ids in *ids.
func deadIDs(n int, ids *[]int64) func(*testing.T) func(*store.Store, string) {
	return func(t *testing.T) func(*store.Store, string) {
		return func(st *store.Store, q string) {
			*ids = pgtest.DeadLetterN(t, st, q, n, pgtest.DeadSpec{Kind: "charge", Message: "declined"})
		}
	}
}

// wantLimit checks that err says every part of want and still wraps
// PostgreSQL's error of SQLSTATE code.
func wantLimit(t *testing.T, what string, err error, code string, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one of SQLSTATE %s", what, code)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Errorf("%s: the database's error (SQLSTATE %s) is not reachable with errors.As: %v", what, code, err)
	}
}

// On a database whose default is read-only (default_transaction_read_only,
// as on a standby), the reads work, and every write says that the
// database takes no writes, which setting that is and to point pgbus at
// the primary, rather than the server's words alone.
func TestReadOnlyDatabaseSaysPointAtThePrimary(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	st, q := limitedStore(t, nil, deadIDs(3, &ids)(t), "default_transaction_read_only = on")
	var unrecorded pgtest.SyncBuffer
	svc := newService(t, st, ops.Options{Unrecorded: &unrecorded})
	reads := map[string]func() error{
		"DLQSummary": func() error { _, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{}); return err },
		"DLQList":    func() error { _, err := svc.DLQList(ctx, ops.DLQListRequest{}); return err },
		"QueueStats": func() error { _, err := svc.QueueStats(ctx, ops.QueueStatsRequest{Queue: q}); return err },
		"Health":     func() error { _, err := svc.Health(ctx); return err },
	}
	for name, read := range reads {
		if err := read(); err != nil {
			t.Errorf("%s on a read-only database: %v", name, err)
		}
	}
	writes := map[string]func() error{
		"Send": func() error {
			_, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: []byte(`{}`)})
			return err
		},
		"DLQRetry by id": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids[:1], Filter: ops.DeadFilter{Queue: q}})
			return err
		},
		"DLQRetry by filter": func() error {
			_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{Filter: ops.DeadFilter{Queue: q}})
			return err
		},
		"DLQDiscard by filter": func() error {
			_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true})
			return err
		},
		"QueuePause": func() error { _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); return err },
	}
	for name, write := range writes {
		err := write()
		wantLimit(t, name, err, "25006", "takes no writes", "default_transaction_read_only", "point pgbus at the primary",
			"ALTER ROLE "+store.RoleSQL(st.User())+" SET default_transaction_read_only = off")
		// As a standby's refusal: nothing changed, the same call is
		// refused again until the setting changes.
		if ops.ErrorKind(err) != ops.KindReadOnly {
			t.Errorf("%s: kind %s; want %s, as on a standby", name, ops.ErrorKind(err), ops.KindReadOnly)
		}
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`); n != 3 {
		t.Errorf("the DLQ holds %d messages, want the 3 it held", n)
	}
	// Refused, they changed nothing: none is printed as an operation
	// "done as the entry says" that the audit log could not take.
	svc.Close(context.Background())
	if got := unrecorded.String(); got != "" {
		t.Errorf("refused writes given up as unrecorded operations:\n%s", got)
	}
}

// A bulk move that a statement_timeout the role or database sets cuts off
// names the setting and how to raise it for the role. Another client's
// lock on the DLQ's archive holds the discard past the timeout, whatever
// the speed of the machine: a statement waiting for a lock is cut off by
// statement_timeout too.
func TestStatementTimeoutNamesTheSetting(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	st, q := limitedStore(t, nil, deadIDs(50, &ids)(t), "statement_timeout = '20ms'")
	tx := lockDLQArchive(t, st, q)
	svc := newService(t, st, ops.Options{})
	_, err := svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true, Limit: 50})
	wantLimit(t, "DLQDiscard by filter", err, "57014", "statement_timeout", "ALTER ROLE "+store.RoleSQL(st.User())+" SET statement_timeout")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`); n != 50 {
		t.Errorf("the DLQ holds %d messages, want the 50 it held: a discard cut off moves nothing", n)
	}
}

// A statement_timeout the database URL's options set (or PGOPTIONS) is
// named as one of the places it may come from, beside the role and the
// database: it was blamed on them alone, and ALTER ROLE named as the one
// remedy.
func TestStatementTimeoutOfTheURLsOptionsIsNamed(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	before, q := limitedStore(t, nil, deadIDs(5, &ids)(t))
	url := before.Pool().Config().ConnString()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	st, err := store.Open(ctx, url+sep+"options=-c%20statement_timeout%3D20")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	lockDLQArchive(t, before, q)
	svc := newService(t, st, ops.Options{})
	_, err = svc.DLQDiscard(ctx, ops.DLQDiscardRequest{Filter: ops.DeadFilter{Queue: q}, Confirm: true, Limit: 5})
	wantLimit(t, "DLQDiscard by filter", err, "57014", "statement_timeout", "options", "PGOPTIONS")
}

// A retry that waits for a lock held longer than the lock_timeout the
// role or database sets names the setting, and says nothing was changed.
func TestLockTimeoutNamesTheSetting(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var ids []int64
	st, q := limitedStore(t, nil, deadIDs(1, &ids)(t), "lock_timeout = '50ms'")
	// The holder's transaction keeps the message's row locked, as a
	// long transaction of another client would.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT 1 FROM pgmq."q_`+q+`_dlq" FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	_, err = newService(t, st, ops.Options{}).DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}})
	wantLimit(t, "DLQRetry by id", err, "55P03", "lock_timeout", "try the call again once that transaction ends")
}

// On a database that takes no writes, the audit entry of a write it
// refused is not held for a database that will not take it, keeping the
// command from ending, nor given up as an operation done as its entry
// says: the write changed nothing, is of kind read_only, and, as a write
// a read-only service refuses, is not recorded.
func TestReadOnlyDatabaseHoldsNoAuditEntry(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, q := limitedStore(t, nil, nil, "default_transaction_read_only = on")
	var unrecorded pgtest.SyncBuffer
	svc := newService(t, st, ops.Options{Unrecorded: &unrecorded})
	_, err := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: []byte(`{}`)})
	wantLimit(t, "Send", err, "25006", "takes no writes")
	if ops.ErrorKind(err) != ops.KindReadOnly {
		t.Errorf("the refused send is of kind %s; want %s", ops.ErrorKind(err), ops.KindReadOnly)
	}
	svc.Close(context.Background())
	if got := unrecorded.String(); got != "" {
		t.Errorf("the refused send was given up as an unrecorded operation:\n%s", got)
	}
}

// A send of a character the database's encoding has no room for is bad
// input, of kind invalid, saying so and that nothing was sent: not a
// failure whose next step is the health check, which finds nothing wrong.
func TestSendOfACharacterTheEncodingLacksIsInvalid(t *testing.T) {
	t.Parallel()
	s := pgtest.OpenStore(t, pgtest.NewLatin1Database(t))
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	_, err := svc.Send(testContext(t), ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"v": "🚀"}`)})
	if ops.ErrorKind(err) != ops.KindInvalid || !strings.Contains(err.Error(), "encoding cannot hold a character") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("send of a character LATIN1 lacks: %v (kind %s); want kind invalid, saying the encoding cannot hold it and nothing was changed", err, ops.ErrorKind(err))
	}
	for _, step := range ops.NextSteps(err) {
		if step.Op == ops.OpHealth {
			t.Errorf("next steps %+v send to the health check, which finds nothing wrong", ops.NextSteps(err))
		}
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq.`+pgx.Identifier{"q_" + q}.Sanitize()); n != 0 {
		t.Errorf("the queue holds %d messages after the refused send; want none", n)
	}
}

// lockDLQArchive holds queue q's DLQ archive locked, as a long
// transaction of another client would, until the test ends or the
// returned transaction is rolled back.
func lockDLQArchive(t *testing.T, st *store.Store, q string) pgx.Tx {
	t.Helper()
	ctx := testContext(t)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq."a_`+q+`_dlq" IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	return tx
}

// A send cut off by a statement_timeout the role or database sets names
// the setting, and no limit of the call's, which a send has none of: a
// send of many payloads says to send fewer in one call, a send of one
// only to raise the setting.
func TestStatementTimeoutOfASendNamesWhatASendHas(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	st, q := limitedStore(t, nil, nil, "statement_timeout = '20ms'")
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) }) //nolint:errcheck
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq."q_`+q+`" IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, st, ops.Options{})
	_, many := svc.SendMany(ctx, ops.SendManyRequest{Queue: q, Payloads: []json.RawMessage{[]byte(`{}`), []byte(`{}`)}})
	wantLimit(t, "SendMany", many, "57014", "statement_timeout", "ALTER ROLE "+store.RoleSQL(st.User())+" SET statement_timeout", "send fewer payloads in one call")
	_, one := svc.Send(ctx, ops.SendRequest{Queue: q, Payload: []byte(`{}`)})
	wantLimit(t, "Send", one, "57014", "statement_timeout", "ALTER ROLE "+store.RoleSQL(st.User())+" SET statement_timeout")
	for name, e := range map[string]error{"SendMany": many, "Send": one} {
		if e != nil && (strings.Contains(e.Error(), "(a limit)") || strings.Contains(e.Error(), "fewer messages")) {
			t.Errorf("%s: %q names a limit, which a send has none of", name, e)
		}
	}
}
