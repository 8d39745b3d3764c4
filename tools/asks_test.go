package tools_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The notes that say how to see what a result left out name the tools'
// own arguments, as they did when the operations layer wrote them: the
// operations layer now leaves how to ask to each front end.
func TestNotesNameTheArguments(t *testing.T) {
	t.Parallel()
	st := testStore(t)
	q := newQueue(t, st)
	e := newEnv(t, ops.Options{AllowPayloads: true})
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Send(testContext(t), ops.SendRequest{Queue: q, Payload: json.RawMessage(`{"n": 1}`)}); err != nil {
		t.Fatal(err)
	}
	ids := pgtest.DeadLetterN(t, st, q, 1, pgtest.DeadSpec{Kind: "mail", Message: "m"})

	const payload = "payload hidden: ask for it with include_payload (secrets stay redacted)"
	if m := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"msg_id": ids[0], "queue": q}); !slices.Contains(m.Notes, payload) {
		t.Errorf("pgbus_dlq_show notes %q, want %q", m.Notes, payload)
	}
	if l := callOK[ops.LiveMessages](t, e, "pgbus_queue_messages", map[string]any{"queue": q}); !slices.Contains(l.Notes, payload) {
		t.Errorf("pgbus_queue_messages notes %q, want %q", l.Notes, payload)
	}
	const sends = "sends are left out: pass tool send (or all) to see them"
	if a := callOK[ops.AuditPage](t, e, "pgbus_audit", map[string]any{}); !slices.Contains(a.Notes, sends) {
		t.Errorf("pgbus_audit notes %q, want %q", a.Notes, sends)
	}
}
