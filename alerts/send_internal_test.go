package alerts

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
)

// While the receiver hangs, alerts queue up to QueueSize; more drop the
// oldest waiting, each drop logged, and enqueue never waits.
func TestSenderDropsOldestWhenFull(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a Alert
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &a)
		mu.Lock()
		got = append(got, a.Text)
		first := len(got) == 1
		mu.Unlock()
		if first {
			<-release
		}
	}))
	defer srv.Close()
	var logs pgtest.SyncBuffer
	cfg := Config{URL: srv.URL, QueueSize: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))}.withDefaults()
	s := newSender(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	received := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	s.add(&Alert{Text: "a1"}, nil)
	pgtest.Eventually(t, 30*time.Second, "the first alert at the receiver", func() bool { return received() >= 1 })
	for _, text := range []string{"a2", "a3", "a4", "a5"} {
		s.add(&Alert{Text: text}, nil) // the receiver hangs: these wait
	}
	close(release)
	pgtest.Eventually(t, 30*time.Second, "three alerts at the receiver", func() bool { return received() >= 3 })
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "a1,a4,a5" {
		t.Fatalf("received %v; want the first and the two newest", got)
	}
	if n := strings.Count(logs.String(), "dropped the oldest alert"); n != 2 {
		t.Fatalf("%d drops logged, want 2:\n%s", n, logs.String())
	}
}

// A receiver that refuses the alert (401: a wrong token) is not asked
// again, and the log says what to check.
func TestSenderGivesUpOnRefusal(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "bad token", http.StatusUnauthorized)
	}))
	defer srv.Close()
	var logs pgtest.SyncBuffer
	cfg := Config{URL: srv.URL, RetryBackoff: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}.withDefaults()
	if newSender(cfg).deliver(context.Background(), Alert{Text: "x"}) {
		t.Fatal("a refused alert counted as sent")
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests; want one, no retry of a refusal", n)
	}
	if out := logs.String(); !strings.Contains(out, "401 Unauthorized") || !strings.Contains(out, "check alerts.url and alerts.headers") {
		t.Fatalf("the log does not say what to check:\n%s", out)
	}
}
