package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/engine"
	"github.com/pgbus/pgbus/store"
)

// AuditClient is the client name of the CLI's entries in the audit log.
const AuditClient = "cli"

// recordAudit records one write operation of the CLI in the audit log, as
// the MCP tools do for agents. tool is the command path ("dlq retry").
// A failure to record is logged, not returned: the operation itself is done.
func (a *app) recordAudit(ctx context.Context, db *database, tool string, args, result any, opErr error) {
	e := store.AuditEntry{Client: AuditClient, Tool: tool, IsError: opErr != nil}
	var err error
	if e.Arguments, err = json.Marshal(args); err != nil {
		e.Arguments = nil
	}
	if opErr != nil {
		result = map[string]string{"error": opErr.Error()}
	}
	if e.Result, err = json.Marshal(result); err != nil {
		e.Result = nil
	}
	// Recorded even when the command was interrupted.
	ctx = context.WithoutCancel(ctx)
	if err := engine.NewAdmin(db.Store).RecordAudit(ctx, e); err != nil {
		a.log.Warn("pgbus: could not record the operation in the audit log", "tool", tool, "err", err)
	}
}

func (a *app) auditCommand() *cobra.Command {
	var (
		tool, client, cursor string
		limit                int
		asJSON               bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show recent write operations by people (CLI) and agents (MCP)",
		Long: `List recorded write operations, newest first: retries, discards, purges,
pauses, sends and queue changes, whether an AI agent made them through the MCP
server or a person through this CLI (client "cli"). Each entry has the tool or
command, its arguments, its result and whether it failed.

CLI entries are named by command: "dlq retry", "dlq retry-all", "dlq discard",
"dlq purge", "queue create", "queue drop", "queue pause", "queue resume",
"queue purge", "queue configure", "send", "demo".`,
		Example: `  pgbus audit
  pgbus audit --client cli --limit 50
  pgbus audit --tool "dlq retry-all" --json
  pgbus audit --tool pgbus_dlq_retry     # what agents retried`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 100 {
				return usageError{fmt.Errorf("--limit %d: pass 1 to 100", limit)}
			}
			db, err := a.openChecked(cmd.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			page, err := engine.NewAdmin(db.Store).Audit(cmd.Context(), store.AuditFilter{Tool: tool, Client: client}, cursor, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, page)
			}
			if len(page.Items) == 0 {
				_, err := fmt.Fprintln(a.stdout, "no recorded write operations")
				return err
			}
			t := newTable(a.stdout, "ID", "TIME", "CLIENT", "TOOL", "OK", "ARGUMENTS", "RESULT")
			for _, e := range page.Items {
				ok := "yes"
				if e.IsError {
					ok = "no"
				}
				t.row(e.ID, stamp(e.At), e.Client, e.Tool, ok, clip(string(e.Arguments), 60), clip(string(e.Result), 60))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if page.NextCursor != "" {
				fmt.Fprintf(a.stdout, "more: pgbus audit --cursor %s\n", page.NextCursor)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tool, "tool", "", "only entries of this tool or command, e.g. pgbus_dlq_retry or \"dlq retry\"")
	f.StringVar(&client, "client", "", "only entries of this client, e.g. cli")
	f.StringVar(&cursor, "cursor", "", "continue after the previous page (its \"more:\" line or next_cursor)")
	f.IntVar(&limit, "limit", 25, "entries per page, 1 to 100")
	f.BoolVar(&asJSON, "json", false, "print the page as JSON (store.AuditPage)")
	return cmd
}
