package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/config"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/internal/runner"
	"github.com/pgbus/pgbus/mcpserver"
	"github.com/pgbus/pgbus/metrics"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

// get GETs url with headers and returns the status and body.
func get(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// readyz returns the status code and verdict of /readyz.
func readyz(t *testing.T, base string) (int, metrics.Readiness) {
	t.Helper()
	code, body := get(t, base+metrics.PathReadyz, nil)
	var r metrics.Readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	return code, r
}

// /readyz on --metrics-addr answers 503 with the reason while a queue
// with a worker makes no progress (its one slot held by a job that does
// not end, the backlog aging past the stall window), and 200 once the job
// ends and the backlog drains. /livez answers 200 throughout.
func TestReadyzFlipsWithStall(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{StallAfter: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	q := pgtest.NewFastQueue(t, st, "stall", nil)
	mon := runner.NewMonitor(svc, nil, []config.WorkQueue{{Name: q}})
	release := make(chan struct{})
	client := pgtest.NewClient(t, st, q, func(c *engine.Config) {
		c.Queues[0].Concurrency = 1
		c.Observers = mon.Observers()
	})
	client.HandleQueue(q, func(ctx context.Context, job *engine.Job) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	pgtest.Start(t, client)
	for range 3 {
		pgtest.Send(t, client, q, map[string]int{"n": 1}, engine.SendOptions{})
	}
	base := serveMonitor(t, mon)
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
	// Until the worker has registered, the verdict is no_workers (also
	// 503); the stall shows once it has and its one slot is held.
	var stalled metrics.Readiness
	var code int
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503 for the stall", func() bool {
		code, stalled = readyz(t, base)
		return code == http.StatusServiceUnavailable && len(stalled.Reasons) > 0 && stalled.Reasons[0].Code == "backlog_not_draining"
	})
	if stalled.Status != ops.HealthStalled || stalled.Reasons[0].Queue != q {
		t.Fatalf("stalled verdict %+v, want backlog_not_draining on %s", stalled, q)
	}
	close(release)
	pgtest.Eventually(t, time.Minute, "/readyz to answer 200", func() bool {
		code, r := readyz(t, base)
		return code == http.StatusOK && r.Status != ops.HealthStalled
	})
	if n := pgtest.Live(t, st, q); n != 0 {
		t.Fatalf("ready with %d messages left", n)
	}
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
}

// /readyz answers for the process it runs in: a queue STALLED for want of
// workers is in the body of every process, but only a process that works
// it (or one of its priority levels) answers 503; the others, a process
// that works no queue included, stay ready.
func TestReadyzAnswersForItsOwnQueues(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	unworked := pgtest.NewFastQueue(t, st, "nobody", nil)
	mine := pgtest.NewFastQueue(t, st, "mine", nil)
	levels := pgtest.Name("lvl")
	if err := st.CreatePriorityQueue(ctx, levels, 2); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{unworked, levels + "_p1"} {
		if _, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{"n": 1}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		works []string
		ready bool
	}{{nil, true}, {[]string{mine}, true}, {[]string{mine, unworked}, false}, {[]string{levels}, false}} {
		queues := make([]config.WorkQueue, len(c.works))
		for i, q := range c.works {
			queues[i].Name = q
		}
		code, r := readyz(t, serveMonitor(t, runner.NewMonitor(svc, nil, queues)))
		want := http.StatusOK
		if !c.ready {
			want = http.StatusServiceUnavailable
		}
		if code != want || r.Ready != c.ready || r.Status != ops.HealthStalled {
			t.Errorf("/readyz of a process working %v: %d ready=%v status %s, want %d ready=%v status STALLED", c.works, code, r.Ready, r.Status, want, c.ready)
		}
		var stalled []string
		for _, reason := range r.Reasons {
			if reason.Code == "no_workers" {
				stalled = append(stalled, reason.Queue)
			}
		}
		if !slices.Contains(stalled, unworked) || len(stalled) != 2 {
			t.Errorf("/readyz of a process working %v lists no_workers on %v, want %s and %s's level", c.works, stalled, unworked, levels)
		}
	}
}

// The body of /readyz lists at most MaxReadyReasons reasons, those of the
// process's own queues first, and counts the rest.
func TestReadyzBodyIsBounded(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	var queues []string
	for range metrics.MaxReadyReasons + 5 {
		q := pgtest.NewFastQueue(t, st, "many", nil)
		if _, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	slices.Sort(queues)
	mine := queues[len(queues)-1] // listed last of the verdict's reasons, or near it
	code, r := readyz(t, serveMonitor(t, runner.NewMonitor(svc, nil, []config.WorkQueue{{Name: mine}})))
	if code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("/readyz of a process whose queue is STALLED: %d ready=%v", code, r.Ready)
	}
	if len(r.Reasons) != metrics.MaxReadyReasons || r.Omitted != len(queues)-metrics.MaxReadyReasons {
		t.Fatalf("/readyz lists %d reasons and omits %d; want %d and %d", len(r.Reasons), r.Omitted, metrics.MaxReadyReasons, len(queues)-metrics.MaxReadyReasons)
	}
	if r.Reasons[0].Queue != mine || r.Reasons[0].Code != "no_workers" {
		t.Fatalf("/readyz lists first %+v, want no_workers on the process's own queue %s", r.Reasons[0], mine)
	}
}

// When the database does not answer, /readyz, served without a token,
// answers 503 without the database's error (it names the user, host and
// database); the process's log has it.
func TestReadyzKeepsDatabaseDetailsToTheLog(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log pgtest.SyncBuffer
	mon := runner.NewMonitor(svc, slog.New(slog.NewTextHandler(&log, nil)), nil)
	base := serveMonitor(t, mon)
	if code, r := readyz(t, base); code != http.StatusOK || !r.Ready {
		t.Fatalf("/readyz with the database up: %d %+v", code, r)
	}
	var name string
	if err := st.Pool().QueryRow(pgtest.Context(t), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pgtest.URL(t), "DROP DATABASE "+name+" WITH (FORCE)")
	var code int
	var body string
	pgtest.Eventually(t, time.Minute, "/readyz to answer 503", func() bool {
		code, body = get(t, base+metrics.PathReadyz, nil)
		return code == http.StatusServiceUnavailable
	})
	if !strings.Contains(body, "database_unreachable") || !strings.Contains(body, "log") {
		t.Errorf("/readyz body %s: want database_unreachable, pointing at the log", body)
	}
	if strings.Contains(body, name) || strings.Contains(body, "user=") {
		t.Errorf("/readyz body names the database: %s", body)
	}
	if !strings.Contains(log.String(), name) {
		t.Errorf("the log does not have the database's error:\n%s", log.String())
	}
}

// serveMonitor serves the monitor's endpoints as --metrics-addr does, on
// a loopback port, and returns the base URL.
func serveMonitor(t *testing.T, mon *runner.Monitor) string {
	t.Helper()
	stop, addr, err := mon.Serve(pgtest.Context(t), "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return "http://" + addr.String()
}

// pgbus serve --transport http serves /metrics behind the bearer token,
// and /livez and /readyz without it; the metrics count the MCP tool calls
// by tool and result.
func TestServeHTTPMetricsAndProbes(t *testing.T) {
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "0123456789abcdef0123456789abcdef"
	addrs := make(chan net.Addr, 1)
	cfg := runner.MCPConfig{Transport: mcpserver.TransportHTTP, Logger: slog.New(slog.DiscardHandler), Monitor: runner.NewMonitor(svc, nil, nil),
		HTTP: mcpserver.HTTPConfig{Addr: "127.0.0.1:0", AuthToken: token, Ready: func(a net.Addr) { addrs <- a }}}
	done := make(chan error, 1)
	go func() { done <- runner.ServeMCP(ctx, st, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMCP: %v", err)
		}
	})
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case <-time.After(time.Minute):
		t.Fatal("the server did not listen within a minute")
	}
	auth := map[string]string{"Authorization": "Bearer " + token}

	c, err := client.NewStreamableHttpClient(base+mcpserver.PathMCP, transport.WithHTTPHeaders(auth))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("call %s: %v", name, err)
		}
		return res
	}
	call("pgbus_health", nil)
	call("pgbus_health", nil)
	if res := call("pgbus_dlq_show", map[string]any{"queue": "no_such_queue", "msg_id": 1}); !res.IsError {
		t.Fatal("pgbus_dlq_show of a missing queue did not answer a tool error")
	}

	if code, _ := get(t, base+metrics.PathMetrics, nil); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code, _ := get(t, base+metrics.PathMetrics, map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("/metrics from a foreign origin: %d, want 403", code)
	}
	if code, _ := get(t, base+metrics.PathLivez, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("/livez from a foreign origin: %d, want 403", code)
	}
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Errorf("/livez without the token: %d %s, want 200", code, body)
	}
	if code, r := readyz(t, base); code != http.StatusOK || r.Status != ops.HealthOK {
		t.Errorf("/readyz of an empty database without the token: %d %+v, want 200 OK", code, r)
	}
	code, body := get(t, base+metrics.PathMetrics, auth)
	if code != http.StatusOK {
		t.Fatalf("/metrics with the token: %d %s", code, body)
	}
	for _, want := range []string{
		`pgbus_mcp_tool_calls_total{result="ok",tool="pgbus_health"} 2`,
		`pgbus_mcp_tool_calls_total{result="error",tool="pgbus_dlq_show"} 1`,
		"pgbus_database_up 1",
		"pgbus_workers_running 0",
		// A client of protocol 2026-07-28 holds no session, and here no stream.
		`pgbus_mcp_sessions_open{transport="http"} 0`,
		`pgbus_mcp_streams_open{transport="http"} 0`,
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// A session holding a queue's table (LOCK TABLE, VACUUM FULL, a stuck
// ALTER) keeps the health check from its answer while the database
// answers everything else: /readyz stays ready, DEGRADED, naming the
// session and how to end it, and pgbus_database_up stays 1, rather than
// every process saying the database is down and an alert sending the
// on-call to a server that runs.
func TestReadyzUnderALockOnAQueueTable(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	q := "locked_q"
	pgtest.CreateQueue(t, st, q)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mon := runner.NewMonitor(svc, slog.New(slog.DiscardHandler), nil)
	base := serveMonitor(t, mon)
	ctx := pgtest.Context(t)
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE pgmq.q_`+q+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	code, r := readyz(t, base)
	if code != http.StatusOK || !r.Ready || r.Status != ops.HealthDegraded || len(r.Reasons) != 1 || r.Reasons[0].Code != "health_check_slow" ||
		!strings.Contains(r.Reasons[0].Message, "waited for a lock another session holds") || !strings.Contains(r.Reasons[0].Message, "pg_terminate_backend") {
		t.Fatalf("/readyz under a lock on a queue's table: %d %+v; want 200, ready, DEGRADED, health_check_slow naming the session", code, r)
	}
	_, body := get(t, base+metrics.PathMetrics, nil)
	if !strings.Contains(body, "\npgbus_database_up 1\n") {
		t.Errorf("/metrics under a lock on a queue's table does not say pgbus_database_up 1:\n%.2000s", body)
	}
}

// Calls that wait for a lock another session holds on a queue's table
// (writes to it, or reads of a service that lets them wait their whole
// call bound, as many as the pool has connections) take every connection of the process's pool: /readyz still asks the
// database, on a connection of its own, and stays ready, DEGRADED, saying
// that the pool is busy and naming the session that holds the lock,
// rather than 503 UNREACHABLE, which would have the process restarted for
// a lock no restart ends.
func TestReadyzWhileCallsWaitingForALockHoldThePool(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const poolSize = 2
	st := pgtest.OpenStore(t, pgtest.WithParam(t, url, "pool_max_conns", fmt.Sprint(poolSize)))
	q := "q01"
	pgtest.CreateQueue(t, st, q)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := ops.New(st, ops.Options{ReadLockWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	base := serveMonitor(t, runner.NewMonitor(svc, slog.New(slog.DiscardHandler), nil))
	lock := pgtest.HoldExclusiveLock(t, pgtest.OpenStore(t, url), "q_"+q)
	// A read of the queue's messages, which waits for the lock as long
	// as its call may (the overview, bounded as the health check is,
	// would let its connection go as soon as the check gave up).
	lock.Occupy(poolSize, func(ctx context.Context) { _, _ = waiting.QueueMessages(ctx, ops.QueueMessagesRequest{Queue: q}) })
	if in, size := st.Pool().Stat().AcquiredConns(), st.Pool().Stat().MaxConns(); in != size {
		t.Fatalf("%d of the pool's %d connections in use while %d calls wait for the lock; want all", in, size, poolSize)
	}

	code, r := readyz(t, base)
	if code != http.StatusOK || !r.Ready || r.Status != ops.HealthDegraded || len(r.Reasons) != 1 || r.Reasons[0].Code != "health_check_slow" ||
		!strings.Contains(r.Reasons[0].Message, fmt.Sprintf("all %d connections of this process's pool", poolSize)) ||
		!strings.Contains(r.Reasons[0].Message, fmt.Sprintf("by pid %d", lock.PID)) || !strings.Contains(r.Reasons[0].Message, fmt.Sprintf("pg_terminate_backend(%d)", lock.PID)) {
		t.Fatalf("/readyz while calls waiting for pid %d's lock hold the pool: %d %+v; want 200, ready, DEGRADED, health_check_slow naming the busy pool and the session", lock.PID, code, r)
	}
	if _, body := get(t, base+metrics.PathMetrics, nil); !strings.Contains(body, "\npgbus_database_up 1\n") {
		t.Errorf("/metrics while calls waiting for a lock hold the pool does not say pgbus_database_up 1:\n%.2000s", body)
	}
}

// Once the process is stopping (SIGTERM: its workers finish their running
// jobs and take no new ones), /readyz answers 503 STOPPING while /livez
// stays 200: a load balancer or Kubernetes sends it nothing new while it
// drains, where /readyz said ready until the process was gone.
func TestReadyzSaysStoppingWhileTheWorkersDrain(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(pgtest.Context(t))
	stop, addr, err := runner.NewMonitor(svc, nil, nil).Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base := "http://" + addr.String()
	if code, body := get(t, base+metrics.PathReadyz, nil); code != http.StatusOK {
		t.Fatalf("/readyz while working: %d %s; want 200", code, body)
	}
	cancel()
	if code, body := get(t, base+metrics.PathReadyz, nil); code != http.StatusServiceUnavailable || !strings.Contains(body, `"status":"STOPPING"`) || !strings.Contains(body, "take no new ones") {
		t.Errorf("/readyz while stopping: %d %s; want 503, STOPPING, saying why", code, body)
	}
	if code, body := get(t, base+metrics.PathLivez, nil); code != http.StatusOK {
		t.Errorf("/livez while stopping: %d %s; want 200: the process is alive", code, body)
	}
}

// A role that may not read a table the health check reads makes /readyz
// answer 503, reason health_check_refused, pointing at the log, which has
// the error and the grants; the body does not name the role. It answered
// 200, DEGRADED health_check_slow, "took longer than 5s", and the log said
// the database did not answer.
func TestReadyzWhenTheHealthCheckIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pgtest.OpenStore(t, url) // migrated
	role, roleURL := pgtest.NewRole(t, url)
	pgtest.Exec(t, url, "GRANT USAGE ON SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO "+role)
	pgtest.Exec(t, url, "REVOKE SELECT ON pgbus.circuit_breaker_users FROM "+role)
	svc, err := ops.New(pgtest.OpenStore(t, roleURL), ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log pgtest.SyncBuffer
	base := serveMonitor(t, runner.NewMonitor(svc, slog.New(slog.NewTextHandler(&log, nil)), nil))
	code, body := get(t, base+metrics.PathReadyz, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"health_check_refused"`) || !strings.Contains(body, "privilege") || strings.Contains(body, "health_check_slow") {
		t.Fatalf("/readyz as a role that may not read pgbus.circuit_breaker_users: %d %s\nwant 503, health_check_refused\nlog:\n%s", code, body, log.String())
	}
	if strings.Contains(body, role) {
		t.Errorf("/readyz body names the role: %s", body)
	}
	if l := log.String(); !strings.Contains(l, "refused the health check") || !strings.Contains(l, "GRANT SELECT") {
		t.Errorf("the log does not have the refusal and the grants:\n%s", l)
	}
}

// /readyz does not call the process's own workers stale: it knows they
// run, though their heartbeats are old (a database that was down held them
// back). Another process's /readyz, which cannot know, still answers 503
// for a queue whose one worker stopped beating.
func TestReadyzCountsItsOwnWorkersRunning(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := pgtest.Context(t)
	q := pgtest.NewFastQueue(t, st, "own", nil)
	if _, err := st.SendBatch(ctx, q, []store.NewMessage{{Payload: json.RawMessage(`{"n": 1}`)}}); err != nil {
		t.Fatal(err)
	}
	const id = "w-own"
	if err := st.RegisterWorker(ctx, store.WorkerProcess{ID: id, Hostname: "h", PID: 1, Queues: []string{q}, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 minutes' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	works := []config.WorkQueue{{Name: q}}
	other := runner.NewMonitor(svc, nil, works)
	if code, r := readyz(t, serveMonitor(t, other)); code != http.StatusServiceUnavailable || len(r.Reasons) == 0 || r.Reasons[0].Code != "no_workers" || r.Reasons[0].Queue != q {
		t.Errorf("/readyz of another process working %s: %d %+v; want 503, no_workers on it", q, code, r)
	}
	own := runner.NewMonitor(svc, nil, works)
	own.Runs(id)
	code, r := readyz(t, serveMonitor(t, own))
	if code != http.StatusOK || !r.Ready {
		t.Errorf("/readyz of the process that runs %s: %d %+v; want 200, ready", id, code, r)
	}
	for _, reason := range r.Reasons {
		if reason.Code == "no_workers" || reason.Code == "stale_workers" {
			t.Errorf("/readyz of the process that runs %s gives %s: %s; want its worker counted running", id, reason.Code, reason.Message)
		}
	}
}

// The /readyz of a process that runs workers in the background, as pgbus
// serve does, counts them running though their heartbeats are old (as
// after the process could not reach the database for a while, the
// database itself up), as pgbus work's /readyz counts its own: it
// answered 503, no_workers, for the queues its workers serve.
func TestReadyzCountsItsBackgroundWorkersRunning(t *testing.T) {
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// One slot, held by a job that does not end within the test, so that
	// the next message stays ready; heartbeats an hour apart, so that the
	// one set back below stays so.
	q := config.WorkQueue{Name: pgtest.Name("bgown"), Concurrency: 1, Declared: true,
		Handler: handlers.Spec{Type: handlers.TypeDemo, Timeout: handlers.Duration(10 * time.Minute)}}
	works := []config.WorkQueue{q}
	mon := runner.NewMonitor(svc, nil, works)
	stop, err := runner.Background(pgtest.Context(t), st, svc, works, engine.Config{ProcessHeartbeat: time.Hour, DrainTimeout: 100 * time.Millisecond}, nil, mon)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for range 2 {
		if _, err := svc.Send(pgtest.Context(t), ops.SendRequest{Queue: q.Name, Payload: []byte(`{"simulate": "timeout"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.Eventually(t, time.Minute, "the background worker registered", func() bool {
		return pgtest.Int(t, st, `SELECT count(*)::int FROM pgbus.workers WHERE stopped_at IS NULL`) == 1
	})
	if _, err := st.Pool().Exec(pgtest.Context(t), `UPDATE pgbus.workers SET heartbeat_at = now() - interval '10 hours'`); err != nil {
		t.Fatal(err)
	}
	other := serveMonitor(t, runner.NewMonitor(svc, nil, works))
	pgtest.Eventually(t, time.Minute, "another process's /readyz to answer 503 for the silent worker", func() bool {
		code, r := readyz(t, other)
		return code == http.StatusServiceUnavailable && len(r.Reasons) > 0 && r.Reasons[0].Code == "no_workers"
	})
	code, r := readyz(t, serveMonitor(t, mon))
	if code != http.StatusOK || !r.Ready {
		t.Errorf("/readyz of the process that runs the background workers of %s: %d %+v; want 200, ready", q.Name, code, r)
	}
}
