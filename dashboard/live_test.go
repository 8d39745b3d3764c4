package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// liveCounts is the part of /live's answer the test checks.
type liveCounts struct {
	Status       string `json:"status"`
	Queues       int    `json:"queues"`
	Backlog      int64  `json:"backlog"`
	DeadMessages int64  `json:"dead_messages"`
	Workers      int    `json:"workers_running"`
	QueueStats   []struct {
		Queue        string `json:"queue"`
		Visible      int64  `json:"visible"`
		InFlight     int64  `json:"in_flight"`
		WaitingRetry int64  `json:"waiting_retry"`
		Scheduled    int64  `json:"scheduled"`
		DLQDepth     int64  `json:"dlq_depth"`
		Paused       bool   `json:"paused"`
		Dropped      bool   `json:"dropped"`
	} `json:"queue_stats"`
	QueuesOmitted  int `json:"queues_omitted"`
	QueuesFiltered int `json:"queues_filtered"`
}

// live fetches /live, checks it is JSON that no cache keeps, and decodes
// it.
func (b *browser) live() (int, liveCounts) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+"/live", nil)
	if err != nil {
		b.t.Fatal(err)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("GET /live: %v", err)
	}
	defer resp.Body.Close()
	if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); !strings.HasPrefix(ct, "application/json") || cc != "no-store" {
		b.t.Fatalf("GET /live: %d, Content-Type %q, Cache-Control %q; want JSON, no-store", resp.StatusCode, ct, cc)
	}
	var out liveCounts
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.t.Fatalf("GET /live: %d, not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// /live answers the counts of health and queue_stats, to a logged-in
// browser only (401 otherwise, no redirect), on a read-only server too;
// the overview marks the elements its script updates and has no inline
// script, which the Content-Security-Policy would block.
func TestLiveCounts(t *testing.T) {
	t.Parallel()
	st := pgtest.OpenStore(t, pgtest.NewDatabase(t))
	svc := newService(t, st)
	q := pgtest.NewQueue(t, st, "dash_live")
	for range 3 {
		if _, err := svc.Send(pgtest.Context(t), ops.SendRequest{Queue: q, Payload: []byte(`{"n":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.DeadLetterN(t, st, q, 2, pgtest.DeadSpec{Kind: "k", Class: "E", Message: "boom"})
	token := newToken(t)
	addr := serve(t, st, serverOpts{token: token})

	anon := newBrowser(t, addr)
	if code, _ := anon.live(); code != http.StatusUnauthorized {
		t.Fatalf("GET /live without logging in: %d, want 401", code)
	}

	b := newBrowser(t, addr)
	b.login(token)
	code, got := b.live()
	h, err := svc.Health(pgtest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := svc.QueueStats(pgtest.Context(t), ops.QueueStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || got.Status != h.Status || got.Queues != counted(h.Queues) || got.Backlog != counted(h.Backlog) || got.DeadMessages != counted(h.DeadMessages) || got.Workers != counted(h.Workers) {
		t.Fatalf("GET /live: %d %+v; health says %+v", code, got, h)
	}
	if len(got.QueueStats) != len(qs.Queues) {
		t.Fatalf("/live has %d queues, queue_stats %d", len(got.QueueStats), len(qs.Queues))
	}
	for i, want := range qs.Queues {
		g := got.QueueStats[i]
		if g.Queue != want.Queue || g.Visible != want.Visible || g.InFlight != want.InFlight || g.WaitingRetry != want.WaitingRetry ||
			g.Scheduled != want.Scheduled || g.DLQDepth != want.DLQDepth {
			t.Fatalf("/live's queue %d is %+v; queue_stats says %+v", i, g, want)
		}
		if g.Queue == q && (g.Visible != 3 || g.DLQDepth != 2) {
			t.Fatalf("/live's %s: %+v, want 3 ready and 2 dead", q, g)
		}
	}
	if counted(h.Backlog) < 3 || counted(h.DeadMessages) < 2 {
		t.Fatalf("health counts %d ready and %d dead: the messages sent are not there, the test checks nothing", counted(h.Backlog), counted(h.DeadMessages))
	}

	resp, err := b.c.Get(b.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("the overview's Content-Security-Policy %q does not allow the dashboard's own script and fetches, or allows inline ones", csp)
	}
	_, page, _ := b.get("/")
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/static/live.js?v=`) {
		t.Fatalf("the overview should load /static/live.js and hold no other script:\n%s", page)
	}
	for _, mark := range []string{`data-live-src="/live"`, `data-live="dead_messages"`, `<tr data-queue="` + q + `">`, `data-count="visible">3<`, `data-count="dlq_depth"><a href="/dlq?queue=` + q + `">2</a>`} {
		if !strings.Contains(page, mark) {
			t.Fatalf("the overview lacks %s:\n%s", mark, page)
		}
	}
	if code, js, _ := b.get("/static/live.js"); code != http.StatusOK || !strings.Contains(js, "visibilityState") {
		t.Fatalf("GET /static/live.js: %d", code)
	}

	ro := newBrowser(t, serve(t, st, serverOpts{token: token, readOnly: true}))
	ro.login(token)
	if code, got := ro.live(); code != http.StatusOK || got.DeadMessages != counted(h.DeadMessages) {
		t.Fatalf("GET /live on a read-only server: %d %+v", code, got)
	}
}
