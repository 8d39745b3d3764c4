package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// Over MCP, the summary names each cause by a redacted message and breaks a
// group down by a safe field; show gives the safe fields without the
// payload; health tells the payload policy.
func TestSummaryCausesAndSafeFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{SafeFields: []string{"partner", "plan"}})
	q := newQueue(t, e.st)
	var specs []pgtest.DeadSpec
	for i := range 4 {
		specs = append(specs, pgtest.DeadSpec{Kind: "sync", Class: "APIError", Message: fmt.Sprintf("partner call 'req-%d' failed: token=abc%d", i, i),
			Payload: fmt.Sprintf(`{"partner": "p-9", "plan": "plan-%d", "card": "4111"}`, i)})
	}
	specs = append(specs, pgtest.DeadSpec{Kind: "sync", Class: "APIError", Message: "quota exceeded", Payload: `{"partner": "p-2"}`})
	ids := pgtest.DeadLetter(t, e.st, q, specs...)

	sum := callOK[ops.DLQSummary](t, e, "pgbus_dlq_summary", map[string]any{"queue": q, "by_field": "partner"})
	if len(sum.Groups) != 2 || sum.Groups[0].Count != 4 {
		t.Fatalf("summary: %+v; want a group of 4 and one of 1", sum)
	}
	g := sum.Groups[0]
	if g.ErrorPattern != "partner call <str> failed: token="+ops.Redacted || !strings.HasPrefix(g.ErrorMessage, "partner call 'req-") || strings.Contains(g.ErrorMessage, "abc") {
		t.Fatalf("largest group: pattern %q, message %q; want the token redacted in both", g.ErrorPattern, g.ErrorMessage)
	}
	if g.ByField == nil || fmt.Sprint(g.ByField.Values) != "[{p-9 4}]" {
		t.Fatalf("largest group by partner: %+v; want every message with p-9", g.ByField)
	}
	e.callErr(t, "pgbus_dlq_summary", map[string]any{"queue": q, "by_field": "card"}, "not a safe field", "partner, plan")

	m := callOK[ops.DeadMessage](t, e, "pgbus_dlq_show", map[string]any{"queue": q, "msg_id": ids[0], "include_payload": true})
	if m.PayloadShown || fmt.Sprint(m.SafeFields) != "map[partner:p-9 plan:plan-0]" {
		t.Fatalf("show: payload shown %v, safe fields %v; want the payload hidden and partner and plan shown", m.PayloadShown, m.SafeFields)
	}

	h := healthOK(t, e, map[string]any{})
	if h.Payloads.PayloadsAllowed || fmt.Sprint(h.Payloads.SafeFields) != "[partner plan]" {
		t.Fatalf("health payload policy %+v; want payloads hidden, safe fields partner and plan", h.Payloads)
	}
}
