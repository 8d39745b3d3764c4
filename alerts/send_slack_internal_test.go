package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// An alert whose text is longer than Slack keeps of a message (40,000
// characters, the rest cut off without a word) is posted cut at a line,
// saying how many lines were left out and where to see them all.
func TestSlackTextFitsSlacksLimit(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]string
		_ = json.Unmarshal(body, &m)
		got <- m["text"]
	}))
	defer srv.Close()
	var events []Event
	for i := range 100 {
		events = append(events, Event{Type: EventGroupNew, Group: &Group{Queue: "orders", Kind: "charge", ErrorClass: fmt.Sprintf("http.%d", 400+i),
			Error: strings.Repeat("é<", 500), Count: 1}})
	}
	cfg := Config{URL: srv.URL, Format: FormatSlack}.withDefaults()
	if !newSender(cfg).deliver(context.Background(), Alert{Status: "DEGRADED", Events: events}) {
		t.Fatal("the alert was not sent")
	}
	text := <-got
	if n := utf8.RuneCountInString(text); n > 40000 {
		t.Fatalf("the text is %d characters; Slack keeps 40,000", n)
	}
	if !strings.HasPrefix(text, "pgbus: new dead-letter group on orders: kind charge, error class http.400") ||
		!strings.Contains(text, "more lines not shown") || !strings.Contains(text, "pgbus dlq summary") {
		t.Fatalf("the text does not begin with the first group, nor say what it left out:\n%s", text[max(0, len(text)-300):])
	}
	last := text[strings.LastIndex(text, "\n")+1:]
	body := text[:strings.LastIndex(text, "\n")]
	if !strings.HasSuffix(body, ", 1 dead") {
		t.Fatalf("the text is cut inside a line: %q", body[max(0, len(body)-100):])
	}
	if want := fmt.Sprintf("%d more lines not shown", 100-strings.Count(body, "\n")-1); !strings.Contains(last, want) {
		t.Fatalf("the last line %q does not say %q", last, want)
	}
}

// A JSON webhook gets at most MaxJSONEvents events of an alert, with how
// many it was not sent, and its text fitted as Slack's: a check that finds
// hundreds of groups posts a body receivers take, not megabytes.
func TestJSONAlertIsBounded(t *testing.T) {
	t.Parallel()
	var events []Event
	for i := range 500 {
		events = append(events, Event{Type: EventGroupNew, Group: &Group{Queue: "orders", Kind: "charge", ErrorClass: fmt.Sprintf("http.%d", i),
			Error: strings.Repeat("e", 1000), Count: 1}})
	}
	a, body := deliverJSON(t, "DEGRADED", events)
	if len(a.Events) != MaxJSONEvents || a.EventsOmitted != 500-MaxJSONEvents || a.Events[0].Group.ErrorClass != "http.0" {
		t.Fatalf("%d events, %d omitted, first %+v; want the first %d and %d omitted", len(a.Events), a.EventsOmitted, a.Events[0].Group, MaxJSONEvents, 500-MaxJSONEvents)
	}
	if n := utf8.RuneCountInString(a.Text); n > 40000 || !strings.Contains(a.Text, "more lines not shown") {
		t.Fatalf("text of %d characters, ending %q; want at most 40,000 saying what it left out", n, a.Text[max(0, len(a.Text)-100):])
	}
	if len(body) > 400<<10 {
		t.Fatalf("the body is %d bytes", len(body))
	}
}

// A JSON webhook's health event lists at most MaxJSONReasons reasons, the
// new ones first, with how many it left out: a fleet whose workers all
// stopped makes one reason per queue with a backlog, and a check that
// found a thousand of them posted them all in one event, beside a text
// already cut to 40,000 characters.
func TestJSONAlertBoundsReasons(t *testing.T) {
	t.Parallel()
	e := Event{Type: EventHealthChanged, Status: "STALLED", PreviousStatus: "STALLED"}
	const n = 1000
	for i := range n {
		e.Reasons = append(e.Reasons, Reason{Status: "STALLED", Code: "no_workers", Queue: fmt.Sprintf("q%04d", i),
			Message: fmt.Sprintf("queue \"q%04d\": 5 messages ready, 0 waiting to retry; no worker process has served queue q%04d in the last 24 hours: its messages will not run until one is started", i, i),
			New:     i >= n-3})
	}
	events := []Event{e}
	a, body := deliverJSON(t, "STALLED", events)
	r := a.Events[0].Reasons
	if len(r) != MaxJSONReasons || a.Events[0].ReasonsOmitted != n-MaxJSONReasons {
		t.Fatalf("%d reasons, %d omitted; want %d and %d omitted", len(r), a.Events[0].ReasonsOmitted, MaxJSONReasons, n-MaxJSONReasons)
	}
	if !r[0].New || !r[2].New || r[3].New || r[0].Queue != fmt.Sprintf("q%04d", n-3) || r[3].Queue != "q0000" {
		t.Fatalf("reasons begin %+v; want the 3 new ones first, then the others in order", r[:4])
	}
	if len(e.Reasons) != n {
		t.Fatalf("the event's own reasons were cut to %d", len(e.Reasons))
	}
	if len(body) > 100<<10 {
		t.Fatalf("the body is %d bytes", len(body))
	}
}

// deliverJSON sends an alert of status and events, with their text, to a
// JSON webhook, and returns the alert it received and its body.
func deliverJSON(t *testing.T, status string, events []Event) (Alert, []byte) {
	t.Helper()
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- body
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Format: FormatJSON}.withDefaults()
	if !newSender(cfg).deliver(context.Background(), Alert{Status: status, Events: events, Text: Text(events)}) {
		t.Fatal("the alert was not sent")
	}
	body := <-got
	var a Alert
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("body: %v", err)
	}
	return a, body
}
