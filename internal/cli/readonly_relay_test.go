package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/redact"
	"github.com/pgbus/pgbus/internal/vocab"
)

// A read-only server relays a write call as the command an operator can
// run: a purge or a bulk discard the call did not confirm is relayed
// without --yes, so that the command says what it would delete or move
// and changes nothing (the operator checks, then confirms), as a writable
// server refuses such a call until it is checked and confirmed; a call
// that confirmed is relayed with --yes.
func TestReadOnlyRelayConfirmsOnlyWhatTheCallConfirmed(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	deadShop(t, d) // 7 dead messages in shop_dlq
	dead := d.deadIDs(t)
	d.ok(t, "dlq", "discard", fmt.Sprint(dead[0]), fmt.Sprint(dead[1]), "--queue", "shop", "--yes")
	c, _, stderr := serveStdio(t, "--read-only", "--no-workers", "--database-url", d.url)
	before := d.snapshot(t)
	// Each command names the server's database, for the operator's role.
	database := " --database-url " + vocab.ShellQuote(redact.DatabaseAddress(d.url))

	relayed := func(tool string, args map[string]any) string {
		t.Helper()
		res := callToolRaw(t, c, tool, args)
		text := toolText(res)
		_, command, ok := strings.Cut(text, "an operator can run: ")
		if !res.IsError || !ok {
			t.Fatalf("%s(%v) on a read-only server: %q; want a refusal naming the command\nserve's stderr: %s", tool, args, text, stderr.String())
		}
		command, ok = strings.CutSuffix(command, database)
		if !ok {
			t.Fatalf("%s(%v) on a read-only server relays %q; want it to end with the server's database,%s", tool, args, command, database)
		}
		return command
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		command string
	}{
		{"pgbus_dlq_purge", map[string]any{"queue": "shop", "older_than": "0s"}, "pgbus dlq purge --older-than 0s --queue shop"},
		{"pgbus_dlq_discard", map[string]any{"queue": "shop", "limit": 2}, "pgbus dlq discard --limit 2 --queue shop"},
		{"pgbus_dlq_discard", map[string]any{"queue": "shop", "kind": "charge", "limit": 2}, "pgbus dlq discard --kind charge --limit 2 --queue shop"},
		{"pgbus_dlq_retry", map[string]any{"queue": "shop", "limit": 2}, "pgbus dlq retry-all --limit 2 --queue shop"},
	} {
		command := relayed(tc.tool, tc.args)
		if command != tc.command {
			t.Errorf("%s(%v) on a read-only server relays %q; want %q, without --yes: the call did not confirm", tc.tool, tc.args, command, tc.command)
			continue
		}
		// Run as relayed, it says what it would touch and changes nothing.
		out := d.fails(t, 2, strings.Fields(strings.TrimPrefix(command, "pgbus "))...)
		if !strings.Contains(out, "without --yes") {
			t.Errorf("%s: %q; want it to refuse without --yes, saying what it would touch", command, out)
		}
		if after := d.snapshot(t); after != before {
			t.Fatalf("%s, relayed by a read-only server for an unconfirmed call, changed the database:\nbefore: %s\nafter:  %s", command, before, after)
		}
	}
	for _, tc := range []struct {
		tool    string
		args    map[string]any
		command string
	}{
		{"pgbus_dlq_purge", map[string]any{"queue": "shop", "older_than": "0s", "confirm": true}, "pgbus dlq purge --older-than 0s --queue shop --yes"},
		{"pgbus_dlq_discard", map[string]any{"queue": "shop", "limit": 2, "confirm": true}, "pgbus dlq discard --limit 2 --queue shop --yes"},
		{"pgbus_dlq_discard", map[string]any{"ids": dead[2:4], "queue": "shop", "confirm": true}, fmt.Sprintf("pgbus dlq discard %d %d --queue shop --yes", dead[2], dead[3])},
		// A discard of the ids named goes ahead on a writable server
		// without confirm: each was chosen.
		{"pgbus_dlq_discard", map[string]any{"ids": dead[2:4], "queue": "shop"}, fmt.Sprintf("pgbus dlq discard %d %d --queue shop --yes", dead[2], dead[3])},
	} {
		if command := relayed(tc.tool, tc.args); command != tc.command {
			t.Errorf("%s(%v) on a read-only server relays %q; want %q, with --yes: the call went ahead as made on a writable server", tc.tool, tc.args, command, tc.command)
		}
	}
	if after := d.snapshot(t); after != before {
		t.Fatalf("the read-only server changed the database:\nbefore: %s\nafter:  %s", before, after)
	}
}
