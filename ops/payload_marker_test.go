package ops_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A corrected payload that still holds the redaction marker is refused,
// naming where the marker is and what to do, and nothing moves: sent
// back, the marker would replace the secrets it hid for good. A dry run
// is refused alike, so that a preview never promises a retry that fails.
func TestCorrectedPayloadWithRedactionMarker(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{AllowPayloads: true})
	client := uniqueName("marker")
	ctx := ops.WithClient(testContext(t), client)
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k", Payload: `{"user": "ada", "password": "hunter2-real", "card": {"number": "4111 1111 1111 1111"}}`})
	f := ops.DeadFilter{Queue: q}

	// The payload as a view shows it: its secrets hidden.
	shown, err := svc.DLQShow(ctx, ops.DLQShowRequest{Queue: q, MsgID: ids[0], IncludePayload: true})
	if err != nil || shown.RedactedValues == 0 || !strings.Contains(string(shown.Payload), ops.Redacted) {
		t.Fatalf("the shown payload %s (%d redacted), %v; want its secrets hidden", shown.Payload, shown.RedactedValues, err)
	}
	for label, c := range map[string]struct {
		payload string
		dryRun  bool
		want    []string
	}{
		"the shown payload, edited elsewhere": {strings.Replace(string(shown.Payload), `"ada"`, `"grace"`, 1), false, []string{"$.password", "2 places"}},
		"the same as a dry run":               {string(shown.Payload), true, []string{"$.password"}},
		"the marker inside a string":          {`{"auth": "Bearer [REDACTED]", "n": 1}`, false, []string{"$.auth", "1 place "}},
		"the marker in an array":              {`{"items": [{"sku": "a"}, {"sku": "[REDACTED]"}]}`, false, []string{"$.items[1].sku"}},
		"the marker as the whole payload":     {`"[REDACTED]"`, false, []string{"in 1 place ($)"}},
		"the marker escaped":                  {`{"token": "\u005bREDACTED]"}`, false, []string{"$.token"}},
		"the marker in a key":                 {`{"[REDACTED]": 1}`, false, []string{`$["[REDACTED]"] (the key)`}},
		"an odd key":                          {`{"api key": {"x y": "[REDACTED]"}}`, false, []string{`$["api key"]["x y"]`}},
		"many places":                         {`["[REDACTED]", "[REDACTED]", "[REDACTED]", "[REDACTED]", "[REDACTED]", "[REDACTED]", "[REDACTED]"]`, false, []string{"7 places", "$[4]", "and 2 more"}},
	} {
		_, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: f, DryRun: c.dryRun, Payload: json.RawMessage(c.payload)})
		if !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("%s: retry = %v, want ErrInvalid", label, err)
			continue
		}
		msg := err.Error()
		for _, w := range append(c.want, "redaction marker [REDACTED]", "replace the [REDACTED] values with the real ones, or retry without a payload to keep the stored one") {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not say %q", label, msg, w)
			}
		}
		if strings.Contains(msg, "hunter2") || strings.Contains(msg, "4111") {
			t.Errorf("%s: error %q quotes a secret", label, msg)
		}
		// The message passes the front ends' redaction of error text
		// unchanged: the places it names stay readable.
		if red, n := ops.RedactText(msg); n != 0 {
			t.Errorf("%s: the front ends would show the error as %q", label, red)
		}
	}
	if !inDLQ(t, s, q, ids[0]) || pgtest.Live(t, s, q) != 0 || len(auditRows(t, s, client)) != 0 {
		t.Fatal("a refused retry moved the message or was audited")
	}

	// A string that only looks like the marker, and the real values put
	// back: the retry goes through with them.
	fixed := `{"user": "ada", "password": "hunter2-real", "card": {"number": "4111 1111 1111 1111"}, "note": "[redacted] REDACTED [REDACTED"}`
	r, err := svc.DLQRetry(ctx, ops.DLQRetryRequest{IDs: ids, Filter: f, Payload: json.RawMessage(fixed)})
	if err != nil || r.Retried != 1 {
		t.Fatalf("retry with the real values = %+v, %v", r, err)
	}
	if n := pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`" WHERE msg_id = $1 AND message->>'password' = 'hunter2-real'`, r.Outcomes[0].NewMsgID); n != 1 {
		t.Fatal("the retried message does not carry the real values")
	}
}

// A corrected payload that is not JSON is refused with what is wrong and
// where, by line and column, as a person finds it in an editor.
func TestCorrectedPayloadNotJSONSaysWhere(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	q := newQueue(t, s, nil)
	ids := pgtest.DeadLetterN(t, s, q, 1, pgtest.DeadSpec{Kind: "k"})
	for text, want := range map[string]string{
		"{\"amount\": 10,\n \"sku\": }": "invalid character '}' looking for beginning of value, at line 2, column 9",
		`{"amount": 10`:                 "unexpected end of JSON input, at line 1, column 13",
		`{"a": 1} x`:                    "after top-level value, at line 1, column 10",
	} {
		_, err := svc.DLQRetry(testContext(t), ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: q}, Payload: json.RawMessage(text)})
		if !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "retry without a payload to keep the stored one") {
			t.Errorf("payload %q: %v; want ErrInvalid saying %q", text, err, want)
		}
	}
	if !inDLQ(t, s, q, ids[0]) {
		t.Fatal("a refused retry moved the message")
	}
}
