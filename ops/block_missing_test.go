package ops_test

import (
	"encoding/json"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A dead-letter block another client wrote without some of its numbers
// (source_msg_id, attempts, max_retries, version), or with one that is no
// number, shows them as unknown: left out of a list's items and of a
// message's block, never as a made-up 0. A 0 the block holds is shown as
// written.
func TestDeadLetterBlockWithoutItsNumbers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := testStore(t)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetter(t, s, q, pgtest.DeadSpec{Kind: "k"}, pgtest.DeadSpec{Kind: "k"})
	dlq := `pgmq."q_` + store.DLQName(q) + `"`
	if _, err := s.Pool().Exec(ctx, `UPDATE `+dlq+` SET headers = jsonb_set(headers #- '{pgbus_dead_letter,source_msg_id}' #- '{pgbus_dead_letter,max_retries}' #- '{pgbus_dead_letter,version}',
		'{pgbus_dead_letter,attempts}', '"many"') WHERE msg_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE `+dlq+` SET headers = jsonb_set(headers, '{pgbus_dead_letter,max_retries}', '0') WHERE msg_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	svc := newService(t, s, ops.Options{})
	list, err := svc.DLQList(ctx, ops.DLQListRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	keys := func(v any) map[string]json.RawMessage {
		t.Helper()
		raw, err := json.Marshal(v)
		var m map[string]json.RawMessage
		if err != nil || json.Unmarshal(raw, &m) != nil {
			t.Fatalf("marshal %+v: %v", v, err)
		}
		return m
	}
	for _, it := range list.Items {
		item := keys(it)
		switch it.MsgID {
		case ids[0]:
			for _, k := range []string{"source_msg_id", "attempts", "max_retries"} {
				if v, ok := item[k]; ok {
					t.Errorf("listed message without %s in its block shows %s %s; want it left out", k, k, v)
				}
			}
		case ids[1]:
			if string(item["max_retries"]) != "0" || it.SourceMsgID == nil || *it.SourceMsgID <= 0 || it.Attempts == nil {
				t.Errorf("listed message with its numbers = %s; want max_retries 0 as written, its source id and its attempts", mustJSON(t, it))
			}
		}
	}
	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil || m.DeadLetter == nil {
		t.Fatalf("show = %+v, %v", m, err)
	}
	block := keys(m.DeadLetter)
	for _, k := range []string{"source_msg_id", "attempts", "max_retries", "version"} {
		if v, ok := block[k]; ok {
			t.Errorf("shown block without %s shows %s %s; want it left out", k, k, v)
		}
	}
	if string(block["source_queue"]) != `"`+q+`"` || string(block["reason"]) != `"max_retries_exceeded"` {
		t.Errorf("shown block = %s; want what it holds still shown", mustJSON(t, m.DeadLetter))
	}
}
