package cli_test

import (
	"strings"
	"testing"
)

// pgbus send with a malformed OTEL_EXPORTER_OTLP_HEADERS: the SDK's
// complaint is in pgbus's log, as JSON like every line, without the
// header's credentials; the span is still exported.
func TestSDKLogOfMalformedHeadersIsRedacted(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.ok(t, "queue", "create", "orders")
	c, url := newCollector(t)
	env := append(d.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+url, "OTEL_EXPORTER_OTLP_HEADERS=Authorization: Bearer CliSdkSecret42,x-team=ab%zzCliSecret43")
	r := pgbusIn(t, env, "", "send", "orders", `{"n": 1}`)
	if r.code != 0 {
		t.Fatalf("send: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `"msg":"pgbus: OpenTelemetry: parse headers"`) {
		t.Errorf("stderr lacks the SDK's complaint in pgbus's log:\n%s", r.stderr)
	}
	for _, secret := range []string{"CliSdkSecret42", "CliSecret43"} {
		if strings.Contains(r.stderr, secret) {
			t.Errorf("stderr shows %s:\n%s", secret, r.stderr)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.spans["send orders"]; !ok {
		t.Errorf("the collector got no send span; it got %v", c.spans)
	}
}
