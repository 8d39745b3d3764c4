package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

func (a *app) dlqCommand() *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:   "dlq",
		Short: "Inspect, retry and discard dead messages",
		Long: `Work with dead-letter queues. The DLQ of queue X is X_dlq; a dead message
keeps its payload and headers and a pgbus_dead_letter block saying why it died
(reason, error class and message, attempts). Start with pgbus dlq summary,
drill down with list and show, then retry what a fix or a recovered downstream
makes work again, and discard the rest.

Filters (summary, list, retry-all, discard):
  --queue Q          the DLQ of queue Q (Q_dlq is accepted too)
  --kind K           the job kind (pgbus_kind, or job_class of Ruby pgbus)
  --error-class C    the block's error class, exactly (e.g. demo.Unavailable)
  --reason R         max_retries_exceeded, non_retryable_error or deadline_exceeded
  --since T --until T  dead-lettered in [since, until): RFC 3339, a date, or a
                     duration ago (--since 1h)
  --text S           case-insensitive text in the error message

Ids are per queue: when an id is in several DLQs, pass --queue.`,
		Example: `  pgbus dlq summary
  pgbus dlq list --queue orders --error-class demo.Unavailable
  pgbus dlq show 42 --queue orders
  pgbus dlq retry 42 43 --queue orders
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --dry-run
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --yes
  pgbus dlq discard --queue orders --reason non_retryable_error --yes
  pgbus dlq purge --older-than 720h --yes`,
	})
	cmd.AddCommand(a.dlqSummaryCommand(), a.dlqListCommand(), a.dlqShowCommand(), a.dlqRetryCommand(),
		a.dlqRetryAllCommand(), a.dlqDiscardCommand(), a.dlqPurgeCommand())
	return cmd
}

// filterFlags are the DLQ filters of DESIGN.md section 6.
type filterFlags struct {
	queue, kind, errorClass, reason, since, until, text string
}

func (f *filterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.queue, "queue", "", "only the DLQ of this queue")
	fs.StringVar(&f.kind, "kind", "", "only this job kind")
	fs.StringVar(&f.errorClass, "error-class", "", "only this error class (exact)")
	fs.StringVar(&f.reason, "reason", "", "only this reason: max_retries_exceeded, non_retryable_error or deadline_exceeded")
	fs.StringVar(&f.since, "since", "", "dead-lettered at or after: RFC 3339, a date, or a duration ago (1h)")
	fs.StringVar(&f.until, "until", "", "dead-lettered before: RFC 3339, a date, or a duration ago")
	fs.StringVar(&f.text, "text", "", "text in the error message (case-insensitive)")
}

// narrows reports whether a filter other than --queue is given.
func (f *filterFlags) narrows(fs *pflag.FlagSet) bool {
	return changed(fs, "kind", "error-class", "reason", "since", "until", "text")
}

func (f *filterFlags) filter() (store.DeadFilter, error) {
	out := store.DeadFilter{Queue: f.queue, Kind: f.kind, ErrorClass: f.errorClass, Reason: f.reason, Text: f.text}
	now := time.Now()
	var err error
	if f.since != "" {
		if out.Since, err = parseWhen("since", f.since, now, true); err != nil {
			return out, err
		}
	}
	if f.until != "" {
		if out.Until, err = parseWhen("until", f.until, now, true); err != nil {
			return out, err
		}
	}
	return out, nil
}

// describe renders the filter as flags, for hints.
func (f *filterFlags) describe() string {
	var parts []string
	add := func(flag, v string) {
		if v != "" {
			parts = append(parts, "--"+flag+" "+shellQuote(v))
		}
	}
	add("queue", f.queue)
	add("kind", f.kind)
	add("error-class", f.errorClass)
	add("reason", f.reason)
	add("since", f.since)
	add("until", f.until)
	add("text", f.text)
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@+,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dlqSession is an open database with the DLQ API.
type dlqSession struct {
	db  *database
	dlq *engine.DLQ
}

func (a *app) openDLQ(ctx context.Context) (*dlqSession, error) {
	db, err := a.openChecked(ctx)
	if err != nil {
		return nil, err
	}
	return &dlqSession{db: db, dlq: engine.NewDLQ(db.Store)}, nil
}

func (a *app) dlqSummaryCommand() *cobra.Command {
	var (
		ff     filterFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Group dead messages by queue, kind and error class: the first stop",
		Long: `Count dead messages by (source queue, kind, error class), largest group first,
with their reasons, first and last time seen, and a few sample ids to show.
--json prints []DeadGroup, as the MCP tool pgbus_dlq_summary returns.`,
		Example: `  pgbus dlq summary
  pgbus dlq summary --queue orders --since 24h
  pgbus dlq summary --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			groups, err := s.dlq.Summary(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, groups)
			}
			if err := writeDeadSummary(a.stdout, groups); err != nil {
				return err
			}
			if len(groups) > 0 {
				g := groups[0]
				fmt.Fprintf(a.stdout, "next: pgbus dlq list --queue %s --error-class %s   or   pgbus dlq show %d --queue %s\n",
					g.SourceQueue, shellQuote(dash(g.ErrorClass)), g.SampleMsgIDs[0], g.SourceQueue)
			}
			return nil
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print []DeadGroup as JSON")
	return cmd
}

func (a *app) dlqListCommand() *cobra.Command {
	var (
		ff     filterFlags
		cursor string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead messages, newest first, with filters and paging",
		Long: `List dead messages newest first: id, source queue, kind, reason, error class,
attempts, age and error message. Pages hold --limit messages (1 to 100); when
there are more, the last line gives the command for the next page (an opaque
--cursor, valid with the same filters). --json prints a DeadPage, as the MCP
tool pgbus_dlq_list returns.`,
		Example: `  pgbus dlq list
  pgbus dlq list --queue orders --reason max_retries_exceeded --limit 100
  pgbus dlq list --text "connection refused" --since 2h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if limit < 1 || limit > store.MaxDeadPage {
				return usageError{fmt.Errorf("--limit %d: pass 1 to %d", limit, store.MaxDeadPage)}
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			page, err := s.dlq.List(cmd.Context(), f, cursor, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, page)
			}
			if len(page.Items) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no dead messages match")
				return err
			}
			t := newTable(a.stdout, "ID", "QUEUE", "KIND", "REASON", "ERROR CLASS", "ATTEMPTS", "AGE", "ERROR")
			for _, it := range page.Items {
				t.row(it.MsgID, dash(it.SourceQueue), dash(it.Kind), dash(it.Reason), dash(it.ErrorClass),
					fmt.Sprintf("%d/%d", it.Attempts, it.MaxRetries), ago(it.DeadLetteredAt), clip(dash(it.ErrorMessage), 70))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				flags := strings.TrimSpace(ff.describe() + fmt.Sprintf(" --limit %d", limit))
				fmt.Fprintf(a.stdout, "more: pgbus dlq list %s --cursor %s\n", flags, page.NextCursor)
			}
			return nil
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after the previous page (from its \"more:\" line or next_cursor)")
	cmd.Flags().IntVar(&limit, "limit", engine.DefaultDLQPageSize, fmt.Sprintf("messages per page, 1 to %d", store.MaxDeadPage))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the DeadPage as JSON")
	return cmd
}

func (a *app) dlqShowCommand() *cobra.Command {
	var (
		queue             string
		noPayload, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one dead message: why it died, its failures, headers and payload",
		Long: `Show one dead message in full: the dead-letter block (reason, error class and
message, backtrace, attempts), the failure history of every attempt, its
headers and its payload (pretty JSON; --no-payload leaves it out, for
payloads with personal data or secrets). --json prints a DeadMessage.
Without --queue, the id is looked up in every DLQ.`,
		Example: `  pgbus dlq show 42
  pgbus dlq show 42 --queue orders --no-payload
  pgbus dlq show 42 --queue orders --json | jq .payload`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			where, err := locate(cmd.Context(), s.dlq, queue, id)
			if err != nil {
				return err
			}
			m, err := s.dlq.Show(cmd.Context(), where, id)
			if err != nil {
				return err
			}
			if noPayload {
				m.Payload = nil
			}
			if asJSON {
				return printJSON(a.stdout, m)
			}
			return writeDeadMessage(a.stdout, m, noPayload)
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue (or DLQ) holding the message")
	cmd.Flags().BoolVar(&noPayload, "no-payload", false, "do not print the payload")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the DeadMessage as JSON")
	return cmd
}

func writeDeadMessage(w io.Writer, m store.DeadMessage, noPayload bool) error {
	fmt.Fprintf(w, "dead message %d in %s\n", m.MsgID, m.DLQ)
	kv := newTable(w)
	kv.row("kind:", dash(m.Kind))
	if b := m.Block; b != nil {
		kv.row("reason:", b.Reason)
		kv.row("from:", fmt.Sprintf("queue %s, message %d, enqueued %s", b.SourceQueue, b.SourceMsgID, stamp(b.SourceEnqueuedAt)))
		kv.row("attempts:", fmt.Sprintf("%d (max_retries %d)", b.Attempts, b.MaxRetries))
		kv.row("dead since:", fmt.Sprintf("%s (%s)", stamp(b.DeadLetteredAt), ago(b.DeadLetteredAt)))
		if b.RetriesFromDLQ > 0 {
			kv.row("retried from DLQ:", fmt.Sprintf("%d times before", b.RetriesFromDLQ))
		}
		if b.ErrorClass != "" {
			kv.row("error class:", b.ErrorClass)
			kv.row("error:", b.ErrorMessage)
			kv.row("error attempt:", fmt.Sprintf("%d at %s", b.ErrorAttempt, stamp(b.ErrorRecordedAt)))
		} else {
			kv.row("error:", "none recorded (a deadline, or a worker that crashed mid-run)")
		}
	} else {
		kv.row("block:", "none: this message was not dead-lettered by pgbus")
		kv.row("enqueued:", stamp(m.DeadLetteredAt))
	}
	if err := kv.flush(); err != nil {
		return err
	}
	if m.Block != nil && m.Block.Backtrace != "" {
		fmt.Fprintln(w, "backtrace:")
		for _, line := range strings.Split(m.Block.Backtrace, "\n") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	if len(m.History) > 0 {
		fmt.Fprintln(w, "failures:")
		t := newTable(w, "  #", "AT", "KIND", "ERROR CLASS", "ERROR")
		for _, f := range m.History {
			t.row(fmt.Sprintf("  %d", f.Attempt), stamp(f.FailedAt), dash(f.Kind), f.ErrorClass, clip(f.ErrorMessage, 100))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "headers:")
	fmt.Fprintln(w, indentJSON(withoutBlock(m.Headers), "  "))
	if noPayload {
		_, err := fmt.Fprintln(w, "payload: (not shown: --no-payload)")
		return err
	}
	fmt.Fprintln(w, "payload:")
	_, err := fmt.Fprintln(w, indentJSON(m.Payload, "  "))
	return err
}

// withoutBlock drops the dead-letter block from headers: it was shown above.
func withoutBlock(h json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(h, &obj) != nil || obj == nil {
		return h
	}
	delete(obj, store.HeaderDeadLetter)
	out, err := json.Marshal(obj)
	if err != nil {
		return h
	}
	return out
}

func indentJSON(raw json.RawMessage, prefix string) string {
	if len(raw) == 0 {
		return prefix + "null"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return prefix + string(raw)
	}
	out, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		return prefix + string(raw)
	}
	return prefix + string(out)
}

// locate returns the DLQ holding message id: queue's when given, else the
// only DLQ that holds it. An id in several DLQs (ids are per queue) is a
// usage error asking for --queue.
func locate(ctx context.Context, d *engine.DLQ, queue string, id int64) (string, error) {
	if queue != "" {
		return queue, nil
	}
	dlqs, err := d.Find(ctx, id)
	if err != nil {
		return "", err
	}
	switch len(dlqs) {
	case 0:
		return "", fmt.Errorf("%w: no DLQ holds message %d; it may have been retried or discarded already: see pgbus dlq list", store.ErrNotFound, id)
	case 1:
		return dlqs[0], nil
	}
	return "", usageError{fmt.Errorf("message id %d is in %d DLQs (%s); ids are per queue: pass --queue to choose one", id, len(dlqs), strings.Join(dlqs, ", "))}
}

// locateAll finds the DLQ of every id (queue's when given) and groups the
// ids by DLQ, in order. Ids in no DLQ are returned apart; an id in several
// DLQs is an error (pass --queue), before anything is written.
func locateAll(ctx context.Context, d *engine.DLQ, queue string, ids []int64) (order []string, byDLQ map[string][]int64, missing []int64, err error) {
	byDLQ = map[string][]int64{}
	for _, id := range ids {
		where, err := locate(ctx, d, queue, id)
		if errors.Is(err, store.ErrNotFound) && len(ids) > 1 {
			missing = append(missing, id)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if _, ok := byDLQ[where]; !ok {
			order = append(order, where)
		}
		byDLQ[where] = append(byDLQ[where], id)
	}
	return order, byDLQ, missing, nil
}

func (a *app) dlqRetryCommand() *cobra.Command {
	var (
		queue, payload string
		asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "retry ID...",
		Short: "Retry dead messages by id: back to the queue they died in",
		Long: `Move dead messages back to the queue they died in (or to the DLQ's own queue
when that one is gone), without the dead-letter block and with
pgbus_dlq_retries counting the trip. Each message moves in its own
transaction; one that fails does not stop the rest. Retrying an id that is
already gone is an error (exit 3 for a single id), never a duplicate.

--payload retries one message with a corrected payload; the original is kept
in the DLQ's archive and the replacement noted in its history.

--json prints the RetryReport, as the MCP tool pgbus_dlq_retry returns.`,
		Example: `  pgbus dlq retry 42
  pgbus dlq retry 42 43 44 --queue orders
  pgbus dlq retry 42 --queue orders --payload '{"order_id": 42, "amount_cents": 1999}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			var opts store.RetryOptions
			if cmd.Flags().Changed("payload") {
				if len(ids) != 1 {
					return usageError{fmt.Errorf("--payload replaces the payload of one message; pass exactly one id, not %d", len(ids))}
				}
				p, err := readPayload(payload, true, "", a.stdin)
				if err != nil {
					return err
				}
				opts.Payload = p
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			ctx := cmd.Context()
			order, byDLQ, missing, err := locateAll(ctx, s.dlq, queue, ids)
			if err != nil {
				return err
			}
			rep := store.RetryReport{Moved: []store.RetriedMessage{}}
			var opErr error
			for _, id := range missing {
				rep.Failed++
				if rep.FirstError == "" {
					rep.FirstError = fmt.Sprintf("no DLQ holds message %d; it may have been retried or discarded already", id)
				}
			}
			for _, where := range order {
				r, err := s.dlq.Retry(ctx, where, byDLQ[where], opts)
				rep.Merge(r)
				if err != nil && opErr == nil {
					opErr = err
				}
			}
			auditArgs := map[string]any{"queue": queue, "ids": ids, "payload_replaced": len(opts.Payload) > 0}
			a.recordAudit(ctx, s.db, "dlq retry", auditArgs, rep, opErr)
			if opErr != nil && len(ids) == 1 {
				return opErr
			}
			if err := a.printRetryReport(rep, asJSON); err != nil {
				return err
			}
			if opErr != nil {
				return opErr
			}
			return retryFailures(rep)
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue (or DLQ) holding the messages")
	cmd.Flags().StringVar(&payload, "payload", "", "retry one message with this JSON payload instead (or @FILE)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the RetryReport as JSON")
	return cmd
}

// retryFailures turns failed messages of a report into exit status 1.
func retryFailures(rep store.RetryReport) error {
	if rep.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d messages could not be retried; first: %s", rep.Failed, rep.Failed+rep.Retried, rep.FirstError)
}

func (a *app) printRetryReport(rep store.RetryReport, asJSON bool) error {
	if asJSON {
		return printJSON(a.stdout, rep)
	}
	verb := "retried"
	if rep.DryRun {
		verb = "would retry"
	}
	fmt.Fprintf(a.stdout, "%s %d dead messages", verb, rep.Retried)
	if rep.Failed > 0 {
		fmt.Fprintf(a.stdout, "; %d failed (first: %s)", rep.Failed, rep.FirstError)
	}
	fmt.Fprintln(a.stdout)
	if len(rep.Moved) == 0 {
		return nil
	}
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
	return t.flush()
}

// preview counts the dead messages a filter selects, up to limit, for the
// message of a refused bulk operation.
func preview(ctx context.Context, d *engine.DLQ, f store.DeadFilter, limit int) (int64, error) {
	groups, err := d.Summary(ctx, f)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, g := range groups {
		n += g.Count
	}
	return min(n, int64(limit)), nil
}

func (a *app) dlqRetryAllCommand() *cobra.Command {
	var (
		ff                  filterFlags
		limit               int
		yes, dryRun, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "retry-all --yes [FILTERS]",
		Short: "Retry every dead message that matches the filters (bounded by --limit)",
		Long: `Retry, oldest first and in batches, up to --limit dead messages that the
filters select (all of them without filters). Messages that die again while
it runs are not retried twice. It needs --yes; --dry-run shows what would
move and changes nothing. A progress bar is shown on a terminal.

--json prints the RetryReport.`,
		Example: `  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --dry-run
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --yes
  pgbus dlq retry-all --since 1h --reason max_retries_exceeded --limit 10000 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if limit < 1 || limit > store.MaxDeadBulk {
				return usageError{fmt.Errorf("--limit %d: pass 1 to %d", limit, store.MaxDeadBulk)}
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			ctx := cmd.Context()
			if !yes && !dryRun {
				n, err := preview(ctx, s.dlq, f, limit)
				if err != nil {
					return err
				}
				return usageError{fmt.Errorf("refusing to retry %d dead messages without --yes; check them with --dry-run, then pass --yes", n)}
			}
			opts := store.RetryOptions{DryRun: dryRun}
			var bar *progress
			if !dryRun {
				bar = a.newProgress(1, "retrying")
			}
			if bar != nil {
				opts.Progress = bar.set
			}
			rep, err := s.dlq.RetryMatching(ctx, f, limit, opts)
			bar.finish()
			if !dryRun {
				a.recordAudit(ctx, s.db, "dlq retry-all", map[string]any{"filter": f, "limit": limit}, rep, err)
			}
			if err != nil {
				return err
			}
			if err := a.printRetryReport(rep, asJSON); err != nil {
				return err
			}
			return retryFailures(rep)
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().IntVar(&limit, "limit", engine.DefaultDLQBulkLimit, fmt.Sprintf("retry at most this many, 1 to %d", store.MaxDeadBulk))
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the retry")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be retried; change nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the RetryReport as JSON")
	return cmd
}

// DiscardResult is what dlq discard prints with --json.
type DiscardResult struct {
	Discarded int `json:"discarded"`
}

func (a *app) dlqDiscardCommand() *cobra.Command {
	var (
		ff               filterFlags
		limit            int
		all, yes, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "discard [ID...] [--queue Q] [FILTERS --yes]",
		Short: "Move dead messages to the DLQ's archive (recoverable until purged)",
		Long: `Discard dead messages: they move to the DLQ's archive, where they stay until
pgbus dlq purge (or retention) deletes them. Give ids, or filters (--all for
every dead message). Discarding one id needs no confirmation; more than one,
or any discard by filter, needs --yes.`,
		Example: `  pgbus dlq discard 42 --queue orders
  pgbus dlq discard 42 43 44 --queue orders --yes
  pgbus dlq discard --queue orders --error-class demo.ValidationError --yes
  pgbus dlq discard --all --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			byFilter := len(ids) == 0
			switch {
			case len(ids) > 0 && (ff.narrows(fs) || all):
				return usageError{errors.New("give ids or filters, not both")}
			case byFilter && !ff.narrows(fs) && !all && ff.queue == "":
				return usageError{errors.New("nothing selected: give ids, filters (such as --queue or --error-class), or --all for every dead message")}
			}
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if limit < 1 || limit > store.MaxDeadBulk {
				return usageError{fmt.Errorf("--limit %d: pass 1 to %d", limit, store.MaxDeadBulk)}
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			ctx := cmd.Context()
			if byFilter {
				if !yes {
					n, err := preview(ctx, s.dlq, f, limit)
					if err != nil {
						return err
					}
					return usageError{fmt.Errorf("refusing to discard %d dead messages without --yes; see them with pgbus dlq list %s, then pass --yes", n, ff.describe())}
				}
				bar := a.newProgress(1, "discarding")
				n, err := s.dlq.DiscardMatching(ctx, f, limit, bar.set)
				bar.finish()
				a.recordAudit(ctx, s.db, "dlq discard", map[string]any{"filter": f, "limit": limit}, DiscardResult{n}, err)
				if err != nil {
					return err
				}
				return a.printDiscarded(n, asJSON)
			}
			if len(ids) > 1 && !yes {
				return usageError{fmt.Errorf("refusing to discard %d dead messages without --yes", len(ids))}
			}
			order, byDLQ, missing, err := locateAll(ctx, s.dlq, ff.queue, ids)
			if err != nil {
				return err
			}
			n := 0
			var opErr error
			for _, where := range order {
				k, err := s.dlq.Discard(ctx, where, byDLQ[where])
				n += k
				if err != nil && opErr == nil {
					opErr = err
				}
			}
			a.recordAudit(ctx, s.db, "dlq discard", map[string]any{"queue": ff.queue, "ids": ids}, DiscardResult{n}, opErr)
			if opErr != nil {
				return opErr
			}
			if err := a.printDiscarded(n, asJSON); err != nil {
				return err
			}
			if gone := len(ids) - n; gone > 0 {
				return fmt.Errorf("%d of %d ids were not in a DLQ (already retried or discarded?)%s", gone, len(ids), missingNote(missing))
			}
			return nil
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "select every dead message (with --yes)")
	cmd.Flags().IntVar(&limit, "limit", engine.DefaultDLQBulkLimit, fmt.Sprintf("discard at most this many by filter, 1 to %d", store.MaxDeadBulk))
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm discarding more than one message")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"discarded": N}`)
	return cmd
}

func missingNote(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return ": not found: " + strings.Join(s, ", ")
}

func (a *app) printDiscarded(n int, asJSON bool) error {
	if asJSON {
		return printJSON(a.stdout, DiscardResult{Discarded: n})
	}
	_, err := fmt.Fprintf(a.stdout, "discarded %d dead messages (kept in the DLQ archive until pgbus dlq purge)\n", n)
	return err
}

// PurgeResult is what dlq purge prints with --json.
type PurgeResult struct {
	Purged int64 `json:"purged"`
}

func (a *app) dlqPurgeCommand() *cobra.Command {
	var (
		queue       string
		olderThan   time.Duration
		yes, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "purge --yes [--queue Q] [--older-than AGE]",
		Short: "Delete discarded dead messages for good",
		Long: `Delete, for good, the discarded dead messages (those in a DLQ's archive) of
one queue or of all, discarded more than --older-than ago (0: all of them),
with their failure history. Dead messages still in a DLQ are not touched.
This cannot be undone, so it needs --yes.`,
		Example: `  pgbus dlq purge --queue orders --yes
  pgbus dlq purge --older-than 720h --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDuration("older-than", olderThan, 0); err != nil {
				return err
			}
			if queue != "" {
				if err := store.ValidatePhysicalName(queue); err != nil {
					return err
				}
			}
			if !yes {
				what := "every DLQ"
				if queue != "" {
					what = "the DLQ of " + queue
				}
				return usageError{fmt.Errorf("refusing to purge without --yes: it deletes the discarded dead messages of %s for good", what)}
			}
			s, err := a.openDLQ(cmd.Context())
			if err != nil {
				return err
			}
			defer s.db.Close()
			ctx := cmd.Context()
			var n int64
			err = a.withSpinner(ctx, "purging", func() error {
				var err error
				n, err = s.dlq.Purge(ctx, queue, olderThan)
				return err
			})
			a.recordAudit(ctx, s.db, "dlq purge", map[string]any{"queue": queue, "older_than": olderThan.String()}, PurgeResult{n}, err)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, PurgeResult{Purged: n})
			}
			_, err = fmt.Fprintf(a.stdout, "purged %d discarded dead messages\n", n)
			return err
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only the DLQ of this queue")
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "only messages discarded longer ago than this, e.g. 720h (default: all)")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: delete for good")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"purged": N}`)
	return cmd
}
