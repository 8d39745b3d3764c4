package chaos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// retryAllLimit bounds one pgbus dlq retry-all of the soak.
const retryAllLimit = 20

// repairs are the DLQ retries and discards the soak makes while everything
// else goes on, from the CLI and over MCP, and what they reported.
type repairs struct {
	st     *store.Store
	url    string
	queues []string
	mcp    *client.Client
	logf   func(format string, args ...any)

	mu sync.Mutex
	// calls by front end and operation, e.g. "cli dlq retry"
	calls map[string]int
	// messages the calls reported retried and discarded
	retried, discarded int
	// messages calls may have moved without reporting it: calls that
	// failed as a whole (their whole batch) and ids that failed
	retryUnsure, discardUnsure int
	errors                     int // calls that failed as a whole
}

// runCLI repairs from the command line until ctx ends.
func (r *repairs) runCLI(ctx context.Context) {
	for pause(ctx, 300*time.Millisecond, 1200*time.Millisecond) {
		q := r.queues[rand.IntN(len(r.queues))]
		switch x := rand.IntN(10); {
		case x < 4:
			r.cliIDs(ctx, "retry", q)
		case x < 6:
			r.cliRetryAll(ctx, q)
		default:
			r.cliIDs(ctx, "discard", q)
		}
	}
}

// runMCP repairs over MCP until ctx ends.
func (r *repairs) runMCP(ctx context.Context) {
	for pause(ctx, 300*time.Millisecond, 1200*time.Millisecond) {
		q := r.queues[rand.IntN(len(r.queues))]
		tool := "pgbus_dlq_retry"
		if rand.IntN(2) == 0 {
			tool = "pgbus_dlq_discard"
		}
		r.mcpIDs(ctx, tool, q)
	}
}

// pause waits a random time between lo and hi and tells whether ctx is
// still running.
func pause(ctx context.Context, lo, hi time.Duration) bool {
	return sleepUntil(ctx, time.Now().Add(lo+rand.N(hi-lo))) == nil
}

func (r *repairs) cliIDs(ctx context.Context, op, q string) {
	ids := r.pickDead(ctx, q)
	if len(ids) == 0 {
		return
	}
	args := []string{"dlq", op, "--queue", q, "--json"}
	if op == "discard" {
		args = append(args, "--yes") // more than one id
	}
	for _, id := range ids {
		args = append(args, strconv.FormatInt(id, 10))
	}
	out, err := cli(ctx, r.url, args...)
	r.record("cli dlq "+op, op == "retry", len(ids), out, err)
}

func (r *repairs) cliRetryAll(ctx context.Context, q string) {
	out, err := cli(ctx, r.url, "dlq", "retry-all", "--queue", q, "--yes", "--json",
		"--limit", strconv.Itoa(retryAllLimit))
	r.record("cli dlq retry-all", true, retryAllLimit, out, err)
}

func (r *repairs) mcpIDs(ctx context.Context, tool, q string) {
	ids := r.pickDead(ctx, q)
	if len(ids) == 0 {
		return
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = map[string]any{"ids": ids, "queue": q}
	res, err := r.mcp.CallTool(ctx, req)
	var out []byte
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: tool error %v", tool, res.Content)
	}
	if err == nil {
		out, err = json.Marshal(res.StructuredContent)
	}
	r.record("mcp "+tool, tool == "pgbus_dlq_retry", len(ids), out, err)
}

// pickDead returns up to 5 ids of q's DLQ at random; a moment later some
// may have been retried or discarded by the other repairs, which the calls
// must then report as not found or already moved.
func (r *repairs) pickDead(ctx context.Context, q string) []int64 {
	rows, err := r.st.Pool().Query(ctx, fmt.Sprintf(`SELECT msg_id FROM pgmq."q_%s_dlq" ORDER BY random() LIMIT $1`, q), 1+rand.IntN(5))
	if err != nil {
		return nil // the server is restarting: try again later
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// record counts one call: what it reported, or, when it failed as a whole
// (the server restarting under it), the batch it may have moved in part.
// A command that printed its result reported it, whatever its exit code.
func (r *repairs) record(call string, retry bool, batch int, out []byte, err error) {
	// The results of a retry and of a discard: the same fields but one.
	var res struct {
		ops.DLQDiscard
		Retried int `json:"retried"`
	}
	if jerr := json.Unmarshal(out, &res); jerr == nil {
		err = nil
	} else if err == nil {
		err = fmt.Errorf("%s printed no result: %w", call, jerr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[call]++
	moved, unsure := res.Retried+res.Discarded, res.Failed
	if err != nil {
		r.errors++
		moved, unsure = 0, batch
		r.logf("%s failed as a whole (PostgreSQL restarting?): %.300v", call, err)
	}
	if retry {
		r.retried, r.retryUnsure = r.retried+moved, r.retryUnsure+unsure
	} else {
		r.discarded, r.discardUnsure = r.discarded+moved, r.discardUnsure+unsure
	}
}
