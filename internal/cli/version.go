package cli

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/pgbus/pgbus/internal/buildinfo"
	"github.com/pgbus/pgbus/internal/dbopen"
)

// versionJSON is pgbus version --json: which binary, and the schema
// version it migrates a database to, for a deploy to check.
type versionJSON struct {
	Version       string `json:"version"`
	Commit        string `json:"commit,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	GoVersion     string `json:"go_version"`
	SchemaVersion int    `json:"schema_version"`
}

func versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this binary was built from",
		Long: `Print the version and the commit this binary was built from. --json adds
the Go version it was built with and the schema version it migrates a
database to (pgbus migrate), which a deploy can compare with the
database's (pgbus migrate --json).`,
		Example: `  pgbus version
  pgbus version --json`,
		Args: cobra.NoArgs,
		// Works whatever the configuration file says.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON, _ := cmd.Flags().GetBool("json"); !asJSON {
				cmd.Println(buildinfo.Describe())
				return nil
			}
			known, err := dbopen.SchemaVersion()
			if err != nil {
				return err
			}
			v := versionJSON{Version: buildinfo.Version(), GoVersion: runtime.Version(), SchemaVersion: known}
			v.Commit, v.Modified = buildinfo.Commit()
			return printJSON(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().Bool("json", false, "print the version as JSON, with the Go version and the schema version this pgbus migrates to")
	return cmd
}
