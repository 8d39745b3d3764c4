package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"github.com/pgbus/pgbus/ops"
)

// printJSON writes v as indented JSON: the engine's and store's own types,
// so field names are the same as in the MCP tools' structured output.
func printJSON(w io.Writer, v any) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	if jsonDepth(compact.Bytes()) > maxIndentDepth {
		_, err := w.Write(compact.Bytes())
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

// maxIndentDepth is the deepest JSON that is printed indented: each level
// indents every line within it, so a payload of a few kilobytes nested
// thousands deep would print as hundreds of megabytes. Deeper JSON is
// printed compact.
const maxIndentDepth = 64

// jsonDepth returns how deep the objects and arrays of valid JSON b nest.
func jsonDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// printJSONLine writes v as one line of JSON, as the benchmarks report
// each run.
func printJSONLine(w io.Writer, v any) {
	line, _ := json.Marshal(v)
	fmt.Fprintln(w, string(line))
}

// table writes aligned columns; call flush when done.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(toAny(header)...)
	}
	return t
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// maxCell bounds a table cell, in runes: a kind another producer wrote
// into a queue can be of any length, and one of 100,000 characters
// widened its column, and so every row, past reading. --json has it whole.
const maxCell = 200

func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		// Tabs and newlines in data would break the columns; other
		// controls are escaped here, before the columns are measured,
		// rather than by stdout after.
		cell := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(fmt.Sprint(c))
		if utf8.RuneCountInString(cell) > maxCell {
			cell = string([]rune(cell)[:maxCell-1]) + "…"
		}
		parts[i] = string(terminalSafe([]byte(cell)))
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ago formats the time since t, coarsely, for tables: on the clock of the
// operation whose result shows t (the database server's), since a host
// whose clock is off would count the ages of what the database wrote
// wrongly.
func (a *app) ago(t time.Time) string {
	if a.clock == nil {
		return agoAt(t, time.Now())
	}
	return agoAt(t, a.clock())
}

// agoAt is ago at now.
func agoAt(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	// Sub saturates at the shortest duration, which has no opposite.
	d := max(now.Sub(t), -math.MaxInt64)
	switch {
	case d <= -time.Second:
		return "in " + short(-d)
	case d < 0:
		// "in 0s" read as overdue, for a message visible in half a second.
		return "in <1s"
	case d < time.Second:
		return "just now"
	}
	return short(d) + " ago"
}

func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		// 1h59m is not "1h": a breaker open for two hours more would
		// read as open for one.
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	// 7d23h is not "7d": a message delayed eight days would read as due
	// in seven.
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).String()
}

// writeQueueStats prints the stats table of pgbus queues; the commands
// it names for none keep this command's global flags.
func (a *app) writeQueueStats(w io.Writer, stats []ops.QueueStats) error {
	if len(stats) == 0 {
		_, err := fmt.Fprintf(w, "no queues yet; create one with %s, or run %s\n", a.carried("pgbus queue create NAME"), a.carried("pgbus demo"))
		return err
	}
	t := newTable(w, "QUEUE", "DEPTH", "READY", "RUNNING", "RETRYING", "SCHEDULED", "DLQ", "ARCHIVED", "SENT",
		"OK/1H", "FAILED/1H", "DEAD/1H", "OLDEST READY", "MAX RUNS", "BACKOFF", "PAUSED")
	for _, q := range stats {
		if q.Dropped { // only its DLQ is left
			t.row(q.Queue+" (dropped)", "-", "-", "-", "-", "-", q.DLQDepth, "-", "-",
				q.LastHour.Succeeded, q.LastHour.Failed, q.LastHour.DeadLettered, "-", "-", "-", "-")
			continue
		}
		paused := "no"
		if q.Paused {
			paused = "yes"
		}
		oldest := "-"
		if q.Visible > 0 {
			oldest = short(time.Duration(q.OldestVisibleAgeSeconds * float64(time.Second)))
		}
		t.row(q.Queue, estimate(q.Depth, q.CountsEstimated), estimate(q.Visible, q.CountsEstimated), q.InFlight, q.WaitingRetry, q.Scheduled, q.DLQDepth,
			estimate(q.Archived, q.ArchivedEstimated), q.TotalSent,
			q.LastHour.Succeeded, q.LastHour.Failed, q.LastHour.DeadLettered, oldest,
			q.Settings.MaxRetries, backoffRange(q.Settings), paused)
	}
	return t.flush()
}

// estimate renders a count, marked "~" when it is an estimate: a queue
// too large to count at each read.
func estimate(n int64, estimated bool) string {
	if estimated {
		return fmt.Sprintf("~%d", n)
	}
	return fmt.Sprint(n)
}

// progress shows a progress bar on stderr when it is a terminal, and
// nothing otherwise. A nil *progress is valid and does nothing.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress starts a bar of total steps, or a spinner when total < 0.
func (a *app) newProgress(total int, description string) *progress {
	if !isTerminal(a.stderr) {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(description),
		progressbar.OptionThrottle(80 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	}
	if total >= 0 {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false))
	} else {
		opts = append(opts, progressbar.OptionSpinnerType(14))
	}
	return &progress{bar: progressbar.NewOptions(total, opts...)}
}

// set moves the bar to done of total.
func (p *progress) set(done, total int) {
	if p == nil {
		return
	}
	if total > 0 && int64(total) != p.bar.GetMax64() {
		p.bar.ChangeMax(total)
	}
	_ = p.bar.Set(done)
}

// spin keeps a spinner turning until ctx ends.
func (p *progress) spin(ctx context.Context) {
	if p == nil {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = p.bar.Add(1)
		}
	}
}

// callback returns set as a progress callback, or nil when there is no
// bar, so that nothing is counted for nobody.
func (p *progress) callback() func(done, total int) {
	if p == nil {
		return nil
	}
	return p.set
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	_ = p.bar.Finish()
}

// withSpinner runs fn with a spinner on a terminal.
func (a *app) withSpinner(ctx context.Context, description string, fn func() error) error {
	p := a.newProgress(-1, description)
	if p == nil {
		return fn()
	}
	spinCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.spin(spinCtx); close(done) }()
	err := fn()
	stop()
	<-done
	p.finish()
	return err
}

// backoffRange is the range of a queue's waits between attempts: from its
// backoff for the exponential strategy; from 3s (attempt 1: 1⁴ + 2
// seconds) for the polynomial one, which does not use the backoff.
func backoffRange(s ops.RetrySettings) string {
	if s.BackoffStrategy == "polynomial" {
		return "poly 3s.." + seconds(s.RetryBackoffMaxSeconds)
	}
	return seconds(s.RetryBackoffSeconds) + ".." + seconds(s.RetryBackoffMaxSeconds)
}
