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
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: logAttrText}))
	log.Info("stopping", "drain_timeout", 30*time.Second, "took", 1500*time.Microsecond, slog.Group("probe", "in", 5*time.Minute), "count", 3)
	line := out.String()
	for _, want := range []string{`"drain_timeout":"30s"`, `"took":"1.5ms"`, `"probe":{"in":"5m0s"}`, `"count":3`} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line lacks %s: %s", want, line)
		}
	}
}

// A JSON log line's time, and a time among its values, are in UTC with a
// Z, as every other output's, whatever the process's zone.
func TestJSONLogsWriteTimesInUTC(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := jsonLogHandler(&out, slog.LevelInfo)
	local := time.Date(2026, 12, 6, 18, 14, 13, 520_000_000, time.FixedZone("PST", -8*60*60))
	r := slog.NewRecord(local, slog.LevelInfo, "m", 0)
	r.AddAttrs(slog.Time("at", local), slog.Duration("took", time.Second))
	if err := h.Handle(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	for _, want := range []string{`"time":"2026-12-07T02:14:13.52Z"`, `"at":"2026-12-07T02:14:13.52Z"`, `"took":"1s"`} {
		if !strings.Contains(line, want) {
			t.Errorf("the log line lacks %s: %s", want, line)
		}
	}
}
