package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// Every error a tool can answer carries in its _meta a kind among
// ops.Kinds: the operations layer's for its errors, whichever layer they
// came from, and usage for arguments that could not be read.
func TestErrorMetaKinds(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fixf("arguments must be a JSON object"),
		&ops.Error{Msg: "bad", Err: ops.ErrInvalid},
		fmt.Errorf("%w: queue", ops.ErrNotFound),
		ops.ErrReadOnly, ops.ErrChanged, ops.ErrNotAsked, ops.ErrUnavailable,
		store.ErrSchemaMissing, store.ErrSchemaOld, store.ErrSchemaNewer, store.ErrPermission,
		context.Canceled, context.DeadlineExceeded,
		&ops.PartlyDone{Verb: "purging", Done: 7, Err: ops.ErrUnavailable},
		errors.New("disk on fire"),
	} {
		m := metaOf(t, errorResult(err, relay{}))
		want := ops.ErrorKind(err)
		if errors.As(err, new(*callError)) {
			want = ops.KindUsage
		}
		if m.Kind != want || !slices.Contains(ops.Kinds(), m.Kind) {
			t.Errorf("%v: kind %q, want %q, one of %v", err, m.Kind, want, ops.Kinds())
		}
	}
}

// A bulk call stopped partway says in its _meta how much it did, and that
// the same call again does the rest; a next step no tool does, or whose tool a read-only server leaves out, is the
// command for an operator to run; the result holds no structured content.
func TestErrorMetaPartlyDoneAndCommands(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("store: page through dead messages: %w", &ops.PartlyDone{Verb: "retrying", Done: 2032, Limit: 100000, Err: context.Canceled,
		Again: ops.Hint{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "limit": 100000}, Why: "retries the rest"}})
	got := metaJSON(t, metaOf(t, errorResult(err, relay{})))
	if want := `{"kind":"stopped","next":[{"tool":"pgbus_dlq_retry","arguments":{"limit":100000,"queue":"orders"},"why":"retries the rest"}],"partly_done":{"done":2032,"limit":100000}}`; got != want {
		t.Errorf("a retry stopped partway: %s, want %s", got, want)
	}

	hints := &ops.Error{Msg: "m", Err: ops.ErrInvalid, Hints: []ops.Hint{
		{Op: ops.OpMigrate, Why: "creates the schema"},
		{Op: ops.OpDLQRetry, Args: map[string]any{"queue": "orders", "ids": []int64{42}}, Why: "retries it"},
	}}
	for readOnly, want := range map[bool]string{
		false: `{"kind":"invalid","next":[{"command":"pgbus migrate","why":"creates the schema (no tool does this: ask an operator to run the command)"},` +
			`{"tool":"pgbus_dlq_retry","arguments":{"ids":[42],"queue":"orders"},"why":"retries it"}]}`,
		true: `{"kind":"invalid","next":[{"command":"pgbus migrate","why":"creates the schema (no tool does this: ask an operator to run the command)"},` +
			`{"command":"pgbus dlq retry 42 --queue orders","why":"retries it (this server is read-only: ask an operator to run the command)"}]}`,
	} {
		res := errorResult(hints, relay{readOnly: readOnly})
		if got := metaJSON(t, metaOf(t, res)); got != want {
			t.Errorf("read-only %v: %s\nwant %s", readOnly, got, want)
		}
		if b, _ := json.Marshal(res); res.StructuredContent != nil || containsKey(b, "structuredContent") {
			t.Errorf("read-only %v: the error has structured content: %s", readOnly, b)
		}
	}
}

// metaOf is the data of error result res, which must carry it.
func metaOf(t *testing.T, res *mcp.CallToolResult) errorMeta {
	t.Helper()
	if res.Meta == nil {
		t.Fatalf("the error result %+v has no _meta", res)
	}
	m, ok := res.Meta.AdditionalFields[ErrorMetaKey].(errorMeta)
	if !ok {
		t.Fatalf("_meta %+v holds no %s", res.Meta.AdditionalFields, ErrorMetaKey)
	}
	return m
}

func metaJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func containsKey(b []byte, key string) bool {
	var top map[string]json.RawMessage
	_ = json.Unmarshal(b, &top)
	_, ok := top[key]
	return ok
}
