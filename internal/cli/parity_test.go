package cli_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// paritySecrets are the secrets the parity fixture plants in payloads,
// headers, error messages and backtraces; neither front end may show one.
var paritySecrets = []string{"hunter2", "sk-live-HDR111", "s3cret-dsn", "4111111111111111", "tok-9f8e7d6c5b4a", "sk_live_abcdef123456"}

// parityFixture makes the same dead letters in a fresh database: three in
// orders_dlq (ids 1, 2, 3) and one in emails_dlq (id 1, so id 1 is in two
// DLQs), carrying the secrets above.
func parityFixture(t *testing.T, url string) {
	t.Helper()
	s := pgtest.OpenStore(t, url)
	dead := func(queue string, n int, class, msg, trace string) {
		pgtest.CreateQueue(t, s, queue)
		pgtest.DeadLetterN(t, s, queue, n, pgtest.DeadSpec{
			Kind: "charge", Class: class, Message: msg, Trace: trace,
			Payload: `{"order_id": 42, "author": "ada", "password": "hunter2", "card": {"card_number": "4111111111111111"}, "note": "api_key: tok-9f8e7d6c5b4a"}`,
			Headers: `{"pgbus_kind": "charge", "authorization": "Bearer sk-live-HDR111", "tenant": "acme"}`,
		})
	}
	dead("orders", 3, "http.503", "gateway answered 503: password=hunter2; Authorization: Bearer sk-live-HDR111",
		"main.charge\n\tdial postgres://app:s3cret-dsn@db/app\n\tkey sk_live_abcdef123456")
	dead("emails", 1, "smtp.Timeout", "smtp timeout after 30s", "")
}

// parityCase is one operation asked of both front ends.
type parityCase struct {
	name string
	cli  []string       // CLI arguments; --json is added
	tool string         // MCP tool
	args map[string]any // its arguments
	// code is the CLI's exit code; MCP answers a result (code 0 or a
	// per-id outcome) or, with toolError, a tool error.
	code      int
	toolError bool
}

// The same DLQ operations through the CLI (--json) and through the MCP
// tools over stdio, on two databases holding the same data, give the same
// outcome: the same groups, items, per-id outcomes and redacted views,
// edge cases included (an id in no DLQ, an id in two DLQs, mixed ids,
// filters by age and by date, secrets in payloads, headers and error text).
func TestParityCLIAndMCP(t *testing.T) {
	t.Parallel()
	cliDB, mcpDB := newDB(t), pgtest.NewDatabase(t)
	parityFixture(t, cliDB.url)
	parityFixture(t, mcpDB)
	c, _, _ := serveStdio(t, "--database-url", mcpDB, "--allow-payloads")
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)

	cases := []parityCase{
		{name: "summary", cli: []string{"dlq", "summary"}, tool: "pgbus_dlq_summary", args: map[string]any{}},
		{name: "summary by queue and age", cli: []string{"dlq", "summary", "--queue", "orders", "--since", "7d"}, tool: "pgbus_dlq_summary", args: map[string]any{"queue": "orders", "since": "7d"}},
		{name: "list since 7d", cli: []string{"dlq", "list", "--since", "7d"}, tool: "pgbus_dlq_list", args: map[string]any{"since": "7d"}},
		{name: "list since a date", cli: []string{"dlq", "list", "--since", yesterday, "--queue", "orders"}, tool: "pgbus_dlq_list", args: map[string]any{"since": yesterday, "queue": "orders"}},
		{name: "list until a date", cli: []string{"dlq", "list", "--until", yesterday}, tool: "pgbus_dlq_list", args: map[string]any{"until": yesterday}},
		{name: "list by text", cli: []string{"dlq", "list", "--text", "503"}, tool: "pgbus_dlq_list", args: map[string]any{"text": "503"}},
		{name: "list largest first", cli: []string{"dlq", "list", "--order", "largest", "--min-payload-bytes", "10", "--limit", "2"}, tool: "pgbus_dlq_list", args: map[string]any{"order": "largest", "min_payload_bytes": 10, "limit": 2}},
		{name: "show with payload", cli: []string{"dlq", "show", "2", "--queue", "orders"}, tool: "pgbus_dlq_show", args: map[string]any{"queue": "orders", "msg_id": 2, "include_payload": true}},
		{name: "show an id in no DLQ", cli: []string{"dlq", "show", "999", "--queue", "orders"}, tool: "pgbus_dlq_show", args: map[string]any{"queue": "orders", "msg_id": 999}, code: 3, toolError: true},
		{name: "show an id in two DLQs", cli: []string{"dlq", "show", "1"}, tool: "pgbus_dlq_show", args: map[string]any{"msg_id": 1}, code: 2, toolError: true},
		{name: "retry an id in two DLQs", cli: []string{"dlq", "retry", "1"}, tool: "pgbus_dlq_retry", args: map[string]any{"ids": []int64{1}}, code: 2},
		{name: "retry an id in no DLQ", cli: []string{"dlq", "retry", "999", "--queue", "orders"}, tool: "pgbus_dlq_retry", args: map[string]any{"ids": []int64{999}, "queue": "orders"}, code: 3},
		{name: "retry dry run", cli: []string{"dlq", "retry", "2", "--queue", "orders", "--dry-run"}, tool: "pgbus_dlq_retry", args: map[string]any{"ids": []int64{2}, "queue": "orders", "dry_run": true}},
		{name: "retry mixed ids", cli: []string{"dlq", "retry", "2", "999", "1"}, tool: "pgbus_dlq_retry", args: map[string]any{"ids": []int64{2, 999, 1}}, code: 1},
		{name: "retry again: gone", cli: []string{"dlq", "retry", "2", "--queue", "orders"}, tool: "pgbus_dlq_retry", args: map[string]any{"ids": []int64{2}, "queue": "orders"}, code: 3},
		{name: "discard mixed ids", cli: []string{"dlq", "discard", "3", "999", "--queue", "orders", "--yes"}, tool: "pgbus_dlq_discard", args: map[string]any{"ids": []int64{3, 999}, "queue": "orders"}, code: 3},
		{name: "discard by filter", cli: []string{"dlq", "discard", "--queue", "emails", "--yes", "--limit", "10"}, tool: "pgbus_dlq_discard", args: map[string]any{"queue": "emails", "limit": 10, "confirm": true}},
		{name: "summary after", cli: []string{"dlq", "summary"}, tool: "pgbus_dlq_summary", args: map[string]any{}},
		{name: "discarded", cli: []string{"dlq", "discarded", "--queue", "orders"}, tool: "pgbus_dlq_discarded", args: map[string]any{"queue": "orders"}},
		{name: "discarded by handler", cli: []string{"dlq", "discarded", "--queue", "orders", "--by-handler"}, tool: "pgbus_dlq_discarded", args: map[string]any{"queue": "orders", "by_handler": true}},
		{name: "restore mixed ids", cli: []string{"dlq", "restore", "3", "999", "--queue", "orders"}, tool: "pgbus_dlq_restore", args: map[string]any{"ids": []int64{3, 999}, "queue": "orders"}, code: 3},
		{name: "restore again", cli: []string{"dlq", "restore", "3", "--queue", "orders"}, tool: "pgbus_dlq_restore", args: map[string]any{"ids": []int64{3}, "queue": "orders"}, code: 3},
		{name: "summary restored", cli: []string{"dlq", "summary"}, tool: "pgbus_dlq_summary", args: map[string]any{}},
	}
	for _, tc := range cases {
		r := pgbus(t, cliDB.env, append(tc.cli, "--json")...)
		if r.code != tc.code {
			t.Fatalf("%s: pgbus %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.name, strings.Join(tc.cli, " "), r.code, tc.code, r.stdout, r.stderr)
		}
		res := callToolRaw(t, c, tc.tool, tc.args)
		text := toolText(res)
		assertNoSecrets(t, tc.name+" (CLI)", r.stdout+r.stderr)
		assertNoSecrets(t, tc.name+" (MCP)", text)
		if tc.toolError {
			if !res.IsError {
				t.Fatalf("%s: %s answered %s, want a tool error", tc.name, tc.tool, text)
			}
			// The same sentence, each front end naming its next step: the
			// CLI's with --json as a JSON error, its line and its commands.
			e := decodeErrorJSON(t, r)
			cliMsg, _, _ := strings.Cut(e.Error, ": see ")
			mcpMsg, _, _ := strings.Cut(text, ": see ")
			if cliMsg == "" || cliMsg != mcpMsg {
				t.Fatalf("%s: errors differ:\nCLI: %s\nMCP: %s", tc.name, r.stderr, text)
			}
			if !strings.Contains(e.Error, "see pgbus ") || len(e.Next) == 0 || !strings.HasPrefix(e.Next[0].Command, "pgbus ") || !strings.Contains(text, "see pgbus_") {
				t.Fatalf("%s: next steps not named by each front end:\nCLI: %s\nMCP: %s", tc.name, r.stderr, text)
			}
			continue
		}
		if res.IsError {
			t.Fatalf("%s: %s: tool error %s", tc.name, tc.tool, text)
		}
		cliOut, mcpOut := comparable(t, r.stdout), comparable(t, text)
		if !reflect.DeepEqual(cliOut, mcpOut) {
			a, _ := json.MarshalIndent(cliOut, "", " ")
			b, _ := json.MarshalIndent(mcpOut, "", " ")
			t.Fatalf("%s: outcomes differ\nCLI: %s\nMCP: %s", tc.name, a, b)
		}
		checkParityCase(t, tc.name, cliOut)
	}
	checkLimitParity(t, cliDB.env, c)
}

// checkLimitParity checks that a page size out of bounds, 0 included, is
// refused by both front ends in the same words, each naming the argument
// as its caller writes it, and saying how to reach more rows.
func checkLimitParity(t *testing.T, env []string, c *client.Client) {
	t.Helper()
	cases := []struct {
		cli  []string
		tool string
		args map[string]any
		more string
	}{
		{[]string{"dlq", "list", "--limit", "0"}, "pgbus_dlq_list", map[string]any{"limit": 0}, "next cursor"},
		{[]string{"dlq", "discarded", "--queue", "orders", "--limit", "101"}, "pgbus_dlq_discarded", map[string]any{"queue": "orders", "limit": 101}, "narrow the filters"},
		{[]string{"audit", "--limit", "0"}, "pgbus_audit", map[string]any{"limit": 0}, "next cursor"},
		{[]string{"queue", "messages", "orders", "--limit", "-3"}, "pgbus_queue_messages", map[string]any{"queue": "orders", "limit": -3}, "next cursor"},
	}
	for _, tc := range cases {
		r := pgbus(t, env, append(tc.cli, "--json")...)
		res := callToolRaw(t, c, tc.tool, tc.args)
		e := decodeErrorJSON(t, r)
		if r.code != 2 || !res.IsError || !strings.HasPrefix(e.Error, "--limit ") || !strings.Contains(e.Error, tc.more) ||
			strings.TrimPrefix(e.Error, "--") != toolText(res) {
			t.Errorf("pgbus %s and %s %v refuse the limit differently:\nCLI (exit %d): %s\nMCP: %s", strings.Join(tc.cli, " "), tc.tool, tc.args, r.code, e.Error, toolText(res))
		}
	}
}

// checkParityCase checks that the outcome both front ends agree on is the
// right one, so that the parity is not an agreement on a wrong answer.
func checkParityCase(t *testing.T, name string, out map[string]any) {
	t.Helper()
	outcomes := func() string {
		var parts []string
		list, _ := out["outcomes"].([]any)
		for _, o := range list {
			m := o.(map[string]any)
			parts = append(parts, jsonString(m["id"])+":"+m["outcome"].(string))
		}
		return strings.Join(parts, ",")
	}
	count := func(k string) string {
		a, _ := out[k].([]any)
		return jsonString(len(a))
	}
	want := map[string]func() (string, string){
		"summary":                  func() (string, string) { return jsonString(out["total"]), "4" },
		"summary by queue and age": func() (string, string) { return jsonString(out["total"]), "3" },
		"list since 7d":            func() (string, string) { return count("items"), "4" },
		"list since a date":        func() (string, string) { return count("items"), "3" },
		"list until a date":        func() (string, string) { return count("items"), "0" },
		"list by text":             func() (string, string) { return count("items"), "3" },
		"show with payload": func() (string, string) {
			p := out["payload"].(map[string]any)
			return jsonString(p["order_id"]) + " " + p["author"].(string) + " " + p["password"].(string), "42 ada [REDACTED]"
		},
		"retry an id in two DLQs": func() (string, string) { return outcomes(), "1:ambiguous" },
		"retry an id in no DLQ":   func() (string, string) { return outcomes(), "999:not_found" },
		"retry dry run":           func() (string, string) { return outcomes(), "2:would_retry" },
		"retry mixed ids":         func() (string, string) { return outcomes(), "2:retried,999:not_found,1:ambiguous" },
		"retry again: gone":       func() (string, string) { return outcomes(), "2:not_found" },
		"discard mixed ids":       func() (string, string) { return outcomes(), "3:discarded,999:not_found" },
		"discard by filter":       func() (string, string) { return jsonString(out["discarded"]), "1" },
		"summary after":           func() (string, string) { return jsonString(out["total"]), "1" },
		"discarded":               func() (string, string) { return count("items"), "1" },
		"discarded by handler":    func() (string, string) { return count("items"), "0" },
		"restore mixed ids":       func() (string, string) { return outcomes(), "3:restored,999:not_found" },
		"restore again":           func() (string, string) { return outcomes(), "3:not_found" },
		"summary restored":        func() (string, string) { return jsonString(out["total"]), "2" },
	}
	if f, ok := want[name]; ok {
		if got, w := f(); got != w {
			t.Fatalf("%s: got %s, want %s (%v)", name, got, w, out)
		}
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func assertNoSecrets(t *testing.T, where, out string) {
	t.Helper()
	for _, s := range paritySecrets {
		if strings.Contains(out, s) {
			t.Fatalf("%s shows the secret %q:\n%s", where, s, out)
		}
	}
}

// comparable decodes a result and drops what differs between two runs on
// two databases by nature: times, cursors (they carry times), and the next
// steps, which each front end names in its own words.
func comparable(t *testing.T, out string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	dropVolatile(v)
	return v
}

func dropVolatile(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if k == "next" || k == "next_cursor" || strings.HasSuffix(k, "_at") || val == nil {
				delete(x, k)
				continue
			}
			if a, ok := val.([]any); ok && len(a) == 0 {
				delete(x, k)
				continue
			}
			dropVolatile(val)
		}
	case []any:
		for _, e := range x {
			dropVolatile(e)
		}
	}
}

// callToolRaw calls a tool and returns its result, tool errors included.
func callToolRaw(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// summaryPage is what the parity of summary pages compares of a page.
type summaryPage struct {
	Groups []struct {
		DLQ   string `json:"dlq"`
		Group string `json:"group"`
		Count int64  `json:"count"`
	} `json:"groups"`
	TotalGroups int    `json:"total_groups"`
	NextCursor  string `json:"next_cursor"`
}

func (p summaryPage) keys() []string {
	out := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		out[i] = g.DLQ + " " + g.Group
	}
	return out
}

// The pages of a summary of more groups than one page holds are the same
// through the CLI (--json, --cursor) and through pgbus_dlq_summary on the
// same database, each taking the other's cursor: from the same cursor, the
// tool's page (bounded by its response) is the start of the CLI's page
// (up to 500 groups), and both go on to the same groups. The CLI's words
// name the next page as a command, which lists the rest.
func TestParitySummaryPages(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	s := pgtest.OpenStore(t, d.url)
	pgtest.CreateQueue(t, s, "mailer")
	const groups = 510
	specs := make([]pgtest.DeadSpec, 0, groups+40)
	for i := range groups {
		spec := pgtest.DeadSpec{Kind: "mail", Class: "SMTPError", Message: "mailbox " + letters(i) + " refused"}
		specs = append(specs, spec)
		if i < 40 {
			specs = append(specs, spec)
		}
	}
	pgtest.DeadLetter(t, s, "mailer", specs...)
	c, _, _ := serveStdio(t, "--database-url", d.url)

	cliPage := func(args ...string) summaryPage {
		t.Helper()
		r := pgbus(t, d.env, append([]string{"dlq", "summary", "--queue", "mailer", "--json"}, args...)...)
		var p summaryPage
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil {
			t.Fatalf("pgbus dlq summary %v: exit %d\n%s\n%s", args, r.code, r.stdout, r.stderr)
		}
		return p
	}
	toolPage := func(cursor string) summaryPage {
		t.Helper()
		args := map[string]any{"queue": "mailer"}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res := callToolRaw(t, c, "pgbus_dlq_summary", args)
		var p summaryPage
		if res.IsError || json.Unmarshal([]byte(toolText(res)), &p) != nil {
			t.Fatalf("pgbus_dlq_summary %v: %s", args, toolText(res))
		}
		return p
	}
	// Every group once, through the tool alone.
	var all []string
	seen := map[string]bool{}
	var cursors []string
	for cursor := ""; ; {
		p := toolPage(cursor)
		for _, k := range p.keys() {
			if seen[k] {
				t.Fatalf("the tool lists %s twice", k)
			}
			seen[k] = true
		}
		all = append(all, p.keys()...)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
		cursors = append(cursors, cursor)
	}
	if len(all) != groups || len(cursors) < 2 {
		t.Fatalf("the tool's pages list %d groups in %d pages; want %d in several", len(all), len(cursors)+1, groups)
	}
	// The CLI: 500 groups, then the rest from its cursor; the same order.
	first := cliPage()
	if first.TotalGroups != groups || first.NextCursor == "" || !slices.Equal(first.keys(), all[:500]) {
		t.Fatalf("CLI first page: %d groups of %d, next cursor %q; want the tool's first 500 of %d", len(first.Groups), first.TotalGroups, first.NextCursor, groups)
	}
	second := cliPage("--cursor", first.NextCursor)
	if second.NextCursor != "" || !slices.Equal(second.keys(), all[500:]) {
		t.Fatalf("CLI second page: %v (next %q); want the tool's last %d groups", second.keys(), second.NextCursor, groups-500)
	}
	// Each front end takes the other's cursor and lists the same page.
	if p := toolPage(first.NextCursor); !slices.Equal(p.keys(), second.keys()) {
		t.Fatalf("the tool from the CLI's cursor lists %v; the CLI %v", p.keys(), second.keys())
	}
	for _, cursor := range []string{cursors[0], cursors[len(cursors)/2]} {
		tool, cli := toolPage(cursor), cliPage("--cursor", cursor)
		if len(cli.Groups) < len(tool.Groups) || !slices.Equal(cli.keys()[:len(tool.Groups)], tool.keys()) {
			t.Fatalf("from the same cursor, the tool lists %v, the CLI %v", tool.keys(), cli.keys())
		}
	}
	// In words, the CLI names its next page, which lists the rest.
	r := pgbus(t, d.env, "dlq", "summary", "--queue", "mailer")
	var next []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if i := strings.Index(line, "pgbus dlq summary "); i >= 0 && strings.Contains(line, "--cursor ") {
			next = strings.Fields(strings.TrimSpace(strings.SplitN(line[i+len("pgbus "):], "#", 2)[0]))
		}
	}
	if r.code != 0 || next == nil {
		t.Fatalf("pgbus dlq summary: exit %d, no command for the next page:\n%s", r.code, r.stdout)
	}
	r = pgbus(t, d.env, append(next, "--json")...)
	var rest summaryPage
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rest) != nil || !slices.Equal(rest.keys(), all[500:]) {
		t.Fatalf("pgbus %v: exit %d\n%s\n%s\nwant the last %d groups", next, r.code, r.stdout, r.stderr, groups-500)
	}
}

// letters is a word of letters only for each i, so that error messages
// that differ by it are groups of their own.
func letters(i int) string {
	return string(rune('a'+i/676%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i%26))
}
