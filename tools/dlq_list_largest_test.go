package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_list with order largest and min_payload_bytes lists the
// largest payloads first, each with its payload_bytes, only those at
// least that large; its next step, called as given, is the next page in
// the same order; an order it does not know is refused by name.
func TestDLQListLargestPayloadsFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	var specs []pgtest.DeadSpec
	for _, n := range []int{10, 5000, 100, 3000, 2000} {
		specs = append(specs, pgtest.DeadSpec{Payload: fmt.Sprintf(`{"p": %q}`, strings.Repeat("x", n))})
	}
	ids := pgtest.DeadLetter(t, e.st, q, specs...)
	args := map[string]any{"queue": q, "order": "largest", "min_payload_bytes": 1000, "limit": 2}
	var got []int64
	for page := 0; ; page++ {
		res := callOK[ops.DLQList](t, e, "pgbus_dlq_list", args)
		for _, it := range res.Items {
			if it.PayloadBytes < 1000 {
				t.Errorf("message %d of %d bytes listed, under min_payload_bytes", it.MsgID, it.PayloadBytes)
			}
			got = append(got, it.MsgID)
		}
		if res.NextCursor == "" {
			break
		}
		if page > 3 || len(res.Next) != 1 || res.Next[0].Op != "pgbus_dlq_list" {
			t.Fatalf("page %d: next %+v, want the next page", page, res.Next)
		}
		args = res.Next[0].Args
		if args["order"] != "largest" || fmt.Sprint(args["min_payload_bytes"]) != "1000" {
			t.Fatalf("next page's call %v does not keep the order and the size", args)
		}
	}
	if want := []int64{ids[1], ids[3], ids[4]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listed %v, want %v: the largest first, none under 1000 bytes", got, want)
	}
	e.callErr(t, "pgbus_dlq_list", map[string]any{"order": "biggest"}, "order")
}
