package ops_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/pgbus/pgbus/internal/secrettest"
	"github.com/pgbus/pgbus/internal/textlog"
	"github.com/pgbus/pgbus/ops"
)

// Every secret of the corpus, logged as the message, as a string, an error,
// a list, raw JSON, a map, under a secret key, in a group or through
// With, is hidden from the log line; the attributes around it stay.
func TestRedactingHandlerHidesTheCorpus(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewJSONHandler(&buf, nil)
			if format == "text" {
				h = slog.NewTextHandler(&buf, nil)
			}
			log := slog.New(ops.RedactingHandler(h))
			for _, sec := range secrettest.Corpus {
				text := sec.Text + sec.JSON
				var payload map[string]any
				_ = json.Unmarshal([]byte(sec.JSON), &payload)
				log.With("context", text).Info(text,
					"attempt_no", 42,
					"err", errors.New(text),
					"body", text,
					"lines", []string{"first", text},
					"raw", json.RawMessage(sec.JSON),
					"payload", payload,
					"password", sec.Value,
					slog.Group("job", "stderr", text, "queue", "orders"))
			}
			out := buf.String()
			secrettest.AssertHidden(t, out)
			if n := strings.Count(out, "attempt_no"); n != len(secrettest.Corpus) {
				t.Errorf("attempt_no logged %d times, want %d: redaction dropped attributes", n, len(secrettest.Corpus))
			}
			if !strings.Contains(out, "orders") || !strings.Contains(out, ops.Redacted) {
				t.Errorf("want the queue kept and secrets replaced by %s:\n%s", ops.Redacted, out)
			}
		})
	}
}

// Values that cannot hold a secret reach the log as they were.
func TestRedactingHandlerKeepsPlainValues(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(ops.RedactingHandler(slog.NewJSONHandler(&buf, nil)))
	// A true or false says nothing secret, even under a secret-looking
	// key: whether a server asks for its token is what an operator looks
	// for in its start line.
	log.Info("job done", "msg_id", int64(42), "took_ms", 1.5, "ok", true, "queue", "orders", "auth", true, "token_set", false)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "job done" || rec["msg_id"] != float64(42) || rec["took_ms"] != 1.5 || rec["ok"] != true || rec["queue"] != "orders" ||
		rec["auth"] != true || rec["token_set"] != false {
		t.Errorf("plain values changed: %v", rec)
	}
}

// A map or a list of numbers, which redaction passes on as its JSON, is
// written as that JSON in a text log line too, as in a JSON one: the
// counts of a retention pass, not the bytes of their text.
func TestRedactingHandlerTextLogShowsJSON(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(ops.RedactingHandler(textlog.New(&buf, slog.LevelInfo, false)))
	log.Info("retention pruned old archives", "deleted", map[string]int64{"q_prio_p0": 3}, "ids", []int64{1, 2})
	for _, want := range []string{`deleted="{\"q_prio_p0\":3}"`, `ids=[1,2]`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the line lacks %s:\n%s", want, buf.String())
		}
	}
}
