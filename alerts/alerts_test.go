package alerts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgbus/pgbus/alerts"
	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
	"github.com/pgbus/pgbus/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// receiver is a webhook receiver over real HTTP: it answers the first
// failFirst requests with 500, the others with 200, and keeps every body.
type receiver struct {
	srv       *httptest.Server
	failFirst int

	mu       sync.Mutex
	requests int
	accepted []map[string]any
	headers  []http.Header
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{failFirst: failFirst}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.requests++
		if r.requests <= r.failFirst {
			http.Error(w, "receiver down", http.StatusInternalServerError)
			return
		}
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("the webhook body is not a JSON object: %q", body)
		}
		r.accepted = append(r.accepted, v)
		r.headers = append(r.headers, req.Header.Clone())
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) counts() (requests, accepted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, len(r.accepted)
}

func (r *receiver) alert(i int) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted[i]
}

// world is a database of its own (the election and the dead-letter groups
// are the database's), with a queue that a worker process serves.
type world struct {
	st    *store.Store
	svc   *ops.Service
	queue string
}

func newWorld(t *testing.T) world {
	t.Helper()
	return worldOn(t, pgtest.OpenStore(t, pgtest.NewDatabase(t)))
}

// worldOn is a world on the database of st.
func worldOn(t *testing.T, st *store.Store) world {
	t.Helper()
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := "orders"
	pgtest.CreateQueue(t, st, q)
	// A worker serves the queue, so that the messages DeadLetterN sends
	// before it dead-letters them do not make the verdict STALLED. It
	// says it beats hourly: it never beats again, and a test on a busy
	// machine may outlast three beats of the default interval, after
	// which the worker would read as stale and the verdict as DEGRADED.
	if err := st.RegisterWorker(pgtest.Context(t), store.WorkerProcess{ID: pgtest.Name("w"), Hostname: "test", PID: 1, Queues: []string{q}, Concurrency: 1,
		HeartbeatInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return world{st: st, svc: svc, queue: q}
}

// start runs a notifier until the test ends and waits for its first
// checks, the baseline.
func (w world) start(t *testing.T, cfg alerts.Config) *alerts.Notifier {
	t.Helper()
	n, stop := w.run(t, cfg)
	t.Cleanup(stop)
	return n
}

// settle waits for more checks, after which nothing more may be sent.
func settle(t *testing.T, n *alerts.Notifier) {
	t.Helper()
	from := n.Checks()
	pgtest.Eventually(t, 30*time.Second, "five more checks", func() bool { return n.Checks() >= from+5 })
}

// A burst of 500 dead messages of one new group is one alert, with the
// group's queue, kind, class, redacted error and count; it is not
// reported again as growth.
func TestBurstOfOneNewGroupIsOneAlert(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	n := w.start(t, alerts.Config{URL: r.srv.URL, Headers: map[string]string{"Authorization": "Bearer t0ken"}, GrowthThreshold: 10, GrowthWindow: time.Hour})
	const secret = "sk_live_ALERTLEAK1234567890abcdef"
	pgtest.DeadLetterN(t, w.st, w.queue, 500, pgtest.DeadSpec{Kind: "charge", Class: "bank.declined",
		Message: "card 4242 declined; called with Authorization: Bearer " + secret})
	pgtest.Eventually(t, 30*time.Second, "the alert", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, n)
	if req, got := r.counts(); req != 1 || got != 1 {
		t.Fatalf("%d requests, %d alerts accepted; want exactly one alert for the burst", req, got)
	}
	a := r.alert(0)
	if a["source"] != "pgbus" || a["status"] != ops.HealthOK {
		t.Errorf("the alert: %v", a)
	}
	events := a["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("%d events, want one: %v", len(events), events)
	}
	e := events[0].(map[string]any)
	g := e["group"].(map[string]any)
	if e["type"] != alerts.EventGroupNew || g["queue"] != w.queue || g["dlq"] != store.DLQName(w.queue) || g["kind"] != "charge" ||
		g["error_class"] != "bank.declined" || g["count"] != 500.0 || !strings.Contains(g["error"].(string), "declined") {
		t.Errorf("the event: %v", e)
	}
	body, _ := json.Marshal(a)
	if strings.Contains(string(body), secret) || !strings.Contains(string(body), ops.Redacted) {
		t.Errorf("the alert does not hide the secret: %s", body)
	}
	if text := a["text"].(string); !strings.Contains(text, "new dead-letter group on orders") || !strings.Contains(text, "500 dead") {
		t.Errorf("the alert's text: %q", text)
	}
	if got := r.headers[0].Get("Authorization"); got != "Bearer t0ken" {
		t.Errorf("Authorization header %q", got)
	}
}

// A receiver that fails gets the alert again, with backoff, until it
// accepts it: the alert arrives once.
func TestFailedWebhookIsRetriedUntilAccepted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 3)
	n := w.start(t, alerts.Config{URL: r.srv.URL, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 40 * time.Millisecond})
	pgtest.DeadLetterN(t, w.st, w.queue, 20, pgtest.DeadSpec{Kind: "email", Class: "smtp.timeout", Message: "smtp timeout"})
	pgtest.Eventually(t, 30*time.Second, "the alert accepted", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, n)
	if req, got := r.counts(); req != 4 || got != 1 {
		t.Fatalf("%d requests, %d accepted; want 3 failures and then the alert once", req, got)
	}
}

// A group that keeps growing past the threshold after it was reported is
// reported again as growing, once the window has passed.
func TestGrowingGroupReportedOncePerWindow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	n := w.start(t, alerts.Config{URL: r.srv.URL, GrowthThreshold: 50, GrowthWindow: 300 * time.Millisecond})
	spec := pgtest.DeadSpec{Kind: "sync", Class: "api.500", Message: "upstream 500"}
	pgtest.DeadLetterN(t, w.st, w.queue, 10, spec)
	pgtest.Eventually(t, 30*time.Second, "the new group's alert", func() bool { _, got := r.counts(); return got >= 1 })
	pgtest.DeadLetterN(t, w.st, w.queue, 60, spec)
	pgtest.Eventually(t, 30*time.Second, "the growth alert", func() bool { _, got := r.counts(); return got >= 2 })
	settle(t, n)
	if _, got := r.counts(); got != 2 {
		t.Fatalf("%d alerts; want the new group and one growth", got)
	}
	e := r.alert(1)["events"].([]any)[0].(map[string]any)
	if e["type"] != alerts.EventGroupGrowing || e["growth"] != 60.0 || e["group"].(map[string]any)["count"] != 70.0 {
		t.Fatalf("the second alert: %v", e)
	}
}

// The Slack format posts {"text": ...} alone.
func TestSlackFormat(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	w.start(t, alerts.Config{URL: r.srv.URL, Format: alerts.FormatSlack})
	pgtest.DeadLetterN(t, w.st, w.queue, 3, pgtest.DeadSpec{Kind: "report", Class: "pdf.broken", Message: "broken pdf"})
	pgtest.Eventually(t, 30*time.Second, "the alert", func() bool { _, got := r.counts(); return got >= 1 })
	a := r.alert(0)
	if len(a) != 1 || !strings.Contains(a["text"].(string), "kind report, error class pdf.broken") {
		t.Fatalf("slack body: %v", a)
	}
}

// The Slack format escapes &, < and > in the text taken from the system (a
// handler's error message, a breaker's last error, an error class), so
// that a handler's error cannot ping the channel or show a link under
// words of its own; pgbus's own words are as they were.
func TestSlackFormatEscapesTextFromMessages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	w.start(t, alerts.Config{URL: r.srv.URL, Format: alerts.FormatSlack})
	pgtest.DeadLetterN(t, w.st, w.queue, 2, pgtest.DeadSpec{Kind: "k", Class: "c<1>",
		Message: "<!channel> card declined & see <https://evil.example|Click here>"})
	w.openBreaker(t, "http:bank", "<!here> bank down")
	var text string
	pgtest.Eventually(t, 30*time.Second, "the alerts of the group and of the breaker", func() bool {
		_, got := r.counts()
		var texts []string
		for i := range got {
			texts = append(texts, r.alert(i)["text"].(string))
		}
		text = strings.Join(texts, "\n")
		return strings.Contains(text, "card declined") && strings.Contains(text, "bank down")
	})
	for _, want := range []string{
		`pgbus: new dead-letter group on orders: kind k, error class c&lt;1&gt;, e.g. "&lt;!channel&gt; card declined &amp; see &lt;https://evil.example|Click here&gt;", 2 dead`,
		"pgbus health is DEGRADED (was OK)\n  - ",
		"(last error: &lt;!here&gt; bank down)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the Slack text does not hold %q:\n%s", want, text)
		}
	}
	for _, markup := range []string{"<!channel>", "<!here>", "<https://", "c<1>"} {
		if strings.Contains(text, markup) {
			t.Errorf("the Slack text holds %q as Slack would read it:\n%s", markup, text)
		}
	}
}

// One process at a time sends alerts: a second notifier on the same
// database stays quiet while the first leads.
func TestOneNotifierSends(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first, second := newReceiver(t, 0), newReceiver(t, 0)
	w.start(t, alerts.Config{URL: first.srv.URL})
	other := pgtest.OpenStore(t, w.st.Pool().Config().ConnString())
	svc, err := ops.New(other, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n2, err := alerts.New(other, svc, alerts.Config{URL: second.srv.URL, CheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n2.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	pgtest.DeadLetterN(t, w.st, w.queue, 5, pgtest.DeadSpec{Kind: "k", Class: "c", Message: "m"})
	pgtest.Eventually(t, 30*time.Second, "the leader's alert", func() bool { _, got := first.counts(); return got >= 1 })
	if req, _ := second.counts(); req != 0 || n2.Checks() != 0 {
		t.Fatalf("the second notifier checked %d times and posted %d requests while the first leads", n2.Checks(), req)
	}
}

// A program that closes the Store under a running Notifier has Run
// return, rather than fail a check at every interval until its context
// ends.
func TestRunReturnsWhenItsStoreIsClosed(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t)) // no other notifier leads there
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := alerts.New(st, svc, alerts.Config{URL: newReceiver(t, 0).srv.URL, CheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	pgtest.Eventually(t, 30*time.Second, "a first check", func() bool { return n.Checks() > 0 })
	st.Close()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run still runs a minute after its Store was closed")
	}
}

// New refuses a bad URL or format with what to do.
func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  alerts.Config
		want string
	}{
		{alerts.Config{URL: "hooks.example.com/x"}, "absolute http:// or https:// URL"},
		{alerts.Config{URL: "ftp://hooks.example.com/x"}, "absolute http:// or https:// URL"},
		{alerts.Config{URL: "https://hooks.example.com/x", Format: "xml"}, "use json"},
	} {
		if _, err := alerts.New(nil, nil, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v; want an error saying %q", c.cfg, err, c.want)
		}
	}
}

// New refuses a nil store or service, saying what to pass, where Run
// then panicked on the nil store or logged a failed check at every
// interval for ever.
func TestNewNeedsAStoreAndAService(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	svc, err := ops.New(st, ops.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := alerts.Config{URL: "https://hooks.example.com/x"}
	for name, c := range map[string]struct {
		st   *store.Store
		svc  *ops.Service
		want string
	}{
		"no store":   {nil, svc, "alerts.New needs a store: open one with store.Open"},
		"no service": {st, nil, "alerts.New needs a service: make one with ops.New"},
	} {
		n, err := alerts.New(c.st, c.svc, cfg)
		if n != nil || !errors.Is(err, ops.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New: %v, %v; want an invalid input saying %q", name, n, err, c.want)
		}
	}
}

// run runs a notifier until stop is called, and waits for its first
// checks.
func (w world) run(t *testing.T, cfg alerts.Config) (n *alerts.Notifier, stop func()) {
	t.Helper()
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 20 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n, err := alerts.New(w.st, w.svc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	pgtest.Eventually(t, 30*time.Second, "a notifier's first checks", func() bool { return n.Checks() >= 2 })
	return n, func() { cancel(); <-done }
}

// The process elected after another goes on from its last check: a group
// that appeared while no process sent alerts (between a stop and a
// restart) is reported by the next, and the groups reported before are
// not reported again.
func TestNextNotifierGoesOnFromTheLastCheck(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	run := func() (*alerts.Notifier, func()) { return w.run(t, alerts.Config{URL: r.srv.URL}) }
	first, stop := run()
	pgtest.DeadLetterN(t, w.st, w.queue, 5, pgtest.DeadSpec{Kind: "k", Class: "first.class", Message: "m"})
	pgtest.Eventually(t, 30*time.Second, "the first group's alert", func() bool { _, got := r.counts(); return got >= 1 })
	// The alert goes out before its check is recorded: checks after it
	// make sure one was.
	settle(t, first)
	stop()

	// While no process sends alerts, another group appears.
	pgtest.DeadLetterN(t, w.st, w.queue, 3, pgtest.DeadSpec{Kind: "k", Class: "meanwhile.class", Message: "m"})
	n, stop := run()
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert of the group that appeared meanwhile", func() bool { _, got := r.counts(); return got >= 2 })
	settle(t, n)
	if _, got := r.counts(); got != 2 {
		t.Fatalf("%d alerts; want the first group's, then the one that appeared meanwhile", got)
	}
	events := r.alert(1)["events"].([]any)
	if len(events) != 1 || events[0].(map[string]any)["group"].(map[string]any)["error_class"] != "meanwhile.class" {
		t.Fatalf("the second alert: %v", events)
	}
}

// A group whose dead-lettering began before the last check and committed
// after its reads, which that check could not see, is reported by the
// process elected next: the check stands for the time before the
// transaction began, where it stood for its own time and the group, first
// dead before it, was taken for known and never reported.
func TestGroupCommittedAfterTheLastCheckIsReportedByTheNext(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	w.checkThenStop(t, r.srv.URL)
	ctx := pgtest.Context(t)
	tx, err := w.st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	headers := fmt.Sprintf(`{"pgbus_kind": "k", "pgbus_dead_letter": {"version": 1, "reason": "non_retryable_error", "source_queue": %q,
		"source_msg_id": 1, "attempts": 1, "max_retries": 5, "error_class": "raced.class", "error_message": "m"}}`, w.queue)
	if _, err := tx.Exec(ctx, `INSERT INTO pgmq."q_`+w.queue+`_dlq" (vt, message, headers) VALUES (now(), '{}', $1::jsonb)`, headers); err != nil {
		t.Fatal(err)
	}
	first, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	settle(t, first) // checks made while the dead-lettering is under way
	stop()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	next, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert, from the next process", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, next)
	assertOneNewGroup(t, r, "raced.class")
}

// An alert not yet delivered when its process stops (here, retrying a
// receiver that is down) is not lost: its check was not recorded, so the
// process elected next reports the group again, once.
func TestAlertNotDeliveredBeforeAStopIsSentByTheNextNotifier(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 1_000_000) // down while the first process leads
	w.checkThenStop(t, r.srv.URL)
	pgtest.DeadLetterN(t, w.st, w.queue, 3, pgtest.DeadSpec{Kind: "k", Class: "undelivered.class", Message: "m"})
	first, stop := w.run(t, alerts.Config{URL: r.srv.URL, RetryBackoff: 50 * time.Millisecond})
	pgtest.Eventually(t, 30*time.Second, "a failed post of the new group's alert", func() bool { n, _ := r.counts(); return n >= 1 })
	// Checks after the failed post, which must not count it as sent.
	settle(t, first)
	stop()

	r.mu.Lock()
	r.failFirst = 0 // the receiver is back
	r.mu.Unlock()
	next, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert, from the next process", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, next)
	assertOneNewGroup(t, r, "undelivered.class")
}

// An alert given up on (every attempt failed) while its process goes on
// leading is not lost either: the process records no check after it, so
// the process elected next reports the group again.
func TestAlertGivenUpOnIsSentByTheNextNotifier(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 2)
	w.checkThenStop(t, r.srv.URL)
	pgtest.DeadLetterN(t, w.st, w.queue, 3, pgtest.DeadSpec{Kind: "k", Class: "given-up.class", Message: "m"})
	first, stop := w.run(t, alerts.Config{URL: r.srv.URL, MaxAttempts: 2, RetryBackoff: time.Millisecond})
	pgtest.Eventually(t, 30*time.Second, "both attempts at the new group's alert", func() bool { n, _ := r.counts(); return n >= 2 })
	// Checks after it gave up, which found nothing new: recording them
	// would take the group as reported.
	settle(t, first)
	stop()
	if _, got := r.counts(); got != 0 {
		t.Fatalf("%d alerts accepted while the receiver failed every attempt", got)
	}

	next, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert, from the next process", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, next)
	assertOneNewGroup(t, r, "given-up.class")
}

// checkThenStop runs a notifier until it recorded a check, then stops it.
// What dies after is new to the process elected next, whenever that one's
// checks run: a group dead-lettered while a process checks may be taken
// as known when its transaction began before a check that did not see it.
func (w world) checkThenStop(t *testing.T, url string) {
	t.Helper()
	_, stop := w.run(t, alerts.Config{URL: url})
	pgtest.Eventually(t, 30*time.Second, "a check recorded", func() bool {
		_, err := w.st.LastAlertCheck(pgtest.Context(t))
		return err == nil
	})
	stop()
}

// assertOneNewGroup checks that r accepted one alert, of one new group of
// the error class given.
func assertOneNewGroup(t *testing.T, r *receiver, class string) {
	t.Helper()
	if _, got := r.counts(); got != 1 {
		t.Fatalf("%d alerts accepted; want one, of the new group %s", got, class)
	}
	events := r.alert(0)["events"].([]any)
	if e := events[0].(map[string]any); len(events) != 1 || e["type"] != alerts.EventGroupNew || e["group"].(map[string]any)["error_class"] != class {
		t.Fatalf("the alert: %v; want the new group %s", events, class)
	}
}

// A group that grows while no process sends alerts is reported by the
// next once its growth since the last check passes the threshold; one
// that grew less is not.
func TestNextNotifierCountsGrowthWhileNoneChecked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	run := func() (*alerts.Notifier, func()) { return w.run(t, alerts.Config{URL: r.srv.URL, GrowthThreshold: 10}) }
	grows := pgtest.DeadSpec{Kind: "k", Class: "grows.class", Message: "m"}
	barely := pgtest.DeadSpec{Kind: "k", Class: "barely.class", Message: "m"}
	first, stop := run()
	pgtest.DeadLetterN(t, w.st, w.queue, 2, grows)
	pgtest.DeadLetterN(t, w.st, w.queue, 2, barely)
	pgtest.Eventually(t, 30*time.Second, "the alert of the new groups", func() bool { _, got := r.counts(); return got >= 1 })
	// Checks after the alert record that the groups were seen; they may
	// have come in one alert or two.
	settle(t, first)
	stop()
	_, before := r.counts()

	pgtest.DeadLetterN(t, w.st, w.queue, 12, grows)
	pgtest.DeadLetterN(t, w.st, w.queue, 9, barely)
	n, stop := run()
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert of the growth while none checked", func() bool { _, got := r.counts(); return got > before })
	settle(t, n)
	if _, got := r.counts(); got != before+1 {
		t.Fatalf("%d alerts; want the new groups' (%d), then one of the growth", got, before)
	}
	events := r.alert(before)["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("the second alert: %v; want one event", events)
	}
	e := events[0].(map[string]any)
	if e["type"] != alerts.EventGroupGrowing || e["group"].(map[string]any)["error_class"] != "grows.class" || e["growth"] != 12.0 {
		t.Fatalf("the second alert's event: %v; want grows.class growing by 12", e)
	}
}

// The process elected next knows the reasons of the verdict reported
// before it: when a second queue goes STALLED while none sends alerts, it
// reports that one, though the verdict was STALLED already, and not the
// first again.
func TestNextNotifierReportsANewReasonOfTheSameVerdict(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	stall := func(queue string) {
		t.Helper()
		pgtest.CreateQueue(t, w.st, queue)
		if _, err := w.st.Send(pgtest.Context(t), queue, store.NewMessage{Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	stall("jobs") // ready work that no worker serves
	_, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	pgtest.Eventually(t, 30*time.Second, "the alert of jobs STALLED", func() bool { _, got := r.counts(); return got >= 1 })
	pgtest.Eventually(t, 30*time.Second, "its check recorded", func() bool {
		c, err := w.st.LastAlertCheck(pgtest.Context(t))
		return err == nil && len(c.Reasons) == 1
	})
	stop()

	stall("q3")
	n, stop := w.run(t, alerts.Config{URL: r.srv.URL})
	defer stop()
	pgtest.Eventually(t, 30*time.Second, "the alert of q3 STALLED", func() bool { _, got := r.counts(); return got >= 2 })
	settle(t, n)
	if _, got := r.counts(); got != 2 {
		t.Fatalf("%d alerts; want jobs STALLED, then q3 STALLED too", got)
	}
	events := r.alert(1)["events"].([]any)
	e := events[0].(map[string]any)
	if len(events) != 1 || e["type"] != alerts.EventHealthChanged || e["status"] != ops.HealthStalled || e["previous_status"] != ops.HealthStalled {
		t.Fatalf("the second alert: %v; want the verdict STALLED, as before", events)
	}
	var fresh []string
	for _, reason := range e["reasons"].([]any) {
		if reason := reason.(map[string]any); reason["new"] == true {
			fresh = append(fresh, reason["queue"].(string)+" "+reason["code"].(string))
		}
	}
	if strings.Join(fresh, ", ") != "q3 no_workers" {
		t.Fatalf("the second alert's new reasons: %v; want q3 no_workers alone: %v", fresh, e)
	}
}

// A second circuit breaker opening on a queue whose first is open already
// is a new reason: what tells breakers apart is their name, not the queue
// they hold up.
func TestSecondBreakerOpenOnTheSameQueueIsReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := newReceiver(t, 0)
	n := w.start(t, alerts.Config{URL: r.srv.URL})
	w.openBreaker(t, "http:bank", "503")
	pgtest.Eventually(t, 30*time.Second, "the alert of the first breaker", func() bool { _, got := r.counts(); return got >= 1 })
	w.openBreaker(t, "http:mail", "503")
	pgtest.Eventually(t, 30*time.Second, "the alert of the second breaker", func() bool { _, got := r.counts(); return got >= 2 })
	settle(t, n)
	if _, got := r.counts(); got != 2 {
		t.Fatalf("%d alerts; want one per breaker", got)
	}
	text := r.alert(1)["text"].(string)
	if !strings.Contains(text, "still DEGRADED") || !strings.Contains(text, `new: circuit breaker "http:mail"`) || strings.Contains(text, `new: circuit breaker "http:bank"`) {
		t.Fatalf("the second alert: %q; want http:mail new beside http:bank", text)
	}
}

// openBreaker opens a circuit breaker that the world's queue uses, after
// one failure whose error is lastError: the verdict says it is open.
func (w world) openBreaker(t *testing.T, name, lastError string) {
	t.Helper()
	ctx := pgtest.Context(t)
	if err := w.st.EnsureBreaker(ctx, store.BreakerConfig{Name: name, FailureThreshold: 1, CoolOff: time.Hour, MaxCoolOff: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := w.st.RecordBreakerUsers(ctx, name, []store.BreakerUser{{Queue: w.queue}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.BreakerFailed(ctx, name, lastError); err != nil {
		t.Fatal(err)
	}
}

// With more dead-letter groups than a summary lists, the notifier says
// once that it watches only the largest.
func TestNotifierSaysOnceItWatchesOnlyTheLargestGroups(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	groups := store.MaxDeadGroups + 5
	// Five kinds by 101 classes: 505 groups of one.
	if err := w.st.BulkLoadDead(pgtest.Context(t), w.queue, groups, groups/5); err != nil {
		t.Fatal(err)
	}
	var logs pgtest.SyncBuffer
	n := w.start(t, alerts.Config{URL: newReceiver(t, 0).srv.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	settle(t, n)
	out := logs.String()
	if c := strings.Count(out, "too many to watch all"); c != 1 || !strings.Contains(out, fmt.Sprintf("watched=%d groups=%d", store.MaxDeadGroups, groups)) {
		t.Fatalf("the log says %d times that only the largest groups are watched, want once with the counts:\n%s", c, out)
	}
}

// A new group of one message is reported however many larger groups
// there are: the notifier compares every group, not only those that fit
// an agent's response (the world's service has the agents' bounds).
func TestNewSmallGroupAmongManyIsReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Five kinds by 24 classes: 120 groups of three.
	if err := w.st.BulkLoadDead(pgtest.Context(t), w.queue, 360, 24); err != nil {
		t.Fatal(err)
	}
	if sum, err := w.svc.DLQSummary(pgtest.Context(t), ops.DLQSummaryRequest{}); err != nil || !sum.Truncated {
		t.Fatalf("for an agent: %d of %d groups, %v; the fixture should pass the response bound", len(sum.Groups), sum.TotalGroups, err)
	}
	r := newReceiver(t, 0)
	n := w.start(t, alerts.Config{URL: r.srv.URL})
	pgtest.DeadLetterN(t, w.st, w.queue, 1, pgtest.DeadSpec{Kind: "k", Class: "small.class", Message: "m"})
	pgtest.Eventually(t, 30*time.Second, "the small group's alert", func() bool { _, got := r.counts(); return got >= 1 })
	settle(t, n)
	events := r.alert(0)["events"].([]any)
	group, _ := events[0].(map[string]any)["group"].(map[string]any)
	if _, got := r.counts(); got != 1 || len(events) != 1 || group["error_class"] != "small.class" {
		t.Fatalf("alerts: %v; want one, of the small group", events)
	}
}

// While the database does not answer, no process can be elected to check,
// so the one that sent the alerts says so itself, once, with the verdict
// UNREACHABLE and why; its return is reported as that verdict's change.
// A team that watches only the webhook heard nothing of an outage.
func TestDatabaseOutageIsReported(t *testing.T) {
	t.Parallel()
	dir, cluster, st := pgtest.PrivateStore(t)
	w := worldOn(t, st)
	r := newReceiver(t, 0)
	w.start(t, alerts.Config{URL: r.srv.URL, CheckInterval: 100 * time.Millisecond})
	statuses := func() (out [][2]string) {
		_, n := r.counts()
		for i := range n {
			for _, e := range r.alert(i)["events"].([]any) {
				ev := e.(map[string]any)
				if ev["type"] == alerts.EventHealthChanged {
					prev, _ := ev["previous_status"].(string)
					out = append(out, [2]string{prev, ev["status"].(string)})
				}
			}
		}
		return out
	}
	if err := cluster.Stop(pgtest.Context(t)); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, time.Minute, "the outage reported", func() bool { return len(statuses()) >= 1 })
	// Many checks fail while it lasts; one alert says so.
	time.Sleep(time.Second)
	if got := statuses(); len(got) != 1 || got[0] != [2]string{ops.HealthOK, ops.HealthUnreachable} {
		t.Fatalf("verdicts reported during the outage: %v; want one, OK to UNREACHABLE", got)
	}
	_, n := r.counts()
	ev := r.alert(n - 1)["events"].([]any)[0].(map[string]any)
	if reasons, _ := ev["reasons"].([]any); len(reasons) != 1 || reasons[0].(map[string]any)["code"] != "database_unreachable" {
		t.Fatalf("the outage's reasons: %v; want database_unreachable", ev["reasons"])
	}
	pgtest.StartCluster(t, dir)
	pgtest.Eventually(t, time.Minute, "the return reported", func() bool { return len(statuses()) >= 2 })
	if got := statuses(); got[1] != [2]string{ops.HealthUnreachable, ops.HealthOK} {
		t.Fatalf("verdicts reported: %v; want the return from UNREACHABLE to OK", got)
	}
}
