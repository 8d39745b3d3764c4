package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the pgbus schema and the PGMQ layout",
		Long: `Apply every pending migration. Safe to run from several processes at once
and as often as you like. It needs a role that may create schemas and tables.

The commands that create queues or run workers migrate on start too: work,
demo, serve (unless --read-only without workers), queue create and bench.
The others only check that the schema is current and, when it is
not, fail with a message to run pgbus migrate: queues, dlq (summary, list,
show, retry, retry-all, discard, purge), audit, send, queue drop, pause,
resume and purge, and serve --read-only without workers. The read commands
among them (queues, dlq summary, list and show, audit, serve --read-only)
write nothing, so a role that may only read can run them, with:

  GRANT USAGE ON SCHEMA pgmq, pgbus TO reader;
  GRANT SELECT ON ALL TABLES IN SCHEMA pgmq, pgbus TO reader;
  GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq, pgbus TO reader;
  ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON TABLES TO reader;
  ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq, pgbus GRANT SELECT ON SEQUENCES TO reader;

Without the grant on sequences, the count of messages ever sent to a queue
is a lower bound; the default privileges, granted by the role that creates
queues, cover the queues made later.`,
		Example: `  pgbus migrate
  pgbus migrate --database-url postgres://app@db.internal/app`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.openDB(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer db.Close()
			queues, err := db.ListQueues(cmd.Context())
			if err != nil {
				return err
			}
			layout := "built-in PGMQ layout"
			if db.Status.PGMQExtension {
				layout = "pgmq extension"
			}
			fmt.Fprintf(a.stdout, "pgbus: ready: %s, schema version %d (%d applied now), %s, %d queues\n",
				db.Where(), db.Status.Version, db.Status.Applied, layout, len(queues))
			return nil
		},
	}
}
