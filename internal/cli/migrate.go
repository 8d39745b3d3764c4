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
and as often as you like; every other command also migrates on start.`,
		Example: `  pgbus migrate
  pgbus migrate --database-url postgres://app@db.internal/app`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.openDatabase(cmd.Context())
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
