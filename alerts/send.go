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
	"strings"
	"sync"
	"time"
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
	// Text says it all in a few lines, for a person.
	Text string `json:"text"`
}

// sender posts alerts from its own goroutine, so that no caller waits on
// the network: a bounded queue, the oldest alert dropped (and logged) when
// it is full, and each post retried with backoff while the receiver fails.
type sender struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	queue []Alert
	wake  chan struct{}
}

func newSender(cfg Config) *sender {
	return &sender{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1)}
}

// enqueue queues an alert without waiting.
func (s *sender) enqueue(a Alert) {
	s.mu.Lock()
	if len(s.queue) >= s.cfg.QueueSize {
		dropped := s.queue[0]
		s.queue = s.queue[1:]
		s.log.Warn("pgbus alerts: the webhook is behind; dropped the oldest alert not yet sent", "at", dropped.At,
			"text", dropped.Text, "queued", s.cfg.QueueSize)
	}
	s.queue = append(s.queue, a)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sender) next() (Alert, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Alert{}, false
	}
	a := s.queue[0]
	s.queue = s.queue[1:]
	return a, true
}

// run posts queued alerts until ctx ends; those not sent by then are
// logged as such.
func (s *sender) run(ctx context.Context) {
	for ctx.Err() == nil {
		a, ok := s.next()
		if !ok {
			select {
			case <-ctx.Done():
			case <-s.wake:
			}
			continue
		}
		if !s.deliver(ctx, a) && ctx.Err() != nil {
			s.enqueueFront(a)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.queue); n > 0 {
		s.log.Warn("pgbus alerts: stopping with alerts not sent", "alerts", n, "oldest", s.queue[0].Text)
	}
}

// enqueueFront puts back an alert whose post was cut short by the stop.
func (s *sender) enqueueFront(a Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append([]Alert{a}, s.queue...)
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
		retry, err := s.post(ctx, body)
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
		s.log.Warn("pgbus alerts: webhook failed; retrying", "err", err, "attempt", attempt, "in", delay)
		t := time.NewTimer(delay)
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
		return json.Marshal(map[string]string{"text": a.Text})
	}
	return json.Marshal(a)
}

// post sends one request; retry says whether a failure is worth another.
func (s *sender) post(ctx context.Context, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("alerts: build the webhook request: %w", withoutPath(err))
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return true, fmt.Errorf("alerts: post to the webhook: %w; check that alerts.url in the configuration file is reachable from this host", withoutPath(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true, fmt.Errorf("alerts: the webhook answered %s: %s", resp.Status, strings.TrimSpace(string(snippet)))
	}
	return false, fmt.Errorf("alerts: the webhook refused the alert with %s: %s; check alerts.url and alerts.headers (a token?) in the configuration file",
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
