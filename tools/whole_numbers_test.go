package tools_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An integer argument written as a number with a zero fractional part
// (5.0, 5e0, 1.2e3), which JSON Schema counts as an integer, is taken as
// that integer, with the same result as when written 5; a number with a
// fraction is still refused, saying to pass an integer, and a whole
// number out of range is refused saying so and what the bound is. A
// corrected payload's numbers are stored as written. The refusals change
// nothing and leave no audit entry.
func TestWholeNumbersAreIntegers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 7, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	args := func(s string) json.RawMessage { return json.RawMessage(s) }
	listIDs := func(l ops.DLQList) []int64 {
		var out []int64
		for _, it := range l.Items {
			out = append(out, it.MsgID)
		}
		return out
	}

	five := listIDs(callOK[ops.DLQList](t, e, "pgbus_dlq_list", args(fmt.Sprintf(`{"queue":%q,"limit":5}`, q))))
	if len(five) != 5 {
		t.Fatalf("limit 5 listed %v", five)
	}
	for _, limit := range []string{"5.0", "5e0", "0.5e1", "500e-2", "5.000"} {
		got := listIDs(callOK[ops.DLQList](t, e, "pgbus_dlq_list", args(fmt.Sprintf(`{"queue":%q,"limit":%s}`, q, limit))))
		if !slices.Equal(got, five) {
			t.Errorf("limit %s listed %v, want %v as with 5", limit, got, five)
		}
	}
	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", args(fmt.Sprintf(`{"queue":%q,"msg_id":%d.0}`, q, ids[0])))
	if shown.MsgID != ids[0] {
		t.Errorf("msg_id %d.0 showed %d", ids[0], shown.MsgID)
	}
	dry := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", args(fmt.Sprintf(`{"queue":%q,"ids":[%d.0,%de0],"dry_run":true}`, q, ids[1], ids[2])))
	if len(dry.Outcomes) != 2 || dry.Outcomes[0].ID != ids[1] || dry.Outcomes[1].ID != ids[2] {
		t.Errorf("ids written %d.0 and %de0 gave outcomes %+v", ids[1], ids[2], dry.Outcomes)
	}

	retries, discards := len(auditRows(t, e.st, "dlq_retry", q)), len(auditRows(t, e.st, "dlq_discard", q))
	for _, c := range []struct {
		tool, args string
		want       []string
	}{
		{"pgbus_dlq_list", `{"queue":%q,"limit":1.5}`, []string{"limit", "pass an integer"}},
		{"pgbus_dlq_list", `{"queue":%q,"limit":5.01}`, []string{"limit", "pass an integer"}},
		{"pgbus_dlq_list", `{"queue":%q,"limit":1e9}`, []string{"limit 1000000000 is out of range", "1 to 100"}},
		{"pgbus_dlq_list", `{"queue":%q,"limit":1e30}`, []string{"limit", "1e30 is out of range", "at most 100"}},
		{"pgbus_dlq_show", `{"queue":%q,"msg_id":1.5}`, []string{"msg_id", "pass an integer"}},
		{"pgbus_dlq_show", `{"queue":%q,"msg_id":1e-999999999999}`, []string{"msg_id", "pass an integer"}},
		{"pgbus_dlq_show", `{"queue":%q,"msg_id":1e30}`, []string{"msg_id", "1e30 is out of range", "at most 9223372036854775807"}},
		{"pgbus_dlq_show", `{"queue":%q,"msg_id":99999999999999999999}`, []string{"msg_id", "out of range", "at most 9223372036854775807"}},
		{"pgbus_dlq_retry", `{"queue":%q,"ids":[1.5]}`, []string{"ids", "integer"}},
		{"pgbus_dlq_retry", `{"queue":%q,"ids":[1e30]}`, []string{"ids", "1e30 is out of range", "at most 9223372036854775807"}},
		{"pgbus_dlq_retry", `{"queue":%q,"limit":2.5,"kind":"k"}`, []string{"limit", "pass an integer"}},
		{"pgbus_dlq_retry", `{"queue":%q,"limit":1e30,"kind":"k"}`, []string{"limit", "out of range", "at most 1000"}},
		{"pgbus_dlq_discard", `{"queue":%q,"ids":[-1e30],"confirm":true}`, []string{"ids", "out of range", "at least"}},
	} {
		text := e.callErr(t, c.tool, args(fmt.Sprintf(c.args, q)), c.want...)
		t.Logf("%s %s: %s", c.tool, c.args, text)
		if strings.Contains(text, "not a valid value") && strings.Contains(text, "out of range") {
			t.Errorf("%s %s: %s", c.tool, c.args, text)
		}
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 7 {
		t.Errorf("the DLQ holds %d after the refused calls, want 7", n)
	}
	if n := len(auditRows(t, e.st, "dlq_retry", q)); n != retries {
		t.Errorf("refused retries were audited: %d entries, %d before", n, retries)
	}
	if n := len(auditRows(t, e.st, "dlq_discard", q)); n != discards {
		t.Errorf("refused discards were audited: %d entries, %d before", n, discards)
	}

	// A real retry by an id written 1.0-style moves it, and its corrected
	// payload keeps its numbers as written.
	res := callOK[ops.DLQRetry](t, e, "pgbus_dlq_retry", args(fmt.Sprintf(`{"queue":%q,"ids":[%d.0],"payload":{"n":5.0,"ids":[1.0],"limit":2e0}}`, q, ids[3])))
	if res.Retried != 1 || len(res.Outcomes) != 1 || res.Outcomes[0].NewMsgID == 0 {
		t.Fatalf("retry of %d.0: %+v", ids[3], res)
	}
	var stored string
	if err := e.st.Pool().QueryRow(testContext(t), fmt.Sprintf(`SELECT message::text FROM pgmq.q_%s WHERE msg_id = $1`, q), res.Outcomes[0].NewMsgID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stored, `5.0`) || !strings.Contains(stored, `[1.0]`) {
		t.Errorf("the corrected payload was stored as %s", stored)
	}
	if n := pgtest.Live(t, e.st, q+"_dlq"); n != 6 {
		t.Errorf("the DLQ holds %d after one retry, want 6", n)
	}
}

// One argument given under two spellings that differ in case is refused,
// naming both: the decoder would take the one written last, and which
// that is must not depend on how a number was written. An argument in
// capitals alone is the argument, its whole numbers taken as integers too.
func TestArgumentSpelledTwiceRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	ids := pgtest.DeadLetterN(t, e.st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "m"})
	for _, first := range []string{fmt.Sprint(ids[0]), fmt.Sprintf("%d.0", ids[0])} {
		e.callErr(t, "pgbus_dlq_show", json.RawMessage(fmt.Sprintf(`{"queue":%q,"msg_id":%s,"MSG_ID":%d}`, q, first, ids[1])),
			`arguments "MSG_ID" and "msg_id" name the same argument: give it once`)
	}
	shown := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", json.RawMessage(fmt.Sprintf(`{"queue":%q,"MSG_ID":%d.0}`, q, ids[1])))
	if shown.MsgID != ids[1] {
		t.Errorf("MSG_ID %d.0 showed %d", ids[1], shown.MsgID)
	}
}
