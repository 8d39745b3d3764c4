package tools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// crawl follows every next step an agent is offered, from the calls it
// starts with, as the agent would: each hint's tool must be listed, its
// arguments must validate against the tool's input schema, and a read (or
// a dry run) called as written must succeed, its own hints followed in
// turn. A write's hint is checked against its schema, not called.
type crawl struct {
	t       *testing.T
	e       *env
	schemas map[string]*jsonschema.Schema
	writes  map[string]bool
	seen    map[string]bool
	calls   int
	fails   []string
}

func newCrawl(t *testing.T, e *env) *crawl {
	t.Helper()
	list, err := e.c.ListTools(testContext(t), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	c := &crawl{t: t, e: e, schemas: map[string]*jsonschema.Schema{}, writes: map[string]bool{}, seen: map[string]bool{}}
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool.InputSchema)
		if tool.RawInputSchema != nil {
			raw, err = tool.RawInputSchema, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		c.schemas[tool.Name] = compileSchema(t, tool.Name+" input", raw)
		if tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint {
			c.writes[tool.Name] = true
		}
	}
	return c
}

func (c *crawl) failf(format string, args ...any) {
	c.fails = append(c.fails, fmt.Sprintf(format, args...))
}

// step is a call offered to the agent: where it was offered, the tool and
// its arguments as JSON.
type step struct {
	from, tool string
	args       map[string]any
	// described is a call a description names, left out where its tool is
	// not listed.
	described bool
	// start is a call made as the agent chose it, written or not, whose
	// error is the point.
	start bool
}

// follow calls the starting steps and every step their results and errors
// offer, up to depth calls deep.
func (c *crawl) follow(depth int, start ...step) {
	todo := start
	for d := 0; d <= depth && len(todo) > 0; d++ {
		var next []step
		for _, s := range todo {
			next = append(next, c.take(s)...)
		}
		todo = next
	}
}

func (c *crawl) take(s step) []step {
	key := s.tool + " " + mustJSON(s.args)
	if c.seen[key] {
		return nil
	}
	c.seen[key] = true
	if s.tool == "cli" {
		return nil
	}
	schema, ok := c.schemas[s.tool]
	if !ok && s.described {
		return nil
	}
	if !ok {
		c.failf("%s offers %s, which is not a listed tool", s.from, key)
		return nil
	}
	var inst any
	if err := json.Unmarshal([]byte(mustJSON(orEmpty(s.args))), &inst); err != nil {
		c.t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		c.failf("%s offers %s, whose arguments the tool's schema refuses: %v", s.from, key, err)
		return nil
	}
	if c.writes[s.tool] && s.args["dry_run"] != true && !s.start {
		return nil
	}
	c.calls++
	res := c.e.call(c.t, s.tool, orEmpty(s.args))
	text := resultText(res)
	if n := len(text); n > 16000 {
		c.failf("%s: %d characters, over the 16,000 of a response", key, n)
	}
	if res.IsError {
		if s.start {
			return errorSteps(key, text)
		}
		c.failf("%s offers %s, which fails: %s", s.from, key, text)
		return errorSteps(key, text)
	}
	var out any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return append(hintSteps(key, out), describedSteps(key, s.tool, out)...)
}

// describedSteps are the next calls the tools' descriptions name for a
// result: each listed message shown, each group shown, listed and retried
// in a dry run by its filters.
func describedSteps(from, tool string, v any) []step {
	m, _ := v.(map[string]any)
	var out []step
	switch tool {
	case "pgbus_dlq_list":
		items, _ := m["items"].([]any)
		for _, it := range items {
			it := it.(map[string]any)
			out = append(out, step{from: from + " (item)", tool: "pgbus_dlq_show", args: map[string]any{"queue": it["dlq"], "msg_id": it["msg_id"]}})
		}
	case "pgbus_dlq_summary":
		groups, _ := m["groups"].([]any)
		for _, g := range groups {
			g := g.(map[string]any)
			f := map[string]any{"queue": g["dlq"]}
			for _, k := range []string{"kind", "error_class"} {
				if g[k] != "" && g[k] != nil {
					f[k] = g[k]
				}
			}
			ids, _ := g["sample_msg_ids"].([]any)
			if len(ids) > 0 {
				out = append(out, step{from: from + " (group)", tool: "pgbus_dlq_show", args: map[string]any{"queue": g["dlq"], "msg_id": ids[0]}})
			}
			out = append(out, step{from: from + " (group)", tool: "pgbus_dlq_list", args: f},
				step{from: from + " (group)", tool: "pgbus_dlq_list", args: map[string]any{"queue": g["dlq"], "group": g["group"]}},
				step{from: from + " (group)", tool: "pgbus_dlq_retry", args: map[string]any{"queue": g["dlq"], "group": g["group"], "limit": 10, "dry_run": true}, described: true})
		}
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hintSteps finds the hints in a result: objects with an op and args or why.
func hintSteps(from string, v any) []step {
	var out []step
	switch x := v.(type) {
	case map[string]any:
		if op, ok := x["op"].(string); ok && (strings.HasPrefix(op, "pgbus_") || op == "cli") {
			if _, ok := x["why"]; ok {
				args, _ := x["args"].(map[string]any)
				return []step{{from: from, tool: op, args: args}}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, hintSteps(from, x[k])...)
		}
	case []any:
		for _, e := range x {
			out = append(out, hintSteps(from, e)...)
		}
	}
	return out
}

var toolInText = regexp.MustCompile(`pgbus_[a-z_]+[a-z]`)

// errorSteps finds the tool calls an error's text offers: a tool's name,
// with its arguments as JSON when they follow it.
func errorSteps(from, text string) []step {
	var out []step
	for _, loc := range toolInText.FindAllStringIndex(text, -1) {
		name := text[loc[0]:loc[1]]
		rest := text[loc[1]:]
		if !strings.HasPrefix(rest, " {") {
			continue // named in words, not offered as a call
		}
		var args map[string]any
		if err := json.NewDecoder(bytes.NewReader([]byte(rest[1:]))).Decode(&args); err != nil {
			out = append(out, step{from: from, tool: name, args: map[string]any{"unparsable": rest}})
			continue
		}
		out = append(out, step{from: from, tool: name, args: args})
	}
	return out
}

// priorityDeadLetter dead-letters one message per spec from priority level
// level of queue into queue's DLQ, as a worker does.
func priorityDeadLetter(t *testing.T, st *store.Store, queue string, level int, specs ...pgtest.DeadSpec) {
	t.Helper()
	ctx := testContext(t)
	phys := store.PriorityQueueName(queue, level)
	for i, spec := range specs {
		ids, err := st.SendBatch(ctx, phys, []store.NewMessage{{Payload: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)),
			Headers: json.RawMessage(fmt.Sprintf(`{"pgbus_kind": %q}`, spec.Kind))}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.DeadLetterMany(ctx, phys, store.DLQName(queue), store.SourceWorker, []store.DeadLetterItem{{
			MsgID: ids[0], Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 5,
			Failure: &store.Failure{Attempt: 5, Kind: spec.Kind, ErrorClass: spec.Class, ErrorMessage: spec.Message}}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// triageData fills a Ruby pgbus database with what an agent meets: a queue
// with many groups, secrets and long errors, a queue with priority levels
// dead-lettered at two levels, a paused queue, and a dropped queue whose
// DLQ still holds messages.
func triageData(t *testing.T) *store.Store {
	t.Helper()
	st := rubyPgbusDB(t)
	ctx := testContext(t)
	pgtest.CreateQueue(t, st, "orders")
	var specs []pgtest.DeadSpec
	for i := range 40 {
		specs = append(specs, pgtest.DeadSpec{Kind: fmt.Sprintf("kind_%d", i%4), Class: fmt.Sprintf("Err%d", i%8),
			Message: fmt.Sprintf("case %d: call with password=hunter2 failed: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), 400))})
	}
	specs = append(specs, pgtest.DeadSpec{Class: "NoKind", Message: "token=abcdef123456 refused",
		Headers: `{"authorization": "Bearer sk_live_abcdefghijklmnop", "big": "` + strings.Repeat("x", 20000) + `"}`})
	pgtest.DeadLetter(t, st, "orders", specs...)

	if err := st.CreatePriorityQueue(ctx, "jobs", 3); err != nil {
		t.Fatal(err)
	}
	priorityDeadLetter(t, st, "jobs", 0, pgtest.DeadSpec{Kind: "resize", Class: "Timeout", Message: "timed out after 30s"})
	priorityDeadLetter(t, st, "jobs", 2, pgtest.DeadSpec{Kind: "resize", Class: "Timeout", Message: "timed out after 31s"},
		pgtest.DeadSpec{Kind: "resize", Class: "Timeout", Message: "timed out after 32s"})

	pgtest.CreateQueue(t, st, "mail")
	if _, err := st.SetPaused(ctx, "mail", true); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SendBatch(ctx, "mail", []store.NewMessage{{Payload: json.RawMessage(`{}`), Headers: json.RawMessage(`{"pgbus_kind":"send"}`)}}); err != nil {
		t.Fatal(err)
	}

	pgtest.CreateQueue(t, st, "gone")
	pgtest.DeadLetterN(t, st, "gone", 3, pgtest.DeadSpec{Kind: "old", Class: "Gone", Message: "downstream retired"})
	pgtest.DropOutside(t, st, "gone")
	return st
}

// Every next step an agent is offered on a realistic database, from
// pgbus_health, pgbus_dlq_summary and pgbus_dlq_list, is a call it can
// make as written.
func TestEveryHintIsCallable(t *testing.T) {
	// Not parallel: its data takes minutes to make, well past the
	// context of a test, beside the package's other large fixtures on
	// two busy cores.
	st := triageData(t)
	for _, readOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("read-only=%v", readOnly), func(t *testing.T) {
			// Side by side on one database: the crawl reads, and the
			// writes it starts with move nothing (ids in several DLQs or
			// none, no confirmation, a wrong expect).
			t.Parallel()
			e := newEnvOn(t, st, ops.Options{ReadOnly: readOnly, SafeFields: []string{"n"}})
			c := newCrawl(t, e)
			start := []step{{from: "start", tool: "pgbus_health"}, {from: "start", tool: "pgbus_dlq_summary"},
				{from: "start", tool: "pgbus_dlq_list"}}
			for _, q := range []string{"orders", "jobs", "gone", "pgbus_default", "pgbus_mailers"} {
				start = append(start, step{from: "start", tool: "pgbus_dlq_summary", args: map[string]any{"queue": q}},
					step{from: "start", tool: "pgbus_dlq_list", args: map[string]any{"queue": q, "limit": 2}})
			}
			// Calls an agent gets wrong, whose errors offer next steps.
			for _, a := range []struct {
				tool string
				args map[string]any
			}{
				{"pgbus_dlq_show", map[string]any{"msg_id": 1}},
				{"pgbus_dlq_show", map[string]any{"msg_id": 99999}},
				{"pgbus_dlq_show", map[string]any{"queue": "orders", "msg_id": 99999}},
				{"pgbus_dlq_show", map[string]any{"queue": "nope", "msg_id": 1}},
				{"pgbus_dlq_list", map[string]any{"queue": "nope"}},
				{"pgbus_dlq_list", map[string]any{"queue": "orders", "cursor": "garbage"}},
				{"pgbus_dlq_list", map[string]any{"queue": "orders", "group": "nope"}},
				{"pgbus_dlq_summary", map[string]any{"queue": "nope"}},
				{"pgbus_dlq_summary", map[string]any{"queue": "orders", "by_field": "secret"}},
				{"pgbus_queue_messages", map[string]any{"queue": "jobs"}},
				{"pgbus_queue_messages", map[string]any{"queue": "orders_dlq"}},
				{"pgbus_queue_stats", map[string]any{"queue": "orders_dlq"}},
				{"pgbus_dlq_retry", map[string]any{"ids": []int{1}}},
				{"pgbus_dlq_retry", map[string]any{"ids": []int{99999}, "queue": "orders"}},
				{"pgbus_dlq_retry", map[string]any{"queue": "orders", "kind": "kind_1", "limit": 5, "expect": "garbage"}},
				{"pgbus_dlq_retry", map[string]any{"queue": "orders", "kind": "kind_1", "limit": 5, "expect": "1-AAAAAAAAAAAAAAAAAAAAAA"}},
				{"pgbus_dlq_discard", map[string]any{"queue": "orders", "kind": "kind_1", "limit": 5}},
				{"pgbus_dlq_discard", map[string]any{"ids": []int{2}}},
				{"pgbus_dlq_discard", map[string]any{"queue": "orders", "kind": "kind_1", "limit": 5, "expect": "garbage", "confirm": true}},
				{"pgbus_dlq_purge", map[string]any{"older_than": "1h"}},
			} {
				if _, ok := c.schemas[a.tool]; !ok {
					continue
				}
				start = append(start, step{from: "start", tool: a.tool, args: a.args, start: true})
			}
			c.follow(4, start...)
			t.Logf("%d calls", c.calls)
			if testing.Verbose() {
				keys := make([]string, 0, len(c.seen))
				for k := range c.seen {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					t.Log(k)
				}
			}
			for _, f := range c.fails {
				t.Error(f)
			}
		})
	}
}
