package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// An expect that is neither a dry run's nor ids is refused with the dry
// run to call instead, which the agent can call as written: with the
// limit a call by filter needs over MCP.
func TestUnreadableExpectOffersACallableDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	q := newQueue(t, e.st)
	pgtest.DeadLetterN(t, e.st, q, 3, pgtest.DeadSpec{Kind: "charge", Class: "Timeout"})
	for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard"} {
		t.Run(tool, func(t *testing.T) {
			args := map[string]any{"queue": q, "kind": "charge", "limit": 2, "expect": "not-a-token", "confirm": true}
			if tool == "pgbus_dlq_retry" {
				delete(args, "confirm")
			}
			text := e.callErr(t, tool, args, "see "+tool+" {")
			_, call, _ := strings.Cut(text, "see "+tool+" ")
			var next map[string]any
			if err := json.NewDecoder(strings.NewReader(call)).Decode(&next); err != nil {
				t.Fatalf("the hint of %q is not a call: %v", text, err)
			}
			if next["dry_run"] != true || next["queue"] != q || next["kind"] != "charge" {
				t.Fatalf("hint %v: want the dry run of the same filter", next)
			}
			res := e.call(t, tool, next)
			if res.IsError {
				t.Fatalf("%s %v, as the error offers it, fails: %s", tool, next, resultText(res))
			}
			var out struct {
				Expect string `json:"expect"`
			}
			if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil || out.Expect == "" {
				t.Fatalf("the dry run gives no expect: %s", resultText(res))
			}
		})
	}
}
