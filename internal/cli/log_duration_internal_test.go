package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A JSON log line writes a duration as its text, as the text format does,
// not in nanoseconds; a group's durations too.
func TestJSONLogsWriteDurationsAsText(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: durationText}))
	log.Info("stopping", "drain_timeout", 30*time.Second, "took", 1500*time.Microsecond, slog.Group("probe", "in", 5*time.Minute), "count", 3)
	line := out.String()
	for _, want := range []string{`"drain_timeout":"30s"`, `"took":"1.5ms"`, `"probe":{"in":"5m0s"}`, `"count":3`} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line lacks %s: %s", want, line)
		}
	}
}
