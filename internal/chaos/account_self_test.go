package chaos_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// recorder is a test that notes the errors reported to it instead of
// failing; fatal errors still fail the real test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestAccountingFindsWhatWentWrong plants a lost, a duplicated and a
// never-sent message, a retry no call reported and a failure of no message
// in a database of its own, and checks that the soak's accounting reports
// each: the checks the soak passes are ones that can fail.
func TestAccountingFindsWhatWentWrong(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	for _, q := range queues {
		pgtest.CreateQueue(t, st, q)
	}
	plant := func(uid, headers string) {
		msg := store.NewMessage{Payload: json.RawMessage(`{"uid": "` + uid + `", "queue": "chaos_a"}`), Headers: json.RawMessage(headers)}
		if _, err := st.Send(pgtest.Context(t), "chaos_a", msg); err != nil {
			t.Fatal(err)
		}
	}
	plant("ok", `{}`)
	plant("twice", `{}`)
	plant("twice", `{}`)
	plant("stranger", `{"pgbus_dlq_retries": 2}`)
	if _, err := st.Pool().Exec(pgtest.Context(t), `INSERT INTO pgbus.failures (queue_name, msg_id, attempt, error_class, error_message)
		VALUES ('chaos_a_dlq', 999, 1, 'http.500', 'orphan')`); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{TB: t}
	sent := []payload{{UID: "ok", Queue: "chaos_a"}, {UID: "twice", Queue: "chaos_a"}, {UID: "gone", Queue: "chaos_a"}}
	h := &harness{t: rec, st: st, send: &sender{sent: sent}, fix: &repairs{}}
	rows := h.storedRows()
	byUID := map[string][]stored{}
	for _, r := range rows {
		byUID[r.uid] = append(byUID[r.uid], r)
	}
	h.checkExactlyOnce(byUID)
	h.checkMoves(rows)
	h.checkFailureRows()

	got := strings.Join(rec.errs, "\n")
	for _, want := range []string{"1 messages LOST", "[gone]", "1 messages DUPLICATED", `"stranger" is stored`,
		"record 2 trips out of a DLQ; the calls reported 0", "1 failures of chaos_a_dlq belong to no message"} {
		if !strings.Contains(got, want) {
			t.Errorf("the accounting did not report %q; it reported:\n%s", want, got)
		}
	}
	if len(rec.errs) != 5 {
		t.Errorf("the accounting reported %d errors, want 5:\n%s", len(rec.errs), got)
	}
}
