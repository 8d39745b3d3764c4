package cli

import (
	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/buildinfo"
)

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		// Works whatever the configuration file says.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.Println(buildinfo.Describe())
			return nil
		},
	}
}
