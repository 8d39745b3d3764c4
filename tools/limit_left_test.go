package tools_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// pgbus_dlq_retry and pgbus_dlq_discard by a filter that selects more than
// the tools' largest limit, 1,000, say how many are left and give the
// exact call that goes on, which moves the rest.
func TestBulkOverTheToolLimitSaysWhatIsLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t, ops.Options{})
	for _, tool := range []string{"pgbus_dlq_retry", "pgbus_dlq_discard"} {
		q := newQueue(t, e.st)
		if err := e.st.BulkLoadDead(testContext(t), q, 1003, 1); err != nil {
			t.Fatal(err)
		}
		args := map[string]any{"queue": q, "limit": 1000}
		if tool == "pgbus_dlq_discard" {
			args["confirm"] = true
		}
		var done, left int64
		var next []ops.Hint
		if tool == "pgbus_dlq_retry" {
			r := callOK[ops.DLQRetry](t, e, tool, args)
			done, left, next = int64(r.Retried), r.Left, r.Next
		} else {
			r := callOK[ops.DLQDiscard](t, e, tool, args)
			done, left, next = int64(r.Discarded), r.Left, r.Next
		}
		if done != 1000 || left != 3 {
			t.Fatalf("%s: %d moved, %d left; want 1000 and 3", tool, done, left)
		}
		var again *ops.Hint
		for i := range next {
			if next[i].Op == tool {
				again = &next[i]
			}
		}
		if again == nil || !strings.Contains(again.Why, "3 more messages match") || again.Args["queue"] != q || again.Args["limit"] != float64(1000) {
			t.Fatalf("%s: next %+v; want the same call again, saying 3 are left", tool, next)
		}
		res := e.call(t, tool, again.Args)
		if res.IsError || !strings.Contains(resultText(res), `"`+map[string]string{"pgbus_dlq_retry": "retried", "pgbus_dlq_discard": "discarded"}[tool]+`":3`) {
			t.Errorf("%s: the next call as given: %s; want the 3 left moved", tool, resultText(res))
		}
	}
}
