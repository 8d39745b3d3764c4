package store

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pgbus/pgbus/internal/redact"
)

// Failure is one failed attempt as a worker reports it.
type Failure struct {
	Attempt      int           `json:"attempt"`
	Kind         string        `json:"kind"`
	ErrorClass   string        `json:"error_class"`
	ErrorMessage string        `json:"error_message"`
	Backtrace    string        `json:"backtrace,omitempty"`
	Detail       FailureDetail `json:"detail,omitzero"`
}

// FailureOutputMax is how many characters of a downstream's output (a
// command's stderr, a response body) the failure history keeps.
const FailureOutputMax = 2000

// FailureDetail is what the history keeps of a failed attempt besides its
// error: how long it ran, the limit it hit, and what the downstream said.
// It is stored as JSON in pgbus.failures.detail; zero fields are left out.
type FailureDetail struct {
	// ElapsedMS is how long the handler ran, in milliseconds; nil when
	// the recorder did not measure it. An attempt that failed within a
	// millisecond ran 0 ms, which is not the same as unknown.
	ElapsedMS *int64 `json:"elapsed_ms,omitempty"`
	// TimeoutMS is the time limit of an attempt cut off by it, in
	// milliseconds; 0 when the attempt did not time out.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Output is what the downstream said, at most FailureOutputMax
	// characters; OutputSource names it (stderr, stdout, response_body) and
	// OutputTruncated says it was cut.
	Output          string `json:"output,omitempty"`
	OutputSource    string `json:"output_source,omitempty"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
}

// json returns the detail as the text of a jsonb value, or nil (NULL) when
// it holds nothing.
func (d FailureDetail) json() *string {
	if d == (FailureDetail{}) {
		return nil
	}
	b, _ := json.Marshal(d) // strings and numbers only: it cannot fail
	s := jsonbText(b)
	return &s
}

// parseDetail reads a detail column; NULL or JSON it cannot read is no
// detail, since the history must show what it can.
func parseDetail(raw []byte) FailureDetail {
	var d FailureDetail
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &d)
	}
	return d
}

// FailureRecord is a failure as kept in the history of a message.
type FailureRecord struct {
	Failure
	ID       int64     `json:"id"`
	Queue    string    `json:"queue"`
	MsgID    int64     `json:"msg_id"`
	FailedAt time.Time `json:"failed_at"`
}

// bounded returns the failure as the history keeps it: its error text and
// the downstream's output with secrets hidden, cut to size.
//
// Error text is stored redacted, unlike payloads and headers, which a
// retry needs whole: no reader of pgbus shows it unredacted, and a filter
// on error text (DeadFilter.Text) matched against a secret kept whole
// would tell whoever may list dead messages, guess by guess, what the
// [REDACTED] they are shown hides.
//
// fit makes the texts fit the database's encoding (see textFit).
func (f Failure) bounded(fit textFit) Failure {
	f.ErrorMessage = fit.apply(storedText(f.ErrorMessage, HistoryErrorMessageMax))
	f.Backtrace = fit.apply(storedText(f.Backtrace, HistoryBacktraceMax))
	if f.ErrorClass == "" {
		f.ErrorClass = "error"
	}
	f.ErrorClass = fit.apply(truncate(f.ErrorClass, 200))
	f.Kind = fit.apply(truncate(f.Kind, MaxDeadFilterName))
	if utf8.RuneCountInString(f.Detail.Output) > FailureOutputMax {
		f.Detail.OutputTruncated = true
	}
	f.Detail.Output = fit.apply(storedText(f.Detail.Output, FailureOutputMax))
	f.Detail.OutputSource = fit.apply(truncate(f.Detail.OutputSource, 40))
	return f
}

// storedTextMargin is how far past what is kept a text is redacted
// before it is cut: far enough that a secret across the cut is still
// recognised as one (a URL's password only by the @ after it). Redacting
// the whole of a long text would cost time in proportion to its length.
const storedTextMargin = 1024

// storedText is s as kept: its first max characters (runes) with secrets
// hidden, the cut marked with an ellipsis.
func storedText(s string, max int) string {
	n, clipped := 0, false
	for i := range s {
		if n == max+storedTextMargin {
			s, clipped = s[:i], true
			break
		}
		n++
	}
	if clipped {
		s, _ = redact.Cut(s)
		s += "…"
	} else {
		s, _ = redact.Text(s)
	}
	return truncate(s, max)
}

// BlockErrorMessage cuts an error message to what the dead-letter block keeps.
func BlockErrorMessage(s string) string { return truncate(s, BlockErrorMessageMax) }

// BlockBacktrace cuts a backtrace to what the dead-letter block keeps: the
// first lines, within the character limit.
func BlockBacktrace(s string) string {
	lines := strings.SplitN(s, "\n", BlockBacktraceMaxLines+1)
	if len(lines) > BlockBacktraceMaxLines {
		lines = lines[:BlockBacktraceMaxLines]
	}
	return truncate(strings.Join(lines, "\n"), BlockBacktraceMax)
}

// truncate cuts s to at most max characters (runes), keeping it valid UTF-8
// and marking the cut with an ellipsis. PostgreSQL rejects NUL in text, so
// NULs become U+FFFD.
func truncate(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	runes := []rune(s)
	return string(runes[:max-1]) + "…"
}
