package store

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Failure is one failed attempt as a worker reports it.
type Failure struct {
	Attempt      int    `json:"attempt"`
	Kind         string `json:"kind"`
	ErrorClass   string `json:"error_class"`
	ErrorMessage string `json:"error_message"`
	Backtrace    string `json:"backtrace,omitempty"`
}

// FailureRecord is a failure as kept in the history of a message.
type FailureRecord struct {
	Failure
	ID       int64     `json:"id"`
	Queue    string    `json:"queue"`
	MsgID    int64     `json:"msg_id"`
	FailedAt time.Time `json:"failed_at"`
}

// bounded returns the failure cut to what the history keeps.
func (f Failure) bounded() Failure {
	f.ErrorMessage = truncate(f.ErrorMessage, HistoryErrorMessageMax)
	f.Backtrace = truncate(f.Backtrace, HistoryBacktraceMax)
	if f.ErrorClass == "" {
		f.ErrorClass = "error"
	}
	f.ErrorClass = truncate(f.ErrorClass, 200)
	f.Kind = truncate(f.Kind, 200)
	return f
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
