package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The type check of a corrected payload, case by case: quoted JSON of the
// stored payload's type is named as quoted; null passes both ways (a
// dead message of null takes any type but quoted JSON); and the step that
// repeats a quoted payload unquoted hides its secrets, while the step
// that sends a payload of another type is left out when it holds any.
func TestCorrectedPayloadType(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	retry := func(stored, correction string) ([]ops.Hint, error) {
		t.Helper()
		ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: stored})
		_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(correction)})
		return ops.HintsOf(err), err
	}
	for _, c := range []struct {
		stored, correction string
		says               string // "" when taken
	}{
		{`42`, `"43"`, "a JSON string holding JSON (a number), and the dead message's payload is a JSON number: pass the number itself"},
		{`42`, `"forty-three"`, "the dead message's payload is a JSON number; the correction is a string"},
		{`true`, `{"ok": true}`, "the dead message's payload is a JSON boolean (true or false); the correction is an object"},
		{`null`, `"{\"a\": 1}"`, "a JSON string holding JSON (an object), and the dead message's payload is JSON null"},
		{`null`, `{"a": 1}`, ""},
		{`null`, `"text"`, ""},
		{`{"a": 1}`, `null`, ""},
		{`[1]`, `[]`, ""},
		{`"{\"a\": 1}"`, `"{\"a\": 2}"`, ""},
	} {
		_, err := retry(c.stored, c.correction)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%s for %s: %v; want it taken", c.correction, c.stored, err)
		case c.says != "" && (!errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%s for %s: %v; want an invalid argument saying %q", c.correction, c.stored, err, c.says)
		}
	}
	if n := pgtest.Live(t, s, q+"_dlq"); n != 4 {
		t.Errorf("%d messages left dead; want the 4 refused", n)
	}

	hints, _ := retry(`{"user": "ada"}`, `"{\"user\": \"ada\", \"password\": \"pw-9f1c\"}"`)
	if len(hints) != 1 || !strings.Contains(string(hints[0].Args["payload"].(json.RawMessage)), ops.Redacted) ||
		strings.Contains(string(hints[0].Args["payload"].(json.RawMessage)), "pw-9f1c") || !strings.Contains(hints[0].Why, "put the real one back") {
		t.Errorf("the step after a quoted payload with a secret = %+v; want it unquoted, the secret hidden", hints)
	}
	hints, _ = retry(`{"user": "ada"}`, `"password=pw-9f1c"`)
	if len(hints) != 1 || hints[0].Op != ops.OpDLQDiscard {
		t.Errorf("the steps after a string with a secret for an object = %+v; want the discard alone, no send repeating it", hints)
	}
}

// The step that sends a payload of another type as a new message leaves
// out a kind that holds a secret, saying to give it: shown redacted, the
// step sent a job of kind "sync password=[REDACTED]", which no handler runs.
func TestCorrectedPayloadTypeStepLeavesOutASecretKind(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "sync password=Hunter2Hunter2", Payload: `{"a": 1}`})
	_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(`[1, 2]`)})
	send := ops.Hint{}
	for _, h := range ops.HintsOf(err) {
		if h.Op == ops.OpSend {
			send = h
		}
	}
	if _, hasKind := send.Args["kind"]; send.Op != ops.OpSend || hasKind || !strings.Contains(send.Why, "give it the dead message's kind") {
		t.Errorf("the send step after a correction of another type = %+v (err %v); want one without the kind, saying to give it", send, err)
	}
}
