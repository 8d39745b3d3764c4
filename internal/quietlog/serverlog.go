package quietlog

import (
	"log"
	"log/slog"
	"strings"
	"time"
)

// ServerLog is the ErrorLog of an http.Server, server naming it in the
// log's words ("the metrics server"): net/http's lines go to logger at
// WARN. Its accept errors, which net/http logs at each of its retries
// (every few milliseconds, up to a second apart, for as long as they
// last), are told as a line of logger's own, saying that the server
// cannot accept connections and, for a process with no file descriptor
// left, which limit to raise: at their first time, then once a minute
// with the count met untold meanwhile.
func ServerLog(logger *slog.Logger, server string) *log.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return log.New(&serverLog{logger: logger, server: server}, "", 0)
}

// OutOfFilesAdvice says what to do about a process with no file
// descriptor left, for the lines of ServerLog.
const OutOfFilesAdvice = "raise the process's limit of open files (ulimit -n, LimitNOFILE= in a systemd unit, the container's nofile limit), or have it hold fewer at once (fewer clients, lower concurrency)"

// serverLog is the writer of ServerLog.
type serverLog struct {
	logger *slog.Logger
	server string
	accept ByCode // by acceptOutOfFiles or acceptOther
}

// The kinds of accept errors ServerLog paces apart.
const (
	acceptOther = iota
	acceptOutOfFiles
)

func (w *serverLog) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	rest, ok := strings.CutPrefix(line, "http: Accept error: ")
	if !ok {
		w.logger.Warn(line)
		return len(p), nil
	}
	cause, _, _ := strings.Cut(rest, "; retrying in ")
	kind := acceptOther
	if strings.Contains(cause, "too many open files") {
		kind = acceptOutOfFiles
	}
	told, quiet := w.accept.Due(kind, time.Now())
	if !told {
		return len(p), nil
	}
	attrs := []any{"err", cause}
	if quiet > 0 {
		attrs = append(attrs, "untold_since_last", quiet)
	}
	if kind == acceptOutOfFiles {
		w.logger.Warn("pgbus: "+w.server+" cannot accept connections: this process has no file descriptor left (too many open files); it keeps trying, and clients wait or fail meanwhile: "+
			OutOfFilesAdvice+" (said at its first time, then once a minute while it lasts)", attrs...)
	} else {
		w.logger.Warn("pgbus: "+w.server+" cannot accept connections; it keeps trying, and clients wait or fail meanwhile (said at its first time, then once a minute while it lasts)", attrs...)
	}
	return len(p), nil
}
