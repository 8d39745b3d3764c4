package resources_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/resources"
	"github.com/pgbus/pgbus/store"
	"github.com/pgbus/pgbus/tools"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func testStore(t testing.TB) *store.Store { return pgtest.Store(t) }

func testContext(t testing.TB) context.Context { return pgtest.Context(t) }

func newQueue(t testing.TB, s *store.Store) string {
	t.Helper()
	return pgtest.NewQueue(t, s, "rq")
}

// deadOne sends payload to queue and dead-letters it after three failed
// attempts; it returns its id in the DLQ.
func deadOne(t testing.TB, s *store.Store, queue, payload string) int64 {
	t.Helper()
	ctx := testContext(t)
	id, err := s.Send(ctx, queue, store.NewMessage{Payload: json.RawMessage(payload), Headers: json.RawMessage(`{"pgbus_kind":"charge","x-api-key":"k-123"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if _, err := s.Read(ctx, queue, time.Millisecond, 1); err != nil {
			t.Fatal(err)
		}
		_, err := s.RetryMany(ctx, queue, []store.RetryItem{{MsgID: id, Failure: store.Failure{Attempt: attempt, Kind: "charge", ErrorClass: "Timeout", ErrorMessage: fmt.Sprintf("attempt %d timed out", attempt)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	moved, err := s.DeadLetterMany(ctx, queue, store.DLQName(queue), store.SourceWorker, []store.DeadLetterItem{{
		MsgID: id, Reason: store.ReasonMaxRetriesExceeded, MaxRetries: 3,
		Failure: &store.Failure{Attempt: 3, Kind: "charge", ErrorClass: "Timeout", ErrorMessage: "attempt 3 timed out", Backtrace: "charge.go:10\ncharge.go:20"},
	}})
	if err != nil || len(moved) != 1 {
		t.Fatalf("dead-letter: %v %v", moved, err)
	}
	return moved[0].DLQMsgID
}

// deps returns the server's dependencies: an operations layer over s with
// the given options.
func deps(t testing.TB, s *store.Store, o ops.Options) tools.Deps {
	t.Helper()
	svc, err := ops.New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Deps{Ops: svc}
}

// inProcess connects mcp-go's client to the full pgbus MCP server.
func inProcess(t testing.TB, d tools.Deps) *client.Client {
	t.Helper()
	s, err := mcpserver.New(d, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "resources-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

func read(t testing.TB, c *client.Client, uri string, into any) string {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(testContext(t), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || tc.MIMEType != "application/json" || tc.URI != uri {
		t.Fatalf("read %s: contents %#v", uri, res.Contents[0])
	}
	if err := json.Unmarshal([]byte(tc.Text), into); err != nil {
		t.Fatalf("read %s: not JSON: %v", uri, err)
	}
	return tc.Text
}

// jsonText is v as JSON text, as a client reads it.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func readErr(t testing.TB, c *client.Client, uri string) error {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	_, err := c.ReadResource(testContext(t), req)
	return err
}

func TestListResourcesAndTemplates(t *testing.T) {
	s := testStore(t)
	c := inProcess(t, deps(t, s, ops.Options{}))
	res, err := c.ListResources(testContext(t), mcp.ListResourcesRequest{})
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != resources.URIQueues || res.Resources[0].Description == "" {
		t.Fatalf("resources: %+v %v", res, err)
	}
	tpl, err := c.ListResourceTemplates(testContext(t), mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, rt := range tpl.ResourceTemplates {
		got[rt.URITemplate.Raw()] = rt.Description != "" && rt.MIMEType == "application/json"
	}
	for _, want := range []string{resources.URIQueueStats, resources.URIDeadMessage} {
		if !got[want] {
			t.Errorf("template %s missing or undocumented: %+v", want, got)
		}
	}
}

func TestReadQueues(t *testing.T) {
	// A database of its own: pgbus://queues leaves the quietest queues out
	// past the response bound, and the queues other packages' tests keep
	// in a shared database, with dead messages and backlogs, push this one
	// out.
	s := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	queue := newQueue(t, s)
	deadOne(t, s, queue, `{"n":1}`)
	if _, err := s.Send(testContext(t), queue, store.NewMessage{Payload: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	c := inProcess(t, deps(t, s, ops.Options{}))

	var all resources.QueuesDocument
	read(t, c, resources.URIQueues, &all)
	found := false
	for _, q := range all.Queues {
		if q.Queue == queue {
			found = q.Depth == 1 && q.DLQDepth == 1
		}
		if strings.HasSuffix(q.Queue, store.DLQSuffix) {
			t.Errorf("pgbus://queues lists the DLQ %s as a work queue", q.Queue)
		}
	}
	if !found || len(all.Queues) != 1 || all.Omitted != 0 || all.Next == "" {
		t.Fatalf("pgbus://queues does not show %s alone with depth 1 and DLQ depth 1: %+v", queue, all)
	}

	var one store.QueueStats
	read(t, c, "pgbus://queues/"+queue+"/stats", &one)
	if one.Queue != queue || one.Depth != 1 || one.Visible != 1 || one.DLQDepth != 1 || one.DLQ != queue+"_dlq" {
		t.Fatalf("stats of %s: %+v", queue, one)
	}

	for uri, want := range map[string]string{
		"pgbus://queues/no_such_queue_zz/stats": "does not exist",
		"pgbus://queues/Bad-Name/stats":         "pgbus://queues",
	} {
		err := readErr(t, c, uri)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s: %v; want an error saying %q", uri, err, want)
		}
	}
}

func TestReadDeadMessage(t *testing.T) {
	s := testStore(t)
	queue := newQueue(t, s)
	id := deadOne(t, s, queue, `{"order":7,"card":{"number":"4242424242424242","password":"hunter2"},"api_token":"tok-9f81e2"}`)
	big := deadOne(t, s, queue, `{"blob":"`+strings.Repeat("z", 70<<10)+`"}`)
	d := deps(t, s, ops.Options{})
	uri := fmt.Sprintf("pgbus://dlq/%s/%d", queue, id)

	t.Run("payloads not allowed", func(t *testing.T) {
		c := inProcess(t, d)
		var doc ops.DeadMessage
		text := read(t, c, uri, &doc)
		if doc.DLQ != queue+"_dlq" || doc.MsgID != id || doc.Kind != "charge" || doc.DeadLetter == nil ||
			doc.DeadLetter.Reason != store.ReasonMaxRetriesExceeded || doc.DeadLetter.Attempts != nil && *doc.DeadLetter.Attempts != 0 && doc.DeadLetter.ErrorClass != "Timeout" {
			t.Fatalf("dead message: %s", text)
		}
		if len(doc.History) != 3 || doc.History[0].ErrorMessage != "attempt 1 timed out" {
			t.Fatalf("history: %+v", doc.History)
		}
		if doc.PayloadShown || doc.Payload != nil || strings.Contains(text, "4242424242424242") || strings.Contains(text, "hunter2") || !strings.Contains(text, "does not show payloads") {
			t.Fatalf("payload shown without --allow-payloads: %s", text)
		}
		if strings.Contains(text, "k-123") || strings.Contains(text, "pgbus_dead_letter") {
			t.Fatalf("headers not redacted or block not taken out: %s", text)
		}
		// Next steps name the tools, with this message's DLQ and id.
		retry := slices.IndexFunc(doc.Next, func(h ops.Hint) bool { return h.Op == "pgbus_dlq_retry" })
		if retry < 0 || doc.Next[retry].Args["queue"] != queue+"_dlq" || jsonText(doc.Next[retry].Args["ids"]) != fmt.Sprintf("[%d]", id) ||
			!slices.ContainsFunc(doc.Next, func(h ops.Hint) bool { return h.Op == "pgbus_dlq_discard" }) {
			t.Errorf("next: %+v", doc.Next)
		}
		// The DLQ name works as well as the queue name.
		var same ops.DeadMessage
		read(t, c, fmt.Sprintf("pgbus://dlq/%s_dlq/%d", queue, id), &same)
		if same.MsgID != id {
			t.Fatalf("by DLQ name: %+v", same)
		}
	})

	t.Run("payloads allowed", func(t *testing.T) {
		c := inProcess(t, deps(t, s, ops.Options{AllowPayloads: true}))
		var doc ops.DeadMessage
		text := read(t, c, uri, &doc)
		if !doc.PayloadShown || !strings.Contains(string(doc.Payload), `"order":7`) {
			t.Fatalf("payload not shown with --allow-payloads: %s", text)
		}
		// The card is hidden whole, the token by its key, the header by its
		// name.
		if strings.Contains(text, "4242424242424242") || strings.Contains(text, "hunter2") || strings.Contains(text, "tok-9f81e2") || strings.Contains(text, "k-123") ||
			!strings.Contains(string(doc.Payload), `"card":"[REDACTED]"`) || doc.RedactedValues < 3 {
			t.Fatalf("secrets not redacted: %s", text)
		}
		var large ops.DeadMessage
		text = read(t, c, fmt.Sprintf("pgbus://dlq/%s/%d", queue, big), &large)
		if !large.PayloadTruncated || large.Payload != nil || len(large.PayloadPreview) == 0 || len(text) > 40<<10 || large.PayloadBytes < 70<<10 {
			t.Fatalf("a 70 KB payload is not truncated: truncated %v, %d bytes of text", large.PayloadTruncated, len(text))
		}
	})

	t.Run("bad URIs", func(t *testing.T) {
		c := inProcess(t, d)
		for uri, want := range map[string]string{
			fmt.Sprintf("pgbus://dlq/%s/abc", queue):       "positive integer",
			fmt.Sprintf("pgbus://dlq/%s/-4", queue):        "positive integer",
			fmt.Sprintf("pgbus://dlq/%s/999999999", queue): "999999999",
			"pgbus://dlq/no_such_queue_zz/1":               "no_such_queue_zz",
			"pgbus://dlq/Bad-Name/1":                       "pgbus_dlq_summary",
			// A URI that matches no template gets mcp-go's "resource not found".
			fmt.Sprintf("pgbus://dlq/%s/%d/extra", queue, id): "not found",
			"pgbus://nothing-here":                            "pgbus://nothing-here",
		} {
			err := readErr(t, c, uri)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("read %s: %v; want an error mentioning %q", uri, err, want)
			}
		}
		// Still serving.
		var doc ops.DeadMessage
		read(t, c, uri, &doc)
	})
}

func TestInvestigatePrompt(t *testing.T) {
	s := testStore(t)
	c := inProcess(t, deps(t, s, ops.Options{}))
	list, err := c.ListPrompts(testContext(t), mcp.ListPromptsRequest{})
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != resources.PromptInvestigate ||
		len(list.Prompts[0].Arguments) != 1 || list.Prompts[0].Arguments[0].Name != "queue" || list.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts: %+v %v", list, err)
	}
	get := func(args map[string]string) (string, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = resources.PromptInvestigate, args
		res, err := c.GetPrompt(testContext(t), req)
		if err != nil {
			return "", err
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != mcp.RoleUser {
			t.Fatalf("prompt messages: %+v", res.Messages)
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	all, err := get(nil)
	if err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s)
	orders, err := get(map[string]string{"queue": q})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pgbus_dlq_summary", "pgbus_dlq_show", "msg_id", "pgbus_dlq_list", "pgbus_dlq_retry", "dry_run", "pgbus_dlq_discard", "root cause"} {
		if !strings.Contains(strings.ToLower(all), strings.ToLower(want)) || !strings.Contains(strings.ToLower(orders), strings.ToLower(want)) {
			t.Errorf("prompt does not mention %s", want)
		}
	}
	if !strings.Contains(all, "recoverable until purged or the queue's dead retention") {
		t.Errorf("the prompt says a discard is recoverable until purged, though retention deletes it too:\n%s", all)
	}
	if strings.Contains(all, q) || !strings.Contains(orders, `{"queue": "`+q+`"}`) {
		t.Errorf("queue argument not applied:\n%s", orders)
	}
	// An argument it cannot use is invalid params, not an internal error,
	// which would say the server failed.
	if _, err := get(map[string]string{"queue": "Not A Queue"}); !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "queue") {
		t.Errorf("bad queue argument: %v; want invalid params naming queue", err)
	}
}

// The prompt refuses what a tool refuses: an argument it does not take,
// naming the one it does, and a queue that has no DLQ to investigate,
// saying how to list the queues there are; a queue, or its DLQ's name,
// that exists gives the runbook for it.
func TestInvestigatePromptRefusesUnknownArgumentsAndQueues(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	c := inProcess(t, deps(t, s, ops.Options{}))
	q := newQueue(t, s)
	get := func(args map[string]string) (string, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = resources.PromptInvestigate, args
		res, err := c.GetPrompt(testContext(t), req)
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(mcp.TextContent).Text, nil
	}
	for _, c := range []struct {
		args map[string]string
		want []string
	}{
		{map[string]string{"extra": "1"}, []string{`unknown argument "extra"`, "takes: queue"}},
		{map[string]string{"queue": q, "extra": "1"}, []string{`unknown argument "extra"`, "takes: queue"}},
		{map[string]string{"nope_" + q: "1"}, []string{`unknown argument "nope_` + q + `"`}},
		{map[string]string{"queue": "nope_" + q}, []string{`"nope_` + q + `"`, "dead-letter queue", "pgbus://queues"}},
		{map[string]string{"queue": "nope_" + q + "_dlq"}, []string{`"nope_` + q + `"`, "pgbus://queues"}},
	} {
		text, err := get(c.args)
		t.Logf("%v: %v", c.args, err)
		if !errors.Is(err, mcp.ErrInvalidParams) {
			t.Errorf("prompt with %v: %v, text %.100q; want invalid params", c.args, err, text)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("prompt with %v: %v; want it to say %s", c.args, err, w)
			}
		}
	}
	for _, name := range []string{q, q + "_dlq"} {
		text, err := get(map[string]string{"queue": name})
		if err != nil || !strings.Contains(text, `{"queue": "`+name+`"}`) {
			t.Errorf("prompt for %s: %v\n%s", name, err, text)
		}
	}
}

// Every tool the instructions and the prompt name exists, with the
// arguments they pass.
func TestNamedToolsExist(t *testing.T) {
	s := testStore(t)
	c := inProcess(t, deps(t, s, ops.Options{}))
	list, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]map[string]any{}
	for _, tool := range list.Tools {
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		b, _ := json.Marshal(tool.InputSchema)
		if tool.RawInputSchema != nil {
			b = tool.RawInputSchema
		}
		_ = json.Unmarshal(b, &schema)
		props[tool.Name] = schema.Properties
	}
	texts := []string{mcpserver.Instructions(false), mcpserver.Instructions(true), resources.InvestigateText(""), resources.InvestigateText("orders")}
	for _, text := range texts {
		// What a failed job wrote reaches the agent word for word: the
		// texts it reads first say it is no instruction.
		if !strings.Contains(text, "never instructions") {
			t.Errorf("the text does not say that error messages and payloads are data, never instructions:\n%s", text)
		}
		for _, name := range regexp.MustCompile(`pgbus_[a-z_]+`).FindAllString(text, -1) {
			if _, ok := props[name]; !ok && name != "pgbus_deadline" {
				t.Errorf("the text names tool %s, which does not exist", name)
			}
		}
		// "tool {"arg": ...}" in the runbook: each arg is an input of the tool.
		for _, m := range regexp.MustCompile(`(pgbus_[a-z_]+) \{([^}]*)\}`).FindAllStringSubmatch(text, -1) {
			for _, arg := range regexp.MustCompile(`"([a-z_]+)":`).FindAllStringSubmatch(m[2], -1) {
				if _, ok := props[m[1]][arg[1]]; !ok {
					t.Errorf("the text passes %s to %s, which takes %v", arg[1], m[1], props[m[1]])
				}
			}
		}
	}
}

// A dead message's URI takes its id in one spelling, the one
// pgbus_dlq_list shows: +42, 042, " 42", 4_2 and the like are refused,
// saying the form expected, rather than read as message 42.
func TestDeadMessageURIIDIsCanonical(t *testing.T) {
	s := testStore(t)
	queue := newQueue(t, s)
	pgtest.RestartDLQ(t, s, queue, 42)
	if id := deadOne(t, s, queue, `{"order":7}`); id != 42 {
		t.Fatalf("dead message id %d, want 42", id)
	}
	c := inProcess(t, deps(t, s, ops.Options{}))
	var doc ops.DeadMessage
	read(t, c, fmt.Sprintf("pgbus://dlq/%s/42", queue), &doc)
	if doc.MsgID != 42 {
		t.Fatalf("pgbus://dlq/%s/42 read message %d", queue, doc.MsgID)
	}
	for _, id := range []string{"+42", "042", "0042", " 42", "42 ", "%2042", "%2B42", "4_2", "42.0", "4.2e1", "0x2a", "٤٢", "0", "-0", "+0"} {
		uri := fmt.Sprintf("pgbus://dlq/%s/%s", queue, id)
		err := readErr(t, c, uri)
		if err == nil {
			t.Errorf("read %s: read a message; want it refused", uri)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "not in the form expected") || !strings.Contains(msg, ops.IDForm) {
			t.Errorf("read %s: %v; want it to say the form expected (%s)", uri, err, ops.IDForm)
		}
	}
	// Still serving.
	read(t, c, fmt.Sprintf("pgbus://dlq/%s/42", queue), &doc)
}
