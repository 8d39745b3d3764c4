package cli_test

import (
	"strings"
	"testing"
)

// A flag given explicitly with an empty value, as a script's unset
// variable gives it, is refused (exit 2, nothing changed) wherever leaving
// the flag out would mean something else than the person meant: no
// de-duplication for send --idempotency-key "$KEY", every DLQ for purge
// --queue "$Q". Flags whose empty value cannot be read at all fail too.
func TestEmptyFlagValuesAreRefused(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "send", "orders", `{"amount_cents": 0}`, "--idempotency-key", "k1")
	cases := []struct {
		args []string
		says string
	}{
		{[]string{"send", "orders", "{}", "--idempotency-key", ""}, "--idempotency-key is empty: give a value, or leave the flag out"},
		{[]string{"send", "orders", "{}", "--idempotency-key", "  "}, "--idempotency-key is empty"},
		{[]string{"send", "orders", "{}", "--kind", ""}, "--kind is empty"},
		{[]string{"send", "orders", "{}", "--deadline", ""}, "--deadline is empty"},
		{[]string{"send", "orders", "{}", "--file", ""}, "--file is empty"},
		{[]string{"send", "orders", "--file", " "}, "--file is empty"},
		{[]string{"send", "orders", "{}", "--priority", ""}, "--priority"},
		{[]string{"send", "", "{}"}, "queue"},
		{[]string{"dlq", "purge", "--queue", "", "--yes"}, "--queue is empty"},
		{[]string{"dlq", "purge", "--older-than", "", "--yes"}, "--older-than is empty"},
		{[]string{"dlq", "retry", "1", "--queue", ""}, "--queue is empty"},
		{[]string{"dlq", "retry", "1", "--queue", "orders", "--payload", ""}, "empty"},
		{[]string{"dlq", "show", "1", "--queue", ""}, "--queue is empty"},
		{[]string{"audit", "--tool", ""}, "--tool is empty"},
		{[]string{"audit", "--client", ""}, "--client is empty"},
		{[]string{"audit", "--since", ""}, "--since is empty"},
		{[]string{"queue", "messages", "orders", "--state", ""}, "--state is empty"},
		{[]string{"work", "--queue", "orders", "--handler", "", "--for", "1s"}, "--handler is empty"},
		{[]string{"serve", "--queue", "orders", "--handler", ""}, "--handler is empty"},
	}
	before := d.snapshot(t)
	for _, c := range cases {
		if msg := d.fails(t, 2, c.args...); !strings.Contains(msg, c.says) {
			t.Errorf("pgbus %q: %q; want it to say %q", c.args, msg, c.says)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("a refused command changed the database:\n%s\n%s", before, after)
	}
}
