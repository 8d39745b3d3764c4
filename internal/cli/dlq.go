package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgbus/pgbus/internal/plural"
	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) dlqCommand() *cobra.Command {
	cmd := a.groupCommand(&cobra.Command{
		Use:   "dlq",
		Short: "Inspect, retry and discard dead messages",
		Long: `Work with dead-letter queues. The DLQ of queue X is X_dlq; a dead message
keeps its payload and headers and a pgbus_dead_letter block saying why it died
(reason, error class and message, attempts). Start with pgbus dlq summary,
drill down with list and show, then retry what a fix or a recovered downstream
makes work again, and discard the rest. A discard is undone by restore, with
the ids discarded lists, until the archive is purged or the queue's dead
retention (30 days by default) deletes them.

Filters (summary, list, retry-all, discard):
  --queue Q          the DLQ of queue Q (Q_dlq is accepted too)
  --kind K           the job kind (pgbus_kind, or job_class of Ruby pgbus)
  --error-class C    the block's error class, exactly (e.g. demo.Unavailable)
  --reason R         max_retries_exceeded, non_retryable_error, deadline_exceeded,
                     or not_recorded (a message without a dead-letter block)
  --since T --until T  dead-lettered in [since, until): RFC 3339, a date
                     (2026-11-29, midnight UTC), or an age (30m, 2h, 7d)
  --text S           case-insensitive text in the error message
  --group G          exactly one group: its key, the group field of
                     pgbus dlq summary --json (kind and error class select
                     every group that shares them)

Ids are per queue: when an id is in several DLQs, pass --queue; so does a
retry or discard by a group key that several DLQs share. Secrets in
payloads, headers and error text are shown as [REDACTED].`,
		Example: `  pgbus dlq summary
  pgbus dlq list --queue orders --error-class demo.Unavailable
  pgbus dlq show 42 --queue orders
  pgbus dlq retry 42 43 --queue orders
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --dry-run
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --yes
  pgbus dlq discard --queue orders --reason non_retryable_error --yes
  pgbus dlq discarded --queue orders
  pgbus dlq restore 42 43 --queue orders
  pgbus dlq purge --older-than 30d --yes`,
	})
	cmd.AddCommand(a.dlqSummaryCommand(), a.dlqListCommand(), a.dlqShowCommand(), a.dlqRetryCommand(),
		a.dlqRetryAllCommand(), a.dlqDiscardCommand(), a.dlqDiscardedCommand(), a.dlqRestoreCommand(), a.dlqPurgeCommand())
	return cmd
}

// filterFlags are the flags of a dead-message filter.
type filterFlags struct{ f ops.DeadFilter }

func (ff *filterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&ff.f.Queue, "queue", "", "only the DLQ of this queue")
	fs.StringVar(&ff.f.Kind, "kind", "", "only this job kind")
	fs.StringVar(&ff.f.ErrorClass, "error-class", "", "only this error class (exact)")
	fs.StringVar(&ff.f.Reason, "reason", "", "only this reason: "+strings.Join(ops.Reasons, ", "))
	fs.StringVar(&ff.f.Since, "since", "", "dead-lettered at or after: RFC 3339, a date (midnight UTC), or an age (2h, 7d)")
	fs.StringVar(&ff.f.Until, "until", "", "dead-lettered before: RFC 3339, a date (midnight UTC), or an age")
	fs.StringVar(&ff.f.Text, "text", "", "text in the error message (case-insensitive)")
	fs.StringVar(&ff.f.Group, "group", "", "only this group: its key, the group field of dlq summary --json")
}

// filter returns the filter, checked before the database is opened.
// Errors name the flag, as the person typed it. (A filter flag given an
// empty value was refused already, refuseEmpty: read as no filter, it would
// select every dead message.)
func (ff *filterFlags) filter() (ops.DeadFilter, error) {
	return ff.f, flagWords(ff.f.Check(), "since", "until", "reason", "queue", "kind", "error_class", "text", "group")
}

// flags renders the filter as flags, for "more:" lines.
func (ff *filterFlags) flags() string {
	h := ops.Hint{Op: ops.OpDLQList, Args: map[string]any{}}
	for k, v := range map[string]string{"queue": ff.f.Queue, "kind": ff.f.Kind, "error_class": ff.f.ErrorClass,
		"reason": ff.f.Reason, "since": ff.f.Since, "until": ff.f.Until, "text": ff.f.Text, "group": ff.f.Group} {
		if v != "" {
			h.Args[k] = v
		}
	}
	return strings.TrimSpace(strings.TrimPrefix(vocab.Command(h), "pgbus dlq list"))
}

func (a *app) dlqSummaryCommand() *cobra.Command {
	var (
		ff                  filterFlags
		by, byField, cursor string
	)
	cmd := &cobra.Command{
		Use:   "summary",
		Short: "Group dead messages by queue, kind, error class and message: the first stop",
		Long: `Count dead messages by (source queue, kind, error class, error pattern),
largest group first, with their reasons, first and last time seen, a few
sample ids to show and the newest message's error (secrets redacted). The
error pattern is the error message with numbers, ids, quoted values, e-mail
addresses and hex replaced, so "order 42 failed" and "order 43 failed" are one
group. A "came back:" line names each group whose newest message had been
retried out of a DLQ before and died again: that retry did not fix the cause.
--by-field breaks each group down by a safe payload field (config safe_fields
or PGBUS_SAFE_FIELDS). Up to 500 groups are listed; when there are more, a
"next:" line gives the command for the next page (an opaque --cursor, valid
with the same filters), which lists the groups ranked after the last one
shown, as they rank then. --by error_class counts every dead message the
filters select by error class instead, across every DLQ, each class with its
reasons and the DLQs it touches (the 10 holding most, "and N more"): which
failure an incident is. --json prints the same result as the MCP tool
pgbus_dlq_summary.`,
		Example: `  pgbus dlq summary
  pgbus dlq summary --by error_class --since 1h
  pgbus dlq summary --queue orders --since 24h
  pgbus dlq summary --by-field tenant
  pgbus dlq summary --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if byField != "" && len(a.safeFields(nil)) == 0 {
				return usageError{fmt.Errorf("--by-field %s: no payload field is named safe to show: set %s=%s, or list it under safe_fields in the configuration file", clip(byField, 60), EnvSafeFields, clip(byField, 60))}
			}
			return run(a, cmd, (*ops.Service).DLQSummary, ops.DLQSummaryRequest{Filter: f, By: by, ByField: byField, Cursor: cursor}, func(sum ops.DLQSummary) error {
				if err := a.writeDeadSummary(a.stdout, sum, cursor != ""); err != nil {
					return err
				}
				a.printNext(a.stdout, sum.Next)
				return nil
			})
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().StringVar(&by, "by", ops.SummaryByGroup, "group: by queue, kind, error class and message; error_class: every message by error class across the DLQs")
	cmd.Flags().StringVar(&byField, "by-field", "", "break each group down by this safe payload field (config safe_fields, env "+EnvSafeFields+")")
	cmd.Flags().StringVar(&cursor, "cursor", "", "continue after the previous page (its next_cursor, or the command its \"next:\" line gives)")
	return jsonFlag(cmd, ops.OpDLQSummary)
}

func (a *app) dlqListCommand() *cobra.Command {
	var (
		ff  filterFlags
		req ops.DLQListRequest
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead messages, newest first, with filters and paging",
		Long: `List dead messages newest first: id, source queue, kind, reason, error class,
attempts (and how often it was retried out of a DLQ before, when it was),
age, payload size and error message. --order largest lists the largest
payloads first, and --min-payload-bytes N only payloads of at least N bytes
(as JSON): to find a poison payload, too large to handle, among many; both
read every message of the DLQs the filters select. Pages hold --limit
messages (1 to 100); when there are more, the last line gives the command
for the next page (an opaque --cursor, valid with the same filters and
order). --json prints the same result as the MCP tool pgbus_dlq_list.`,
		Example: `  pgbus dlq list
  pgbus dlq list --queue orders --reason max_retries_exceeded --limit 100
  pgbus dlq list --order largest --min-payload-bytes 1000000
  pgbus dlq list --text "connection refused" --since 2h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if req.Filter, err = ff.filter(); err != nil {
				return err
			}
			if err := checkLimit(ops.OpDLQList, req.Limit); err != nil {
				return err
			}
			return run(a, cmd, (*ops.Service).DLQList, req, func(page ops.DLQList) error {
				if err := a.writeDeadList(a.stdout, page, req.Cursor); err != nil {
					return err
				}
				if page.NextCursor != "" {
					flags := strings.TrimSpace(ff.flags() + listFlags(req))
					fmt.Fprintf(a.stdout, "more: %s\n", a.carried(fmt.Sprintf("pgbus dlq list %s --cursor %s", flags, page.NextCursor)))
				}
				return nil
			})
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().Int64Var(&req.MinPayloadBytes, "min-payload-bytes", 0, "only payloads of at least this many bytes (as JSON)")
	cmd.Flags().StringVar(&req.Order, "order", ops.OrderNewest, "newest (dead-lettered) first, or largest (payload) first")
	pageFlags(cmd.Flags(), &req.Cursor, &req.Limit)
	return jsonFlag(cmd, ops.OpDLQList)
}

// listFlags are the flags of a list's next page besides its filter: the
// minimum size and the order when given, and the limit.
func listFlags(req ops.DLQListRequest) string {
	var out string
	if req.MinPayloadBytes > 0 {
		out += fmt.Sprintf(" --min-payload-bytes %d", req.MinPayloadBytes)
	}
	if o := strings.TrimSpace(req.Order); o != "" && o != ops.OrderNewest {
		out += " --order " + o
	}
	return out + fmt.Sprintf(" --limit %d", req.Limit)
}

func (a *app) dlqShowCommand() *cobra.Command {
	var (
		queue                  string
		noPayload, fullHistory bool
	)
	cmd := &cobra.Command{
		Use:         "show ID",
		Annotations: map[string]string{idArgs: "true"},
		Short:       "Show one dead message: why it died, its failures, headers and payload",
		Long: `Show one dead message in full: the dead-letter block (reason, error class and
message, backtrace, attempts), the failure history of every attempt (identical
failures in a row as one line with their count; --full-history lists each),
its headers and its payload (pretty JSON; --no-payload leaves it out). Secrets
in the payload, headers and error text are shown as [REDACTED]. --json prints
the same result as the MCP tool pgbus_dlq_show. Without --queue, the id is
looked up in every DLQ.`,
		Example: `  pgbus dlq show 42
  pgbus dlq show 42 --queue orders --no-payload
  pgbus dlq show 42 --queue orders --json | jq .payload`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			return run(a, cmd, (*ops.Service).DLQShow, ops.DLQShowRequest{Queue: queue, MsgID: id, IncludePayload: !noPayload, FullHistory: fullHistory},
				func(m ops.DeadMessage) error { return a.writeDeadMessage(a.stdout, m, noPayload) })
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue (or DLQ) holding the message")
	cmd.Flags().BoolVar(&noPayload, "no-payload", false, "do not print the payload")
	cmd.Flags().BoolVar(&fullHistory, "full-history", false, "list each failure, identical ones in a row too")
	return jsonFlag(cmd, ops.OpDLQShow)
}

func (a *app) dlqRetryCommand() *cobra.Command {
	var (
		queue, payload        string
		dryRun, clearDeadline bool
		rate                  float64
	)
	cmd := &cobra.Command{
		Use:         "retry ID...",
		Annotations: map[string]string{idArgs: "true"},
		Short:       "Retry dead messages by id: back to the queue they died in",
		Long: `Move dead messages back to the queue they died in (or to the DLQ's own queue
when that one is gone), without the dead-letter block and with
pgbus_dlq_retries counting the trip. Messages move in batches, each batch in
one transaction; one that fails does not stop the rest. Every id gets an
outcome: retried, not found (retried or discarded already), ambiguous (in
several DLQs: pass --queue) or failed. A message whose deadline (pgbus_deadline)
has passed fails: a worker would dead-letter it again without running it;
--clear-deadline removes the deadline so that it runs however late. --rate N
makes the messages visible N a second, one after another (see pgbus dlq
retry-all). Exit code: 0 when all were retried, 1 when any failed, 2 when any
is ambiguous and none was retried (1 when others were), 3 when some were not
found (or another call moved them meanwhile). At most 100 ids a call: for
more, select them with retry-all and filters.

--payload retries one message with a corrected payload; the original is kept
in the DLQ's archive and the replacement noted in its history. A payload that
still holds [REDACTED] (copied from dlq show) is refused: put the real values
back. So is one holding the "…[shortened: " mark of a shortened preview, and
one whose JSON type differs from the stored payload's (a string or a number
for an object, ...): its job would fail on it again. Quote the JSON once,
for the shell: --payload '{"order_id": 42}' passes an object, while
--payload '"{\"order_id\": 42}"' passes a string holding one, and is
refused. A job that is to run with a payload of another type gets it as a
new message: discard the dead one, then pgbus send. The next step of a dry
run reads the same @FILE again; a payload given inline comes back in it
whole, or, when it holds secrets or is larger than 2 KB, redacted or by a
stand-in the retry refuses until the payload is passed again.

--json prints the same result as the MCP tool pgbus_dlq_retry.`,
		Example: `  pgbus dlq retry 42
  pgbus dlq retry 42 43 44 --queue orders
  pgbus dlq retry 42 --queue orders --payload '{"order_id": 42, "amount_cents": 1999}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if err := checkRateGiven(cmd, rate); err != nil {
				return err
			}
			req := ops.DLQRetryRequest{IDs: ids, Filter: ops.DeadFilter{Queue: queue}, DryRun: dryRun, ClearDeadline: clearDeadline, Rate: rate}
			if cmd.Flags().Changed("payload") {
				if len(ids) != 1 {
					return usageError{fmt.Errorf("--payload replaces the payload of one message; pass exactly one id, not %d", len(ids))}
				}
				if req.Payload, err = readPayload(payload, true, "", a.stdin); err != nil {
					return err
				}
			}
			retry := (*ops.Service).DLQRetry
			if file, ok := strings.CutPrefix(payload, "@"); ok && req.Payload != nil {
				retry = retryFromFile(file)
			}
			return run(a, cmd, retry, req, a.printRetry, func(r ops.DLQRetry) error {
				err := outcomeError("retried", r.Outcomes, r.Next)
				if e, ok := err.(*ops.Error); ok && e.Err == nil {
					// Of the kind of the cause every failure shares (a
					// privilege the role lacks), when they share one.
					e.Err = r.FailureCause()
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue (or DLQ) holding the messages")
	cmd.Flags().StringVar(&payload, "payload", "", "retry one message with this JSON payload instead (or @FILE)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be retried; change nothing")
	clearDeadlineFlag(cmd, &clearDeadline)
	rateFlag(cmd, &rate)
	return jsonFlag(cmd, ops.OpDLQRetry)
}

// retryFromFile is the retry of a corrected payload read from file: its
// next steps that repeat the payload (ops.RepeatedPayload: the payload
// itself, or a stand-in the retry refuses for one large or holding
// secrets) read it from file again, named by its absolute path, so that a
// step followed from any directory retries the corrected payload, never
// the one that failed, and asks for nothing more.
func retryFromFile(file string) func(*ops.Service, context.Context, ops.DLQRetryRequest) (ops.DLQRetry, error) {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	return func(s *ops.Service, ctx context.Context, req ops.DLQRetryRequest) (ops.DLQRetry, error) {
		res, err := s.DLQRetry(ctx, req)
		shown, again := ops.RepeatedPayload(req.Payload)
		ops.RewriteHints(reflect.ValueOf(&res), func(h ops.Hint) ops.Hint {
			if p, ok := h.Args["payload"].(json.RawMessage); !ok || h.Op != ops.OpDLQRetry || !bytes.Equal(p, shown) {
				return h
			}
			h.Args = maps.Clone(h.Args)
			h.Args["payload"] = "@" + file
			if again != "" {
				h.Why = strings.TrimSuffix(strings.TrimSuffix(h.Why, again), "; ")
			}
			return h
		})
		return res, err
	}
}

// clearDeadlineFlag adds --clear-deadline to a retry.
func clearDeadlineFlag(cmd *cobra.Command, clear *bool) {
	cmd.Flags().BoolVar(clear, "clear-deadline", false, "remove the messages' deadline (pgbus_deadline) so that they run however late; without it a message past its deadline is not retried")
}

// rateFlag adds --rate to a retry.
func rateFlag(cmd *cobra.Command, rate *float64) {
	cmd.Flags().Float64Var(rate, "rate", 0, "make the messages visible this many a second, one after another (0.5: one every 2s; 0.0167: one a minute), instead of all at once")
}

// checkRateGiven refuses --rate 0, which the request would read as no
// rate: all at once, the opposite of what it says.
func checkRateGiven(cmd *cobra.Command, rate float64) error {
	if !cmd.Flags().Changed("rate") {
		return nil
	}
	return ops.CheckGivenRate(rate)
}

func (a *app) dlqRetryAllCommand() *cobra.Command {
	var (
		ff                              filterFlags
		limit                           int
		expect                          string
		all, yes, dryRun, clearDeadline bool
		rate                            float64
	)
	cmd := &cobra.Command{
		Use:   "retry-all --yes FILTERS|--all",
		Short: "Retry every dead message that matches the filters (bounded by --limit)",
		Long: `Retry, oldest first and in batches, up to --limit dead messages that the
filters select (--all for every dead message of every DLQ; without
filters or --all nothing is selected). Messages that die again while
it runs are not retried twice. It needs --yes; --dry-run shows what would
move and changes nothing, and prints the --expect that makes the real call
move exactly those messages, in one transaction, or nothing when the
selection changed meanwhile. A progress bar is shown on a terminal.
Messages whose deadline has passed are left, as in pgbus dlq retry, unless
--clear-deadline is given; a dry run that finds some prints no --expect (the
real call would refuse the whole set for them) but the dry run again with
--clear-deadline, whose --expect moves them too.

--rate N paces the retry for a downstream that just came back: the
messages become visible to workers N a second, one after another in the
order they move (0.5: one every 2 seconds; 0.0167, one a minute, at the
least, and fast enough for --limit messages to take at most 7 days),
instead of all at once, and messages sent meanwhile run between
them rather than behind them all. With --expect, whose one transaction
lets no message go before it commits, the first turn is at the commit.
The line "paced:" says when the last one becomes visible; until then
pgbus queue messages shows the others as scheduled.

--json prints the same result as the MCP tool pgbus_dlq_retry.`,
		Example: `  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --dry-run
  pgbus dlq retry-all --queue orders --error-class demo.Unavailable --yes
  pgbus dlq retry-all --since 1h --reason max_retries_exceeded --limit 10000 --yes
  pgbus dlq retry-all --queue orders --limit 20000 --rate 10 --yes
  pgbus dlq retry-all --all --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if err := checkBulkLimit(limit); err != nil {
				return err
			}
			if err := checkRateGiven(cmd, rate); err != nil {
				return err
			}
			// No filter is no selection, as in discard: every dead
			// message of every DLQ is asked for with --all, never by
			// leaving the filters out (or a script's variables empty).
			if f.IsZero() && !all {
				return usageError{errors.New("nothing selected: give filters (such as --queue or --error-class), or --all for every dead message")}
			}
			req := ops.DLQRetryRequest{Filter: f, Limit: limit, DryRun: dryRun, Expect: expect, All: all, ClearDeadline: clearDeadline, Rate: rate}
			// Before the refusal, which opens the database to count.
			if err := check(cmd, req); err != nil {
				return err
			}
			if !yes && !dryRun {
				dry := ops.DLQRetryRequest{Filter: f, Limit: limit, DryRun: true, All: all, ClearDeadline: clearDeadline}
				real := ops.DLQRetryRequest{Filter: f, Limit: limit, All: all, ClearDeadline: clearDeadline, Rate: rate}
				return a.refuse(cmd, ops.OpDLQRetry, real, f, limit, "refusing to retry %s without --yes; check %s with a dry run, then pass --yes", dry.Hint("shows what it would retry"))
			}
			if !dryRun {
				bar := a.newProgress(1, "retrying")
				defer bar.finish()
				req.Progress = bar.callback()
			}
			return run(a, cmd, (*ops.Service).DLQRetry, req, a.printRetry, func(rep ops.DLQRetry) error {
				if rep.Failed > 0 {
					// Of the kind of the cause every failure shares (a
					// privilege the role lacks), which the first's words
					// explain; of kind failed when they differ.
					e := &ops.Error{Msg: fmt.Sprintf("%d of %s could not be retried; first: %s", rep.Failed, plural.Count(rep.Failed+rep.Retried, "message", "messages"), rep.FirstError),
						Err: rep.FailureCause()}
					// The call that retries those past their deadline is
					// the error's next step too, for a script that reads
					// only the error.
					e.Hints = slices.DeleteFunc(slices.Clone(rep.Next), func(h ops.Hint) bool { return h.Args["clear_deadline"] != true })
					return e
				}
				return nil
			})
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "select every dead message of every DLQ (with --yes or --dry-run)")
	cmd.Flags().IntVar(&limit, "limit", ops.DefaultBulkLimit, fmt.Sprintf("retry at most this many, 1 to %d", ops.MaxBulkLimit))
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the retry")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be retried; change nothing")
	clearDeadlineFlag(cmd, &clearDeadline)
	rateFlag(cmd, &rate)
	expectFlag(cmd, &expect, "retry")
	return jsonFlag(cmd, ops.OpDLQRetry)
}

// expectFlag adds --expect to a command that moves dead messages by filter.
func expectFlag(cmd *cobra.Command, expect *string, verb string) {
	cmd.Flags().StringVar(expect, "expect", "", "the expect a --dry-run printed (or ids, with --queue): "+verb+" exactly those messages, or nothing if the selection changed")
}

func (a *app) dlqDiscardCommand() *cobra.Command {
	var (
		ff               filterFlags
		limit            int
		expect           string
		all, yes, dryRun bool
	)
	cmd := &cobra.Command{
		Use:         "discard [ID...] [--queue Q] [FILTERS --yes]",
		Annotations: map[string]string{idArgs: "true"},
		Short:       "Move dead messages to the DLQ's archive (pgbus dlq restore brings them back until purged or the dead retention deletes them)",
		Long: `Discard dead messages: they move to the DLQ's archive, where they stay until
pgbus dlq purge or the queue's dead retention (30 days by default) deletes
them; until then pgbus dlq discarded lists them and pgbus dlq restore brings
them back into the DLQ. Give ids, or filters (--all for every dead message;
--queue alone needs --all or --limit too, so that a list of ids that came out
empty never selects a whole DLQ). Discarding one id needs no confirmation;
more than one, or any discard by filter, needs --yes. --dry-run shows what
would be discarded and changes nothing; by filter it prints the --expect that
makes the real call discard exactly those messages, in one transaction, or
nothing when the selection changed meanwhile. Ids get outcomes and exit codes
as in pgbus dlq retry. --json prints the same result as the MCP tool
pgbus_dlq_discard.`,
		Example: `  pgbus dlq discard 42 --queue orders
  pgbus dlq discard 42 43 44 --queue orders --yes
  pgbus dlq discard --queue orders --error-class demo.ValidationError --dry-run
  pgbus dlq discard --queue orders --error-class demo.ValidationError --expect 12-... --yes
  pgbus dlq discard --all --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			fs := cmd.Flags()
			narrows := changed(fs, "kind", "error-class", "reason", "since", "until", "text", "group")
			switch {
			case len(ids) > 0 && all:
				return usageError{errors.New("give ids or --all, not both: drop --all, or drop the ids")}
			case len(ids) == 0 && !narrows && !all && ff.f.Queue == "":
				return usageError{errors.New("nothing selected: give ids, filters (such as --queue or --error-class), or --all for every dead message")}
			case len(ids) == 0 && !narrows && !all && !changed(fs, "limit", "expect"):
				// A script's list of ids that came out empty (xargs
				// without -r) must not become the whole DLQ; a limit or
				// an expect, which ids refuse, says a filter is meant.
				return usageError{errors.New("no ids, and --queue alone: that would discard every dead message of the queue's DLQ; give ids, a filter that narrows (such as --error-class or --reason), or add --all (or the --limit to discard) to discard them")}
			}
			f, err := ff.filter()
			if err != nil {
				return err
			}
			if err := checkBulkLimit(limit); err != nil {
				return err
			}
			req := ops.DLQDiscardRequest{IDs: ids, Filter: f, DryRun: dryRun, Expect: expect, Confirm: yes, All: all}
			if len(ids) == 0 || cmd.Flags().Changed("limit") {
				req.Limit = limit // with ids, refused: every id given is handled
			}
			// Before the refusals, the one by filter opening the database
			// to count.
			if err := check(cmd, req); err != nil {
				return err
			}
			if distinct(ids) > 1 && !yes && !dryRun {
				dry := ops.DLQDiscardRequest{IDs: ids, Filter: ops.DeadFilter{Queue: ff.f.Queue}, DryRun: true}
				return usageError{&ops.Error{Msg: fmt.Sprintf("refusing to discard %d dead messages without --yes; check them with a dry run, then pass --yes", distinct(ids)),
					Hints: []ops.Hint{dry.Hint("shows what it would discard")}}}
			}
			if len(ids) == 0 && !dryRun {
				if !yes {
					dry := ops.DLQDiscardRequest{Filter: f, Limit: limit, DryRun: true, All: all}
					real := ops.DLQDiscardRequest{Filter: f, Limit: limit, Confirm: true, All: all}
					return a.refuse(cmd, ops.OpDLQDiscard, real, f, limit, "refusing to discard %s without --yes; check %s with a dry run, then pass --yes", dry.Hint("shows what it would discard"))
				}
				bar := a.newProgress(1, "discarding")
				defer bar.finish()
				req.Progress = bar.callback()
			}
			return run(a, cmd, (*ops.Service).DLQDiscard, req, a.printDiscard,
				func(res ops.DLQDiscard) error { return outcomeError("discarded", res.Outcomes, res.Next) })
		},
	}
	ff.add(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "select every dead message, of --queue's DLQ or of every DLQ (with --yes)")
	cmd.Flags().IntVar(&limit, "limit", ops.DefaultBulkLimit, fmt.Sprintf("discard at most this many by filter, 1 to %d", ops.MaxBulkLimit))
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm discarding more than one message")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be discarded; change nothing")
	expectFlag(cmd, &expect, "discard")
	return jsonFlag(cmd, ops.OpDLQDiscard)
}

func (a *app) dlqPurgeCommand() *cobra.Command {
	var (
		queue, olderThan string
		yes, dryRun      bool
	)
	cmd := &cobra.Command{
		Use:   "purge --yes|--dry-run [--queue Q] [--older-than AGE]",
		Short: "Delete discarded dead messages for good",
		Long: `Delete, for good, the discarded dead messages (those in a DLQ's archive) of
one queue or of all, discarded more than --older-than ago (an age such as
72h or 30d; 0s: all of them), with their failure history. Dead
messages still in a DLQ are not touched. This cannot be undone, so it needs
--yes; without it, or with --dry-run, it says how many it would delete.`,
		Example: `  pgbus dlq purge --older-than 30d --dry-run
  pgbus dlq purge --queue orders --yes
  pgbus dlq purge --older-than 30d --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// An empty --queue would purge every DLQ, an empty
			// --older-than every discarded message.
			req := ops.DLQPurgeRequest{Queue: queue, Confirm: true}
			if olderThan != "" {
				d, err := ops.ParseAge(olderThan)
				if err != nil {
					return usageError{fmt.Errorf("--older-than: %v", err)}
				}
				req.OlderThan = d
			}
			if !yes || dryRun {
				return a.purgeDryRun(cmd, req, dryRun)
			}
			purge := func(s *ops.Service, ctx context.Context, req ops.DLQPurgeRequest) (res ops.DLQPurge, err error) {
				err = a.withSpinner(ctx, "purging", func() error {
					res, err = s.DLQPurge(ctx, req)
					return err
				})
				return res, err
			}
			return run(a, cmd, purge, req, func(res ops.DLQPurge) error {
				_, err := fmt.Fprintf(a.stdout, "purged %s (discarded, or %s of a retry with --payload; archived at or before %s)\n", plural.Count(res.Purged, "archived dead message", "archived dead messages"), plural.Of(res.Purged, "the original", "originals"), stamp(res.DiscardedBefore))
				return err
			})
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only the DLQ of this queue")
	cmd.Flags().StringVar(&olderThan, "older-than", "", "only messages archived longer ago than this age, e.g. 72h or 30d (default: all)")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: delete for good")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say how many would be deleted; delete nothing")
	return jsonFlag(cmd, ops.OpDLQPurge)
}

// purgeDryRun counts what the purge req would delete: asked for
// (--dry-run), it prints the count; without --yes, it refuses, saying it.
func (a *app) purgeDryRun(cmd *cobra.Command, req ops.DLQPurgeRequest, asked bool) error {
	req.DryRun, req.Confirm = true, false
	if err := check(cmd, req); err != nil {
		return err
	}
	what := "every DLQ"
	if req.Queue != "" {
		what = "the DLQ of " + req.Queue
	}
	if asked {
		return run(a, cmd, (*ops.Service).DLQPurge, req, func(res ops.DLQPurge) error {
			if _, err := fmt.Fprintf(a.stdout, "would purge %s of %s (archived at or before %s); nothing was deleted\n",
				plural.Count(res.Purged, "archived dead message", "archived dead messages"), what, stamp(res.DiscardedBefore)); err != nil {
				return err
			}
			a.printNext(a.stdout, res.Next)
			return nil
		})
	}
	ctx, s, err := a.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	// A count for the refusal, which is no dry run anyone asked for: not
	// audited.
	res, err := s.ops.DLQPurge(ops.WithPageView(ctx), req)
	if err != nil {
		return err
	}
	see := ops.Hint{Op: ops.OpAudit, Args: map[string]any{"tool": ops.OpDLQDiscard}, Why: "shows what was discarded, and when"}
	if req.Queue != "" {
		see = ops.Hint{Op: ops.OpDLQDiscarded, Args: map[string]any{"queue": req.Queue}, Why: "lists what it would delete"}
	}
	return usageError{&ops.Error{Msg: fmt.Sprintf("refusing to purge without --yes: it would delete %s of %s (discarded, or originals of a retry with a corrected payload, archived at or before %s) for good; check them, then pass --yes",
		plural.Count(res.Purged, "archived dead message", "archived dead messages"), what, stamp(res.DiscardedBefore)), Hints: []ops.Hint{see}}}
}
