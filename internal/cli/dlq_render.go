package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

// writeDeadSummary prints the groups of pgbus dlq summary.
func (a *app) writeDeadSummary(w io.Writer, sum ops.DLQSummary, later bool) error {
	if sum.TotalClasses > 0 {
		return writeDeadClasses(w, sum)
	}
	if len(sum.Groups) == 0 {
		what := "no dead messages"
		if later {
			what = "no group ranks after the previous page any more"
		}
		if _, err := fmt.Fprintln(w, what); err != nil || later {
			return err
		}
		// Why there are none, where the operation says (a group's key
		// no DLQ holds any more); the caller prints the next steps.
		printNotes(w, sum.Notes, sum.Asks)
		return nil
	}
	t := newTable(w, "QUEUE", "KIND", "ERROR CLASS", "REASON", "COUNT", "FIRST", "LAST", "SAMPLE IDS", "MESSAGE")
	for _, g := range sum.Groups {
		ids := make([]string, len(g.SampleMsgIDs))
		for i, id := range g.SampleMsgIDs {
			ids[i] = fmt.Sprint(id)
		}
		t.row(dash(g.SourceQueue), dash(g.Kind), dash(g.ErrorClass), dash(strings.Join(g.Reasons, ",")), g.Count,
			a.ago(g.FirstDeadAt), a.ago(g.LastDeadAt), strings.Join(ids, ","), messageCell(dash(g.ErrorMessage), 70))
	}
	if err := t.flush(); err != nil {
		return err
	}
	writeBreakdowns(w, sum.Groups)
	writeComebacks(w, sum.Groups)
	line := plural.Count(sum.Total, "dead message", "dead messages") + " in " + plural.Count(len(sum.Groups), "group", "groups")
	switch {
	case later:
		// A page after a cursor: the notes say where it stands.
		line += fmt.Sprintf(" (of %d groups, after those of the pages before)", sum.TotalGroups)
	case sum.Truncated:
		others := sum.TotalGroups - len(sum.Groups)
		line += fmt.Sprintf(" (the largest of %d groups: the other %d %s %s)", sum.TotalGroups, others, plural.Of(others, "holds", "hold"),
			plural.Count(sum.MessagesOmitted, "dead message", "dead messages"))
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// writeDeadClasses prints pgbus dlq summary --by error_class: a row a
// class, with its reasons and the DLQs it touches, each with its count.
func writeDeadClasses(w io.Writer, sum ops.DLQSummary) error {
	t := newTable(w, "ERROR CLASS", "COUNT", "REASONS", "QUEUES")
	for _, c := range sum.Classes {
		reasons := make([]string, len(c.Reasons))
		for i, r := range c.Reasons {
			reasons[i] = fmt.Sprintf("%s (%d)", r.Reason, r.Count)
		}
		queues := make([]string, len(c.Queues))
		for i, q := range c.Queues {
			queues[i] = fmt.Sprintf("%s (%d)", q.DLQ, q.Count)
		}
		if c.QueuesOmitted > 0 {
			queues = append(queues, fmt.Sprintf("and %d more", c.QueuesOmitted))
		}
		t.row(dash(c.ErrorClass), c.Count, strings.Join(reasons, ", "), strings.Join(queues, ", "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	line := plural.Count(sum.Total, "dead message", "dead messages") + " in " + plural.Count(len(sum.Classes), "error class", "error classes")
	if sum.Truncated {
		others := sum.TotalClasses - len(sum.Classes)
		line += fmt.Sprintf(" (the largest of %d: the other %d %s %s)", sum.TotalClasses, others, plural.Of(others, "holds", "hold"),
			plural.Count(sum.MessagesOmitted, "dead message", "dead messages"))
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// writeBreakdowns prints each group's values of --by-field, one line a
// group, in the order of the table.
func writeBreakdowns(w io.Writer, groups []ops.DeadGroup) {
	for _, g := range groups {
		b := g.ByField
		if b == nil {
			continue
		}
		parts := make([]string, 0, len(b.Values)+2)
		for _, v := range b.Values {
			parts = append(parts, fmt.Sprintf("%s=%s (%d)", b.Field, clip(v.Value, 40), v.Count))
		}
		if b.Other > 0 {
			parts = append(parts, fmt.Sprintf("other values (%d)", b.Other))
		}
		if b.Missing > 0 {
			parts = append(parts, fmt.Sprintf("no %s (%d)", b.Field, b.Missing))
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", g.SourceQueue, dash(g.ErrorClass), clip(dash(oneLine(g.ErrorPattern)), 40), strings.Join(parts, ", "))
	}
}

// writeComebacks prints a line for each group whose newest message had
// been retried out of a DLQ before: retrying did not fix its cause then.
func writeComebacks(w io.Writer, groups []ops.DeadGroup) {
	for _, g := range groups {
		if g.RetriesFromDLQ > 0 && len(g.SampleMsgIDs) > 0 {
			fmt.Fprintf(w, "came back: %s %s %s: its newest message, %d, died again after %s\n", g.SourceQueue, dash(g.Kind), dash(g.ErrorClass),
				g.SampleMsgIDs[0], plural.Count(g.RetriesFromDLQ, "DLQ retry", "DLQ retries"))
		}
	}
}

// messageCell fits an error message into a table cell of n characters. A
// message of several lines that does not fit (a command's exit code, then
// the last lines it printed) keeps the start of its first line and its
// last line, which most often says what went wrong: cut at n, the cell
// showed the command's path and exit code only.
func messageCell(s string, n int) string {
	var lines []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 || utf8.RuneCountInString(oneLine(s)) <= n {
		return clip(s, n)
	}
	last := clip(lines[len(lines)-1], n-20) // 19 and more for the first
	return clip(lines[0], n-utf8.RuneCountInString(last)-1) + " " + last
}

// oneLine puts a message on one line, for a table cell.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeDeadList prints a page of pgbus dlq list, the page after cursor
// when one was given.
func (a *app) writeDeadList(w io.Writer, page ops.DLQList, cursor string) error {
	if len(page.Items) == 0 {
		// After a cursor, messages may still match: retried or discarded
		// since, or newer than the first page.
		msg := "no dead messages match"
		if cursor != "" {
			msg = "no more dead messages match after this cursor; start again without --cursor to see newer ones"
		}
		if _, err := fmt.Fprintln(w, msg); err != nil || cursor != "" {
			return err
		}
		// Why none matched, where the operation says (a group's key no
		// DLQ holds any more), and where to look instead.
		printNotes(w, page.Notes, page.Asks)
		a.printNext(w, page.Next)
		return nil
	}
	t := newTable(w, "ID", "QUEUE", "KIND", "REASON", "ERROR CLASS", "ATTEMPTS", "AGE", "SIZE", "ERROR")
	for _, it := range page.Items {
		attempts := orUnknown(it.Attempts) + "/" + orUnknown(it.MaxRetries)
		if it.Unrecorded != "" {
			// Attempts whose worker stopped or lost its claim, or the read
			// that dead-lettered it unrun: dlq show says which.
			attempts += " (" + it.Unrecorded + ")"
		}
		if it.RetriesFromDLQ > 0 {
			// A message that keeps coming back shows at a glance.
			attempts += " after " + plural.Count(it.RetriesFromDLQ, "DLQ retry", "DLQ retries")
		}
		t.row(it.MsgID, dash(it.SourceQueue), dash(it.Kind), dash(it.Reason), dash(it.ErrorClass),
			attempts, a.ago(it.DeadLetteredAt), humanBytes(it.PayloadBytes), messageCell(dash(it.ErrorMessage), 70))
	}
	return t.flush()
}

// writeDeadMessage prints pgbus dlq show.
func (a *app) writeDeadMessage(w io.Writer, m ops.DeadMessage, noPayload bool) error {
	fmt.Fprintf(w, "dead message %d in %s\n", m.MsgID, m.DLQ)
	cut := 0 // error messages shortened to fit their cells
	kv := newTable(w)
	kv.row("kind:", dash(m.Kind))
	if b := m.DeadLetter; b != nil {
		kv.row("reason:", unknownIfEmpty(b.Reason))
		kv.row("from:", fmt.Sprintf("queue %s, message %s, enqueued %s", unknownIfEmpty(b.SourceQueue), orUnknown(b.SourceMsgID), stamp(b.SourceEnqueuedAt)))
		kv.row("attempts:", fmt.Sprintf("%s (max_retries %s)", orUnknown(b.Attempts), orUnknown(b.MaxRetries)))
		if m.Unrecorded != "" {
			kv.row("unrecorded:", m.Unrecorded)
		}
		// When it died is the operation's, as --json and the dashboard
		// show it, also for a block whose own time cannot be read.
		kv.row("dead since:", fmt.Sprintf("%s (%s)", stamp(m.DeadLetteredAt), a.ago(m.DeadLetteredAt)))
		if b.RetriesFromDLQ > 0 {
			kv.row("retried from DLQ:", plural.Count(b.RetriesFromDLQ, "time", "times")+" before")
		}
		if b.ErrorClass != "" {
			kv.row("error class:", b.ErrorClass)
			kv.row("error:", b.ErrorMessage)
			if utf8.RuneCountInString(b.ErrorMessage) > maxCell {
				cut++
			}
			kv.row("error attempt:", fmt.Sprintf("%d at %s", b.ErrorAttempt, stamp(b.ErrorRecordedAt)))
		} else if p := b.PreviousTripError; p != nil {
			kv.row("error:", "none recorded on this trip (a deadline, lost claims, or a worker that crashed mid-run)")
			kv.row("previous trip's error:", fmt.Sprintf("%s: %s (attempt %d at %s, before the last retry out of a DLQ)", p.ErrorClass, p.ErrorMessage, p.ErrorAttempt, stamp(p.ErrorRecordedAt)))
			if utf8.RuneCountInString(p.ErrorMessage) > maxCell-80 {
				cut++
			}
		} else {
			kv.row("error:", "none recorded (a deadline, or a worker that crashed mid-run)")
		}
	} else {
		kv.row("reason:", "not recorded (no dead-letter block: dead-lettered by a Ruby pgbus from before the block, or put in the DLQ by another client)")
		kv.row("enqueued:", stamp(m.DeadLetteredAt))
	}
	if m.Deadline != nil {
		state := "not passed yet"
		if m.DeadlinePassed {
			state = "passed: dlq retry leaves it unless given --clear-deadline"
		}
		kv.row("deadline:", fmt.Sprintf("%s (%s)", stamp(*m.Deadline), state))
	}
	if len(m.SafeFields) > 0 {
		fields := slices.Sorted(maps.Keys(m.SafeFields))
		for i, f := range fields {
			fields[i] = f + "=" + m.SafeFields[f]
		}
		kv.row("safe fields:", strings.Join(fields, ", "))
	}
	if err := kv.flush(); err != nil {
		return err
	}
	if m.DeadLetter != nil && m.DeadLetter.Backtrace != "" {
		fmt.Fprintln(w, "backtrace:")
		for _, line := range strings.Split(m.DeadLetter.Backtrace, "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	if len(m.History) > 0 {
		fmt.Fprintln(w, "failures:")
		t := newTable(w, "  #", "AT", "KIND", "RAN", "ERROR CLASS", "ERROR")
		for _, f := range m.History {
			t.row(attemptLabel(f), failedAt(f), dash(f.Kind), ran(f), f.ErrorClass, messageCell(f.ErrorMessage, historyErrorCell))
			if utf8.RuneCountInString(oneLine(f.ErrorMessage)) > historyErrorCell {
				cut++
			}
		}
		if err := t.flush(); err != nil {
			return err
		}
		printOutputs(w, m.History)
	}
	fmt.Fprintln(w, "headers:")
	fmt.Fprintln(w, indentJSON(m.Headers, "  "))
	switch {
	case noPayload:
		fmt.Fprintln(w, "payload: (not shown: --no-payload)")
	case m.PayloadShown && m.Payload != nil:
		fmt.Fprintln(w, "payload:")
		fmt.Fprintln(w, indentJSON(m.Payload, "  "))
	case m.PayloadShown && m.PayloadPreviewJSON:
		fmt.Fprintln(w, "payload (long values shortened, see the note):")
		fmt.Fprintln(w, indentJSON(json.RawMessage(m.PayloadPreview), "  "))
	case m.PayloadShown:
		fmt.Fprintln(w, "payload (start):")
		fmt.Fprintln(w, "  "+m.PayloadPreview)
	}
	for _, n := range ops.WordAsks(m.Notes, m.Asks, vocab.CommandNote) {
		if noPayload && strings.HasPrefix(n, "payload hidden") {
			continue // said above
		}
		fmt.Fprintln(w, "note: "+n)
	}
	if cut > 0 {
		fmt.Fprintf(w, "note: %s shortened above to fit %s; --json shows them whole\n", plural.Count(cut, "error message is", "error messages are"), plural.Of(cut, "its line", "their lines"))
	}
	a.printNext(w, m.Next)
	return nil
}

// historyErrorCell is the width of the error of a failure in the table of
// pgbus dlq show, in characters.
const historyErrorCell = 100

// ran says how long an attempt ran, and its limit when it timed out.
func ran(f ops.Failure) string {
	if f.ElapsedMS == nil {
		return "-"
	}
	s := (time.Duration(*f.ElapsedMS) * time.Millisecond).String()
	if f.TimeoutMS > 0 {
		s += fmt.Sprintf(" (timeout %s)", time.Duration(f.TimeoutMS)*time.Millisecond)
	}
	return s
}

// printOutputs prints what the downstream said at each failure.
func printOutputs(w io.Writer, history []ops.Failure) {
	for _, f := range history {
		if f.Output == "" {
			continue
		}
		cut := ""
		if f.OutputTruncated {
			cut = ", cut"
		}
		fmt.Fprintf(w, "  attempt %d %s%s:\n", f.Attempt, strings.ReplaceAll(f.OutputSource, "_", " "), cut)
		for _, line := range strings.Split(f.Output, "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
}

// indentJSON is raw indented after prefix, its numbers and text as
// written (decoded and encoded again, an integer past float64's precision
// would be rounded, 1.0 shortened to 1, < written \u003c); JSON too deep
// to indent, or none, is raw as it is.
func indentJSON(raw json.RawMessage, prefix string) string {
	if len(raw) == 0 {
		return prefix + "null"
	}
	if jsonDepth(raw) > maxIndentDepth {
		return prefix + string(raw)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		return prefix + string(raw)
	}
	return prefix + b.String()
}

// printRetry prints what a retry did.
func (a *app) printRetry(rep ops.DLQRetry) error {
	if rep.AlreadyMoved > 0 {
		fmt.Fprintf(a.stdout, "%s retried or discarded by another call while this one ran\n", plural.Count(rep.AlreadyMoved, "was", "were"))
	}
	if len(rep.Outcomes) > 0 && rep.Retried == 0 {
		// The error line says why nothing moved. When messages failed to
		// move, the next steps (such as clearing a deadline that passed)
		// say what to do about it; ids not found or ambiguous need none.
		if rep.Failed > 0 {
			a.printNext(a.stdout, rep.Next)
		}
		return nil
	}
	verb := "retried"
	if rep.DryRun {
		verb = "would retry"
	}
	limit := limitNote(rep.LimitReached, rep.Left)
	if rep.Retried == 0 && rep.Failed > 0 {
		// The limit did not stop it: the messages it selected failed, and
		// the next steps say what to do about them.
		limit = ""
	}
	fmt.Fprintf(a.stdout, "%s %s%s", verb, plural.Count(rep.Retried, "dead message", "dead messages"), limit)
	if rep.Failed > 0 {
		fmt.Fprintf(a.stdout, "; %d failed (first: %s)", rep.Failed, rep.FirstError)
	}
	fmt.Fprintln(a.stdout)
	if len(rep.Moved) > 0 {
		t := newTable(a.stdout, "DLQ", "DLQ ID", "QUEUE", "NEW ID")
		for _, m := range rep.Moved {
			newID := "-"
			if m.MsgID > 0 {
				newID = fmt.Sprint(m.MsgID)
			}
			t.row(m.DLQ, m.DLQMsgID, m.Queue, newID)
		}
		if rep.MovedOmitted > 0 {
			t.row("…", fmt.Sprintf("%d more", rep.MovedOmitted), "", "")
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if err := a.printUnserved(rep.Workers); err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(a.stdout, "note: "+n)
	}
	if rep.CameBack > 0 {
		fmt.Fprintf(a.stdout, "note: %d of these messages %s been retried out of a DLQ before and died again: that retry did not fix the cause; make sure this time it is\n",
			rep.CameBack, plural.Of(rep.CameBack, "has", "have"))
	}
	if rep.VisibleUntil != nil {
		becomes := "becomes"
		if rep.DryRun {
			becomes = "would become" // were the call made now
		}
		fmt.Fprintf(a.stdout, "paced: the last message %s visible at %s (%s)\n", becomes, stamp(*rep.VisibleUntil), a.ago(*rep.VisibleUntil))
	}
	a.printNext(a.stdout, rep.Next)
	return nil
}

// notedQueues is how many queues without a running worker a retry notes
// one line each; more are a table.
const notedQueues = 10

// printUnserved prints the queues of ws that no running worker serves: a
// note each when they are few, a table of them all when they are many.
func (a *app) printUnserved(ws []ops.QueueWorkers) error {
	var unserved []ops.QueueWorkers
	for _, c := range ws {
		if !c.Served() {
			unserved = append(unserved, c)
		}
	}
	if len(unserved) <= notedQueues {
		for _, c := range unserved {
			fmt.Fprintln(a.stdout, "note: "+c.Note)
		}
		return nil
	}
	fmt.Fprintf(a.stdout, "note: no running worker serves these %d queues, whose messages will not run until one is started:\n", len(unserved))
	t := newTable(a.stdout, "QUEUE", "WORKERS", "LAST SEEN")
	for _, c := range unserved {
		t.row(c.Queue, c.Status, a.agoPtr(c.LastSeenAt))
	}
	return t.flush()
}

// printDiscard prints what a discard did.
func (a *app) printDiscard(res ops.DLQDiscard) error {
	if res.AlreadyMoved > 0 {
		fmt.Fprintf(a.stdout, "%s retried or discarded by another call while this one ran\n", plural.Count(res.AlreadyMoved, "was", "were"))
	}
	if len(res.Outcomes) > 0 && res.Discarded == 0 {
		return nil // the error line says why nothing moved
	}
	if res.DryRun {
		fmt.Fprintf(a.stdout, "would discard %s%s\n", plural.Count(res.Discarded, "dead message", "dead messages"), limitNote(res.LimitReached, res.Left))
	} else {
		fmt.Fprintf(a.stdout, "discarded %s%s (kept in the DLQ archive until pgbus dlq purge or the queue's dead retention (30 days by default) deletes them)\n", plural.Count(res.Discarded, "dead message", "dead messages"), limitNote(res.LimitReached, res.Left))
	}
	if len(res.Moved) > 0 {
		t := newTable(a.stdout, "DLQ", "DLQ ID")
		for _, m := range res.Moved {
			t.row(m.DLQ, m.MsgID)
		}
		if res.MovedOmitted > 0 {
			t.row("…", fmt.Sprintf("%d more", res.MovedOmitted))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	a.printNext(a.stdout, res.Next)
	return nil
}

// limitNote says that a move by filter stopped at its --limit with more
// messages matching.
func limitNote(reached bool, left int64) string {
	switch {
	case reached && left > 0:
		return fmt.Sprintf(", the --limit: %d more %s (see next)", left, plural.Of(left, "matches", "match"))
	case reached:
		return ", the --limit: more match (see next)"
	}
	return ""
}

// refuse answers a bulk operation given without --yes: a usage error
// saying how many dead messages (up to limit) the filter would touch, with
// its dry run as the next step. When it would touch none, the refusal of
// call, the request of op as --yes would make it, comes first where the
// operation refuses it (a group's key no DLQ holds any more): "0 dead
// messages" would not say why.
func (a *app) refuse(cmd *cobra.Command, op string, call any, f ops.DeadFilter, limit int, format string, dryRun ops.Hint) error {
	ctx, s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	sum, err := s.ops.DLQSummary(ctx, ops.DLQSummaryRequest{Filter: f})
	if err != nil {
		return err
	}
	// The groups a summary leaves out count too.
	m := min(sum.Total+sum.MessagesOmitted, int64(limit))
	if m == 0 {
		if err := s.ops.CheckCall(ctx, op, call); err != nil {
			return err
		}
	}
	n := plural.Count(m, "dead message", "dead messages")
	return usageError{&ops.Error{Msg: fmt.Sprintf(format, n, plural.Of(m, "it", "them")), Hints: []ops.Hint{dryRun}}}
}

// checkBulkLimit checks the --limit of a bulk operation.
func checkBulkLimit(limit int) error {
	if err := ops.CheckBulkLimit(limit, ops.MaxBulkLimit); err != nil {
		return usageError{flagWords(err, "limit")}
	}
	return nil
}

// attemptLabel names the attempt of a history row: a folded run of
// identical failures shows its first and last attempt and its count.
func attemptLabel(f ops.Failure) string {
	if f.Repeated > 1 {
		return fmt.Sprintf("  %d-%d (%dx)", f.FirstAttempt, f.Attempt, f.Repeated)
	}
	return fmt.Sprintf("  %d", f.Attempt)
}

// failedAt is when a history row's failure happened: a folded run of
// identical failures spans its first and last, which a single time would
// read as all of them in one second, as if no backoff had come between.
func failedAt(f ops.Failure) string {
	if f.Repeated < 2 || f.FirstFailedAt.IsZero() || f.FirstFailedAt.Equal(f.FailedAt) {
		return stamp(f.FailedAt)
	}
	first, last := f.FirstFailedAt.UTC(), f.FailedAt.UTC()
	if first.Format(time.DateOnly) == last.Format(time.DateOnly) {
		return stamp(first) + " to " + last.Format("15:04:05Z")
	}
	return stamp(first) + " to " + stamp(last)
}

// writeDiscardedList prints a page of pgbus dlq discarded, the page after
// cursor when one was given.
func (a *app) writeDiscardedList(w io.Writer, res ops.DLQDiscarded, cursor string, byHandler bool) error {
	if len(res.Items) == 0 {
		// After a cursor, messages may still match: restored since, or
		// discarded after the first page.
		msg := "no discarded messages match"
		if cursor != "" {
			msg = "no more discarded messages match after this cursor; start again without --cursor to see ones discarded since"
		}
		_, err := fmt.Fprintln(w, msg)
		return err
	}
	if byHandler {
		t := newTable(w, "ID", "QUEUE", "KIND", "ERROR CLASS", "DISCARDED", "ERROR")
		for _, it := range res.Items {
			t.row(it.MsgID, it.Queue, dash(it.Kind), dash(it.ErrorClass), a.ago(it.DiscardedAt), messageCell(dash(it.ErrorMessage), 70))
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "note: discarded from the queue by their handlers' rules, these never reached the DLQ, and no restore brings them back")
		for _, n := range res.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		return nil
	}
	t := newTable(w, "ID", "KIND", "REASON", "ERROR CLASS", "DEAD", "DISCARDED", "RESTORABLE", "ERROR")
	for _, it := range res.Items {
		restorable := "yes"
		if !it.Restorable {
			restorable = "no (retried with a corrected payload)"
		}
		t.row(it.MsgID, dash(it.Kind), dash(it.Reason), dash(it.ErrorClass), a.ago(it.DeadLetteredAt), a.ago(it.DiscardedAt),
			restorable, messageCell(dash(it.ErrorMessage), 70))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// printRestore prints pgbus dlq restore.
func (a *app) printRestore(res ops.DLQRestore) error {
	if res.Restored == 0 {
		return nil // the error line says why nothing came back
	}
	verb := "restored"
	if res.DryRun {
		verb = "would restore"
	}
	fmt.Fprintf(a.stdout, "%s %s to %s\n", verb, plural.Count(res.Restored, "discarded message", "discarded messages"), res.DLQ)
	t := newTable(a.stdout, "ID", "OUTCOME")
	for _, o := range res.Outcomes {
		t.row(o.ID, o.Outcome)
	}
	if err := t.flush(); err != nil {
		return err
	}
	a.printNext(a.stdout, res.Next)
	return nil
}

// orUnknown is a number of a dead-letter block, or "unknown" where the
// block does not hold it (the view leaves it out), never a made-up 0.
func orUnknown[N int | int64](n *N) string {
	if n == nil {
		return "unknown"
	}
	return strconv.FormatInt(int64(*n), 10)
}

// unknownIfEmpty is a text of a dead-letter block, or "unknown" where the
// block does not hold it.
func unknownIfEmpty(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
