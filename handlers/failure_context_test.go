//go:build unix

// The exec handlers of this test run shell scripts with /bin/sh.

package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// failScript writes a long stderr with a secret in it and fails for good;
// slowScript says it started, then outlives its timeout.
const (
	failScript = `i=0; while [ $i -lt 60 ]; do printf 'filler line %02d of the long diagnostic output\n' $i >&2; i=$((i+1)); done
printf 'connecting with password=hunter2-s3cret\n' >&2
printf 'fatal: the ledger refused the entry\n' >&2
exit 3
`
	slowScript = `printf 'starting slow work\n' >&2
exec sleep 30
`
)

// What an agent needs to tell why attempts failed is in the failure
// history, through the operations layer's view: for timeouts the limit and
// how long the attempt ran, the command's stderr and the response body,
// bounded and redacted. The http breaker shows its last success and
// failure and the queue and kind that use it.
func TestFailureContextInHistory(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	body := "upstream down; password=hunter2-s3cret; " + strings.Repeat("b", 3000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		if strings.Contains(string(in), "ok") {
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	dir := t.TempDir()
	httpBreaker, execBreaker := randomName("ctx_http"), randomName("ctx_exec")
	forgetBreaker(t, s, httpBreaker)
	forgetBreaker(t, s, execBreaker)

	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 2 })
	c := quickClient(t, s, q, 4)
	handle := func(kind, block string) {
		fn, opts := mustBuild(t, specFromYAML(t, block))
		c.Handle(kind, fn, opts)
	}
	handle("call", fmt.Sprintf("type: http\nurl: %s/hook\nbreaker: {name: %s}", srv.URL, httpBreaker))
	handle("fail", fmt.Sprintf("type: exec\ncommand: [/bin/sh, %s]\nbreaker: {name: %s}", writeScript(t, dir, "fail.sh", failScript), execBreaker))
	handle("slow", fmt.Sprintf("type: exec\ncommand: [/bin/sh, %s]\ntimeout: 300ms\nbreaker: {name: %s}", writeScript(t, dir, "slow.sh", slowScript), execBreaker))
	c.Handle("wait", func(ctx context.Context, _ *engine.Job) error {
		<-ctx.Done() // a Go handler that runs until its timeout
		return ctx.Err()
	}, engine.HandlerOptions{Timeout: 200 * time.Millisecond})
	pgtest.Start(t, c)
	ids := map[string]int64{}
	for _, kind := range []string{"call", "fail", "slow", "wait"} {
		ids[kind] = pgtest.Send(t, c, q, map[string]string{"kind": kind}, engine.SendOptions{Kind: kind})
	}
	pgtest.Send(t, c, q, map[string]string{"result": "ok"}, engine.SendOptions{Kind: "call"})
	pgtest.Eventually(t, time.Minute, "four messages dead and one archived", func() bool {
		return pgtest.Int(t, s, `SELECT count(*) FROM pgmq."q_`+q+`_dlq"`) == 4 && pgtest.Archived(t, s, q) == 1
	})

	svc, err := ops.New(s, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, dlqIDs := deadBlocksOf(t, s, q)
	last := func(kind string) (ops.Failure, int) {
		m, err := svc.DLQShow(ctxFor(t), ops.DLQShowRequest{Queue: q, MsgID: dlqIDs[ids[kind]], FullHistory: true})
		if err != nil || len(m.History) == 0 {
			t.Fatalf("show %s: %+v, %v", kind, m, err)
		}
		return m.History[len(m.History)-1], len(m.History)
	}

	call, n := last("call")
	checkOutput(t, "http 503", call, n, 2, "response_body", "upstream down; password="+ops.Redacted)
	if call.TimeoutMS != 0 || call.ElapsedMS == nil {
		t.Errorf("http 503: timeout %d ms, elapsed %v; want no timeout and an elapsed time", call.TimeoutMS, call.ElapsedMS)
	}
	fail, n := last("fail")
	checkOutput(t, "exec exit 3", fail, n, 1, "stderr", "")
	if !strings.HasSuffix(fail.Output, "fatal: the ledger refused the entry") || !strings.HasPrefix(fail.Output, "…") {
		t.Errorf("exec exit 3: output keeps %q…%q; want the end of stderr, cut at its start", clipStart(fail.Output), clipEnd(fail.Output))
	}
	for kind, limit := range map[string]int64{"slow": 300, "wait": 200} {
		f, n := last(kind)
		if n != 2 || f.TimeoutMS != limit || f.ElapsedMS == nil || *f.ElapsedMS < limit {
			elapsed := "none"
			if f.ElapsedMS != nil {
				elapsed = fmt.Sprint(*f.ElapsedMS)
			}
			t.Errorf("%s: %d failures, last timeout %d ms, elapsed %s ms; want 2, the %d ms limit, and at least that long", kind, n, f.TimeoutMS, elapsed, limit)
		}
	}
	if slow, _ := last("slow"); slow.Output != "starting slow work" || slow.OutputSource != "stderr" {
		t.Errorf("exec timeout: output %q from %q; want what it wrote to stderr before it was killed", slow.Output, slow.OutputSource)
	}
	checkBreakerUse(t, svc, httpBreaker, q, "call", true)
	checkBreakerUse(t, svc, execBreaker, q, "slow", false)
}

// checkOutput checks a failure's output: its source, that it was cut to
// the documented 2,000 characters and says so, that no secret is left, and
// its start when want is given.
func checkOutput(t *testing.T, what string, f ops.Failure, n, wantN int, source, want string) {
	t.Helper()
	if n != wantN {
		t.Errorf("%s: %d failures recorded, want %d", what, n, wantN)
	}
	if f.OutputSource != source || !f.OutputTruncated || utf8.RuneCountInString(f.Output) > store.FailureOutputMax || utf8.RuneCountInString(f.Output) < 1000 {
		t.Errorf("%s: output from %q, truncated %v, %d characters; want %s cut to at most %d", what, f.OutputSource, f.OutputTruncated, utf8.RuneCountInString(f.Output), source, store.FailureOutputMax)
	}
	if strings.Contains(f.Output, "hunter2") || !strings.Contains(f.Output, ops.Redacted) {
		t.Errorf("%s: output %q… shows its secret or no redaction", what, clipStart(f.Output))
	}
	if want != "" && !strings.HasPrefix(f.Output, want) {
		t.Errorf("%s: output starts %q, want %q", what, clipStart(f.Output), want)
	}
}

// checkBreakerUse checks that a breaker lists its last failure, its last
// success when one happened, and the queue and kind that use it.
func checkBreakerUse(t *testing.T, svc *ops.Service, name, queue, kind string, succeeded bool) {
	t.Helper()
	cs, err := svc.Circuits(ctxFor(t), ops.CircuitsRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cs.Circuits, func(b ops.BreakerState) bool { return b.Name == name })
	if i < 0 {
		t.Fatalf("circuits lack %s", name)
	}
	b := cs.Circuits[i]
	if b.LastFailureAt == nil || (b.LastSuccessAt != nil) != succeeded {
		t.Errorf("breaker %s: last failure %v, last success %v; want a failure and success %v", name, b.LastFailureAt, b.LastSuccessAt, succeeded)
	}
	if !slices.ContainsFunc(b.Users, func(u ops.BreakerUser) bool { return u.Queue == queue && u.Kind == kind && !u.SeenAt.IsZero() }) {
		t.Errorf("breaker %s: users %+v; want queue %s kind %s", name, b.Users, queue, kind)
	}
}

func clipStart(s string) string { return string([]rune(s)[:min(60, utf8.RuneCountInString(s))]) }

func clipEnd(s string) string {
	r := []rune(s)
	return string(r[max(0, len(r)-60):])
}
