package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// A read-only server relays a restore's dry run as it relays every write
// call, dry runs included, but answers the question the dry run asks,
// which it can read: its refusal says what a restore would do now, id by
// id (in its text, and in its _meta as the dry run's result), and names
// the restore of the ids that would be restored as the command to run.
// Nothing changes, and no audit entry is written.
func TestReadOnlyAnswersRestoreDryRun(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	ctx := testContext(t)
	queue := newQueue(t, st)
	discarded := deadLetter(t, st, queue, `{"n":1}`, `{"n":2}`)
	if n, err := st.DiscardDead(ctx, store.DLQName(queue), discarded); err != nil || n != 2 {
		t.Fatalf("discard = %d, %v; want 2", n, err)
	}
	dead := deadLetter(t, st, queue, `{"n":3}`) // in the DLQ, not in its archive
	ids := []int64{discarded[0], dead[0], discarded[1]}

	c, err := client.NewStreamableHttpClient(serveHTTP(t, deps(t, st, ops.Options{ReadOnly: true}), mcpserver.HTTPConfig{Transport: mcpserver.TransportHTTP}) + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	connect(t, c)
	res, ok := callForError(ctx, t, c, "pgbus_dlq_restore", map[string]any{"queue": queue, "ids": ids, "dry_run": true})
	if !ok {
		return
	}
	text := resultText(res)
	command := fmt.Sprintf("pgbus dlq restore %d %d --queue %s", discarded[0], discarded[1], queue)
	for _, want := range []string{"pgbus_dlq_restore is not available", "read-only", "nothing was changed",
		"2 of the 3 ids given would be restored to " + store.DLQName(queue),
		fmt.Sprintf("message %d is in %s already", dead[0], store.DLQName(queue)),
		"an operator can run: " + command} {
		if !strings.Contains(text, want) {
			t.Errorf("the dry run of a restore on a read-only server: %q; want it to say %q", text, want)
		}
	}
	if !res.IsError || strings.Contains(text, "--dry-run") {
		t.Errorf("the dry run of a restore on a read-only server: %q; want a refusal naming the restore itself", text)
	}
	checkRefusalMeta(t, res, "pgbus_dlq_restore", command)
	raw, _ := json.Marshal(res.Meta.AdditionalFields["pgbus/error"])
	var m struct {
		DryRun *ops.DLQRestore `json:"dry_run"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.DryRun == nil {
		t.Fatalf("_meta pgbus/error %s (%v); want the dry run's result", raw, err)
	}
	if p := m.DryRun; !p.DryRun || p.Restored != 2 || p.NotFound != 1 || len(p.Outcomes) != 3 ||
		p.Outcomes[0].Outcome != ops.OutcomeWouldRestore || p.Outcomes[1].Outcome != ops.OutcomeNotFound || p.Outcomes[2].Outcome != ops.OutcomeWouldRestore {
		t.Errorf("_meta's dry run: %+v; want ids 1 and 3 would be restored, 2 not found", p)
	}
	for _, id := range discarded {
		if n := pgtest.Int(t, st, `SELECT count(*) FROM pgmq."a_`+store.DLQName(queue)+`" WHERE msg_id = $1`, id); n != 1 {
			t.Errorf("message %d left the archive", id)
		}
	}
	if n := pgtest.Int(t, st, `SELECT count(*) FROM pgbus.audit_log`); n != 0 {
		t.Errorf("%d audit entries; a read-only server writes none", n)
	}
}
