package cli_test

import (
	"strings"
	"testing"
)

// pgbus audit says that it left sends out, and the flag that lists them.
func TestAuditNotesSendsLeftOut(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "queue", "pause", "orders")
	const note = "note: sends are left out: --tool send (or all) lists them"
	if out := d.ok(t, "audit"); !strings.Contains(out, note) || strings.Contains(out, "pass tool") {
		t.Errorf("pgbus audit does not say %q:\n%s", note, out)
	}
	if out := d.ok(t, "audit", "--tool", "all"); strings.Contains(out, "sends are left out") {
		t.Errorf("pgbus audit --tool all says sends are left out:\n%s", out)
	}
}
