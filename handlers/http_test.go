package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/handlers"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/store"
)

// downstream is a real HTTP server whose answer depends on the request's
// payload ({"case": ..., "n": ...}), on how often that payload came before,
// and on a phase switch: during a burst it answers 503 with Retry-After: 1
// to everything.
type downstream struct {
	srv   *httptest.Server
	burst atomic.Bool

	inFlight, maxInFlight atomic.Int32

	// whileOpen counts the requests that found the watched breaker open.
	whileOpen atomic.Int32

	mu    sync.Mutex
	hits  []hit
	seen  map[string]int
	dates map[string]dateHint // "date" case: what it told the client
	// breakerOpen, once watchBreaker set it, tells whether the breaker is
	// open.
	breakerOpen func(context.Context) bool
}

// watchBreaker makes d count the requests that find breaker open in s.
func (d *downstream) watchBreaker(s *store.Store, breaker string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.breakerOpen = func(ctx context.Context) bool {
		var state string
		_ = s.Pool().QueryRow(ctx, `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, breaker).Scan(&state)
		return state == store.BreakerOpen
	}
}

type hit struct {
	key         string // case/n
	method      string
	path, query string
	idemKey     string
	contentType string
	apiKey      string
	body        string
	status      int
}

type dateHint struct {
	retryAt time.Time // the HTTP date sent, to the second
	date    time.Time // the response's Date, to the second
}

type testPayload struct {
	Case string `json:"case"`
	N    int    `json:"n"`
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{seen: map[string]int{}, dates: map[string]dateHint{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	cur := d.inFlight.Add(1)
	for {
		m := d.maxInFlight.Load()
		if cur <= m || d.maxInFlight.CompareAndSwap(m, cur) {
			break
		}
	}
	d.mu.Lock()
	open := d.breakerOpen
	d.mu.Unlock()
	if open != nil && open(r.Context()) {
		d.whileOpen.Add(1)
	}
	raw, _ := io.ReadAll(r.Body)
	var p testPayload
	_ = json.Unmarshal(raw, &p)
	key := fmt.Sprintf("%s/%d", p.Case, p.N)
	// Hold the request a little so that concurrent jobs overlap here.
	time.Sleep(30 * time.Millisecond)

	d.mu.Lock()
	d.seen[key]++
	nth := d.seen[key]
	d.mu.Unlock()
	status, body := d.answer(w.Header(), p.Case, key, nth)
	d.mu.Lock()
	d.hits = append(d.hits, hit{
		key: key, method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
		idemKey: r.Header.Get("Idempotency-Key"), contentType: r.Header.Get("Content-Type"),
		apiKey: r.Header.Get("X-Api-Key"), body: string(raw), status: status,
	})
	d.mu.Unlock()
	// The request is over for the server once it answers: a client may
	// send its next one as soon as it has read this answer.
	d.inFlight.Add(-1)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// answer decides the status, headers and body of a request.
func (d *downstream) answer(h http.Header, c, key string, nth int) (int, string) {
	if d.burst.Load() {
		h.Set("Retry-After", "1")
		return 503, "down for maintenance"
	}
	switch c {
	case "bad":
		return 400, `{"error":"amount_cents must be positive"}`
	case "bigbad":
		return 400, "BEGIN" + strings.Repeat("x", 200<<10) + "END"
	case "throttle":
		if nth == 1 {
			h.Set("Retry-After", "1")
			return 429, "slow down"
		}
	case "date":
		if nth == 1 {
			date := time.Now().UTC().Truncate(time.Second)
			retryAt := date.Add(2 * time.Second)
			h.Set("Date", date.Format(http.TimeFormat))
			h.Set("Retry-After", retryAt.Format(http.TimeFormat))
			d.mu.Lock()
			d.dates[key] = dateHint{retryAt: retryAt, date: date}
			d.mu.Unlock()
			return 503, "maintenance window"
		}
	case "flaky":
		if nth == 1 {
			return 500, "boom"
		}
	case "teapot":
		return 418, "I'm a teapot"
	case "unprocessable":
		return 422, "cannot process this yet"
	}
	return 200, `{"ok":true}`
}

func (d *downstream) hitsOf(key string) []hit {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []hit
	for _, h := range d.hits {
		if h.key == key {
			out = append(out, h)
		}
	}
	return out
}

// The http handler against a real server: classification, Retry-After
// hints in both forms, on_status overrides, immediate dead-lettering of
// 4xx, the circuit breaker opening during a burst (jobs snoozed, not
// failed) and closing after it, and max_concurrency as the server sees it.
func TestHTTPHandlerAgainstServer(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	d := newDownstream(t)
	u, _ := url.Parse(d.srv.URL)
	breaker := "http:" + u.Host
	forgetBreaker(t, s, breaker)

	q := fastQueue(t, s, nil)
	spec := specFromYAML(t, fmt.Sprintf(`
type: http
url: %s/hooks/charge?token=s3cret
timeout: 5s
max_concurrency: 3
headers: {X-Api-Key: k123}
breaker: {failure_threshold: 8, cool_off: 2s, max_cool_off: 4s}
on_status:
  418: discard
  422: {action: retry, max_retries: 2, backoff: 50ms, jitter: 0}
`, d.srv.URL))
	fn, opts := mustBuild(t, spec)
	if opts.Breaker == nil || opts.Breaker.Name != breaker {
		t.Fatalf("breaker %+v, want one named %s", opts.Breaker, breaker)
	}
	d.watchBreaker(s, breaker)
	c := quickClient(t, s, q, 8)
	c.HandleQueue(q, fn, opts)
	pgtest.Start(t, c)

	// Phase 1: a healthy downstream with some bad input, throttling and
	// hiccups. It has 7 retryable failures at most, below the threshold.
	ids := map[string]int64{}
	sendCase := func(kase string, n int, o engine.SendOptions) {
		ids[fmt.Sprintf("%s/%d", kase, n)] = pgtest.Send(t, c, q, testPayload{Case: kase, N: n}, o)
	}
	for n := range 10 {
		o := engine.SendOptions{}
		if n == 0 {
			o.IdempotencyKey = "order-42"
		}
		sendCase("ok", n, o)
	}
	for n := range 2 {
		sendCase("bad", n, engine.SendOptions{})
		sendCase("throttle", n, engine.SendOptions{})
		sendCase("flaky", n, engine.SendOptions{})
	}
	for _, kase := range []string{"bigbad", "date", "teapot", "unprocessable"} {
		sendCase(kase, 0, engine.SendOptions{})
	}
	pgtest.Eventually(t, 20*time.Second, "the first phase to settle", func() bool { return pgtest.Live(t, s, q) == 0 })

	archived := archivedOf(t, s, q)
	blocks, dlqIDs := deadBlocksOf(t, s, q)
	dlq := store.DLQName(q)

	// Every request carried the payload, the idempotency key and the
	// configured headers.
	for key, id := range ids {
		for _, h := range d.hitsOf(key) {
			wantKey := fmt.Sprintf("%s:%d", q, id)
			if key == "ok/0" {
				wantKey = "order-42"
			}
			var got testPayload
			if h.method != "POST" || h.path != "/hooks/charge" || h.query != "token=s3cret" || h.idemKey != wantKey ||
				h.contentType != "application/json" || h.apiKey != "k123" || json.Unmarshal([]byte(h.body), &got) != nil || key != fmt.Sprintf("%s/%d", got.Case, got.N) {
				t.Errorf("%s: request %+v; want POST /hooks/charge?token=s3cret, Idempotency-Key %s, JSON, X-Api-Key k123 and the payload", key, h, wantKey)
			}
		}
	}
	for n := range 10 {
		if _, ok := archived[ids[fmt.Sprintf("ok/%d", n)]]; !ok {
			t.Errorf("ok/%d not archived", n)
		}
	}

	// 400: dead-lettered at once, with the body in the message.
	for n := range 2 {
		key := fmt.Sprintf("bad/%d", n)
		checkDeadBlock(t, blocks[ids[key]], key, store.ReasonNonRetryable, 1, "http.400")
		if msg, _ := blocks[ids[key]]["error_message"].(string); !strings.Contains(msg, "400 Bad Request") || !strings.Contains(msg, "amount_cents must be positive") || strings.Contains(msg, "s3cret") {
			t.Errorf("%s: error message %q; want the status and the body, not the query", key, msg)
		}
		if n := len(d.hitsOf(key)); n != 1 {
			t.Errorf("%s: the server saw %d requests, want 1", key, n)
		}
	}
	checkDeadBlock(t, blocks[ids["bigbad/0"]], "bigbad", store.ReasonNonRetryable, 1, "http.400")
	if fs := failuresOf(t, s, dlq, dlqIDs[ids["bigbad/0"]]); len(fs) != 1 || !strings.Contains(fs[0].Message, "BEGIN") ||
		strings.Contains(fs[0].Message, "END") || len(fs[0].Message) > handlers.MaxSnippet+200 {
		t.Errorf("bigbad: failures %+v; want one whose message quotes at most %d bytes of the body", fs, handlers.MaxSnippet)
	}

	// 429 and 503 wait for their Retry-After: 1s exactly, or the HTTP date.
	for n := range 2 {
		key := fmt.Sprintf("throttle/%d", n)
		fs := failuresOf(t, s, q, ids[key])
		if len(fs) != 1 || fs[0].Class != "http.429" || fs[0].delay() != time.Second {
			t.Errorf("%s: failures %+v; want one http.429 retried after exactly 1s", key, fs)
		}
		if a, ok := archived[ids[key]]; !ok || a.ReadCount != 2 {
			t.Errorf("%s: archived %v %+v; want after 2 runs", key, ok, a)
		}
	}
	d.mu.Lock()
	date := d.dates["date/0"]
	d.mu.Unlock()
	if fs := failuresOf(t, s, q, ids["date/0"]); len(fs) != 1 || fs[0].Class != "http.503" {
		t.Errorf("date: failures %+v; want one http.503", fs)
	} else {
		// The wait is measured from the response's Date.
		if got, want := fs[0].delay(), date.retryAt.Sub(date.date); got != want {
			t.Errorf("date: retried after %s; want the %s from the response's Date to its Retry-After date", got, want)
		}
		if !strings.Contains(fs[0].Message, "Retry-After") {
			t.Errorf("date: message %q does not mention the Retry-After", fs[0].Message)
		}
	}
	if _, ok := archived[ids["date/0"]]; !ok {
		t.Errorf("date: not archived")
	}
	// 500 has no hint: the queue's backoff (100ms, jitter factor 1).
	for n := range 2 {
		key := fmt.Sprintf("flaky/%d", n)
		if fs := failuresOf(t, s, q, ids[key]); len(fs) != 1 || fs[0].Class != "http.500" || fs[0].delay() != 100*time.Millisecond {
			t.Errorf("%s: failures %+v; want one http.500 retried after the 100ms backoff", key, fs)
		}
	}
	// on_status: 418 is discarded, 422 retried on its own policy.
	if a, ok := archived[ids["teapot/0"]]; !ok || a.Headers[store.HeaderDiscarded] == nil {
		t.Errorf("teapot: archived %v with headers %v; want discarded", ok, a.Headers)
	}
	if fs := failuresOf(t, s, q, ids["teapot/0"]); len(fs) != 1 || fs[0].Class != "http.418" {
		t.Errorf("teapot: failures %+v; want one http.418", fs)
	}
	checkDeadBlock(t, blocks[ids["unprocessable/0"]], "unprocessable", store.ReasonMaxRetriesExceeded, 2, "http.422")
	if b := blocks[ids["unprocessable/0"]]; b != nil && b["max_retries"] != 2.0 {
		t.Errorf("unprocessable: max_retries %v, want the rule's 2", b["max_retries"])
	}
	if fs := failuresOf(t, s, dlq, dlqIDs[ids["unprocessable/0"]]); len(fs) != 2 || fs[0].delay() != 50*time.Millisecond {
		t.Errorf("unprocessable: failures %+v; want 2, the first retried after the rule's 50ms", fs)
	}

	// Phase 2: a burst of 503s opens the breaker; jobs meeting it open are
	// snoozed; the burst ends while it is open and its probe closes it.
	d.burst.Store(true)
	var burst []int64
	for n := range 12 {
		id := pgtest.Send(t, c, q, testPayload{Case: "burst", N: n}, engine.SendOptions{})
		burst = append(burst, id)
	}
	pgtest.Eventually(t, time.Minute, "the breaker to open", func() bool {
		var state string
		err := s.Pool().QueryRow(ctxFor(t), `SELECT state FROM pgbus.circuit_breakers WHERE name = $1`, breaker).Scan(&state)
		if err != nil {
			t.Fatal(err)
		}
		return state == store.BreakerOpen
	})
	// Requests at the server when it opened still fail; the burst ends
	// once they are answered. One let through but not there yet may
	// succeed: a success does not close an open breaker.
	pgtest.Eventually(t, time.Minute, "the requests at the server when the breaker opened to be answered", func() bool {
		return d.inFlight.Load() == 0
	})
	d.burst.Store(false)
	pgtest.Eventually(t, time.Minute, "the burst messages to settle", func() bool { return pgtest.Live(t, s, q) == 0 })

	// Jobs meeting the open breaker were snoozed, not run: only jobs
	// running when it opened, at most the client's 8, reached the server
	// while it was open.
	if n := d.whileOpen.Load(); n > 8 {
		t.Errorf("%d requests reached the server while the breaker was open; at most the 8 jobs running when it opened may", n)
	}
	archived = archivedOf(t, s, q)
	failedInBurst := 0
	for n, id := range burst {
		a, ok := archived[id]
		fs := failuresOf(t, s, q, id)
		failedInBurst += len(fs)
		// Snoozes give their read back: the reads left are the runs.
		if !ok || a.ReadCount != len(fs)+1 {
			t.Errorf("burst/%d: archived %v after %d reads with %d failures; want archived, reads = failures + 1", n, ok, a.ReadCount, len(fs))
		}
		for _, f := range fs {
			if f.Class != "http.503" || f.delay() != time.Second {
				t.Errorf("burst/%d: failure %+v; want http.503 retried after its Retry-After of 1s", n, f)
			}
		}
	}
	if failedInBurst < 8 {
		t.Errorf("%d failures in the burst; the breaker opens after 8", failedInBurst)
	}
	pgtest.Eventually(t, time.Minute, "snoozes in the stats", func() bool {
		return pgtest.Int(t, s, `SELECT coalesce(sum(snoozed), 0)::int FROM pgbus.stats_minute WHERE queue_name = $1`, q) > 0
	})
	var state string
	var consecutive int
	if err := s.Pool().QueryRow(ctxFor(t), `SELECT state, consecutive_failures FROM pgbus.circuit_breakers WHERE name = $1`, breaker).Scan(&state, &consecutive); err != nil {
		t.Fatal(err)
	}
	if state != store.BreakerClosed || consecutive != 0 {
		t.Errorf("breaker after the burst: %s with %d failures; want closed by its probe", state, consecutive)
	}

	if m := d.maxInFlight.Load(); m > 3 {
		t.Errorf("the server saw %d requests at once; max_concurrency is 3", m)
	} else if m < 2 {
		t.Errorf("the server saw at most %d request at once; the test does not exercise max_concurrency", m)
	}
}

// Timeouts and network errors are retryable, with classes of their own;
// the query of the URL stays out of messages.
func TestHTTPHandlerTimeoutAndNetworkErrors(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	gaveUp := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a client going away only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
			gaveUp <- struct{}{}
		}
	}))
	defer slow.Close()
	defer close(release)
	fn, opts := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(200 * time.Millisecond),
		Options: map[string]any{"url": slow.URL + "/x?key=s3cret"}})
	if opts.Timeout != 200*time.Millisecond {
		t.Errorf("timeout %s, want 200ms", opts.Timeout)
	}
	job := &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: json.RawMessage(`{}`), IdempotencyKey: "q:1"}
	err := fn(context.Background(), job)
	// The server never answers: the handler returned because it gave up,
	// and the server saw the request abandoned.
	select {
	case <-gaveUp:
	case <-time.After(time.Minute):
		t.Errorf("the slow server never saw the request abandoned; the handler returned %v", err)
	}
	var re *handlers.RequestError
	if !errors.As(err, &re) || engine.ErrorClass(err) != handlers.ClassHTTPTimeout || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v (class %s); want an http.timeout RequestError without the query", err, engine.ErrorClass(err))
	}
	if _, plain := err.(*handlers.RequestError); !plain {
		t.Errorf("a timeout is returned as %T; want a plain (retryable) *RequestError", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	addr := closed.URL
	closed.Close()
	fn, _ = mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": addr}})
	err = fn(context.Background(), job)
	if _, plain := err.(*handlers.RequestError); !plain || engine.ErrorClass(err) != handlers.ClassHTTPNetwork {
		t.Errorf("connection refused: %v (%T, class %s); want a plain http.network RequestError", err, err, engine.ErrorClass(err))
	}
}

// A job that gets no max_concurrency slot before its deadline is snoozed:
// it made no request, so it uses no attempt.
func TestHTTPHandlerSlotWaitSnoozes(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	// The first request holds the one slot until released: its timeout
	// must not end it first, however slow the machine.
	fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(time.Minute),
		Options: map[string]any{"url": srv.URL, "max_concurrency": 1}})
	first := make(chan error, 1)
	go func() {
		first <- fn(context.Background(), &engine.Job{Queue: "q", ID: 1, Payload: json.RawMessage(`{}`)})
	}()
	pgtest.Eventually(t, time.Minute, "the first request", func() bool { return requests.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := fn(ctx, &engine.Job{Queue: "q", ID: 2, Payload: json.RawMessage(`{}`)})
	var re *handlers.RequestError
	if err == nil || errors.As(err, &re) || err.Error() != "snoozed" || requests.Load() != 1 {
		t.Errorf("waiting for a slot past the deadline: %v (%T) after %d requests; want a snooze and no request", err, err, requests.Load())
	}
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Errorf("first request: %v", err)
	}
}

// A job that waited for its max_concurrency slot has the whole timeout
// for its request: sent with what the wait left of one deadline, it timed
// out against a healthy downstream, using an attempt and feeding the
// breaker. The attempt's own bound (the engine's, opts.Timeout) covers the
// wait and the request. Here the wait is 2s of a 3s timeout, the request
// 1.5s.
func TestHTTPHandlerRequestHasItsTimeoutAfterASlotWait(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			<-release
			return
		}
		time.Sleep(1500 * time.Millisecond)
	}))
	defer srv.Close()
	const timeout = 3 * time.Second
	fn, opts := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Timeout: handlers.Duration(timeout),
		Options: map[string]any{"url": srv.URL, "max_concurrency": 1}})
	if opts.Timeout != 2*timeout {
		t.Fatalf("the attempt's timeout is %s; want %s, the wait for a slot and the request", opts.Timeout, 2*timeout)
	}
	attempt := func(id int64) error {
		ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
		defer cancel()
		return fn(ctx, &engine.Job{Queue: "q", ID: id, Payload: json.RawMessage(`{}`), IdempotencyKey: fmt.Sprintf("q:%d", id)})
	}
	first := make(chan error, 1)
	go func() { first <- attempt(1) }()
	pgtest.Eventually(t, time.Minute, "the first request", func() bool { return requests.Load() == 1 })
	second := make(chan error, 1)
	go func() { second <- attempt(2) }()
	time.Sleep(2 * time.Second) // the second job waits for the slot meanwhile
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first request: %v", err)
	}
	if err := <-second; err != nil || requests.Load() != 2 {
		t.Errorf("the request after a wait for the slot: %v after %d requests; want it to succeed", err, requests.Load())
	}
}

// Redirects are not followed (a POST would become a GET without the
// payload): a 3xx is non-retryable unless on_status says otherwise; a 2xx
// other than 200 is success.
func TestHTTPHandlerStatuses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var status int
		_, _ = fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &status)
		if status == 302 {
			w.Header().Set("Location", "/200")
		}
		if status == 503 || status == 429 || status == 500 {
			w.Header().Set("Retry-After", "99999999")
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	job := &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: json.RawMessage(`{}`), IdempotencyKey: "q:1"}
	for _, tc := range []struct {
		status  int
		onState map[string]any
		class   string
		plain   bool // retryable as far as the handler goes (or left to a policy)
	}{
		{status: 204},
		{status: 202},
		{status: 302, class: "http.302"},
		{status: 404, class: "http.404"},
		{status: 408, class: "http.408", plain: true},
		{status: 500, class: "http.500", plain: true},
		{status: 599, class: "http.599", plain: true},
		{status: 404, onState: map[string]any{"4xx": "retry"}, class: "http.404", plain: true},
		{status: 404, onState: map[string]any{"4xx": "retry", "404": "dead_letter"}, class: "http.404", plain: true},
	} {
		opts := map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, tc.status)}
		if tc.onState != nil {
			opts["on_status"] = tc.onState
		}
		fn, hopts := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: opts})
		err := fn(context.Background(), job)
		if tc.class == "" {
			if err != nil {
				t.Errorf("%d: %v, want success", tc.status, err)
			}
			continue
		}
		var se *handlers.StatusError
		_, plain := err.(*handlers.StatusError)
		if !errors.As(err, &se) || engine.ErrorClass(err) != tc.class || plain != tc.plain {
			t.Errorf("%d %v: %v (%T, class %s); want class %s, plain %v", tc.status, tc.onState, err, err, engine.ErrorClass(err), tc.class, tc.plain)
		}
		// 599 has no text of its own: nothing is left of it, not even a
		// blank.
		if msg := err.Error(); strings.TrimSpace(msg) != msg {
			t.Errorf("%d: message %q ends with a blank", tc.status, msg)
		}
		if tc.onState != nil && len(hopts.Policies) != len(tc.onState) {
			t.Errorf("%v: %d policies", tc.onState, len(hopts.Policies))
		}
	}
	// An absurd Retry-After is capped at an hour; 500 does not use it.
	for _, tc := range []struct {
		status int
		hint   time.Duration
	}{{503, handlers.MaxRetryAfter}, {429, handlers.MaxRetryAfter}, {500, 0}} {
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, tc.status)}})
		err := fn(context.Background(), job)
		var se *handlers.StatusError
		if !errors.As(err, &se) || se.Hint != tc.hint {
			t.Errorf("%d with Retry-After 99999999: %v; want hint %s", tc.status, err, tc.hint)
		}
	}
}

// A Retry-After date is a time on the server's clock: the wait is measured
// from the response's Date, so that a worker whose clock is minutes off
// waits as long as the server asked, neither minutes more nor not at all.
// Without a valid Date, the worker's own clock is all there is.
func TestHTTPRetryAfterDateUsesTheServersClock(t *testing.T) {
	t.Parallel()
	job := &engine.Job{Queue: "q", ID: 1, Attempt: 1, Payload: json.RawMessage(`{}`), IdempotencyKey: "q:1"}
	for _, tc := range []struct {
		what string
		// skew is how far the server's clock is from this one's; date is
		// its Date header ("-" for none, "" for one from skew).
		skew time.Duration
		date string
		hint time.Duration
	}{
		{what: "server 10 minutes behind", skew: -10 * time.Minute, hint: 30 * time.Second},
		{what: "server 10 minutes ahead", skew: 10 * time.Minute, hint: 30 * time.Second},
		{what: "server 2 days ahead", skew: 48 * time.Hour, hint: 30 * time.Second},
		{what: "no Date, the worker's clock", skew: 10 * time.Minute, date: "-", hint: 0},
		{what: "a Date that is no date, the worker's clock", skew: 10 * time.Minute, date: "yesterday", hint: 0},
	} {
		serverNow := time.Now().Add(tc.skew).UTC().Truncate(time.Second)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			switch tc.date {
			case "-":
				w.Header()["Date"] = nil // the server adds none
			case "":
				w.Header().Set("Date", serverNow.Format(http.TimeFormat))
			default:
				w.Header().Set("Date", tc.date)
			}
			w.Header().Set("Retry-After", serverNow.Add(30*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		fn, _ := mustBuild(t, handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": srv.URL}})
		err := fn(context.Background(), job)
		srv.Close()
		var se *handlers.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v; want a StatusError", tc.what, err)
		}
		got := se.Hint
		if tc.hint == 0 && tc.skew > 0 {
			// Measured on this clock, the date is skew+30s ahead, capped.
			if want := min(tc.skew, handlers.MaxRetryAfter); got < want || got > handlers.MaxRetryAfter {
				t.Errorf("%s: hint %s; want the wait to the date on this clock, about %s", tc.what, got, want)
			}
			continue
		}
		if got != tc.hint {
			t.Errorf("%s: hint %s; want the %s the server asked for from its Date", tc.what, got, tc.hint)
		}
	}
}

// Defaults and the engine options a block turns into.
func TestHTTPBuildDefaults(t *testing.T) {
	t.Parallel()
	_, opts := mustBuild(t, specFromYAML(t, `
type: http
url: https://billing.example/hooks
`))
	want := store.BreakerConfig{Name: "http:billing.example:443", FailureThreshold: 5, CoolOff: 10 * time.Second, MaxCoolOff: 5 * time.Minute}
	if opts.Breaker == nil || *opts.Breaker != want || opts.Timeout != 30*time.Second || len(opts.Policies) != 0 {
		t.Errorf("options %+v (breaker %+v); want timeout 30s, breaker %+v, no policies", opts, opts.Breaker, want)
	}
	_, opts = mustBuild(t, specFromYAML(t, `
type: http
url: http://[::1]/x
method: put
breaker: {enabled: false}
on_status:
  5xx: {action: retry, max_retries: 9, backoff: 2s}
  503: retry_after_hint
  409: discard
`))
	if opts.Breaker != nil {
		t.Errorf("breaker %+v, want none", opts.Breaker)
	}
	if len(opts.Policies) != 3 || opts.Policies[0].Class != "http.409" || opts.Policies[0].Action != engine.ActionDiscard ||
		opts.Policies[1].Class != "http.503" || opts.Policies[1].Action != engine.ActionRetryAfterHint ||
		opts.Policies[2].Match == nil || opts.Policies[2].Retry == nil || opts.Policies[2].Retry.MaxRetries != 9 ||
		opts.Policies[2].Retry.Backoff != 2*time.Second || opts.Policies[2].Retry.BackoffMax != 5*time.Minute {
		t.Errorf("policies %+v; want 409, 503, then 5xx with its retry policy", opts.Policies)
	}
	_, opts = mustBuild(t, specFromYAML(t, `
type: http
url: http://[::1]:8080/x
breaker: {name: billing, failure_threshold: 2, cool_off: 1s}
`))
	if want := (store.BreakerConfig{Name: "billing", FailureThreshold: 2, CoolOff: time.Second, MaxCoolOff: 5 * time.Minute}); opts.Breaker == nil || *opts.Breaker != want {
		t.Errorf("breaker %+v, want %+v", opts.Breaker, want)
	}
	_, opts = mustBuild(t, specFromYAML(t, `
type: http
url: http://[::1]:8080/x
`))
	if opts.Breaker == nil || opts.Breaker.Name != "http:[::1]:8080" {
		t.Errorf("breaker %+v, want http:[::1]:8080", opts.Breaker)
	}
}

// Bad blocks are rejected with the key and the reason.
func TestHTTPBadConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		spec    handlers.Spec
		yaml    string
		key     string
		reason  string
		options map[string]any
	}{
		{name: "no url", yaml: "method: POST", key: "url:", reason: "missing"},
		{name: "no scheme", options: map[string]any{"url": "billing.example/hooks"}, key: "url:", reason: "no scheme"},
		{name: "scheme", options: map[string]any{"url": "ftp://billing.example/x"}, key: "url:", reason: `scheme "ftp" is not supported`},
		{name: "no host", options: map[string]any{"url": "http:///hooks"}, key: "url:", reason: "no host"},
		{name: "opaque", options: map[string]any{"url": "http:billing"}, key: "url:", reason: "no host"},
		{name: "port", options: map[string]any{"url": "http://h:99999/x"}, key: "url:", reason: "port 99999 is out of range 1..65535"},
		{name: "port 0", options: map[string]any{"url": "http://h:0/x"}, key: "url:", reason: "port 0 is out of range"},
		{name: "not a url", options: map[string]any{"url": "http://bad host/"}, key: "url:", reason: "is not a URL"},
		{name: "method", options: map[string]any{"url": "http://h/", "method": "GET"}, key: "method:", reason: "not allowed"},
		{name: "negative timeout", spec: handlers.Spec{Timeout: handlers.Duration(-time.Second)}, options: map[string]any{"url": "http://h/"}, key: "timeout:", reason: "negative"},
		{name: "huge timeout", spec: handlers.Spec{Timeout: handlers.Duration(48 * time.Hour)}, options: map[string]any{"url": "http://h/"}, key: "timeout:", reason: "out of range"},
		{name: "zero concurrency", yaml: "url: http://h/\nmax_concurrency: 0", key: "max_concurrency:", reason: "out of range 1..10000"},
		{name: "negative concurrency", yaml: "url: http://h/\nmax_concurrency: -2", key: "max_concurrency:", reason: "out of range"},
		{name: "concurrency text", yaml: "url: http://h/\nmax_concurrency: lots", key: "max_concurrency:", reason: `"lots" is not a whole number`},
		{name: "concurrency fraction", yaml: "url: http://h/\nmax_concurrency: 2.5", key: "max_concurrency:", reason: `"2.5" is not a whole number`},
		{name: "threshold fraction", yaml: "url: http://h/\nbreaker: {failure_threshold: 1.5}", key: "breaker.failure_threshold:", reason: `"1.5" is not a whole number`},
		{name: "rule retries fraction", yaml: "url: http://h/\non_status: {503: {action: retry, max_retries: 2.5}}", key: "on_status.503.max_retries:", reason: `"2.5" is not a whole number`},
		{name: "unknown key", yaml: "url: http://h/\nurls: [x]", key: "urls:", reason: "unknown option; the options here are breaker, headers, max_concurrency, method, on_status, url (and type and timeout, which every handler takes)"},
		{name: "negative threshold", yaml: "url: http://h/\nbreaker: {failure_threshold: -1}", key: "breaker.failure_threshold:", reason: "out of range 1..10000"},
		{name: "zero threshold", yaml: "url: http://h/\nbreaker: {failure_threshold: 0}", key: "breaker.failure_threshold:", reason: "enabled: false"},
		{name: "negative cool-off", yaml: "url: http://h/\nbreaker: {cool_off: -5s}", key: "breaker.cool_off:", reason: "negative"},
		{name: "tiny cool-off", yaml: "url: http://h/\nbreaker: {cool_off: 1ms}", key: "breaker.cool_off:", reason: "out of range 10ms..24h"},
		{name: "max below cool-off", yaml: "url: http://h/\nbreaker: {cool_off: 1m, max_cool_off: 30s}", key: "breaker.max_cool_off:", reason: "less than the cool-off"},
		{name: "cool-off text", yaml: "url: http://h/\nbreaker: {cool_off: soon}", key: "breaker.cool_off:", reason: "not a duration"},
		{name: "breaker key", yaml: "url: http://h/\nbreaker: {treshold: 3}", key: "breaker.treshold:", reason: "unknown option"},
		{name: "breaker scalar", yaml: "url: http://h/\nbreaker: on", key: "breaker:", reason: "expected a mapping"},
		{name: "enabled text", yaml: "url: http://h/\nbreaker: {enabled: maybe}", key: "breaker.enabled:", reason: "true or false"},
		{name: "unknown action", yaml: "url: http://h/\non_status: {503: explode}", key: "on_status.503:", reason: `unknown action "explode"`},
		{name: "no action", yaml: "url: http://h/\non_status: {503: {max_retries: 3}}", key: "on_status.503.action:", reason: "missing"},
		{name: "2xx", yaml: "url: http://h/\non_status: {200: retry}", key: "on_status.200:", reason: "cannot be overridden"},
		{name: "not a status", yaml: "url: http://h/\non_status: {oops: retry}", key: "on_status.oops:", reason: "not a status code"},
		// A status is read as written, not as YAML reads a number: 0503 is
		// not the octal 323, nor 0x1F7, +503 and 5_03 the status 503.
		{name: "status with a leading zero", yaml: "url: http://h/\non_status: {0503: dead_letter}", key: "on_status.0503:", reason: `"0503" is not a status code`},
		{name: "status in hex", yaml: "url: http://h/\non_status: {0x1F7: retry}", key: "on_status.0x1F7:", reason: "not a status code"},
		{name: "status with a sign", yaml: "url: http://h/\non_status: {+503: retry}", key: "on_status.+503:", reason: "not a status code"},
		{name: "status with an underscore", yaml: "url: http://h/\non_status: {5_03: retry}", key: "on_status.5_03:", reason: "not a status code"},
		{name: "class twice", yaml: "url: http://h/\non_status: {5XX: dead_letter, 5xx: retry_after_hint}", key: "on_status.5xx:", reason: "the class is given twice (also as 5XX); keep one"},
		{name: "2xx class", yaml: "url: http://h/\non_status: {2xx: retry}", key: "on_status.2xx:", reason: "use 3xx, 4xx or 5xx"},
		{name: "retry with discard", yaml: "url: http://h/\non_status: {503: {action: discard, max_retries: 3}}", key: "on_status.503:", reason: "only with action retry"},
		{name: "zero retries", yaml: "url: http://h/\non_status: {503: {action: retry, max_retries: 0}}", key: "on_status.503.max_retries:", reason: "out of range 1..1000"},
		{name: "backoff max", yaml: "url: http://h/\non_status: {503: {action: retry, backoff: 10s, backoff_max: 1s}}", key: "on_status.503.backoff_max:", reason: "less than the backoff"},
		{name: "jitter", yaml: "url: http://h/\non_status: {503: {action: retry, jitter: 2}}", key: "on_status.503.jitter:", reason: "out of range 0..1"},
		{name: "strategy", yaml: "url: http://h/\non_status: {503: {action: retry, strategy: linear}}", key: "on_status.503.strategy:", reason: "not a backoff strategy"},
		{name: "rule key", yaml: "url: http://h/\non_status: {503: {actoin: retry}}", key: "on_status.503.actoin:", reason: "unknown option"},
		{name: "on_status list", yaml: "url: http://h/\non_status: [503]", key: "on_status:", reason: "expected a mapping"},
		{name: "reserved header", yaml: "url: http://h/\nheaders: {Idempotency-Key: x}", key: "headers.Idempotency-Key:", reason: "set by pgbus"},
		{name: "header name", yaml: "url: http://h/\nheaders: {\"Bad Header\": x}", key: "headers.Bad Header:", reason: "not a valid header name"},
		{name: "header value", options: map[string]any{"url": "http://h/", "headers": map[string]any{"X-A": "a\r\nB: c"}}, key: "headers.X-A:", reason: "line break"},
		{name: "header control character", yaml: "url: http://h/\nheaders: {X-Trace: \"a\\x1bb\"}", key: "headers.X-Trace:", reason: "control character"},
		{name: "header twice", yaml: "url: http://h/\nheaders: {Authorization: Bearer a, authorization: Bearer b}", key: "headers.authorization:", reason: `also as "Authorization"`},
		{name: "header DEL", options: map[string]any{"url": "http://h/", "headers": map[string]any{"X-A": "a\x7f"}}, key: "headers.X-A:", reason: "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			if tc.yaml != "" {
				spec = specFromYAML(t, "type: http\n"+tc.yaml)
			} else {
				spec.Options = tc.options
			}
			spec.Type = handlers.TypeHTTP
			_, _, err := handlers.Build(spec)
			if err == nil {
				t.Fatalf("built; want an error about %s", tc.key)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "handler type http: "+tc.key) || !strings.Contains(msg, tc.reason) {
				t.Errorf("error %q; want it to start with %q and say %q", msg, "handler type http: "+tc.key, tc.reason)
			}
		})
	}
}

// A job whose idempotency key holds a control character, which no header
// can carry, is dead-lettered at once without a request: it says nothing
// of the downstream, so its breaker counts no failure and the next job
// goes through.
func TestHTTPHandlerKeyAHeaderCannotCarry(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	breaker := "http:" + u.Host
	forgetBreaker(t, s, breaker)
	q := fastQueue(t, s, func(set *store.QueueSettings) { set.MaxRetries = 2 })
	fn, opts := mustBuild(t, specFromYAML(t, fmt.Sprintf("type: http\nurl: %s/hooks\nbreaker: {failure_threshold: 1, cool_off: 1h}", srv.URL)))
	c := quickClient(t, s, q, 1)
	c.HandleQueue(q, fn, opts)
	pgtest.Start(t, c)

	bad := pgtest.Send(t, c, q, testPayload{Case: "bad key"}, engine.SendOptions{IdempotencyKey: "order-7\r\nX-Injected: 1"})
	pgtest.Eventually(t, 20*time.Second, "the job with the bad key to settle", func() bool { return pgtest.Live(t, s, q) == 0 })
	blocks, _ := deadBlocksOf(t, s, q)
	b := blocks[bad]
	if b == nil || b["reason"] != store.ReasonNonRetryable || b["attempts"] != float64(1) {
		t.Fatalf("dead-letter block %v; want it dead-lettered at once (%s)", b, store.ReasonNonRetryable)
	}
	if msg, _ := b["error_message"].(string); !strings.Contains(msg, "idempotency key") {
		t.Errorf("error message %q; want it to name the idempotency key", msg)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the downstream; want none", n)
	}
	var state string
	var failures int
	if err := s.Pool().QueryRow(ctxFor(t), `SELECT state, consecutive_failures FROM pgbus.circuit_breakers WHERE name = $1`, breaker).Scan(&state, &failures); err != nil {
		t.Fatal(err)
	}
	if state != store.BreakerClosed || failures != 0 {
		t.Errorf("breaker %s with %d failures; want it closed with none", state, failures)
	}
}

// A URL whose path ends in a word that names secrets elsewhere (token,
// auth, secret) keeps its status in what is stored and shown of a
// failure: "POST .../oauth/token: 503" is a status, not a token's value.
// A secret of the body is still hidden.
func TestHTTPFailureOfATokenEndpointKeepsItsStatus(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "issuer down; last token=tkn-Body-Secret-77")
	}))
	defer srv.Close()
	dead, msg, dlqID, q := deadLetterOne(t, s, fmt.Sprintf("type: http\nurl: %s/oauth/token\nbreaker: {enabled: false}", srv.URL), 1, "token")
	checkDeadBlock(t, dead, "503 from a token endpoint", store.ReasonMaxRetriesExceeded, 1, "http.503")
	history := failuresOf(t, s, q+"_dlq", dlqID)
	if len(history) != 1 {
		t.Fatalf("history %+v; want one failure", history)
	}
	for what, text := range map[string]string{"dead-letter block": msg, "failure history": history[0].Message} {
		if !strings.Contains(text, "/oauth/token: 503 Service Unavailable") {
			t.Errorf("%s says %q; want the status after the URL", what, text)
		}
		if strings.Contains(text, "tkn-Body-Secret-77") || !strings.Contains(text, "token=[REDACTED]") {
			t.Errorf("%s says %q; want the body's token hidden", what, text)
		}
	}
}

// A redirect is not followed, so it dead-letters the message at once: the
// dead letter says where it pointed, without the credentials and query of
// its Location, so that the url can be set there.
func TestHTTPRedirectSaysWhereItPointed(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "https://bob:Redirect-Pw-1@billing.example/hooks/v2?sig=Redirect-Sig-2")
		w.WriteHeader(http.StatusMovedPermanently)
	}))
	defer srv.Close()
	dead, msg, _, _ := deadLetterOne(t, s, fmt.Sprintf("type: http\nurl: %s/hooks\nbreaker: {enabled: false}", srv.URL), 3, "moved")
	checkDeadBlock(t, dead, "301", store.ReasonNonRetryable, 1, "http.301")
	if !strings.Contains(msg, "301 Moved Permanently (redirects to https://billing.example/hooks/v2, which the handler does not follow; set url to") {
		t.Errorf("error message %q; want it to say where the redirect pointed and what to do", msg)
	}
	for _, secret := range []string{"Redirect-Pw-1", "Redirect-Sig-2", "bob"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error message %q shows %q of the Location", msg, secret)
		}
	}
}

// A server whose certificate this host does not trust (self-signed) fails
// as a network error, retried as any, whose dead letter says what fixes
// it: no retry of this process does.
func TestHTTPUntrustedCertificateSaysWhatToDo(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	var requests atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses
	srv.StartTLS()
	defer srv.Close()
	dead, msg, _, _ := deadLetterOne(t, s, fmt.Sprintf("type: http\nurl: %s/hooks\nbreaker: {enabled: false}", srv.URL), 2, "tls")
	checkDeadBlock(t, dead, "self-signed server", store.ReasonMaxRetriesExceeded, 2, handlers.ClassHTTPNetwork)
	if !strings.Contains(msg, "certificate signed by unknown authority; the server's certificate is signed by an authority this host does not trust") ||
		!strings.Contains(msg, "add the CA to this host's trust store") {
		t.Errorf("error message %q; want it to say the certificate is not trusted and what to do", msg)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server past the handshake; want none", n)
	}
}

// A url that is refused is quoted in the error without what may be its
// password, whatever is wrong with it: with no scheme (or a user name
// taken for one), no host or a bad one.
func TestHTTPBadURLHidesItsPassword(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"alice:Url-Pw-1@billing.example/hooks",
		"//alice:Url-Pw-1@billing.example/hooks",
		"ftp://alice:Url-Pw-1@billing.example/hooks",
		"http://alice:Url-Pw-1@bad host/hooks",
		"http://alice:Url-Pw-1@/hooks",
		"http://alice:Url/Pw-1@billing.example/hooks", // the parser quotes the password's start
		"http://alice:Url%zzPw-1@billing.example/hooks",
	} {
		_, _, err := handlers.Build(handlers.Spec{Type: handlers.TypeHTTP, Options: map[string]any{"url": raw}})
		if err == nil {
			t.Errorf("%s: built; want it refused", raw)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "Pw-1") || strings.Contains(msg, "Url") || strings.Contains(msg, "%zz") || !strings.Contains(msg, "alice:[REDACTED]@") || !strings.HasPrefix(msg, "handler type http: url: ") {
			t.Errorf("%s: error %q; want the url refused without its password", raw, msg)
		}
	}
}

// A downstream that echoes the request's headers in its error, as Go
// marshals them ({"X-Api-Key":["..."]}), has none of their secrets shown:
// neither the first value of a list nor the others.
func TestHTTPEchoedHeadersAreHidden(t *testing.T) {
	t.Parallel()
	s := sharedStore(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Add("X-Api-Key", "Echo-Key-Second-2")
		echo, _ := json.Marshal(map[string]any{"error": "unknown key", "headers": r.Header})
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(echo)
	}))
	defer srv.Close()
	dead, msg, dlqID, q := deadLetterOne(t, s, fmt.Sprintf("type: http\nurl: %s/hooks\nheaders: {X-Api-Key: Echo-Key-First-1}\nbreaker: {enabled: false}", srv.URL), 3, "echo")
	checkDeadBlock(t, dead, "403", store.ReasonNonRetryable, 1, "http.403")
	history := failuresOf(t, s, q+"_dlq", dlqID)
	if len(history) != 1 {
		t.Fatalf("history %+v; want one failure", history)
	}
	var body string
	if err := s.Pool().QueryRow(ctxFor(t), `SELECT detail->>'output' FROM pgbus.failures WHERE queue_name = $1 AND msg_id = $2`, q+"_dlq", dlqID).Scan(&body); err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"dead-letter block": msg, "failure history": history[0].Message, "response body": body} {
		if strings.Contains(text, "Echo-Key") || !strings.Contains(text, `"X-Api-Key":[REDACTED]`) || !strings.Contains(text, `"User-Agent":["pgbus"]`) {
			t.Errorf("%s says %q; want the echoed key hidden, and the rest shown", what, text)
		}
	}
}
