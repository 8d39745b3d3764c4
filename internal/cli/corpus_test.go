package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/store"
)

// corpusDLQ dead-letters messages that carry every secret of the corpus:
// message i has the i-th payload, headers, error message, backtrace and
// kind of the corpus. It returns their ids in the DLQ of queue.
func corpusDLQ(t *testing.T, url, queue string) []int64 {
	t.Helper()
	by := map[string][]secrettest.Secret{}
	n := 0
	for _, s := range secrettest.Corpus {
		by[s.Where] = append(by[s.Where], s)
		n = max(n, len(by[s.Where]))
	}
	pick := func(where string, i int, fallback string) secrettest.Secret {
		if list := by[where]; i < len(list) {
			return list[i]
		}
		return secrettest.Secret{JSON: fallback, Text: fallback}
	}
	s := pgtest.OpenStore(t, url)
	pgtest.CreateQueue(t, s, queue)
	specs := make([]pgtest.DeadSpec, n)
	for i := range specs {
		var h map[string]any
		if err := json.Unmarshal([]byte(pick(secrettest.Header, i, `{}`).JSON), &h); err != nil {
			t.Fatal(err)
		}
		kind := pick(secrettest.Kind, i, "vault_job").Text
		h[store.HeaderKind] = kind
		hb, _ := json.Marshal(h)
		specs[i] = pgtest.DeadSpec{
			Kind: kind, Class: "vault.Error", Attempt: 1, MaxRetries: 1,
			Payload: pick(secrettest.Payload, i, `{"order_id": 42}`).JSON, Headers: string(hb),
			Message: pick(secrettest.Error, i, "boom").Text, Trace: pick(secrettest.Backtrace, i, "").Text,
		}
	}
	return pgtest.DeadLetter(t, s, queue, specs...)
}

// The one corpus of secrets, planted in payloads, headers, error messages,
// backtraces and kinds of dead messages, shows in none of the CLI's output
// (tables and --json), the MCP tools' results or the MCP resources, payloads allowed
// and asked for; nor in the audit log of a retry with a corrected payload
// and a send with secret headers.
func TestSecretCorpusHiddenInEveryFrontEnd(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	ids := corpusDLQ(t, d.url, "vault")
	c, _, _ := serveStdio(t, "--database-url", d.url, "--allow-payloads")

	var out strings.Builder
	collect := func(s string) { out.WriteString(s + "\n") }
	tool := func(name string, args map[string]any) {
		res := callToolRaw(t, c, name, args)
		if res.IsError {
			t.Fatalf("%s %v: %s", name, args, toolText(res))
		}
		collect(toolText(res))
		b, _ := json.Marshal(res.StructuredContent)
		collect(string(b))
	}

	// Secrets leave through the audit log too.
	payloadSecret := secrettest.Corpus[0]
	d.ok(t, "dlq", "retry", fmt.Sprint(ids[0]), "--queue", "vault", "--payload", payloadSecret.JSON)
	d.ok(t, "send", "vault", `{"order_id": 42}`, "--header", "authorization=Bearer sk-live-ABCDEF123456", "--header", "x-debug=password=hunter2")
	collect(d.ok(t, "audit", "--json", "--limit", "100"))
	tool("pgbus_audit", map[string]any{"limit": 100})

	collect(d.ok(t, "dlq", "summary", "--json"))
	collect(d.ok(t, "dlq", "list", "--json", "--limit", "100"))
	collect(d.ok(t, "dlq", "summary"))
	collect(d.ok(t, "dlq", "list", "--limit", "100"))
	collect(d.ok(t, "queue", "messages", "vault", "--json"))
	tool("pgbus_dlq_summary", map[string]any{})
	tool("pgbus_dlq_list", map[string]any{"limit": 100})
	tool("pgbus_queue_messages", map[string]any{"queue": "vault", "include_payload": true})
	shown := 0
	for _, id := range ids[1:] {
		collect(d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "vault", "--json"))
		collect(d.ok(t, "dlq", "show", fmt.Sprint(id), "--queue", "vault"))
		tool("pgbus_dlq_show", map[string]any{"queue": "vault", "msg_id": id, "include_payload": true})
		uri := fmt.Sprintf("pgbus://dlq/vault/%d", id)
		// A bound for each read, not for the whole test: on a busy
		// machine its dozens of commands before may take minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		for _, rc := range rr.Contents {
			if tc, ok := rc.(mcp.TextResourceContents); ok {
				collect(tc.Text)
				shown++
			}
		}
	}
	if shown != len(ids)-1 {
		t.Fatalf("read %d dead-message resources, want %d", shown, len(ids)-1)
	}
	all := out.String()
	secrettest.AssertHidden(t, all)
	// Redaction hides the secret, not the message: the neighbours and the
	// payloads are there.
	for _, want := range []string{`"author": "ada"`, `"author":"ada"`, "vault.Error", `"payload_shown":true`} {
		if !strings.Contains(all, want) && !strings.Contains(strings.ReplaceAll(all, `": `, `":`), strings.ReplaceAll(want, `": `, `":`)) {
			t.Errorf("the output lacks %s: redaction hid more than the secrets", want)
		}
	}
	if n := strings.Count(all, "[REDACTED]"); n < len(secrettest.Corpus) {
		t.Errorf("%d values shown as [REDACTED]; the corpus has %d secrets", n, len(secrettest.Corpus))
	}
}
