package ops_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// A refusal that names a field given by its caller (by_field, a header's
// key, a safe field) reads whole once redacted, as every front end shows
// it, when the field is named like a secret: the field is not written as
// a key with the sentence as its value.
func TestRefusalsNamingASecretLikeFieldReadWhole(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	none := newService(t, s, ops.Options{})
	ctx := testContext(t)
	readsWhole := func(what string, err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error; want a refusal", what)
		}
		text, _ := ops.RedactText(err.Error())
		if strings.Contains(text, ops.Redacted) {
			t.Errorf("%s: redacted, the refusal reads %q", what, text)
		}
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("%s: redacted, the refusal reads %q; want it to say %q", what, text, w)
			}
		}
	}
	for _, field := range []string{"password", "token", "api_key", "auth", "session"} {
		_, err := none.DLQSummary(ctx, ops.DLQSummaryRequest{ByField: field})
		readsWhole("by_field "+field, err, `by_field "`+field+`"`, "this server names no safe payload fields; leave by_field out, or ask an operator to name safe fields when starting the server")
		err = ops.SendRequest{Queue: "orders", Payload: json.RawMessage(`{}`), Headers: map[string]any{"pgbus_" + field: "x"}}.Check()
		readsWhole("header pgbus_"+field, err, `header "pgbus_`+field+`"`, "keys starting with pgbus_ are reserved for pgbus")
		err = ops.CheckSafeFields([]string{"user " + field})
		readsWhole("safe field user "+field, err, `safe field "user `+field+`"`, "name payload keys joined by dots")
	}
}
