package ops_test

import (
	"strings"
	"testing"

	"github.com/pgbus/pgbus/ops"
)

// The audit log keeps the caller's transport and principal next to its
// client, as listed by Audit; naming the client after the transport named
// itself, as the MCP tools do, keeps them.
func TestAuditRecordsCaller(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	svc := newService(t, s, ops.Options{})
	agent := "mcp:" + uniqueName("agent") + "/1"
	for _, want := range []ops.Caller{
		{Client: "cli", Transport: ops.TransportCLI},
		{Client: agent, Transport: ops.TransportHTTP, Principal: "token sha256:0123abcd"},
		{Client: "mcp:cli/1", Transport: ops.TransportStdio},
	} {
		q := newQueue(t, s, nil)
		ctx := ops.WithClient(ops.WithCaller(testContext(t), ops.Caller{Transport: want.Transport, Principal: want.Principal}), want.Client)
		if got := ops.CallerFrom(ctx); got != want {
			t.Fatalf("caller %+v, want %+v", got, want)
		}
		if _, err := svc.QueuePause(ctx, ops.QueueRequest{Queue: q}); err != nil {
			t.Fatal(err)
		}
		page, err := svc.Audit(ctx, ops.AuditRequest{Client: want.Client, Op: ops.OpQueuePause, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []ops.Caller
		for _, e := range page.Items {
			if strings.Contains(string(e.Arguments), q) {
				got = append(got, ops.Caller{Client: e.Client, Transport: e.Transport, Principal: e.Principal})
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("entries of the pause of %s as %q: %+v; want one by %+v", q, want.Client, got, want)
		}
	}
}
