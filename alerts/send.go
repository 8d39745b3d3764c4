package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/retryafter"
	"github.com/pgbus/pgbus/store"
)

// Body formats of the webhook.
const (
	// FormatJSON posts an Alert as JSON.
	FormatJSON = "json"
	// FormatSlack posts {"text": ...}, which Slack's incoming webhooks
	// and the chats compatible with them show as a message.
	FormatSlack = "slack"
)

// Alert is what one check found, posted as one webhook.
type Alert struct {
	Source string `json:"source"`
	// Status is the health verdict at the check.
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	Events []Event   `json:"events"`
	// EventsOmitted counts the events a JSON webhook was not sent, past
	// the first MaxJSONEvents.
	EventsOmitted int `json:"events_omitted,omitempty"`
	// Text says it all in a few lines, for a person.
	Text string `json:"text"`
}

// MaxJSONEvents is how many events a JSON webhook gets in one alert, and
// maxTextChars how long its text may be: a check that finds hundreds of
// new dead-letter groups would otherwise post megabytes, which receivers
// refuse, losing the alert.
const (
	MaxJSONEvents = 100
	maxTextChars  = 40000
)

// MaxJSONReasons is how many reasons a JSON webhook's health event lists:
// a fleet whose workers all stopped gives one reason per queue with a
// backlog, hundreds of bytes each.
const MaxJSONReasons = 100

// sender posts alerts from its own goroutine, so that no caller waits on
// the network: a bounded queue, the oldest alert dropped (and logged) when
// it is full, and each post retried with backoff while the receiver fails.
//
// It also records the checks, in the order they ran, each only once its
// alert and every alert queued before it were delivered: the process
// elected next goes on from the last check recorded, so that it reports
// again, rather than loses, an alert still queued when this process stops
// or one given up on. Once an alert is given up on (or dropped), no later
// check of the same term is recorded, since recording one would count that
// alert as delivered.
type sender struct {
	cfg Config
	log *slog.Logger
	// record records a check; nil records nothing.
	record func(context.Context, store.AlertCheck) error

	mu    sync.Mutex
	queue []queued
	// alerts counts the queued items that hold an alert: the checks that
	// found nothing are not what QueueSize bounds.
	alerts int
	// term counts the elections this process won: the items of an earlier
	// term are not recorded, its Watcher having gone on from the check
	// recorded when it was elected again.
	term int
	// lost is set when an alert of this term was given up on or dropped.
	lost bool
	wake chan struct{}
}

// queued is one check waiting for its alert to be posted (alert nil when
// it found nothing) and then to be recorded (check nil: not recorded).
type queued struct {
	alert *Alert
	check *store.AlertCheck
	term  int
}

func newSender(cfg Config) *sender {
	return &sender{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
}

// add queues, without waiting, a check's alert (nil when the check found
// nothing) and the check, recorded once the alert is delivered.
func (s *sender) add(a *Alert, c *store.AlertCheck) {
	s.mu.Lock()
	it := queued{alert: a, check: c, term: s.term}
	switch {
	case a == nil && len(s.queue) > 0 && s.queue[len(s.queue)-1].alert == nil:
		// Only the later of two checks that found nothing needs recording.
		s.queue[len(s.queue)-1] = it
	default:
		if a != nil && s.alerts >= s.cfg.QueueSize {
			s.dropOldest()
		}
		s.queue = append(s.queue, it)
		if a != nil {
			s.alerts++
		}
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// dropOldest drops the oldest alert waiting; s.mu is held.
func (s *sender) dropOldest() {
	for i, it := range s.queue {
		if it.alert == nil {
			continue
		}
		s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
		s.alerts--
		s.lost = s.lost || it.term == s.term
		s.log.Warn("pgbus alerts: the webhook is behind; dropped the oldest alert not yet sent (the process elected after this one reports it again)", "at", it.alert.At,
			"text", it.alert.Text, "queued", s.cfg.QueueSize)
		return
	}
}

// restart begins a new term, when this process is elected (again): what
// an earlier term left queued is dropped, since the new Watcher goes on
// from the last check recorded, before any of it, and reports it again.
func (s *sender) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alerts > 0 {
		s.log.Info("pgbus alerts: elected again; the alerts not sent before are reported again from the last check recorded", "alerts", s.alerts)
	}
	s.queue, s.alerts, s.lost = nil, 0, false
	s.term++
}

func (s *sender) next() (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return queued{}, false
	}
	it := s.queue[0]
	s.queue = s.queue[1:]
	if it.alert != nil {
		s.alerts--
	}
	return it, true
}

// run posts queued alerts and records their checks until ctx ends; the
// alerts not sent by then are logged as such.
func (s *sender) run(ctx context.Context) {
	for ctx.Err() == nil {
		it, ok := s.next()
		if !ok {
			select {
			case <-ctx.Done():
			case <-s.wake:
			}
			continue
		}
		if it.alert != nil && !s.deliver(ctx, *it.alert) {
			if ctx.Err() != nil {
				s.enqueueFront(it)
				continue
			}
			s.mu.Lock()
			s.lost = s.lost || it.term == s.term
			s.mu.Unlock()
			continue
		}
		s.recordCheck(ctx, it)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.alerts > 0 {
		oldest := slices.IndexFunc(s.queue, func(it queued) bool { return it.alert != nil })
		s.log.Warn("pgbus alerts: stopping with alerts not sent; the process elected next reports them again", "alerts", s.alerts, "oldest", s.queue[oldest].alert.Text)
	}
}

// recordCheck records the check of an item whose alert, and every alert
// of its term before it, was delivered.
func (s *sender) recordCheck(ctx context.Context, it queued) {
	s.mu.Lock()
	ok := s.record != nil && it.check != nil && it.term == s.term && !s.lost
	s.mu.Unlock()
	if !ok {
		return
	}
	// Recorded even when the process is stopping, so that an alert just
	// delivered is not reported again by the process elected next.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	defer cancel()
	if err := s.record(rctx, *it.check); err != nil {
		s.log.Warn("pgbus alerts: could not record the check; the process elected after this one goes on from the last one recorded", "err", err)
	}
}

// enqueueFront puts back an item whose post was cut short by the stop.
func (s *sender) enqueueFront(it queued) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append([]queued{it}, s.queue...)
	if it.alert != nil {
		s.alerts++
	}
}

// deliver posts one alert, retrying failures with backoff up to
// MaxAttempts; a receiver that refuses the request (a 4xx other than 408
// and 429) is not asked again. It reports whether the alert was sent.
func (s *sender) deliver(ctx context.Context, a Alert) bool {
	body, err := s.body(a)
	if err != nil {
		s.log.Error("pgbus alerts: could not encode an alert; it is dropped", "err", err)
		return false
	}
	delay := s.cfg.RetryBackoff
	for attempt := 1; ; attempt++ {
		retry, after, err := s.post(ctx, body)
		if err == nil {
			s.log.Info("pgbus alerts: alert sent", "status", a.Status, "events", len(a.Events), "attempt", attempt)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !retry || attempt >= s.cfg.MaxAttempts {
			s.log.Error("pgbus alerts: alert not delivered; giving up on it", "err", err, "attempts", attempt, "text", a.Text)
			return false
		}
		wait := max(delay, after)
		s.log.Warn("pgbus alerts: webhook failed; retrying", "err", err, "attempt", attempt, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(delay*2, s.cfg.RetryBackoffMax)
	}
}

func (s *sender) body(a Alert) ([]byte, error) {
	if s.cfg.Format == FormatSlack {
		t := slackEscape(a.Text)
		if len(a.Events) > 0 {
			t = text(a.Events, slackEscape)
		}
		return json.Marshal(map[string]string{"text": fitText(t)})
	}
	if len(a.Events) > MaxJSONEvents {
		a.EventsOmitted = len(a.Events) - MaxJSONEvents
		a.Events = a.Events[:MaxJSONEvents]
	}
	a.Events = slices.Clone(a.Events)
	for i := range a.Events {
		fitReasons(&a.Events[i])
	}
	a.Text = fitText(a.Text)
	return json.Marshal(a)
}

// fitReasons keeps the first MaxJSONReasons of e's reasons, the new ones
// (no alert told of them yet) first and the others after them, each in
// their order, and counts the rest in e.ReasonsOmitted. e's reasons are
// copied, not changed: the check's record keeps them all.
func fitReasons(e *Event) {
	if len(e.Reasons) <= MaxJSONReasons {
		return
	}
	kept := make([]Reason, 0, MaxJSONReasons)
	for _, fresh := range []bool{true, false} {
		for _, r := range e.Reasons {
			if r.New == fresh && len(kept) < MaxJSONReasons {
				kept = append(kept, r)
			}
		}
	}
	e.ReasonsOmitted = len(e.Reasons) - len(kept)
	e.Reasons = kept
}

// fitText cuts t to maxTextChars characters (as many as Slack keeps of a
// message's text, cutting off the rest without a word) at the end of a
// line, the last line saying how many were left out and where to see them
// all, so that a check that found many groups does not end mid-sentence
// with no sign of the rest.
func fitText(t string) string {
	if utf8.RuneCountInString(t) <= maxTextChars {
		return t
	}
	lines := strings.Split(t, "\n")
	const room = maxTextChars - 200 // for the last line
	kept, n := 0, 0
	for kept < len(lines) {
		w := utf8.RuneCountInString(lines[kept]) + 1
		if n+w > room {
			break
		}
		n += w
		kept++
	}
	head := strings.Join(lines[:kept], "\n")
	if kept == 0 { // one line longer than the room: cut inside it
		head, kept = string([]rune(t)[:room])+"…", 1
	}
	return head + fmt.Sprintf("\n… %d more lines not shown: see pgbus health and pgbus dlq summary", len(lines)-kept)
}

// slackEscape escapes the characters Slack reads as markup (&, <, >) as
// its documentation says, so that an error message holding <!channel> or
// <https://example.com|a link> is shown as written, neither pinging a
// channel nor disguising a link.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// maxRetryAfter bounds how long a receiver's Retry-After makes the next
// attempt wait: alerts queued behind it wait as long.
const maxRetryAfter = 15 * time.Minute

// post sends one request; retry says whether a failure is worth another,
// and after how long the receiver asked to wait before it (Retry-After),
// 0 when it did not say.
func (s *sender) post(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("alerts: build the webhook request: %w", withoutPath(err))
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return true, 0, fmt.Errorf("alerts: post to the webhook: %w; check that alerts.url in the configuration file is reachable from this host", withoutPath(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, 0, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		to := "another address"
		if loc, err := resp.Location(); err == nil {
			to = site(loc.String())
		}
		return false, 0, fmt.Errorf("alerts: the webhook answered %s, redirecting to %s, and alerts are not posted to an address the configuration does not name; set alerts.url in the configuration file to the address it redirects to",
			resp.Status, to)
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		after, _ := retryafter.Wait(resp.Header, time.Now(), maxRetryAfter)
		return true, after, fmt.Errorf("alerts: the webhook answered %s: %s", resp.Status, strings.TrimSpace(string(snippet)))
	}
	return false, 0, fmt.Errorf("alerts: the webhook refused the alert with %s: %s; check alerts.url and alerts.headers (a token?) in the configuration file",
		resp.Status, strings.TrimSpace(string(snippet)))
}

// withoutPath returns err with the URL it quotes (the client's errors are
// *url.Error, naming the URL they were posting to) cut to its scheme and
// host. A webhook's path or query is often its secret (a Slack incoming
// webhook's /services/T…/B…/<token>), which redaction does not recognise,
// and these errors are logged.
func withoutPath(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	return &url.Error{Op: ue.Op, URL: site(ue.URL), Err: withoutPath(ue.Err)}
}

// site is a URL's scheme and host, then "/…" when it had more; "…" when it
// cannot be read.
func site(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "…"
	}
	s := u.Scheme + "://" + u.Host
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		s += "/…"
	}
	return s
}
