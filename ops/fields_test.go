package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// The summary names each group's cause by a representative message,
// redacted and bounded, and groups messages that differ only by values.
func TestDLQSummaryMessages(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	long := strings.Repeat("x", 600)
	pgtest.DeadLetter(t, s, q,
		pgtest.DeadSpec{Class: "E", Message: "order 42 failed: password=hunter2"},
		pgtest.DeadSpec{Class: "E", Message: "order 43 failed: password=hunter2"},
		pgtest.DeadSpec{Class: "E", Message: "card declined " + long},
	)
	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}})
	if err != nil || len(sum.Groups) != 2 || sum.Total != 3 {
		t.Fatalf("summary = %+v, %v; want 2 groups of 3 messages", sum, err)
	}
	g := sum.Groups[0]
	if g.Count != 2 || g.ErrorMessage != "order 43 failed: password="+ops.Redacted || g.ErrorPattern != "order <n> failed: password="+ops.Redacted {
		t.Fatalf("largest group: count %d, message %q, pattern %q; want 2, the newest message and its pattern, the password redacted", g.Count, g.ErrorMessage, g.ErrorPattern)
	}
	for _, x := range []string{"hunter2"} {
		if strings.Contains(mustJSON(t, sum), x) {
			t.Fatalf("summary shows the secret %q: %s", x, mustJSON(t, sum))
		}
	}
	b := ops.DefaultBounds.ListErrorChars
	if m := sum.Groups[1].ErrorMessage; len([]rune(m)) != b || !strings.HasSuffix(m, "…") {
		t.Fatalf("long message is %d characters (%.40q…), want cut to %d", len([]rune(m)), m, b)
	}
	if !hasNote(sum.Notes, "cut to") || !hasNote(sum.Notes, "secret-looking") {
		t.Fatalf("notes %q: want the cut and the redaction noted", sum.Notes)
	}
}

func hasNote(notes []string, part string) bool {
	for _, n := range notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// Safe fields are shown by DLQShow without payloads and break summary
// groups down; a safe field named like a secret stays hidden.
func TestSafeFields(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	ctx := testContext(t)
	svc := newService(t, s, ops.Options{SafeFields: []string{"partner", "file.type", "api_token"}})
	q := newQueue(t, s, nil)
	var specs []pgtest.DeadSpec
	for i := range 6 {
		specs = append(specs, pgtest.DeadSpec{Class: "UploadError", Message: fmt.Sprintf("upload %d rejected", i),
			Payload: fmt.Sprintf(`{"partner": "p-9", "file": {"type": "t%d"}, "api_token": "tok-%d", "secret_note": "x"}`, i%2, i)})
	}
	specs = append(specs, pgtest.DeadSpec{Class: "Other", Message: "boom", Payload: `{"partner": "p-1"}`})
	ids := pgtest.DeadLetter(t, s, q, specs...)

	m, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0]})
	if err != nil || m.PayloadShown || len(m.Payload) != 0 {
		t.Fatalf("show = %+v, %v; want the payload hidden", m, err)
	}
	want := map[string]string{"partner": "p-9", "file.type": "t0", "api_token": ops.Redacted}
	if fmt.Sprint(m.SafeFields) != fmt.Sprint(want) {
		t.Fatalf("safe fields = %v, want %v", m.SafeFields, want)
	}

	sum, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}, ByField: "partner"})
	if err != nil || len(sum.Groups) != 2 {
		t.Fatalf("summary by partner = %+v, %v", sum, err)
	}
	if bf := sum.Groups[0].ByField; bf == nil || bf.Field != "partner" || fmt.Sprint(bf.Values) != "[{p-9 6}]" || bf.Other != 0 || bf.Missing != 0 {
		t.Fatalf("the largest group by partner = %+v; want all 6 with p-9", bf)
	}
	sum, err = svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q, Since: "1970-01-01"}, ByField: "api_token"})
	if err != nil || fmt.Sprint(sum.Groups[0].ByField.Values) != "[{"+ops.Redacted+" 6}]" || strings.Contains(mustJSON(t, sum), "tok-") {
		t.Fatalf("summary by a secret-named field = %s, %v; want its values merged as one redacted value", mustJSON(t, sum), err)
	}
	for field, part := range map[string]string{"secret_note": "not a safe field", "n": "use one of api_token, file.type, partner"} {
		_, err := svc.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: ops.DeadFilter{Queue: q}, ByField: field})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), part) {
			t.Fatalf("by_field %q = %v; want ErrInvalid saying %q", field, err, part)
		}
	}
	none := newService(t, s, ops.Options{})
	if _, err := none.DLQSummary(ctx, ops.DLQSummaryRequest{ByField: "partner"}); !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), "names no safe payload fields") {
		t.Fatalf("by_field on a server without safe fields = %v; want ErrInvalid saying it names none", err)
	}
}

// Health tells what the server shows of payloads.
func TestHealthPayloadPolicy(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true, SafeFields: []string{"tenant", "file.type", "tenant"}})
	h, err := svc.Health(testContext(t))
	if err != nil || !h.Payloads.PayloadsAllowed || fmt.Sprint(h.Payloads.SafeFields) != "[file.type tenant]" {
		t.Fatalf("health payload policy = %+v, %v; want payloads allowed and [file.type tenant]", h.Payloads, err)
	}
	h, err = newService(t, s, ops.Options{}).Health(testContext(t))
	if err != nil || h.Payloads.PayloadsAllowed || h.Payloads.SafeFields == nil || len(h.Payloads.SafeFields) != 0 {
		t.Fatalf("default payload policy = %+v, %v; want payloads hidden and no safe fields", h.Payloads, err)
	}
}

// Bad safe fields are refused when the service is made.
func TestSafeFieldsChecked(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	for _, f := range []string{"", "a..b", "tenant name", ".x", "a.b.c.d.e.f.g.h.i"} {
		if _, err := ops.New(s, ops.Options{SafeFields: []string{f}}); err == nil || !strings.Contains(err.Error(), "safe field") {
			t.Errorf("safe field %q: New = %v; want an error naming it", f, err)
		}
	}
}
