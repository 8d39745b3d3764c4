package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/ops"
)

func (a *app) dlqDiscardedCommand() *cobra.Command {
	var (
		queue, kind, errorClass, since, until, cursor string
		limit                                         int
		byHandler                                     bool
	)
	cmd := &cobra.Command{
		Use:   "discarded --queue Q",
		Short: "List the discarded messages of a queue's DLQ, to restore them, or those its handlers discarded",
		Long: `List the messages in the archive of a queue's DLQ, most recently discarded
first: id, kind, error class, when they died and when they were discarded.
pgbus dlq restore brings them back into the DLQ. The archive also keeps the
originals of retries with a corrected payload; they are listed as not
restorable, since the corrected message ran in their place. --since and
--until bound when the messages were discarded. --by-handler lists instead
the messages a handler's rule discarded from the queue itself (engine.Discard,
on_status, on_exit, discard_exit_codes): never dead-lettered, they are kept
in the queue's archive (of each priority level) marked pgbus_discarded until
its archive_retention, and no restore brings them back; --error-class
matches the error that discarded them. --json prints the same result as the
MCP tool pgbus_dlq_discarded.`,
		Example: `  pgbus dlq discarded --queue orders
  pgbus dlq discarded --queue orders --error-class demo.ValidationError --since 1h
  pgbus dlq discarded --queue orders --by-handler`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(ops.OpDLQDiscarded, limit); err != nil {
				return err
			}
			req := ops.DLQDiscardedRequest{Filter: ops.DeadFilter{Queue: queue, Kind: kind, ErrorClass: errorClass, Since: since, Until: until}, Limit: limit, Cursor: cursor, ByHandler: byHandler}
			if err := flagWords(req.Check(), "queue", "kind", "error_class", "since", "until", "by_handler"); err != nil {
				return usageError{err}
			}
			return run(a, cmd, (*ops.Service).DLQDiscarded, req, func(res ops.DLQDiscarded) error {
				if err := a.writeDiscardedList(a.stdout, res, cursor, byHandler); err != nil {
					return err
				}
				a.printNext(a.stdout, res.Next)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&queue, "queue", "", "the queue whose DLQ's archive to list (required)")
	fs.StringVar(&kind, "kind", "", "only this job kind")
	fs.StringVar(&errorClass, "error-class", "", "only this error class (exact)")
	fs.StringVar(&since, "since", "", "discarded at or after: RFC 3339, a date (midnight UTC), or an age (2h, 7d)")
	fs.StringVar(&until, "until", "", "discarded before: RFC 3339, a date (midnight UTC), or an age")
	fs.IntVar(&limit, "limit", ops.DefaultPageSize, fmt.Sprintf("list at most this many, 1 to %d", ops.MaxPageSize))
	fs.StringVar(&cursor, "cursor", "", "the next page: the cursor the previous page printed, with the same filters")
	fs.BoolVar(&byHandler, "by-handler", false, "list the messages the queue's handlers discarded (kept in its archive, never dead-lettered) instead of its DLQ's")
	return jsonFlag(cmd, ops.OpDLQDiscarded)
}

func (a *app) dlqRestoreCommand() *cobra.Command {
	var (
		queue  string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:         "restore ID... --queue Q",
		Annotations: map[string]string{idArgs: "true"},
		Short:       "Bring discarded messages back into their DLQ: the undo of a discard",
		Long: `Move discarded messages of a queue's DLQ from its archive back into the DLQ,
all in one transaction, each with its id, payload, headers and failure
history: dead again, to retry or discard. pgbus dlq discarded lists the ids.
An id not in the archive (purged or deleted by the queue's dead retention,
restored already, or never discarded) is
not found, and the original of a retry with a corrected payload is refused:
the corrected message ran in its place. --dry-run shows what would be
restored and changes nothing. Exit codes: 1 when an id was refused, 3 when
one was not found. --json prints the same result as the MCP tool
pgbus_dlq_restore.`,
		Example: `  pgbus dlq discarded --queue orders
  pgbus dlq restore 42 43 --queue orders --dry-run
  pgbus dlq restore 42 43 --queue orders`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if len(ids) == 0 {
				return usageError{fmt.Errorf("give the ids of the discarded messages to restore (%s lists them)", a.carried("pgbus dlq discarded --queue Q"))}
			}
			req := ops.DLQRestoreRequest{Queue: queue, IDs: ids, DryRun: dryRun}
			if err := flagWords(req.Check(), "queue"); err != nil {
				return usageError{err}
			}
			return run(a, cmd, (*ops.Service).DLQRestore, req, a.printRestore,
				func(res ops.DLQRestore) error { return outcomeError("restored", res.Outcomes, res.Next) })
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the queue whose DLQ the messages were discarded from (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be restored; change nothing")
	return jsonFlag(cmd, ops.OpDLQRestore)
}
