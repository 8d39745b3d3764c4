package cli

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/vocab"
	"github.com/pgbus/pgbus/ops"
)

func (a *app) auditCommand() *cobra.Command {
	var (
		tool, client, since, cursor string
		limit                       int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show recent write operations by people (CLI) and agents (MCP)",
		Long: `List recorded write operations, newest first: retries, discards, purges,
pauses, resumes, circuit openings and resets and queue changes (sends with
--tool send or --tool all), whether an AI agent
made them through the MCP server or a person through this CLI (client "cli").
Each entry has the operation, its arguments (secrets redacted, payloads only
by size), its result and whether it failed. A retry, discard or purge by
filter is recorded when it starts too (unless guarded by --expect, which
moves all or nothing in one transaction): one whose process was killed
partway shows OK "unfinished", its outcome unknown (what it moved stays
moved; see pgbus dlq summary for what is there now), and one still running
in another process OK "running". So is a send --ndjson of more than one
transaction, which records how far it went as each commits: killed
partway, its entry counts what it sent, and its next step is the same
command with --from-line the line to go on from.

Operations are named the same whoever called them:
` + wrapList(ops.AuditedOps, "  ", 78) + `.
--tool also takes a tool name (pgbus_dlq_retry) or a command ("dlq retry").

The worker processes' retention deletes entries older than the configuration
file's audit_retention: 90 days by default, off keeps every entry (pgbus help
config).`,
		Example: `  pgbus audit
  pgbus audit --client cli --limit 50
  pgbus audit --tool dlq_retry --since 2h --json
  pgbus audit --tool all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Empty, these filters would list every entry.
			if err := checkLimit(ops.OpAudit, limit); err != nil {
				return err
			}
			return run(a, cmd, (*ops.Service).Audit, ops.AuditRequest{Op: tool, Client: client, Since: since, Cursor: cursor, Limit: limit}, func(page ops.AuditPage) error {
				if len(page.Items) == 0 {
					_, err := fmt.Fprintln(a.stdout, "no recorded write operations")
					return err
				}
				t := newTable(a.stdout, "ID", "TIME", "CLIENT", "VIA", "OPERATION", "OK", "ARGUMENTS", "RESULT")
				for _, e := range page.Items {
					ok := "yes"
					switch {
					case e.Running:
						ok = "running"
					case e.Unfinished:
						ok = "unfinished"
					case e.IsError:
						ok = "no"
					}
					t.row(e.ID, stamp(e.At), e.Client, auditVia(e), e.Op, ok, clip(string(e.Arguments), 60), clip(string(e.Result), 60))
				}
				if err := t.flush(); err != nil {
					return err
				}
				for _, n := range ops.WordAsks(page.Notes, page.Asks, vocab.CommandNote) {
					fmt.Fprintln(a.stdout, "note: "+n)
				}
				for _, h := range page.Next {
					if h.Args["cursor"] != nil {
						fmt.Fprintf(a.stdout, "more: %s\n", a.command(h))
					} else {
						fmt.Fprintf(a.stdout, "next: %s\n", a.command(h))
					}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&tool, "tool", "", "only entries of this operation, e.g. dlq_retry (a tool name or command works too), or all; default all but send")
	f.StringVar(&client, "client", "", "only entries of this client, e.g. cli")
	f.StringVar(&since, "since", "", "only entries since this time: RFC 3339, a date (midnight UTC), or an age (2h, 7d)")
	f.StringVar(&cursor, "cursor", "", "continue after the previous page (its \"more:\" line or next_cursor)")
	f.IntVar(&limit, "limit", ops.DefaultPageSize, fmt.Sprintf("entries per page, 1 to %d", ops.MaxPageSize))
	return jsonFlag(cmd, ops.OpAudit)
}

// auditVia is how an entry's call came in, and who authenticated it.
func auditVia(e ops.AuditEntry) string {
	via := cmp.Or(e.Transport, "-")
	if e.Principal != "" {
		via += " (" + e.Principal + ")"
	}
	return via
}
