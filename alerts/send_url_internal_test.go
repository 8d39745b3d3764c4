package alerts

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgbus/pgbus/internal/pgtest"
	"github.com/pgbus/pgbus/ops"
)

// A webhook whose path is its secret (a Slack incoming webhook) at a
// closed port: the failed posts are logged, through the redacting log as
// pgbus runs them, naming the webhook by its scheme and host only.
func TestFailedPostNamesOnlyTheWebhooksHost(t *testing.T) {
	t.Parallel()
	host := pgtest.RefusingPort(t).Addr() // nothing listens there: every post is refused
	var logs pgtest.SyncBuffer
	cfg := Config{
		URL:         "http://hook:HookPW31@" + host + "/services/T000/B000/SlackPathSecret99?token=QuerySecret98&channel=ops",
		MaxAttempts: 2, RetryBackoff: time.Millisecond,
		Logger: slog.New(ops.RedactingHandler(slog.NewTextHandler(&logs, nil))),
	}.withDefaults()
	s := newSender(cfg)
	if s.deliver(context.Background(), Alert{Text: "queue orders is STALLED"}) {
		t.Fatal("an alert to a closed port counted as sent")
	}
	_, _, err := s.post(context.Background(), []byte(`{}`))
	out := logs.String() + "\n" + err.Error()
	if n := strings.Count(out, `http://`+host+`/…`); n < 3 {
		t.Errorf("the webhook is named as http://%s/… %d times, want in each failure:\n%s", host, n, out)
	}
	if !strings.Contains(out, "connection refused") || !strings.Contains(err.Error(), "check that alerts.url") {
		t.Errorf("the failures do not say why, or what to check:\n%s", out)
	}
	for _, secret := range []string{"HookPW31", "services", "T000", "SlackPathSecret99", "QuerySecret98", "channel"} {
		if strings.Contains(out, secret) {
			t.Errorf("a failure shows %s:\n%s", secret, out)
		}
	}
}
