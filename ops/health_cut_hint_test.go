package ops_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A verdict whose reasons the response bound cuts, asked for without a
// code, points at the health check of each code it left out, whose pages
// list them, as well as saying that a list without the bound has them
// all; followed, the step lists the reasons left out.
func TestHealthCutPointsAtItsCodes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	for i := range 30 {
		q := newQueue(t, s, nil)
		if _, err := s.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := newService(t, s, ops.Options{}).QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
				t.Fatal(err)
			}
		}
	}
	svc := newService(t, s, ops.Options{Bounds: ops.Bounds{Response: 4000}})
	h, err := svc.Health(ctx)
	if err != nil || h.Omitted == 0 || len(h.Notes) != 1 || len(h.Asks) != 1 || h.Asks[0].Kind != ops.AskAll {
		t.Fatalf("health cut by the bound: %d omitted, notes %q, asks %+v, %v; want some left out, a note and its ask to list them all", h.Omitted, h.Notes, h.Asks, err)
	}
	left := map[string]int{}
	for _, r := range h.Reasons {
		left[r.Code]--
	}
	full, err := newService(t, s, ops.Options{}).Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range full.Reasons {
		left[r.Code]++
	}
	var steps []ops.Hint
	for _, n := range h.Next {
		if n.Op == ops.OpHealth {
			steps = append(steps, n)
		}
	}
	for code, n := range left {
		if n <= 0 {
			continue
		}
		i := -1
		for j, st := range steps {
			if st.Args["code"] == code {
				i = j
			}
		}
		if i < 0 {
			t.Errorf("health left out %d %s reasons; next %+v names no health check of that code", n, code, h.Next)
			continue
		}
		page, err := svc.HealthOf(ctx, ops.HealthRequest{Code: code})
		if err != nil || len(page.Reasons) == 0 || page.Reasons[0].Code != code {
			t.Errorf("the step %+v: %+v, %v; want the reasons of %s", steps[i], page.Reasons, err, code)
		}
	}
	if !strings.Contains(h.Notes[0], "by its code") {
		t.Errorf("note %q does not say the health check by code lists the reasons left out", h.Notes[0])
	}
}
