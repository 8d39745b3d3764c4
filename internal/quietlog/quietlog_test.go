package quietlog_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/quietlog"
)

// A failure met at every probe is told at its first time, then once a
// minute; after a success, the next failure is told at once.
func TestLog(t *testing.T) {
	t.Parallel()
	var q quietlog.Log
	start := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	var told []int
	for s := 0; s <= 150; s += 5 { // a probe every 5 seconds
		if q.Due(start.Add(time.Duration(s) * time.Second)) {
			told = append(told, s)
		}
	}
	if len(told) != 3 || told[0] != 0 || told[1] != 60 || told[2] != 120 {
		t.Fatalf("a failure at every probe for 150s was told at %v seconds, want 0, 60 and 120", told)
	}
	q.OK()
	if !q.Due(start.Add(155 * time.Second)) {
		t.Fatal("a failure after a success was not told at once")
	}
}

// Failures of each code are told at their first time and then once a
// minute, with the count of those met untold meanwhile; codes are paced
// apart.
func TestByCode(t *testing.T) {
	t.Parallel()
	var b quietlog.ByCode
	start := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	if told, quiet := b.Due(404, start); !told || quiet != 0 {
		t.Fatalf("first 404: told %v, quiet %d; want told, 0", told, quiet)
	}
	for s := 1; s <= 10; s++ {
		if told, _ := b.Due(404, start.Add(time.Duration(s)*time.Second)); told {
			t.Fatalf("a 404 %ds after the first was told", s)
		}
	}
	if told, _ := b.Due(401, start.Add(5*time.Second)); !told {
		t.Fatal("the first 401, after 404s, was not told")
	}
	if told, quiet := b.Due(404, start.Add(61*time.Second)); !told || quiet != 10 {
		t.Fatalf("a 404 a minute later: told %v, quiet %d; want told, 10", told, quiet)
	}
}

// ServerLog passes net/http's lines on at WARN, and tells its accept
// errors, logged at each retry, once with what to do.
func TestServerLog(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := quietlog.ServerLog(slog.New(slog.NewTextHandler(&buf, nil)), "the test server")
	for range 5 {
		l.Printf("http: Accept error: accept tcp 127.0.0.1:1: accept4: too many open files; retrying in 5ms")
	}
	l.Printf("http: Accept error: accept tcp 127.0.0.1:1: accept4: connection aborted; retrying in 5ms")
	l.Printf("http: TLS handshake error from 127.0.0.1:2: EOF")
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "the test server cannot accept connections: this process has no file descriptor left") || !strings.Contains(lines[0], "ulimit -n") ||
		!strings.Contains(lines[1], "cannot accept connections") || !strings.Contains(lines[1], "connection aborted") ||
		!strings.Contains(lines[2], "level=WARN") || !strings.Contains(lines[2], "TLS handshake error") {
		t.Errorf("ServerLog wrote:\n%s\nwant the accept errors told once each, and the other line passed on at WARN", out)
	}
}
