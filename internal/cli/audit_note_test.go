package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// pgbus audit says that it left sends out, and the flag that lists them,
// in its words and in its JSON.
func TestAuditNotesSendsLeftOut(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	d.ok(t, "queue", "pause", "orders")
	const note = "note: sends are left out: --tool send (or all) lists them"
	if out := d.ok(t, "audit"); !strings.Contains(out, note) || strings.Contains(out, "pass tool") {
		t.Errorf("pgbus audit does not say %q:\n%s", note, out)
	}
	var page ops.AuditPage
	if err := json.Unmarshal([]byte(d.ok(t, "audit", "--json")), &page); err != nil || !slices.Contains(page.Notes, strings.TrimPrefix(note, "note: ")) {
		t.Errorf("pgbus audit --json notes %q (%v), want %q", page.Notes, err, strings.TrimPrefix(note, "note: "))
	}
	if out := d.ok(t, "audit", "--tool", "all"); strings.Contains(out, "sends are left out") {
		t.Errorf("pgbus audit --tool all says sends are left out:\n%s", out)
	}
}
